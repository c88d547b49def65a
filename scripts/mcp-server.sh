#!/usr/bin/env bash
# The MCP server of the MCP tests (tests/mcp/server.py, written with the Python `mcp` package
# from PyPI), installed into ~/.cache/towerscope/mcp-venv and run on loopback only.
#
#   scripts/mcp-server.sh start   install if needed (idempotent), start the streamable-HTTP server
#                                 and, on the next port, the same over TLS with a self-signed
#                                 certificate and a bearer token made here (openssl); wait for their
#                                 ports; print `export ...` lines for eval: TOWERSCOPE_MCP_PYTHON and
#                                 TOWERSCOPE_MCP_SERVER (to start the stdio server),
#                                 TOWERSCOPE_MCP_HTTP_URL, TOWERSCOPE_MCP_HTTPS_URL,
#                                 TOWERSCOPE_MCP_TLS_CERT (the certificate to trust),
#                                 TOWERSCOPE_MCP_BEARER, the real servers' programs
#                                 (TOWERSCOPE_MCP_EVERYTHING, TOWERSCOPE_MCP_TIME, TOWERSCOPE_MCP_GIT),
#                                 MCP_SERVER_PID, MCP_TLS_SERVER_PID
#   scripts/mcp-server.sh stop    stop both servers by the PIDs recorded at start
#   scripts/mcp-server.sh install-real
#                                 only install the real servers (npm server-everything, PyPI
#                                 mcp-server-time and mcp-server-git; about 20 s on a fresh machine)
#
# Settings (environment): MCP_HTTP_PORT (default 18765; TLS on the next port), MCP_HOME (default
# ~/.cache/towerscope).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MCP_VERSION="1.30.0"
# Real servers nobody here wrote, for crates/towerscope-agent/tests/mcp_real.rs: two PyPI servers
# in a venv of their own (they pin their own `mcp`), the npm reference server in a folder.
TIME_VERSION="2026.10.19"
GIT_VERSION="2026.10.19"
EVERYTHING_VERSION="2026.8.31"
PORT="${MCP_HTTP_PORT:-18765}"
HOME_DIR="${MCP_HOME:-$HOME/.cache/towerscope}"
VENV="$HOME_DIR/mcp-venv"
REAL_VENV="$HOME_DIR/mcp-real-venv"
NPM_DIR="$HOME_DIR/mcp-npm"
RUN_DIR="$HOME_DIR/mcp-run-$PORT"
PID_FILE="$RUN_DIR/server.pid"
TLS_PORT=$((PORT + 1))
TLS_PID_FILE="$RUN_DIR/tls-server.pid"
LOG_FILE="$RUN_DIR/server.log"
SERVER="$ROOT/tests/mcp/server.py"

say() { echo "mcp-server: $*" >&2; }
# shellcheck source=lib/pid.sh
. "$ROOT/scripts/lib/pid.sh"
# shellcheck source=lib/venv.sh
. "$ROOT/scripts/lib/venv.sh"
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
        fresh_venv "$VENV"
        if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_VERSION')" 2>/dev/null; then
            say "installing mcp==$MCP_VERSION from PyPI"
            "$VENV/bin/pip" install -q --disable-pip-version-check "mcp==$MCP_VERSION" >&2
        fi
    )
}

install_real() {
    mkdir -p "$HOME_DIR"
    (
        if command -v flock >/dev/null 2>&1; then
            exec 9>"$HOME_DIR/mcp-real-install.lock"
            flock 9
        fi
        fresh_venv "$REAL_VENV"
        if ! "$REAL_VENV/bin/python" -c "
import importlib.metadata as m, sys
sys.exit(m.version('mcp-server-time') != '$TIME_VERSION' or m.version('mcp-server-git') != '$GIT_VERSION')" 2>/dev/null; then
            say "installing mcp-server-time==$TIME_VERSION and mcp-server-git==$GIT_VERSION from PyPI"
            "$REAL_VENV/bin/pip" install -q --disable-pip-version-check \
                "mcp-server-time==$TIME_VERSION" "mcp-server-git==$GIT_VERSION" >&2
        fi
        command -v npm >/dev/null 2>&1 || {
            say "npm is missing; installing Debian's nodejs and npm"
            apt-get update -qq >&2 && apt-get install -y -qq nodejs npm >/dev/null
        }
        local pkg="$NPM_DIR/node_modules/@modelcontextprotocol/server-everything/package.json"
        if ! grep -q "\"version\": \"$EVERYTHING_VERSION\"" "$pkg" 2>/dev/null; then
            say "installing @modelcontextprotocol/server-everything@$EVERYTHING_VERSION from npm"
            mkdir -p "$NPM_DIR"
            npm install --prefix "$NPM_DIR" --no-audit --no-fund --silent \
                "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >&2
        fi
    )
}

