#!/usr/bin/env bash
# One reply of 4 model calls and 3 tool calls with 0/1/5/10 pass-through middlewares on every
# position: towerscope (benches/react.rs) and AgentScope 2.0.11 (benches/python), run one after
# the other on this machine, then a table of the medians and ratios.
#
#   scripts/bench-compare.sh            full run (a few minutes)
#   scripts/bench-compare.sh --quick    shorter Python run
set -euo pipefail
cd "$(dirname "$0")/.."
out="target/bench-compare"
mkdir -p "$out"

echo "== towerscope: cargo bench --bench react" >&2
cargo bench --bench react -- 'react/whole' > "$out/react.txt" 2>&1
echo "== AgentScope 2.0.11: scripts/bench-python.sh $*" >&2
bash scripts/bench-python.sh "$@" > "$out/python.txt" 2>&1

python3 - "$out/react.txt" "$out/python.txt" <<'PY'
import re, sys
units = {"ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3}
rust = {}
for m in re.finditer(r"react/whole/(\d+)\s+time:\s+\[\S+ \S+ (\S+) (\S+)", open(sys.argv[1]).read()):
    rust[int(m.group(1))] = float(m.group(2)) * units[m.group(3)]
py = {int(m.group(1)): float(m.group(2))
      for m in re.finditer(r"RESULT agentscope middlewares=(\d+) median_us=([\d.]+)", open(sys.argv[2]).read())}
if not rust or not py:
    sys.exit("could not read the medians; see target/bench-compare/*.txt")
print("| middlewares | towerscope median | AgentScope 2.0.11 median | AgentScope / towerscope |")
print("|---|---|---|---|")
for n in sorted(set(rust) & set(py)):
    print(f"| {n} | {rust[n]:.1f} µs ({100 * (rust[n] / rust[0] - 1):+.1f}%) | "
          f"{py[n] / 1000:.2f} ms ({100 * (py[n] / py[0] - 1):+.1f}%) | {py[n] / rust[n]:.0f}× |")
PY
