#!/usr/bin/env bash
# A real Restate server for the durable-agent tests, example and benches (crates/towerscope-restate):
# restate-server 1.7.12 from the npm package @restatedev/restate-server, whose platform package
# ships the binary (nothing is downloaded at run time), installed into
# ~/.cache/towerscope/restate-server/. Started on loopback only, with its own ports and data
# directory, telemetry off (the server otherwise reaches out at start).
#
#   scripts/restate-server.sh install   install the npm package if needed (about 10 s)
#   scripts/restate-server.sh start     install if needed, start with a fresh data directory,
#                                       wait until the admin API answers; prints `export ...`
#                                       lines for eval: TOWERSCOPE_RESTATE_INGRESS,
#                                       TOWERSCOPE_RESTATE_ADMIN, RESTATE_SERVER_PID
#   scripts/restate-server.sh stop      stop the server by the PID recorded at start
#   scripts/restate-server.sh env       print the `export ...` lines of a running server
#   scripts/restate-server.sh register URL
#                                       register a service endpoint (http://127.0.0.1:PORT) with
#                                       the admin API (the tests register their own)
#
#   eval "$(scripts/restate-server.sh start)"; trap 'scripts/restate-server.sh stop' EXIT
#
# Settings (environment):
#   RESTATE_INGRESS_PORT  ingress (HTTP calls to services, awakeables) on 127.0.0.1 (default 28080)
#   RESTATE_ADMIN_PORT    admin API on 127.0.0.1 (default 29070)
#   RESTATE_NODE_PORT     node-to-node port on 127.0.0.1 (default 25122)
#   RESTATE_RUN_DIR       PID, log, config and data of this instance (default target/restate-server)
# Messages go to stderr.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VERSION=1.7.12
CACHE="${HOME}/.cache/towerscope/restate-server"
INGRESS_PORT="${RESTATE_INGRESS_PORT:-28080}"
ADMIN_PORT="${RESTATE_ADMIN_PORT:-29070}"
NODE_PORT="${RESTATE_NODE_PORT:-25122}"
RUN_DIR="${RESTATE_RUN_DIR:-$ROOT/target/restate-server}"
PID_FILE="$RUN_DIR/restate.pid"
LOG_FILE="$RUN_DIR/restate.log"
CONFIG_FILE="$RUN_DIR/restate.toml"

say() { echo "restate-server: $*" >&2; }
# shellcheck source=lib/pid.sh
. "$ROOT/scripts/lib/pid.sh"
die() {
    say "$*"
    exit 1
}

find_server() {
    local bin
    for bin in "$CACHE"/node_modules/@restatedev/restate-server-*/bin/restate-server; do
        [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q " $VERSION\$" && echo "$bin" && return 0
    done
    return 1
}

install() {
    find_server >/dev/null && return 0
    if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "npm not found; installing the Debian packages nodejs and npm with apt-get"
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >&2
    fi
    command -v npm >/dev/null 2>&1 || die "npm is not installed; install Node.js (apt-get install -y nodejs npm)"
    mkdir -p "$CACHE"
    (
        # One installer at a time (parallel runs share the machine).
        if command -v flock >/dev/null 2>&1; then
            exec 9>"$CACHE/install.lock"
            flock 9
        fi
        find_server >/dev/null && exit 0
        say "installing @restatedev/restate-server@$VERSION into $CACHE"
        # --ignore-scripts: the package's only install script is a usage-analytics ping.
        SCARF_ANALYTICS=false npm install --prefix "$CACHE" --no-audit --no-fund --ignore-scripts \
            --no-save "@restatedev/restate-server@$VERSION" >&2
    )
    find_server >/dev/null || die "the npm package @restatedev/restate-server@$VERSION has no binary for this platform"
}

print_env() {
    echo "export TOWERSCOPE_RESTATE_INGRESS=http://127.0.0.1:$INGRESS_PORT"
    echo "export TOWERSCOPE_RESTATE_ADMIN=http://127.0.0.1:$ADMIN_PORT"
    echo "export RESTATE_SERVER_PID=$(cat "$PID_FILE")"
}

running() {
    pid_file_alive "$PID_FILE"
}


# The admin API's health check, over bash's /dev/tcp: no curl needed.
answers() {
    local reply
    reply="$({ exec 3<>"/dev/tcp/127.0.0.1/$ADMIN_PORT" &&
        printf 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3 &&
        timeout 1 head -c 12 <&3; } 2>/dev/null)" || return 1
    [ "$reply" = "HTTP/1.1 200" ]
}

start() {
    if running; then
        say "already running (PID $(cat "$PID_FILE"))"
        print_env
        return 0
    fi
    install
    for port in "$INGRESS_PORT" "$ADMIN_PORT" "$NODE_PORT"; do
        port_open "$port" && die "127.0.0.1:$port is already in use; set RESTATE_*_PORT, or stop what listens there"
    done
    # A fresh data directory: every run starts without journals, state or registrations.
    rm -rf "$RUN_DIR/data"
    mkdir -p "$RUN_DIR/data"
    cat >"$CONFIG_FILE" <<CONFIG
cluster-name = "towerscope-test"
node-name = "towerscope-test"
base-dir = "$RUN_DIR/data"
disable-telemetry = true
listen-mode = "tcp"
bind-address = "127.0.0.1:$NODE_PORT"
advertised-address = "http://127.0.0.1:$NODE_PORT/"
default-num-partitions = 4

[admin]
bind-address = "127.0.0.1:$ADMIN_PORT"

[ingress]
bind-address = "127.0.0.1:$INGRESS_PORT"
CONFIG
    nohup "$(find_server)" --config-file "$CONFIG_FILE" --no-logo </dev/null >"$LOG_FILE" 2>&1 &
    local pid=$!
    echo "$pid" >"$PID_FILE"
    for _ in $(seq 1 600); do # at most 30 s
        answers && break
        kill -0 "$pid" 2>/dev/null || {
            tail -50 "$LOG_FILE" >&2
            rm -f "$PID_FILE"
            die "restate-server exited at start (log above)"
        }
        sleep 0.05
    done
    if ! answers; then
        tail -50 "$LOG_FILE" >&2
        stop_pid_file "$PID_FILE"
        die "restate-server's admin API did not answer on 127.0.0.1:$ADMIN_PORT (log above)"
    fi
    say "ingress 127.0.0.1:$INGRESS_PORT, admin 127.0.0.1:$ADMIN_PORT, PID $pid, data in $RUN_DIR/data"
    print_env
}

register() {
    local uri="${1:?usage: $0 register http://127.0.0.1:PORT}"
    command -v curl >/dev/null 2>&1 || die "curl is needed to register an endpoint"
    curl -fsS -X POST "http://127.0.0.1:$ADMIN_PORT/deployments" \
        -H 'content-type: application/json' \
        -d "{\"uri\": \"$uri\", \"force\": true}" >&2
    echo >&2
}

stop() {
    stop_pid_file "$PID_FILE"
}

case "${1:-start}" in
install) install ;;
start) start ;;
stop) stop ;;
register) register "${2:-}" ;;
env)
    running || die "not running"
    print_env
    ;;
*) die "usage: $0 [install|start|stop|env|register URL]" ;;
esac
