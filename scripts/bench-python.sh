#!/usr/bin/env bash
# Runs the Python reference side of the middleware benchmark:
# benches/python/agentscope_bench.py against AgentScope 2.0.11, in a venv
# under target/bench-python/venv that this script creates on first use.
#
#   bash scripts/bench-python.sh            # full run
#   bash scripts/bench-python.sh --quick    # short run; other args pass through
set -euo pipefail

AGENTSCOPE_VERSION="2.0.11"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/target/bench-python/venv"
PY="$VENV/bin/python"
PIP=("$PY" -m pip --disable-pip-version-check)

installed() {
    "$PY" - "$AGENTSCOPE_VERSION" >/dev/null 2>&1 <<'EOF'
import sys
from importlib.metadata import version
assert version("agentscope") == sys.argv[1]
import agentscope.agent, agentscope.model, agentscope.middleware  # deps present
EOF
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
        cat >&2 <<EOF
error: 'python3 -m venv' failed. Usually this means ensurepip/venv support
is missing from this Python; on Debian/Ubuntu install it with
    apt-get install python3-venv    (or python$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv)
and re-run this script.
EOF
        exit 1
    fi
fi

if ! installed; then
    echo "bench-python: installing agentscope==$AGENTSCOPE_VERSION into $VENV ..."
    start=$SECONDS
    log="$(dirname "$VENV")/pip-install.log"
    if ! "${PIP[@]}" install -q "agentscope==$AGENTSCOPE_VERSION" >"$log" 2>&1; then
        # The 2.0.11 wheel pins certifi>=2026.10.19 (a CA-bundle package);
        # when the registry has no certifi that new, the strict resolve fails.
        # Then install the wheel without deps and its own dependency list
        # (read from its metadata, extras skipped) with only that floor dropped.
        if ! grep -q "certifi" "$log"; then
            cat "$log" >&2; echo "error: pip install failed (log: $log)" >&2; exit 1
        fi
        echo "bench-python: NOTE: strict install failed:"
        grep -m1 "No matching distribution" "$log" | sed 's/^/    /' || true
        echo "bench-python: NOTE: installing agentscope with --no-deps and its" \
             "declared dependencies, certifi unpinned"
        "${PIP[@]}" install -q --no-deps "agentscope==$AGENTSCOPE_VERSION"
        mapfile -t deps < <("$PY" - <<'EOF'
import re
from importlib.metadata import requires
for req in requires("agentscope") or []:
    if "extra ==" in req:
        continue
    print("certifi" if re.match(r"certifi\b", req) else req)
EOF
        )
        # pip then reports the certifi conflict on stderr; it is expected and
        # harmless here (the mock model makes no HTTPS calls), so keep the
        # output in the log unless the install itself fails.
        if ! "${PIP[@]}" install -q "${deps[@]}" >"$log" 2>&1; then
            cat "$log" >&2; echo "error: pip install failed (log: $log)" >&2; exit 1
        fi
        echo "bench-python: NOTE: installed certifi $("$PY" -c \
            'from importlib.metadata import version; print(version("certifi"))')" \
             "(pip flags it as older than the pin; see $log)"
    fi
    installed || { echo "error: agentscope $AGENTSCOPE_VERSION not importable after install" >&2; exit 1; }
    echo "bench-python: install took $((SECONDS - start)) s"
fi

exec "$PY" "$ROOT/benches/python/agentscope_bench.py" "$@"
