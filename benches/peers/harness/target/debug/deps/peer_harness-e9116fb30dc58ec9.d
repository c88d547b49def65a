/work/main/benches/peers/harness/target/debug/deps/peer_harness-e9116fb30dc58ec9.d: src/lib.rs src/alloc.rs src/calls.rs src/cli.rs src/json.rs src/process.rs src/run.rs src/stats.rs

/work/main/benches/peers/harness/target/debug/deps/libpeer_harness-e9116fb30dc58ec9.rlib: src/lib.rs src/alloc.rs src/calls.rs src/cli.rs src/json.rs src/process.rs src/run.rs src/stats.rs

/work/main/benches/peers/harness/target/debug/deps/libpeer_harness-e9116fb30dc58ec9.rmeta: src/lib.rs src/alloc.rs src/calls.rs src/cli.rs src/json.rs src/process.rs src/run.rs src/stats.rs

src/lib.rs:
src/alloc.rs:
src/calls.rs:
src/cli.rs:
src/json.rs:
src/process.rs:
src/run.rs:
src/stats.rs:
