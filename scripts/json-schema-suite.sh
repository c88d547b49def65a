#!/usr/bin/env bash
# Fetches the official JSON-Schema-Test-Suite's draft 2020-12 cases and prints their directory.
#
# The suite ships inside the source distribution of Python's `jsonschema` (json/tests/), so it
# comes from the Python package index through pip, like any other package, and is cached under
# ~/.cache/towerscope/. Run the cases with:
#
#   JSON_SCHEMA_SUITE_DIR="$(scripts/json-schema-suite.sh)" TOWERSCOPE_REQUIRE_SUITE=1 \
#       cargo test -p towerscope-agent --test json_schema_suite -- --nocapture
set -euo pipefail

version=4.26.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/towerscope/json-schema-suite-jsonschema-$version"
suite="$cache/draft2020-12"

if [ ! -f "$suite/type.json" ]; then
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    python3 -m pip download --quiet --no-deps --no-binary :all: "jsonschema==$version" -d "$tmp" >&2
    archive="$(find "$tmp" -maxdepth 1 -name "jsonschema-$version.tar.gz" | head -n 1)"
    if [ -z "$archive" ]; then
        echo "json-schema-suite.sh: pip did not download jsonschema-$version.tar.gz" >&2
        exit 1
    fi
    tar -xzf "$archive" -C "$tmp" "jsonschema-$version/json/tests/draft2020-12"
    mkdir -p "$cache"
    rm -rf "$suite"
    mv "$tmp/jsonschema-$version/json/tests/draft2020-12" "$suite"
fi
echo "$suite"
