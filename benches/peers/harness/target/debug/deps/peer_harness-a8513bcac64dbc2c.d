/work/main/benches/peers/harness/target/debug/deps/peer_harness-a8513bcac64dbc2c.d: src/lib.rs src/alloc.rs src/calls.rs src/cli.rs src/json.rs src/process.rs src/run.rs src/stats.rs

/work/main/benches/peers/harness/target/debug/deps/peer_harness-a8513bcac64dbc2c: src/lib.rs src/alloc.rs src/calls.rs src/cli.rs src/json.rs src/process.rs src/run.rs src/stats.rs

src/lib.rs:
src/alloc.rs:
src/calls.rs:
src/cli.rs:
src/json.rs:
src/process.rs:
src/run.rs:
src/stats.rs:
