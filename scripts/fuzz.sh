#!/usr/bin/env bash
# Runs the property tests at high case counts for a fixed time, each round with fresh random
# inputs, and reports how many cases ran and any failure:
#   - crates/towerscope-agent/tests/toolkit_properties.rs: argument repair, coercion and
#     validation on generated input (4 properties);
#   - crates/towerscope-models/tests/sse_properties.rs: the providers' SSE decoders on any
#     chunking, random and mutated bytes (4 properties).
#
# This stands in for coverage-guided fuzzing: cargo fuzz (libFuzzer) needs a nightly toolchain,
# which this project does not use. Opt-in; the normal test run keeps 256 cases per property.
#
#   scripts/fuzz.sh [SECONDS]          default 300 s; PROPTEST_CASES per round, default 20000
#
# A failure stops the run; proptest saves the shrunk input beside the test file
# (tests/<name>.proptest-regressions), which later runs (the normal test run included) replay
# first.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-300}"
export PROPTEST_CASES="${PROPTEST_CASES:-20000}"
properties=8
toolkit=(-p towerscope-agent --test toolkit_properties)
sse=(-p towerscope-models --features openai,anthropic --test sse_properties)

echo "fuzz.sh: building the property tests (release)" >&2
cargo test --release "${toolkit[@]}" --no-run >&2
cargo test --release "${sse[@]}" --no-run >&2

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
start=$SECONDS
rounds=0
while (( SECONDS - start < seconds )); do
    if ! { cargo test --release -q "${toolkit[@]}" && cargo test --release -q "${sse[@]}"; } >"$log" 2>&1; then
        cat "$log"
        echo "fuzz.sh: FAILED in round $((rounds + 1)) after $((rounds * properties * PROPTEST_CASES)) cases" \
             "($((SECONDS - start)) s); see the minimal failing input above" >&2
        exit 1
    fi
    rounds=$((rounds + 1))
    echo "fuzz.sh: round $rounds passed ($((SECONDS - start)) s)" >&2
done
echo "fuzz.sh: $((rounds * properties * PROPTEST_CASES)) cases in $rounds rounds" \
     "($properties properties x $PROPTEST_CASES cases), $((SECONDS - start)) s, no failure"
