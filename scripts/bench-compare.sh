#!/usr/bin/env bash
# Side-by-side peer benchmark of one ReAct reply (4 model calls, 3 `add` tool calls, scripted
# models, no network) and of many replies in flight, on this machine, in one run. The one-reply
# runs are interleaved: several rounds, each running every peer once (round-robin, the order
# rotated each round), and every ratio is taken within a round; the report gives the median
# ratio and its spread over the rounds (this machine's speed drifts within minutes):
#
#   Rust peers   benches/peers/<name>/ (towerscope, autoagents, rig, tower-llm, agentscope-rs),
#                standalone cargo packages built here once in release mode into
#                target/bench-peers (never part of the main workspace build)
#   Python peers benches/python/ (AgentScope 2.0.11, LangChain 1.5, Pydantic AI 2.68) in the
#                venv of scripts/bench-python.sh
#   criterion    towerscope's own `cargo bench --bench react -- react/whole`, compared with
#                AgentScope as before
#
# Each run records the CPU load of other processes and is repeated (up to 3 times) while that
# load is above 0.10 core; a figure never taken clean is flagged "loaded" (method:
# benches/peers/compare.py). Outputs:
#
#   target/bench-compare/results.jsonl   one JSON line per run
#   target/bench-compare/table.md        the tables
#   docs/bench/peers.svg                 bar chart: time per reply, overhead per middleware
#
#   scripts/bench-compare.sh            full run (many replies for N = 1,000, 10,000, 100,000;
#                                       well over an hour on 2 cores)
#   scripts/bench-compare.sh --quick    fewer replies, 3 rounds; N = 1,000 and 10,000 only
#   scripts/bench-compare.sh --rounds R  R interleaved rounds (default 5, 3 with --quick)
set -euo pipefail
cd "$(dirname "$0")/.."

compare_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) compare_args+=(--quick) ;;
        --rounds)
            [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "error: --rounds needs a positive number" >&2; exit 1; }
            compare_args+=(--rounds "$2"); shift ;;
        -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
        *) echo "error: unknown argument $1 (see --help)" >&2; exit 1 ;;
    esac
    shift
done

out="target/bench-compare"
peers_target="$PWD/target/bench-peers"
mkdir -p "$out" "$peers_target"

echo "== Python venv (scripts/bench-python.sh install)" >&2
bash scripts/bench-python.sh install

# Build every Rust peer that has a Cargo.toml; a peer that fails to build is recorded (and
# reported as not measured) instead of stopping the whole comparison.
for manifest in benches/peers/*/Cargo.toml; do
    name="$(basename "$(dirname "$manifest")")"
    [ "$name" = harness ] && continue
    echo "== build peer $name (release, $peers_target)" >&2
    log="$peers_target/build-$name.log"
    # Pinned peers build from their lockfiles; the towerscope peer follows this repository,
    # whose dependencies may move ahead of its lockfile.
    locked=(--locked)
    [ "$name" = towerscope ] && locked=()
    if CARGO_TARGET_DIR="$peers_target" nice cargo build --release "${locked[@]}" \
        --manifest-path "$manifest" >"$log" 2>&1; then
        rm -f "$peers_target/build-failed-$name.txt"
    else
        grep -m3 -E '^error' "$log" >"$peers_target/build-failed-$name.txt" || true
        echo "   build failed; see $log" >&2
    fi
done

echo "== build towerscope's criterion bench (cargo bench --bench react --no-run)" >&2
nice cargo bench --bench react --no-run >"$out/criterion-build.log" 2>&1 \
    || { cat "$out/criterion-build.log" >&2; exit 1; }

echo "== run all peers (benches/peers/compare.py ${compare_args[*]})" >&2
bash scripts/bench-python.sh python benches/peers/compare.py "${compare_args[@]}" --out "$out"

echo "== report ($out/table.md, docs/bench/peers.svg)" >&2
bash scripts/bench-python.sh python benches/peers/report.py \
    --results "$out/results.jsonl" --table "$out/table.md" --svg docs/bench/peers.svg
