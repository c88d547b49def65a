#!/usr/bin/env bash
# Runs the Python side of the benchmarks in one venv (target/bench-python/venv), created and
# filled with pinned versions on first use: AgentScope 2.0.11, LangChain 1.5.0 + LangGraph
# 1.2.22, Pydantic AI 2.68.0 (pydantic-ai-slim) and matplotlib 3.11.2 (for the chart of
# scripts/bench-compare.sh).
#
#   bash scripts/bench-python.sh                      AgentScope, 0/1/5/10 middlewares (full run)
#   bash scripts/bench-python.sh --quick              the same, short
#   bash scripts/bench-python.sh PEER single --replies N [--middlewares M]
#   bash scripts/bench-python.sh PEER many --n N      the peer-benchmark CLI (benches/python/
#                                                     bench_harness.py); PEER is agentscope,
#                                                     langchain or pydantic_ai
#   bash scripts/bench-python.sh python ARGS...       run the venv's python (e.g. a plot script)
#   bash scripts/bench-python.sh install              only make sure the venv is complete
set -euo pipefail

PINS=(
    "agentscope==2.0.11"
    "langchain==1.5.0"
    "langchain-core==1.8.1"
    "langgraph==1.2.22"
    "pydantic-ai-slim==2.68.0"
    "matplotlib==3.11.2"
)
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/target/bench-python/venv"
PY="$VENV/bin/python"

installed() {
    "$PY" - "${PINS[@]}" >/dev/null 2>&1 <<'PYEOF'
import sys
from importlib.metadata import version
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    assert version(name) == want, (name, version(name), want)
import agentscope.agent, agentscope.model, agentscope.middleware  # deps present
import langchain.agents, langgraph.graph, pydantic_ai, matplotlib.pyplot
PYEOF
}

command -v python3 >/dev/null || { echo "error: python3 not found" >&2; exit 1; }

# A venv left half-made by an earlier failure (no pip inside) is rebuilt.
if [ -d "$VENV" ] && ! "$PY" -m pip --version >/dev/null 2>&1; then
    rm -rf "$VENV"
fi
if [ ! -x "$PY" ]; then
    mkdir -p "$(dirname "$VENV")"
    if ! python3 -m venv "$VENV"; then
        rm -rf "$VENV"
        cat >&2 <<MSG
error: 'python3 -m venv' failed. Usually this means ensurepip/venv support
is missing from this Python; on Debian/Ubuntu install it with
    apt-get install python3-venv    (or python$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv)
and re-run this script.
MSG
        exit 1
    fi
fi

if ! installed; then
    echo "bench-python: installing ${PINS[*]} into $VENV ..." >&2
    start=$SECONDS
    log="$(dirname "$VENV")/pip-install.log"
    # install_pinned.py installs the pins and walks their dependencies itself, because a
    # plain pip install fails on the certifi>=2026.10.19 floor of agentscope and
    # langchain-core when the registry has no certifi that new (see its docstring).
    if ! "$PY" "$ROOT/benches/python/install_pinned.py" "${PINS[@]}" >"$log" 2>&1; then
        cat "$log" >&2
        echo "error: installing the pinned packages failed (log: $log)" >&2
        exit 1
    fi
    if ! installed; then
        echo "error: the pinned packages are not importable after install (log: $log)" >&2
        exit 1
    fi
    echo "bench-python: install took $((SECONDS - start)) s" >&2
fi

case "${1:-}" in
    install) exit 0 ;;
    python) shift; exec "$PY" "$@" ;;
    agentscope|langchain|pydantic_ai)
        peer="$1"; shift
        exec "$PY" "$ROOT/benches/python/${peer}_bench.py" "$@" ;;
    *) exec "$PY" "$ROOT/benches/python/agentscope_bench.py" "$@" ;;
esac
