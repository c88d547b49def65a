#!/usr/bin/env bash
# Runs the whole test suite: unit, integration and doc tests of every crate.
# Whatever the tests need beyond cargo (the OTLP collector of the tracing tests, the Redis of the
# session-store and shared-rate-limit tests) is installed and started here, so a fresh machine
# needs nothing installed by hand.
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

# A real Redis (the Debian package redis-server) on loopback, no persistence, for the
# `redis`-feature tests; it exports TOWERSCOPE_REDIS_URL and TOWERSCOPE_REDIS_SERVER. With
# TOWERSCOPE_REQUIRE_REDIS=1 a test that needs Redis fails, instead of skipping, when they are
# missing. Stopped by its PID however the tests end.
redis_env="$(scripts/redis-server.sh start)"
eval "$redis_env"
export TOWERSCOPE_REQUIRE_REDIS=1
trap 'kill -TERM "$OTLP_COLLECTOR_PID" "$REDIS_SERVER_PID" 2>/dev/null || true; scripts/otlp-collector.sh stop; scripts/redis-server.sh stop' EXIT

# tmux drives examples/chat.rs in a real pseudo-terminal (tests/chat_terminal.rs): installed
# here if missing (Debian's package; the machines run as root).
if ! command -v tmux >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq tmux >/dev/null
fi

# cargo-nextest (on the machine image; installed here if missing) runs each test in its own
# process with a time limit (.config/nextest.toml); it does not run doctests, so cargo test does.
if ! command -v cargo-nextest >/dev/null 2>&1; then
    cargo install cargo-nextest --locked
fi
status=0
cargo nextest run --workspace --all-features -E 'not binary(soak)' "$@" || status=$?
cargo test --workspace --all-features --doc "$@" || status=$?
# The soak (tests/soak.rs: 10,000 replies against a hostile model) on its own, so its counts
# are printed; skipped when the run was narrowed with arguments.
if [ "$#" -eq 0 ]; then
    cargo nextest run -p towerscope --test soak --no-capture || status=$?
fi
exit "$status"
