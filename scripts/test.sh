#!/usr/bin/env bash
# Runs the whole test suite: unit, integration and doc tests of every crate, and each benchmark
# once.
# Whatever the tests need beyond cargo (the OTLP collector of the tracing tests, the MCP server,
# the Redis of the session-store and shared-rate-limit tests, the LLM server of the provider
# tests, tmux for the terminal chat, the A2A SDK of the serve tests) is installed and started
# here, so a fresh machine needs nothing installed by hand. Every server is started on loopback
# and stopped by its PID however the tests end.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each script stops its server by the PID it recorded when it started it.
# The servers this run started, stopped at its end; one that failed to start (its port in use
# by another run's) is not this run's to stop.
started=()
cleanup() {
    local server
    for server in "${started[@]}"; do
        "scripts/$server.sh" stop || true
    done
}
trap cleanup EXIT

# A real OpenTelemetry collector (rotel, from PyPI, installed into target/otlp-rotel/) on
# loopback for crates/towerscope-otel/tests/collector.rs; it exports TOWERSCOPE_OTLP_ENDPOINT and
# SPANS_JSONL.
collector_env="$(scripts/otlp-collector.sh start)"
started+=(otlp-collector)
eval "$collector_env"

# The MCP test server (tests/mcp/server.py, Python `mcp` from PyPI, installed into
# ~/.cache/towerscope/) over streamable HTTP on loopback, and over HTTPS with a self-signed
# certificate and a bearer token the script makes, for crates/towerscope-agent/tests/mcp*.rs,
# which also start it over stdio; and the real servers of tests/mcp_real.rs (npm
# server-everything, PyPI mcp-server-time and mcp-server-git, installed into ~/.cache/towerscope/,
# started by the tests over stdio). Required, so a missing server fails those tests.
mcp_env="$(scripts/mcp-server.sh start)"
started+=(mcp-server)
eval "$mcp_env"
export TOWERSCOPE_REQUIRE_MCP=1

# The official JSON-Schema-Test-Suite (draft 2020-12), fetched once into ~/.cache/towerscope/,
# for crates/towerscope-agent/tests/json_schema_suite.rs; required, so a failed fetch fails the run.
JSON_SCHEMA_SUITE_DIR="$(scripts/json-schema-suite.sh)"
export JSON_SCHEMA_SUITE_DIR
export TOWERSCOPE_REQUIRE_SUITE=1

# A real Redis (the Debian package redis-server) on loopback, no persistence, for the
# `redis`-feature tests; it exports TOWERSCOPE_REDIS_URL and TOWERSCOPE_REDIS_SERVER. With
# TOWERSCOPE_REQUIRE_REDIS=1 a test that needs Redis fails, instead of skipping, when they are
# missing.
redis_env="$(scripts/redis-server.sh start)"
started+=(redis-server)
eval "$redis_env"
export TOWERSCOPE_REQUIRE_REDIS=1

# The official A2A Python SDK (`a2a-sdk` 1.3 and uvicorn, from PyPI, installed once into
# ~/.cache/towerscope/a2a-venv) for crates/towerscope-serve/tests/a2a_python.rs: its client
# against our A2A router, our client against an agent written with its server; each test starts
# what it needs on an ephemeral loopback port. Required, so a failed install fails those tests.
a2a_env="$(scripts/a2a-sdk.sh)"
eval "$a2a_env"
export TOWERSCOPE_A2A_PYTHON
export TOWERSCOPE_REQUIRE_A2A=1

# A real Restate server (restate-server 1.7.12 from the npm package @restatedev/restate-server,
# installed once into ~/.cache/towerscope/restate-server) on loopback, with a fresh data directory,
# for crates/towerscope-restate/tests/durable.rs; it exports TOWERSCOPE_RESTATE_INGRESS and
# TOWERSCOPE_RESTATE_ADMIN. With TOWERSCOPE_REQUIRE_RESTATE=1 those tests fail, rather than skip,
# without it.
restate_env="$(scripts/restate-server.sh start)"
started+=(restate-server)
eval "$restate_env"
export TOWERSCOPE_REQUIRE_RESTATE=1

# A real LLM server (llama.cpp's llama-server with SmolLM2-135M, built once into
# ~/.cache/towerscope/llama) on loopback for crates/towerscope-models/tests/llm_server.rs; it
# exports TOWERSCOPE_LLM_BASE_URL, TOWERSCOPE_LLM_MODEL and LLM_SERVER_PID. With
# TOWERSCOPE_REQUIRE_LLM=1 those tests fail, rather than skip, if the server is missing.
llm_env="$(scripts/llm-server.sh start)"
started+=(llm-server)
eval "$llm_env"
export TOWERSCOPE_REQUIRE_LLM=1
# The cassettes of crates/towerscope-models/tests/cassettes/ replay (no server needed) unless
# TOWERSCOPE_CASSETTE says otherwise: `TOWERSCOPE_CASSETTE=record scripts/test.sh -p
# towerscope-models --test cassette_llm` records them again from this server.

# The web clients of crates/towerscope-serve's tests: the official AG-UI client and
# playwright-core (npm, into ~/.cache/towerscope/web-clients, seconds) and Debian's chromium
# (a few minutes the first time); it exports TOWERSCOPE_NODE_MODULES and TOWERSCOPE_CHROMIUM.
# With TOWERSCOPE_REQUIRE_WEB=1 those tests fail, rather than skip, without them.
web_env="$(scripts/web-clients.sh)"
eval "$web_env"
export TOWERSCOPE_REQUIRE_WEB=1

# tmux drives examples/chat.rs in a real pseudo-terminal (tests/chat_terminal.rs): installed
# here if missing (Debian's package; the machines run as root).
if ! command -v tmux >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq tmux >/dev/null
fi

# cargo-nextest (on the machine image; installed here if missing) runs each test in its own
# process with a time limit (.config/nextest.toml); it does not run doctests, so cargo test does.
# Pinned: the newest release may need a newer rustc, and .config/nextest.toml uses test groups.
if ! command -v cargo-nextest >/dev/null 2>&1; then
    cargo install cargo-nextest --locked --version 0.9.143
fi
status=0
cargo nextest run --workspace --all-features -E 'not binary(soak)' "$@" || status=$?
# The doctests take no nextest arguments (`--test`, `-E`): a run narrowed with arguments
# leaves them out, as it leaves out the soak.
if [ "$#" -eq 0 ]; then
    cargo test --workspace --all-features --doc || status=$?
    # Each benchmark once, as a test (criterion's test mode; unoptimised, seconds): a bench
    # that can no longer run (its recorded input out of date, say) fails here, not when
    # someone next measures.
    cargo test --workspace --all-features --bench '*' || status=$?
fi
# The soak (tests/soak.rs: 10,000 replies against a hostile model) on its own, so its counts
# are printed; skipped when the run was narrowed with arguments. Built with the features above,
# so it reuses their build instead of building the crates again with other features.
if [ "$#" -eq 0 ]; then
    cargo nextest run --workspace --all-features -E 'binary(soak)' --no-capture || status=$?
fi
exit "$status"
