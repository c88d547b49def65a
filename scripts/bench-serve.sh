#!/usr/bin/env bash
# The HTTP-overhead benchmark of towerscope-serve (benches/serve.rs), side by side with Pydantic
# AI's AG-UI app on the same scenario (benches/python/pydantic_ai_agui.py: a model streaming
# "Hello!", served by uvicorn on loopback). Pydantic AI (pinned, with its `ag-ui` extra) and
# uvicorn are installed once into ~/.cache/towerscope/agui-peer-venv.
#
#   bash scripts/bench-serve.sh [criterion args...]
#
# Settings (environment): AGUI_PEER_PORT (default 18931), AGUI_PEER_HOME (default ~/.cache/towerscope).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PINS=("pydantic-ai-slim[ag-ui]==2.68.0" "uvicorn==0.38.0")
PORT="${AGUI_PEER_PORT:-18931}"
HOME_DIR="${AGUI_PEER_HOME:-$HOME/.cache/towerscope}"
VENV="$HOME_DIR/agui-peer-venv"
RUN_DIR="$HOME_DIR/agui-peer-run-$PORT"
PID_FILE="$RUN_DIR/server.pid"

say() { echo "bench-serve: $*" >&2; }
# shellcheck source=lib/pid.sh
. "$ROOT/scripts/lib/pid.sh"
# shellcheck source=lib/venv.sh
. "$ROOT/scripts/lib/venv.sh"

mkdir -p "$HOME_DIR" "$RUN_DIR"
(
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$HOME_DIR/agui-peer-install.lock"
        flock 9
    fi
    fresh_venv "$VENV"
    if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('pydantic-ai-slim') != '2.68.0' or m.version('uvicorn') != '0.38.0')" 2>/dev/null; then
        say "installing ${PINS[*]} from PyPI"
        "$VENV/bin/pip" install -q --disable-pip-version-check "${PINS[@]}" >&2
    fi
)

stop_pid_file "$PID_FILE"
"$VENV/bin/python" "$ROOT/benches/python/pydantic_ai_agui.py" "$PORT" >"$RUN_DIR/server.log" 2>&1 &
echo $! >"$PID_FILE"
trap 'stop_pid_file "$PID_FILE"' EXIT
for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
done
say "Pydantic AI's AG-UI app on 127.0.0.1:$PORT (PID $(cat "$PID_FILE"))"

cd "$ROOT"
TOWERSCOPE_AGUI_PEER_ADDR="127.0.0.1:$PORT" cargo bench --bench serve --features serve -- "$@"
