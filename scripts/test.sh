#!/usr/bin/env bash
# Runs the whole test suite: unit, integration and doc tests of every crate.
# Whatever the tests need beyond cargo (the OTLP collector of the tracing tests, the LLM server of
# the provider tests) is installed and started here, so a fresh machine needs nothing installed
# by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

# A real OpenTelemetry collector (rotel, from PyPI) on loopback for
# crates/towerscope-otel/tests/collector.rs; it exports TOWERSCOPE_OTLP_ENDPOINT and SPANS_JSONL.
# Stopped by its PID however the tests end.
collector_env="$(scripts/otlp-collector.sh start)"
eval "$collector_env"
trap 'kill -TERM "$OTLP_COLLECTOR_PID" 2>/dev/null || true; scripts/otlp-collector.sh stop' EXIT

# A real LLM server (llama.cpp's llama-server with SmolLM2-135M, built once into
# ~/.cache/towerscope/llama) on loopback for crates/towerscope-models/tests/llm_server.rs; it
# exports TOWERSCOPE_LLM_BASE_URL, TOWERSCOPE_LLM_MODEL and LLM_SERVER_PID. With
# TOWERSCOPE_REQUIRE_LLM=1 those tests fail, rather than skip, if the server is missing.
llm_env="$(scripts/llm-server.sh start)"
eval "$llm_env"
export TOWERSCOPE_REQUIRE_LLM=1
trap 'kill -TERM "$OTLP_COLLECTOR_PID" "$LLM_SERVER_PID" 2>/dev/null || true; scripts/otlp-collector.sh stop; scripts/llm-server.sh stop' EXIT

# cargo-nextest (on the machine image; installed here if missing) runs each test in its own
# process with a time limit (.config/nextest.toml); it does not run doctests, so cargo test does.
if ! command -v cargo-nextest >/dev/null 2>&1; then
    cargo install cargo-nextest --locked
fi
status=0
cargo nextest run --workspace --all-features "$@" || status=$?
cargo test --workspace --all-features --doc "$@" || status=$?
exit "$status"
