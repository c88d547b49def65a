# Sourced by the scripts that install Python packages for the tests and benches; `say` is the
# sourcing script's.

# Makes the venv $1 with the Python $2 (default python3) unless it is whole: a venv whose
# creation failed half-way (ensurepip missing: `bin/python` but no `bin/pip`) is made again,
# not trusted for good.
fresh_venv() {
    local venv="$1" python="${2:-python3}"
    [ -x "$venv/bin/pip" ] && return 0
    rm -rf "$venv"
    say "creating a venv in $venv"
    "$python" -m venv "$venv" >&2
}
