#!/usr/bin/env bash
# A real Redis for the session-store and shared-rate-limit tests and benches: redis-server (the
# Debian package; installed with apt-get when missing and running as root), on loopback only,
# with no persistence (no RDB snapshots, no AOF): nothing is written to disk.
#
#   scripts/redis-server.sh start   install if needed, start, wait until it answers;
#                                   prints `export ...` lines for eval:
#                                   TOWERSCOPE_REDIS_URL, TOWERSCOPE_REDIS_SERVER, REDIS_SERVER_PID
#   scripts/redis-server.sh stop    stop the server by the PID recorded at start
#   scripts/redis-server.sh env     print the `export ...` lines of a running server
#
#   eval "$(scripts/redis-server.sh start)"; trap 'scripts/redis-server.sh stop' EXIT
#
# TOWERSCOPE_REDIS_SERVER is the redis-server binary: the tests that restart a server start
# their own on another port with it.
#
# Settings (environment):
#   REDIS_PORT      listening port on 127.0.0.1 (default 16379)
#   REDIS_RUN_DIR   PID and log of this instance (default target/redis-server)
# Messages go to stderr.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PORT="${REDIS_PORT:-16379}"
RUN_DIR="${REDIS_RUN_DIR:-$ROOT/target/redis-server}"
PID_FILE="$RUN_DIR/redis.pid"
LOG_FILE="$RUN_DIR/redis.log"

say() { echo "redis-server: $*" >&2; }
# shellcheck source=lib/pid.sh
. "$ROOT/scripts/lib/pid.sh"
die() {
    say "$*"
    exit 1
}

find_server() {
    command -v redis-server 2>/dev/null || { [ -x /usr/bin/redis-server ] && echo /usr/bin/redis-server; }
}

install() {
    find_server >/dev/null && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "redis-server not found; installing the Debian package with apt-get"
        (
            # One installer at a time (parallel runs share the machine).
            mkdir -p "$RUN_DIR"
            if command -v flock >/dev/null 2>&1; then
                exec 9>"$RUN_DIR/install.lock"
                flock 9
            fi
            find_server >/dev/null && exit 0
            apt-get update -qq >&2
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >&2
        )
    fi
    find_server >/dev/null || die "redis-server is not installed; install the Debian package redis-server (apt-get install -y redis-server)"
}

print_env() {
    echo "export TOWERSCOPE_REDIS_URL=redis://127.0.0.1:$PORT/"
    echo "export TOWERSCOPE_REDIS_SERVER=$(find_server)"
    echo "export REDIS_SERVER_PID=$(cat "$PID_FILE")"
}

running() {
    pid_file_alive "$PID_FILE"
}


answers() {
    # A PING over bash's /dev/tcp: no redis-cli needed.
    local reply
    reply="$({ exec 3<>"/dev/tcp/127.0.0.1/$PORT" && printf 'PING\r\n' >&3 && timeout 1 head -c 7 <&3; } 2>/dev/null)" || return 1
    [ "${reply%$'\r'}" = "+PONG" ]
}

start() {
    if running; then
        say "already running (PID $(cat "$PID_FILE"))"
        print_env
        return 0
    fi
    install
    port_open "$PORT" && die "127.0.0.1:$PORT is already in use; set REDIS_PORT, or stop what listens there"
    mkdir -p "$RUN_DIR"
    nohup "$(find_server)" \
        --bind 127.0.0.1 \
        --port "$PORT" \
        --save '' \
        --appendonly no \
        --dir "$RUN_DIR" \
        --daemonize no \
        --protected-mode yes \
        </dev/null >"$LOG_FILE" 2>&1 &
    local pid=$!
    echo "$pid" >"$PID_FILE"
    for _ in $(seq 1 200); do # at most 10 s
        answers && break
        kill -0 "$pid" 2>/dev/null || {
            cat "$LOG_FILE" >&2
            rm -f "$PID_FILE"
            die "redis-server exited at start (log above)"
        }
        sleep 0.05
    done
    if ! answers; then
        cat "$LOG_FILE" >&2
        kill -TERM "$pid" 2>/dev/null || true
        rm -f "$PID_FILE"
        die "redis-server did not answer on 127.0.0.1:$PORT (log above)"
    fi
    say "listening on 127.0.0.1:$PORT, PID $pid, no persistence"
    print_env
}

stop() {
    stop_pid_file "$PID_FILE"
}

case "${1:-start}" in
start) start ;;
stop) stop ;;
env)
    running || die "not running"
    print_env
    ;;
*) die "usage: $0 [start|stop|env]" ;;
esac
