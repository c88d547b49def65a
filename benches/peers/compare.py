"""Run every peer benchmark, interleaved, and record each result with the machine load.

Called by scripts/bench-compare.sh (which builds the Rust peers and the Python
venv first); it can also be run alone once those exist:

    target/bench-python/venv/bin/python benches/peers/compare.py [--quick] [--out DIR]

Writes DIR/results.jsonl (default target/bench-compare): one JSON object per
run, the peer's own JSON line plus the fields below. A peer that is not
available (no build, or a folder holding only a README) gets one line with
"status": "unavailable" and the reason.

Interleaving: ratios only between runs taken seconds apart
--------------------------------------------------------
The machine's speed drifts by up to 1.7x within minutes with nothing else
running, so a ratio between two figures is only valid when they were taken
close together. The one-reply runs ("single") therefore go round-robin: ROUNDS
rounds (--rounds; 5, or 3 with --quick), each round running every peer once for
each middleware count, in an order rotated by one peer each round (no peer is
always first). Each line records its "round"; the report takes a peer's ratio to
towerscope within each round and gives the median and the spread (min-max) of
those ratios. A run inside a round is not repeated when loaded (that would
break the interleaving): its load is recorded and flagged as below.

Load of other processes, and how a loaded run is handled
---------------------------------------------------------
The machine is shared (2 cores, other engineers' builds), so every run
records how much CPU *other* processes used while it ran:

    other_load_cores = (busy_total - own) / wall

  * busy_total: the change in busy jiffies of /proc/stat's "cpu" line
    (user + nice + system + irq + softirq + steal; idle and iowait are not
    busy) over the run, in seconds (USER_HZ from os.sysconf).
  * own: the CPU time of the benchmark process and all its reaped children
    (os.wait4 rusage, exact), plus this script's own CPU time over the run.
  * wall: the run's wall time.

other_load_peak_cores is the highest value of the same quantity over 1 s
windows, where "own" is summed from /proc/<pid>/stat (utime + stime + cutime
+ cstime) over the benchmark's process tree; null for a run shorter than 1 s.
It is approximate: on a busy machine the sampler itself runs late, so one
window can take CPU time from the next (it is clamped to [0, cores]); the
average above is exact up to the kernel's tick accounting.

A run whose other_load_cores exceeds LOAD_LIMIT (0.10 core) is repeated after a
pause, up to ATTEMPTS times in all. The first clean attempt is kept
("clean": true). If none is clean, the attempt with the least load is kept
and flagged "clean": false; the report never shows it as a clean figure.
A loaded run that took longer than LONG_RUN_S (the Python peers' 10,000
replies in flight take minutes) is not repeated, to keep a whole comparison
within about an hour on a busy machine; it is flagged all the same.
"""

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PEERS_DIR = ROOT / "benches" / "peers"
PEER_BIN_DIR = ROOT / "target" / "bench-peers" / "release"
VENV_PY = ROOT / "target" / "bench-python" / "venv" / "bin" / "python"
PY_BENCHES = ROOT / "benches" / "python"

LOAD_LIMIT = 0.10
ATTEMPTS = 3
PAUSE_BEFORE_RETRY_S = 15
LONG_RUN_S = 120
RUN_TIMEOUT_S = 45 * 60
HZ = os.sysconf("SC_CLK_TCK")
NPROC = os.cpu_count() or 1

# Rust peers first (towerscope is the reference of the ratios), then Python.
RUST_ORDER = ["towerscope", "autoagents", "rig", "tower-llm", "agentscope-rs"]
PYTHON_PEERS = {"agentscope": "agentscope_bench.py", "langchain": "langchain_bench.py",
                "pydantic-ai": "pydantic_ai_bench.py"}
MIDDLEWARES = [0, 1, 5, 10]


def busy_seconds() -> float:
    with open("/proc/stat") as f:
        fields = f.readline().split()
    # cpu user nice system idle iowait irq softirq steal guest guest_nice
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[1:9])
    return (user + nice + system + irq + softirq + steal) / HZ


def tree_seconds(root_pid: int) -> float:
    """CPU seconds of root_pid and its live descendants, reaped children included."""
    parents, times = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2:].split()
        pid = int(entry)
        parents[pid] = int(rest[1])
        times[pid] = sum(int(x) for x in rest[11:15]) / HZ  # utime stime cutime cstime
    total, stack = 0.0, [root_pid]
    while stack:
        pid = stack.pop()
        total += times.get(pid, 0.0)
        stack.extend(p for p, parent in parents.items() if parent == pid)
    return total


def self_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measured_run(cmd: list[str]) -> dict:
    """Runs cmd once; returns its stdout, stderr, status and the load of others."""
    busy0, self0, t0 = busy_seconds(), self_seconds(), time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    peak = [None]  # stays None for a run shorter than one sampling window
    done = threading.Event()

    def sample() -> None:
        prev = (busy_seconds(), tree_seconds(proc.pid), self_seconds(), time.monotonic())
        while not done.wait(1.0):
            now = (busy_seconds(), tree_seconds(proc.pid), self_seconds(), time.monotonic())
            if done.is_set():
                break
            other = (now[0] - prev[0]) - (now[1] - prev[1]) - (now[2] - prev[2])
            rate = min(max(other / max(now[3] - prev[3], 1e-3), 0.0), NPROC)
            peak[0] = rate if peak[0] is None else max(peak[0], rate)
            prev = now

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out = err = ""
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        err += f"\n(killed after {RUN_TIMEOUT_S} s)"
    done.set()
    sampler.join()
    wall = time.monotonic() - t0
    return {"out": out, "err": err, "status": proc.returncode, "wall": wall,
            "busy": busy_seconds() - busy0, "self": self_seconds() - self0, "peak": peak[0]}


class Runner:
    def __init__(self, out: Path, attempts: int) -> None:
        self.out = out
        self.attempts = attempts
        self.children_cpu = self._children_cpu()
        out.parent.mkdir(parents=True, exist_ok=True)
        self.file = out.open("w")

    @staticmethod
    def _children_cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    def record(self, line: dict) -> None:
        self.file.write(json.dumps(line) + "\n")
        self.file.flush()

    def run(self, label: str, cmd: list[str], extra: dict, parse=None,
            attempts: int | None = None) -> dict | None:
        """Runs until clean (at most `attempts`, default the runner's); records and returns the
        kept line."""
        kept = None
        attempts = self.attempts if attempts is None else attempts
        for attempt in range(1, attempts + 1):
            print(f"== {label} (attempt {attempt})", file=sys.stderr, flush=True)
            before = self._children_cpu()
            r = measured_run(cmd)
            own = self._children_cpu() - before + r["self"]
            other = max(0.0, (r["busy"] - own) / max(r["wall"], 1e-3))
            if r["status"] != 0:
                line = {**extra, "status": "failed", "exit_status": r["status"],
                        "error": (r["err"].strip().splitlines() or ["(no stderr)"])[-1]}
                print(f"   failed: {line['error']}", file=sys.stderr, flush=True)
                self.record(line)
                return None
            try:
                line = (parse(r["out"] + "\n" + r["err"]) if parse
                        else last_json_line(r["out"]))
            except ValueError as e:
                line = {**extra, "status": "failed", "error": str(e)}
                self.record(line)
                return None
            line.update(extra)
            line.update({"status": "ok", "other_load_cores": round(other, 3),
                         "other_load_peak_cores": (None if r["peak"] is None
                                                   else round(r["peak"], 3)),
                         "run_wall_s": round(r["wall"], 2), "attempts": attempt,
                         "clean": other <= LOAD_LIMIT})
            peak_text = "n/a" if r["peak"] is None else f"{r['peak']:.2f}"
            print(f"   other load {other:.2f} cores (peak {peak_text})",
                  file=sys.stderr, flush=True)
            if kept is None or line["other_load_cores"] < kept["other_load_cores"]:
                kept = line
            if line["clean"] or "skipped" in line:
                kept = line
                break
            if r["wall"] > LONG_RUN_S:
                print(f"   loaded, but a {r['wall']:.0f} s run is not repeated",
                      file=sys.stderr, flush=True)
                break
            if attempt < attempts:
                time.sleep(PAUSE_BEFORE_RETRY_S)
        kept["attempts"] = attempt
        self.record(kept)
        return kept


def last_json_line(out: str) -> dict:
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise ValueError(f"no JSON line in the output: {out[-300:]!r}") from None


