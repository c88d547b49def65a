#!/usr/bin/env bash
# Runs the whole test suite: unit, integration and doc tests of every crate.
# Whatever the tests need beyond cargo (the OTLP collector of the tracing tests) is installed
# and started here, so a fresh machine needs nothing installed by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

# A real OpenTelemetry collector (rotel, from PyPI) on loopback for
# crates/towerscope-otel/tests/collector.rs; it exports TOWERSCOPE_OTLP_ENDPOINT and SPANS_JSONL.
# Stopped by its PID however the tests end.
collector_env="$(scripts/otlp-collector.sh start)"
eval "$collector_env"
# The MCP test server (tests/mcp/server.py, Python `mcp` from PyPI, installed into
# ~/.cache/towerscope/) over streamable HTTP on loopback for crates/towerscope-agent/tests/mcp.rs,
# which also starts it over stdio; required, so a missing server fails those tests.
mcp_env="$(scripts/mcp-server.sh start)"
eval "$mcp_env"
export TOWERSCOPE_REQUIRE_MCP=1
trap 'kill -TERM "$OTLP_COLLECTOR_PID" "$MCP_SERVER_PID" 2>/dev/null || true; scripts/otlp-collector.sh stop; scripts/mcp-server.sh stop' EXIT

# The official JSON-Schema-Test-Suite (draft 2020-12), fetched once into ~/.cache/towerscope/,
# for crates/towerscope-agent/tests/json_schema_suite.rs; required, so a failed fetch fails the run.
JSON_SCHEMA_SUITE_DIR="$(scripts/json-schema-suite.sh)"
export JSON_SCHEMA_SUITE_DIR
export TOWERSCOPE_REQUIRE_SUITE=1

# cargo-nextest (on the machine image; installed here if missing) runs each test in its own
# process with a time limit (.config/nextest.toml); it does not run doctests, so cargo test does.
if ! command -v cargo-nextest >/dev/null 2>&1; then
    cargo install cargo-nextest --locked
fi
status=0
cargo nextest run --workspace --all-features "$@" || status=$?
cargo test --workspace --all-features --doc "$@" || status=$?
exit "$status"
