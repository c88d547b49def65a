#!/usr/bin/env bash
# What CI's builds take of the disk: runs the cargo builds of `.ci/run` and `scripts/test.sh`
# (building only, no test is run and no server started) in a fresh clone of this checkout's
# HEAD, and prints the size of its `target/` and the time of each step.
#
#     scripts/ci-footprint.sh [DIR]     # DIR: where to clone (default: a new temporary folder)
#
# The clone is left in place for a look at what takes the room; remove it afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${1:-$(mktemp -d -t towerscope-footprint.XXXXXX)}"
if [ -e "$dir/.git" ]; then
    echo "ci-footprint: $dir already holds a checkout; give an empty folder" >&2
    exit 2
fi
git clone --quiet . "$dir"
cd "$dir"
export CARGO_TERM_COLOR=never CARGO_INCREMENTAL=0

step() {
    local name=$1
    shift
    local start
    start=$(date +%s)
    if ! "$@" >"target-$name.log" 2>&1; then
        echo "ci-footprint: step $name failed; see $dir/target-$name.log" >&2
        exit 1
    fi
    printf '%-16s %5ss  target/ %6s MB\n' "$name" "$(($(date +%s) - start))" "$(du -sm target | cut -f1)"
}

echo "ci-footprint: in $dir"
step default cargo test --workspace --no-run
step clippy cargo clippy --workspace --all-targets --all-features -- -D warnings
step doc env RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --all-features
step suite cargo nextest run --workspace --all-features -E 'not binary(soak)' --no-run
step soak cargo nextest run --workspace --all-features -E 'binary(soak)' --no-run
du -sm target/debug/* | sort -n | tail -4
