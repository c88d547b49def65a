"""Two builds of a peer harness binary, run in short alternating pairs: their ratio on a noisy machine.

This machine's speed can swing by 1.8x between runs a few seconds apart, which makes the
criterion rounds of `bench-rounds.py` (each benchmark several seconds long) useless on a bad
day. This runs the two builds' `single` scenario in pairs a fraction of a second long, the order
alternating, and reports the median of the per-pair ratios with its quartiles: a swing that
lasts longer than a pair cancels out of that pair's ratio.

    CARGO_TARGET_DIR=target/bench-peers cargo build --release \
        --manifest-path benches/peers/towerscope/Cargo.toml           # this commit's build
    # the other commit's build, from a worktree, into another target directory
    python3 scripts/bench-pairs.py --pairs 101 BASE_BINARY NEW_BINARY [--middlewares M]

`--base-args` and `--new-args` add options to one side's runs only: the same binary with and
without one layer on a position is what that layer costs,

    python3 scripts/bench-pairs.py BINARY BINARY --new-args "--layer-on reasoning"

The binaries are the harness's (`peer-P single --replies R --warmup W --middlewares M`, one
JSON line per run with `median_us`), of the same peer or of two peers (one reply of towerscope
against one of AutoAgents). The load average before and after is printed.
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess


def median_us(binary: str, args: argparse.Namespace, extra: str) -> float:
    """One run of the harness (with the options in `extra`); its median time per reply in µs."""
    out = subprocess.run(
        [binary, "single", "--replies", str(args.replies), "--warmup", str(args.warmup),
         "--middlewares", str(args.middlewares), *shlex.split(extra)],
        capture_output=True, text=True, check=True).stdout
    lines = out.strip().splitlines()
    if not lines:
        raise SystemExit(f"{binary} printed nothing")
    line = json.loads(lines[-1])
    if "median_us" not in line:
        # A peer without middleware reports `skipped` for `--middlewares M > 0`.
        raise SystemExit(f"{binary}: no time measured: {line.get('skipped', lines[-1])}")
    return float(line["median_us"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--pairs", type=int, default=101)
    parser.add_argument("--middlewares", type=int, default=0)
    parser.add_argument("--replies", type=int, default=5000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--base-args", default="", help="more options for the base binary's runs")
    parser.add_argument("--new-args", default="", help="more options for the new binary's runs")
    args = parser.parse_args()
    if args.pairs < 1:
        raise SystemExit("--pairs must be at least 1")

    load_before = os.getloadavg()
    base, new, ratios = [], [], []
    for i in range(args.pairs):
        if i % 2 == 0:
            b = median_us(args.base, args, args.base_args)
            n = median_us(args.new, args, args.new_args)
        else:
            n = median_us(args.new, args, args.new_args)
            b = median_us(args.base, args, args.base_args)
        base.append(b)
        new.append(n)
        ratios.append(n / b)
    load_after = os.getloadavg()

    q1, _, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
    print(f"middlewares {args.middlewares}, {args.pairs} pairs of {args.replies} replies"
          + (f", base args {args.base_args!r}" if args.base_args else "")
          + (f", new args {args.new_args!r}" if args.new_args else ""))
    print(f"base: median {statistics.median(base):.2f} µs (min {min(base):.2f}, max {max(base):.2f})")
    print(f"new:  median {statistics.median(new):.2f} µs (min {min(new):.2f}, max {max(new):.2f})")
    print(f"new / base per pair: median {statistics.median(ratios):.3f}, quartiles {q1:.3f}–{q3:.3f}, "
          f"min–max {min(ratios):.3f}–{max(ratios):.3f}")
    print("load average before: " + " ".join(f"{x:.2f}" for x in load_before)
          + ", after: " + " ".join(f"{x:.2f}" for x in load_after))


if __name__ == "__main__":
    main()