print_env() {
    echo "export TOWERSCOPE_MCP_PYTHON=$VENV/bin/python"
    echo "export TOWERSCOPE_MCP_SERVER=$SERVER"
    echo "export TOWERSCOPE_MCP_HTTP_URL=http://127.0.0.1:$PORT/mcp"
    echo "export TOWERSCOPE_MCP_HTTPS_URL=https://127.0.0.1:$TLS_PORT/mcp"
    echo "export TOWERSCOPE_MCP_TLS_CERT=$RUN_DIR/cert.pem"
    echo "export TOWERSCOPE_MCP_BEARER=$(cat "$RUN_DIR/bearer")"
    echo "export TOWERSCOPE_MCP_EVERYTHING=$NPM_DIR/node_modules/.bin/mcp-server-everything"
    echo "export TOWERSCOPE_MCP_TIME=$REAL_VENV/bin/mcp-server-time"
    echo "export TOWERSCOPE_MCP_GIT=$REAL_VENV/bin/mcp-server-git"
    echo "export MCP_SERVER_PID=$(cat "$PID_FILE")"
    echo "export MCP_TLS_SERVER_PID=$(cat "$TLS_PID_FILE")"
}

running() {
    pid_file_alive "$PID_FILE" && pid_file_alive "$TLS_PID_FILE"
}


# A self-signed certificate for 127.0.0.1 and localhost (not a CA, so rustls accepts it as the
# server's own certificate once the test trusts it), and a fresh bearer token, both in $RUN_DIR.
make_credentials() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
        -keyout "$RUN_DIR/key.pem" -out "$RUN_DIR/cert.pem" -subj "/CN=localhost" \
        -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
        -addext "basicConstraints=critical,CA:FALSE" \
        -addext "keyUsage=critical,digitalSignature" \
        -addext "extendedKeyUsage=serverAuth" 2>/dev/null
    openssl rand -hex 24 >"$RUN_DIR/bearer"
}

# launch PID_FILE LOG_FILE PORT ARGS...: starts the server with ARGS and waits for its port.
launch() {
    local pid_file="$1" log_file="$2" port="$3" pid
    shift 3
    port_open "$port" && die "127.0.0.1:$port is already in use; set MCP_HTTP_PORT"
    nohup "$VENV/bin/python" "$SERVER" "$@" </dev/null >"$log_file" 2>&1 &
    pid=$!
    echo "$pid" >"$pid_file"
    for _ in $(seq 1 300); do # at most 15 s
        port_open "$port" && break
        kill -0 "$pid" 2>/dev/null || {
            cat "$log_file" >&2
            rm -f "$pid_file"
            die "the MCP server exited at start (log above)"
        }
        sleep 0.05
    done
    port_open "$port" || {
        cat "$log_file" >&2
        kill -TERM "$pid" 2>/dev/null || true
        rm -f "$pid_file"
        die "the MCP server did not come up on 127.0.0.1:$port (log above)"
    }
    say "listening on 127.0.0.1:$port, PID $pid"
}

start() {
    if running; then
        print_env
        return 0
    fi
    stop
    install
    install_real
    mkdir -p "$RUN_DIR"
    make_credentials
    launch "$PID_FILE" "$LOG_FILE" "$PORT" http 127.0.0.1 "$PORT"
    launch "$TLS_PID_FILE" "$RUN_DIR/tls-server.log" "$TLS_PORT" \
        https 127.0.0.1 "$TLS_PORT" "$RUN_DIR/cert.pem" "$RUN_DIR/key.pem" "$(cat "$RUN_DIR/bearer")"
    print_env
}

stop() {
    stop_pid_file "$PID_FILE"
    stop_pid_file "$TLS_PID_FILE"
}

case "${1:-}" in
install-real) install_real ;;
start) start ;;
stop) stop ;;
*) die "usage: $0 start|stop|install-real" ;;
esac
