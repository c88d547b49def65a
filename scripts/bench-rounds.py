"""Interleaved criterion runs: ratios between benchmarks taken seconds apart.

This machine's speed drifts by up to 1.7x within minutes, so a ratio between two criterion
figures from one `cargo bench` run (taken minutes apart) can be off by that much. This runs
the given benchmarks of one criterion binary round-robin, ROUNDS times, and prints each one's
median per round and its ratio to the first benchmark of the same round: the median ratio and
its spread (min-max) over the rounds.

    cargo bench --bench react --no-run          # prints the binary's path
    python3 scripts/bench-rounds.py --rounds 5 BINARY react/whole/0 react/first_layer/reply ...

Each benchmark is matched exactly (criterion's filter, anchored). The load average before and
after is printed with the table.

With `--base OTHER_BINARY` (the same bench built from another commit) it compares the two
builds instead: in each round every benchmark runs in OTHER_BINARY, then in BINARY, and the
ratio is BINARY's over OTHER_BINARY's, per benchmark.

    python3 scripts/bench-rounds.py --rounds 3 --base OLD_BINARY BINARY react/whole/0 ...
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

UNITS = {"ps": 1e-6, "ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}


def median_us(binary: str, name: str) -> float:
    """Runs one benchmark; returns criterion's median estimate in microseconds."""
    out = subprocess.run([binary, "--bench", f"^{re.escape(name)}$"], capture_output=True,
                         text=True, check=True).stdout
    m = re.search(re.escape(name) + r"\s+time:\s+\[\S+ \S+ (\S+) (\S+)", out)
    if not m:
        raise SystemExit(f"no figure for {name} in:\n{out[-500:]}")
    return float(m.group(1)) * UNITS[m.group(2)]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--base", help="another build of the bench: compare BINARY with it")
    ap.add_argument("binary")
    ap.add_argument("benches", nargs="+", help="the first is the reference of the ratios")
    args = ap.parse_args()
    print(f"load average before: {load()}", file=sys.stderr)
    if args.base:
        compare_builds(args)
        return
    figures = {b: [] for b in args.benches}
    for r in range(args.rounds):
        shift = r % len(args.benches)
        for b in args.benches[shift:] + args.benches[:shift]:
            figures[b].append(median_us(args.binary, b))
            print(f"round {r + 1}: {b} {figures[b][-1]:.2f} µs", file=sys.stderr, flush=True)
    ref = figures[args.benches[0]]
    print(f"| benchmark | median of {args.rounds} rounds | ratio to {args.benches[0]} "
          "(median, min–max) |")
    print("|---|---|---|")
    for b in args.benches:
        ratios = [x / y for x, y in zip(figures[b], ref)]
        print(f"| `{b}` | {statistics.median(figures[b]):.2f} µs | "
              f"{statistics.median(ratios):.3f} ({min(ratios):.3f}–{max(ratios):.3f}) |")
    print(f"\nload average after: {load()}")


def compare_builds(args: argparse.Namespace) -> None:
    """Each benchmark in the base build, then in this one, round after round."""
    pairs = {b: [] for b in args.benches}
    for r in range(args.rounds):
        for b in args.benches:
            base = median_us(args.base, b)
            this = median_us(args.binary, b)
            pairs[b].append((base, this))
            print(f"round {r + 1}: {b} base {base:.2f} µs, this {this:.2f} µs", file=sys.stderr,
                  flush=True)
    print(f"| benchmark | base, median of {args.rounds} rounds | this build | "
          "this / base (median, min–max) |")
    print("|---|---|---|---|")
    for b in args.benches:
        ratios = [this / base for base, this in pairs[b]]
        print(f"| `{b}` | {statistics.median(p[0] for p in pairs[b]):.2f} µs | "
              f"{statistics.median(p[1] for p in pairs[b]):.2f} µs | "
              f"{statistics.median(ratios):.3f} ({min(ratios):.3f}–{max(ratios):.3f}) |")
    print(f"\nload average after: {load()}")


if __name__ == "__main__":
    main()
