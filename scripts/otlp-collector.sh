#!/usr/bin/env bash
# A real OpenTelemetry collector for the tracing tests and the otlp_tracing example: rotel
# (PyPI `rotel==0.0.1a15`), on loopback only, writing every span it receives as one JSON line to
# $SPANS_JSONL (processor: tests/otlp/dump_spans.py). Nothing is forwarded anywhere.
#
#   scripts/otlp-collector.sh start   install if needed (idempotent), start, wait for the ports;
#                                     prints `export ...` lines for eval:
#                                     TOWERSCOPE_OTLP_ENDPOINT, SPANS_JSONL, OTLP_COLLECTOR_PID
#   scripts/otlp-collector.sh stop    stop the collector by the PID recorded at start
#   scripts/otlp-collector.sh env     print the `export ...` lines of a running collector
#   scripts/otlp-collector.sh tree [-a]   print the received spans as trees (-a: with attributes)
#
#   eval "$(scripts/otlp-collector.sh start)"; trap 'scripts/otlp-collector.sh stop' EXIT
#
# Settings (environment):
#   OTLP_HTTP_PORT / OTLP_GRPC_PORT   listening ports on 127.0.0.1 (default 14318 / 14317)
#   OTLP_HOME                         the venv and default run folder (default target/otlp-rotel)
#   OTLP_RUN_DIR                      PID, log and spans of this instance (default $OTLP_HOME/run)
#   SPANS_JSONL                       where spans go (default $OTLP_RUN_DIR/spans.jsonl)
#
# rotel's binary links libpython3.11, so the venv is made with Python 3.11 (`python3.11` on the
# PATH, /usr/bin/python3.11, or a `python3` that is 3.11). Messages go to stderr.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ROTEL_VERSION="0.0.1a15"
HTTP_PORT="${OTLP_HTTP_PORT:-14318}"
GRPC_PORT="${OTLP_GRPC_PORT:-14317}"
OTLP_HOME="${OTLP_HOME:-$ROOT/target/otlp-rotel}"
RUN_DIR="${OTLP_RUN_DIR:-$OTLP_HOME/run}"
SPANS="${SPANS_JSONL:-$RUN_DIR/spans.jsonl}"
VENV="$OTLP_HOME/venv"
PID_FILE="$RUN_DIR/rotel.pid"
LOG_FILE="$RUN_DIR/rotel.log"
PROCESSOR="$ROOT/tests/otlp/dump_spans.py"

say() { echo "otlp-collector: $*" >&2; }
# shellcheck source=lib/pid.sh
. "$ROOT/scripts/lib/pid.sh"
# shellcheck source=lib/venv.sh
. "$ROOT/scripts/lib/venv.sh"
die() {
    say "$*"
    exit 1
}

find_python311() {
    local candidate
    for candidate in python3.11 /usr/bin/python3.11 python3; do
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
            command -v "$candidate"
            return 0
        fi
    done
    return 1
}

install_python311_with_apt() {
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "no Python 3.11 found; installing python3.11, python3.11-venv and libpython3.11 with apt-get"
        apt-get update -qq >&2 && apt-get install -y -qq python3.11 python3.11-venv libpython3.11 >&2
    else
        return 1
    fi
}

install() {
    mkdir -p "$OTLP_HOME"
    local python
    python="$(find_python311)" || { install_python311_with_apt && python="$(find_python311)"; } ||
        die "rotel needs Python 3.11 (its binary links libpython3.11); install python3.11 and python3.11-venv"
    (
        # One installer at a time (parallel test runs share the venv).
        if command -v flock >/dev/null 2>&1; then
            exec 9>"$OTLP_HOME/install.lock"
            flock 9
        fi
        fresh_venv "$VENV" "$python"
        if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('rotel') != '$ROTEL_VERSION')" 2>/dev/null; then
            say "installing rotel==$ROTEL_VERSION from PyPI"
            "$VENV/bin/pip" install -q --disable-pip-version-check "rotel==$ROTEL_VERSION" >&2
        fi
    )
    ROTEL="$("$VENV/bin/python" -c 'import pathlib, rotel; print(pathlib.Path(rotel.__file__).parent / "rotel-agent")')"
    [ -x "$ROTEL" ] || die "rotel-agent not found in the rotel wheel ($ROTEL)"
    if command -v ldd >/dev/null 2>&1 && ldd "$ROTEL" | grep -q 'not found'; then
        install_python311_with_apt || true
        ldd "$ROTEL" | grep -q 'not found' &&
            die "rotel-agent is missing libraries: $(ldd "$ROTEL" | grep 'not found' | tr -s ' \t' ' '); install libpython3.11"
    fi
}

