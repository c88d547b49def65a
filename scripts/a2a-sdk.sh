#!/usr/bin/env bash
# The official A2A Python SDK (`a2a-sdk`, with its HTTP server extra, and uvicorn to serve the
# SDK's echo agent), installed into a venv under ~/.cache/towerscope/a2a-venv for the A2A tests
# of crates/towerscope-serve (tests/a2a_python.rs runs the SDK's client against our router, and
# our client against the SDK's server). Nothing is started here: the tests start what they need
# on ephemeral loopback ports and stop it by its PID.
#
#   scripts/a2a-sdk.sh     install if needed (idempotent); prints `export ...` lines for eval:
#                          TOWERSCOPE_A2A_PYTHON
#
# Settings (environment): A2A_HOME (default ~/.cache/towerscope).
set -euo pipefail

A2A_SDK_VERSION="1.3.0"
UVICORN_VERSION="0.54.0"
HOME_DIR="${A2A_HOME:-$HOME/.cache/towerscope}"
VENV="$HOME_DIR/a2a-venv"

say() { echo "a2a-sdk: $*" >&2; }
# shellcheck source=lib/venv.sh
. "$(cd "$(dirname "$0")" && pwd)/lib/venv.sh"

mkdir -p "$HOME_DIR"
(
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$HOME_DIR/a2a-install.lock"
        flock 9
    fi
    fresh_venv "$VENV"
    if ! "$VENV/bin/python" - "$A2A_SDK_VERSION" "$UVICORN_VERSION" 2>/dev/null <<'PY'; then
import importlib.metadata as m, sys
sys.exit(m.version("a2a-sdk") != sys.argv[1] or m.version("uvicorn") != sys.argv[2])
PY
        say "installing a2a-sdk[http-server]==$A2A_SDK_VERSION and uvicorn==$UVICORN_VERSION from PyPI"
        "$VENV/bin/pip" install -q --disable-pip-version-check \
            "a2a-sdk[http-server]==$A2A_SDK_VERSION" "uvicorn==$UVICORN_VERSION" >&2
    fi
)
echo "export TOWERSCOPE_A2A_PYTHON=$VENV/bin/python"