def criterion_medians(out: str) -> dict:
    """The medians of criterion's `react/whole/N  time: [low median high]` lines."""
    units = {"ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}
    medians = {}
    for m in re.finditer(r"react/whole/(\d+)\s+time:\s+\[\S+ \S+ (\S+) (\S+)", out):
        medians[m.group(1)] = round(float(m.group(2)) * units[m.group(3)], 3)
    if not medians:
        raise ValueError(f"no react/whole medians in the criterion output: {out[-300:]!r}")
    return {"peer": "towerscope", "kind": "criterion", "bench": "react/whole",
            "median_us_by_middlewares": medians}


def rust_peers() -> list[tuple[str, Path | None, str | None]]:
    """(name, binary or None, reason when unavailable), in RUST_ORDER then the rest."""
    names = sorted(p.name for p in PEERS_DIR.iterdir()
                   if p.is_dir() and p.name not in ("harness", "target"))
    names.sort(key=lambda n: RUST_ORDER.index(n) if n in RUST_ORDER else len(RUST_ORDER))
    peers = []
    for name in names:
        binary = PEER_BIN_DIR / f"peer-{name}"
        readme = PEERS_DIR / name / "README.md"
        failed = PEER_BIN_DIR.parent / f"build-failed-{name}.txt"
        if not (PEERS_DIR / name / "Cargo.toml").exists():
            reason = readme.read_text().strip().splitlines()[0] if readme.exists() else "no Cargo.toml"
            peers.append((name, None, reason))
        elif failed.exists() or not binary.exists():
            reason = failed.read_text().strip() if failed.exists() else "not built"
            peers.append((name, None, f"build failed: {reason[-300:]}"))
        else:
            peers.append((name, binary, None))
    return peers


def main() -> None:
    ap = argparse.ArgumentParser(description="Run all peer benchmarks, recording the load.")
    ap.add_argument("--quick", action="store_true",
                    help="fewer replies; many replies only for N = 1,000 and 10,000")
    ap.add_argument("--out", default=str(ROOT / "target" / "bench-compare"))
    ap.add_argument("--attempts", type=int, default=ATTEMPTS,
                    help=f"attempts per run while loaded (default {ATTEMPTS})")
    ap.add_argument("--only", help="comma-separated peer names (default: all); no criterion run")
    ap.add_argument("--rounds", type=int, default=None,
                    help="interleaved rounds of the one-reply runs (default 5, 3 with --quick)")
    args = ap.parse_args()
    rounds = max(1, args.rounds or (3 if args.quick else 5))
    only = set(args.only.split(",")) if args.only else None

    # Replies per run, spread over the rounds (each round runs every peer once).
    rust_replies, py_replies = (3000, 200) if args.quick else (20000, 2000)
    rust_replies, py_replies = max(500, rust_replies // rounds), max(50, py_replies // rounds)
    many_ns = [1000, 10000] if args.quick else [1000, 10000, 100000]
    # 100,000 Python replies in flight take over half an hour per peer here; skipped.
    py_many_ns = [n for n in many_ns if n <= 10000]

    runner = Runner(Path(args.out) / "results.jsonl", max(1, args.attempts))
    runner.record({"kind": "meta", "quick": args.quick, "load_limit_cores": LOAD_LIMIT,
                   "attempts_max": max(1, args.attempts), "nproc": os.cpu_count(),
                   "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "python_many_ns": py_many_ns, "many_ns": many_ns, "rounds": rounds,
                   "rust_replies_per_run": rust_replies, "python_replies_per_run": py_replies})

    peers = []  # (name, language, command prefix)
    for name, binary, reason in rust_peers():
        if only is not None and name not in only:
            continue
        if binary is None:
            runner.record({"peer": name, "language": "rust", "status": "unavailable",
                           "reason": reason})
            print(f"== {name}: unavailable ({reason})", file=sys.stderr)
        else:
            peers.append((name, "rust", [str(binary)]))
    for name, script in PYTHON_PEERS.items():
        if only is not None and name not in only:
            continue
        peers.append((name, "python", [str(VENV_PY), str(PY_BENCHES / script)]))

    # Round-robin: every round runs every peer once per middleware count, the order rotated by
    # one peer per round; a run is not repeated when loaded (see the module docs).
    stopped = {}  # peer -> the middleware count from which its runs are skipped
    for r in range(1, rounds + 1):
        shift = (r - 1) % max(1, len(peers))
        order = peers[shift:] + peers[:shift]
        for m in MIDDLEWARES:
            for name, lang, cmd in order:
                if m >= stopped.get(name, m + 1):
                    continue
                replies = rust_replies if lang == "rust" else py_replies
                line = runner.run(f"round {r}/{rounds}: {name} single --middlewares {m}",
                                  cmd + ["single", "--replies", str(replies),
                                         "--middlewares", str(m)],
                                  {"language": lang, "requested_middlewares": m, "round": r},
                                  attempts=1)
                if line is None:
                    stopped[name] = 0  # a failure: the other runs would fail alike
                elif "skipped" in line:
                    stopped[name] = m  # no middleware: larger M would say the same
    # towerscope's own headline numbers (criterion, benches/react.rs), already compiled by
    # scripts/bench-compare.sh; compared with AgentScope's single-reply figures in the report.
    if only is None:
        runner.run("criterion react/whole", ["cargo", "bench", "--bench", "react", "--", "react/whole"],
                   {"language": "rust"}, parse=criterion_medians)
    for name, lang, cmd in peers:
        for n in (many_ns if lang == "rust" else py_many_ns):
            runner.run(f"{name} many --n {n}", cmd + ["many", "--n", str(n)],
                       {"language": lang})


if __name__ == "__main__":
    main()
