#!/usr/bin/env bash
# The web clients of the serve tests, installed once: the official AG-UI client
# (`@ag-ui/client`, npm) and `playwright-core` (npm, no browser download) into
# ~/.cache/towerscope/web-clients, and Debian's `chromium` for the chat-page test.
#
#   scripts/web-clients.sh    install if needed (idempotent, under a lock); prints `export ...`
#                             lines for eval: TOWERSCOPE_NODE_MODULES, TOWERSCOPE_CHROMIUM
#
# Settings (environment): WEB_CLIENTS_HOME (default ~/.cache/towerscope).
set -euo pipefail

AGUI_CLIENT_VERSION="1.0.0"
PLAYWRIGHT_CORE_VERSION="1.65.1"
HOME_DIR="${WEB_CLIENTS_HOME:-$HOME/.cache/towerscope}"
DIR="$HOME_DIR/web-clients"

say() { echo "web-clients: $*" >&2; }

installed() {
    node -e "
      const v = (p) => require('$DIR/node_modules/' + p + '/package.json').version;
      process.exit(v('@ag-ui/client') === '$AGUI_CLIENT_VERSION' && v('playwright-core') === '$PLAYWRIGHT_CORE_VERSION' ? 0 : 1);
    " 2>/dev/null
}

mkdir -p "$DIR"
(
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$HOME_DIR/web-clients-install.lock"
        flock 9
    fi
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        say "installing node and npm (Debian packages)"
        apt-get update -qq >&2 && apt-get install -y -qq nodejs npm >&2
    fi
    if ! installed; then
        say "installing @ag-ui/client@$AGUI_CLIENT_VERSION and playwright-core@$PLAYWRIGHT_CORE_VERSION into $DIR"
        [ -f "$DIR/package.json" ] || echo '{"name": "towerscope-web-clients", "private": true}' >"$DIR/package.json"
        # playwright-core never downloads a browser; the tests use Debian's chromium.
        PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$DIR" --no-audit --no-fund --silent \
            "@ag-ui/client@$AGUI_CLIENT_VERSION" "playwright-core@$PLAYWRIGHT_CORE_VERSION" >&2
    fi
    if ! command -v chromium >/dev/null 2>&1; then
        say "installing chromium (Debian package)"
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
    fi
)
installed || { say "the npm packages did not install"; exit 1; }
echo "export TOWERSCOPE_NODE_MODULES=$DIR/node_modules"
echo "export TOWERSCOPE_CHROMIUM=$(command -v chromium)"
