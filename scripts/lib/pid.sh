# Sourced by the scripts that start a server for the tests (otlp-collector.sh, mcp-server.sh,
# redis-server.sh, llm-server.sh, restate-server.sh); `say` is the sourcing script's.

# Stops the process whose PID is in the file $1: TERM, then KILL after 5 s; removes the file.
stop_pid_file() {
    local file="$1" pid
    [ -f "$file" ] || return 0
    pid="$(cat "$file")"
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.05
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
        say "stopped (PID $pid)"
    fi
    rm -f "$file"
}

# Whether the process whose PID is in the file $1 is alive.
pid_file_alive() {
    [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# Whether something accepts connections on 127.0.0.1:$1 (bash's /dev/tcp: no client needed).
port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