print_env() {
    echo "export TOWERSCOPE_OTLP_ENDPOINT=http://127.0.0.1:$HTTP_PORT"
    echo "export TOWERSCOPE_OTLP_GRPC_ENDPOINT=http://127.0.0.1:$GRPC_PORT"
    echo "export SPANS_JSONL=$SPANS"
    echo "export OTLP_COLLECTOR_PID=$(cat "$PID_FILE")"
}

running() {
    pid_file_alive "$PID_FILE"
}


start() {
    if running; then
        say "already running (PID $(cat "$PID_FILE"))"
        print_env
        return 0
    fi
    [ -f "$PROCESSOR" ] || die "missing the span processor $PROCESSOR"
    install
    for port in "$HTTP_PORT" "$GRPC_PORT"; do
        port_open "$port" && die "127.0.0.1:$port is already in use; set OTLP_HTTP_PORT / OTLP_GRPC_PORT, or stop what listens there"
    done
    mkdir -p "$RUN_DIR" "$(dirname "$SPANS")"
    : >"$SPANS"
    SPANS_JSONL="$SPANS" nohup "$ROTEL" start \
        --otlp-http-endpoint "127.0.0.1:$HTTP_PORT" \
        --otlp-grpc-endpoint "127.0.0.1:$GRPC_PORT" \
        --exporter blackhole \
        --disable-batching \
        --otlp-with-trace-processor "$PROCESSOR" \
        </dev/null >"$LOG_FILE" 2>&1 &
    local pid=$!
    echo "$pid" >"$PID_FILE"
    for _ in $(seq 1 200); do # at most 10 s
        if port_open "$HTTP_PORT" && port_open "$GRPC_PORT"; then
            break
        fi
        kill -0 "$pid" 2>/dev/null || {
            cat "$LOG_FILE" >&2
            rm -f "$PID_FILE"
            die "rotel exited at start (log above)"
        }
        sleep 0.05
    done
    if ! kill -0 "$pid" 2>/dev/null || ! port_open "$HTTP_PORT"; then
        cat "$LOG_FILE" >&2
        kill -TERM "$pid" 2>/dev/null || true
        rm -f "$PID_FILE"
        die "rotel did not come up on 127.0.0.1:$HTTP_PORT (log above)"
    fi
    say "rotel listening on 127.0.0.1:$HTTP_PORT (http) and 127.0.0.1:$GRPC_PORT (grpc), PID $pid, spans to $SPANS"
    print_env
}

stop() {
    stop_pid_file "$PID_FILE"
}

tree() {
    [ -f "$SPANS" ] || die "no spans file at $SPANS"
    local python
    python="$(command -v python3 || true)"
    [ -x "$VENV/bin/python" ] && python="$VENV/bin/python"
    [ -n "$python" ] || die "python3 is needed to print the tree"
    "$python" - "$SPANS" "${1:-}" <<'PY'
import json, sys
spans = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
show_attrs = sys.argv[2] == "-a"
kinds = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
codes = {0: "UNSET", 1: "OK", 2: "ERROR"}
ids = {s["span_id"] for s in spans}
children = {}
for s in sorted(spans, key=lambda s: s.get("start_time_unix_nano", 0)):
    children.setdefault(s["parent_span_id"] if s["parent_span_id"] in ids else "", []).append(s)
def show(span, prefix, last, root):
    ms = (span["end_time_unix_nano"] - span["start_time_unix_nano"]) / 1e6
    status = codes.get(span["status"]["code"], span["status"]["code"])
    branch = "" if root else ("└─ " if last else "├─ ")
    print(f"{prefix}{branch}{span['name']}  [{kinds.get(span['kind'], span['kind'])}, {status}, {ms:.2f} ms]")
    inner = prefix + ("" if root else ("   " if last else "│  "))
    if show_attrs:
        for key, value in span["attributes"].items():
            print(f"{inner}{'│  ' if children.get(span['span_id']) else '   '}  {key} = {json.dumps(value, ensure_ascii=False)}")
    kids = children.get(span["span_id"], [])
    for i, kid in enumerate(kids):
        show(kid, inner, i == len(kids) - 1, False)
for root in children.get("", []):
    print(f"trace {root['trace_id']}  (service {root['resource'].get('service.name', '?')})")
    show(root, "", True, True)
    print()
PY
}

case "${1:-start}" in
start) start ;;
stop) stop ;;
tree) tree "${2:-}" ;;
env)
    running || die "not running"
    print_env
    ;;
*) die "usage: $0 [start|stop|env]" ;;
esac
