#!/usr/bin/env bash
# The MCP server of the MCP tests (tests/mcp/server.py, written with the Python `mcp` package
# from PyPI), installed into ~/.cache/towerscope/mcp-venv and run on loopback only.
#
#   scripts/mcp-server.sh start   install if needed (idempotent), start the streamable-HTTP server,
#                                 wait for its port; prints `export ...` lines for eval:
#                                 TOWERSCOPE_MCP_PYTHON and TOWERSCOPE_MCP_SERVER (to start the stdio
#                                 server), TOWERSCOPE_MCP_HTTP_URL, MCP_SERVER_PID
#   scripts/mcp-server.sh stop    stop the HTTP server by the PID recorded at start
#
# Settings (environment): MCP_HTTP_PORT (default 18765), MCP_HOME (default ~/.cache/towerscope).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MCP_VERSION="1.30.0"
PORT="${MCP_HTTP_PORT:-18765}"
HOME_DIR="${MCP_HOME:-$HOME/.cache/towerscope}"
VENV="$HOME_DIR/mcp-venv"
RUN_DIR="$HOME_DIR/mcp-run-$PORT"
PID_FILE="$RUN_DIR/server.pid"
LOG_FILE="$RUN_DIR/server.log"
SERVER="$ROOT/tests/mcp/server.py"

say() { echo "mcp-server: $*" >&2; }
# shellcheck source=lib/pid.sh
. "$ROOT/scripts/lib/pid.sh"
die() {
    say "$*"
    exit 1
}

install() {
    mkdir -p "$HOME_DIR"
    (
        if command -v flock >/dev/null 2>&1; then
            exec 9>"$HOME_DIR/mcp-install.lock"
            flock 9
        fi
        if [ ! -x "$VENV/bin/python" ]; then
            say "creating a venv in $VENV"
            python3 -m venv "$VENV" >&2
        fi
        if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_VERSION')" 2>/dev/null; then
            say "installing mcp==$MCP_VERSION from PyPI"
            "$VENV/bin/pip" install -q --disable-pip-version-check "mcp==$MCP_VERSION" >&2
        fi
    )
}

print_env() {
    echo "export TOWERSCOPE_MCP_PYTHON=$VENV/bin/python"
    echo "export TOWERSCOPE_MCP_SERVER=$SERVER"
    echo "export TOWERSCOPE_MCP_HTTP_URL=http://127.0.0.1:$PORT/mcp"
    echo "export MCP_SERVER_PID=$(cat "$PID_FILE")"
}

running() {
    [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null
}

port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

start() {
    if running; then
        print_env
        return 0
    fi
    install
    port_open "$PORT" && die "127.0.0.1:$PORT is already in use; set MCP_HTTP_PORT"
    mkdir -p "$RUN_DIR"
    nohup "$VENV/bin/python" "$SERVER" http 127.0.0.1 "$PORT" </dev/null >"$LOG_FILE" 2>&1 &
    local pid=$!
    echo "$pid" >"$PID_FILE"
    for _ in $(seq 1 300); do # at most 15 s
        port_open "$PORT" && break
        kill -0 "$pid" 2>/dev/null || {
            cat "$LOG_FILE" >&2
            rm -f "$PID_FILE"
            die "the MCP server exited at start (log above)"
        }
        sleep 0.05
    done
    port_open "$PORT" || {
        cat "$LOG_FILE" >&2
        kill -TERM "$pid" 2>/dev/null || true
        rm -f "$PID_FILE"
        die "the MCP server did not come up on 127.0.0.1:$PORT (log above)"
    }
    say "listening on http://127.0.0.1:$PORT/mcp, PID $pid"
    print_env
}

stop() {
    stop_pid_file "$PID_FILE"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
*) die "usage: $0 start|stop" ;;
esac
