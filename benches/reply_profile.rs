//! Allocations and bytes per reply of the headline scenario (one reply: 4 model calls, 3 `add`
//! tool calls, scripted model), counted by `stats_alloc`'s instrumented allocator; also the binary to run
//! under `valgrind --tool=callgrind` for instruction counts (they do not depend on the load of
//! the machine).
//!
//! ```sh
//! cargo bench --bench reply_profile                       # allocations per reply
//! cargo bench --bench reply_profile --no-run              # then, for instructions:
//! valgrind --tool=callgrind target/release/deps/reply_profile-* --replies 1000
//! ```
//!
//! Arguments: `--replies N` (default 2000), `--middlewares M` (pass-through middlewares on
//! every position, default 0), `--first-layer P` (one pass-through layer on the position P only:
//! `reply`, `reasoning`, `model_call`, `acting`, `permission`, `compress`, `system_prompt`, as
//! `react/first_layer/P`; `quiet_reply`, `quiet_reasoning`: from a middleware that reads no
//! events), `--quiet` (the `--middlewares` say they read no events), `--streamed`, `--stream-reader` (read the event stream instead of
//! `Agent::reply`), `--no-hints` (runtime-state hints off; they are on by default, and each
//! reply of this scenario starts from a fresh state, so each is a first reply that tells the
//! time), `--fresh` (each reply on a newly built agent with its own model and tool, as the peer
//! scenario's many replies; the build is counted too), `--build-only` (with `--fresh`: only
//! the builds, so that `--fresh` minus `--build-only` is the cost of an agent's first reply),
//! `--composed` (ten pass-through layers per onion position composed with `ServiceBuilder`, and
//! ten pass-through prompt transformers; `--no-prompt` leaves the transformers out),
//! `--idle N` (instead: the bytes N idle agents hold, sharing one model and one toolkit, as a
//! service holding many conversations does).

use std::alloc::System;

use futures_util::StreamExt;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use towerscope::Msg;
use towerscope::agent::{Agent, AgentState};
use towerscope::models::{ScriptedModel, ScriptedResponse};

#[path = "support/mod.rs"]
mod support;

use support::{FullPassThrough, PassThroughLayer, QuietLayer, QuietPassThrough, add_tool, script};

#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn flag(name: &str) -> bool {
    std::env::args().any(|a| a == name)
}

fn idle(count: usize) {
    let model = ScriptedModel::cycle("scripted", [ScriptedResponse::text("done")]);
    let mut toolkit = towerscope::agent::toolkit::Toolkit::new();
    toolkit.add(add_tool());
    let toolkit = std::sync::Arc::new(toolkit);
    let model: towerscope::ModelRef = std::sync::Arc::new(model);
    let region = Region::new(ALLOCATOR);
    let agents: Vec<Agent> = (0..count)
        .map(|_| {
            Agent::builder("bench")
                .system_prompt("You are a calculator.")
                .model_ref(std::sync::Arc::clone(&model))
                .toolkit_ref(std::sync::Arc::clone(&toolkit))
                .build()
                .expect("the agent builds")
        })
        .collect();
    let stats = region.change();
    let live = stats.bytes_allocated as f64 - stats.bytes_deallocated as f64;
    println!("idle_agents={count} bytes_per_idle_agent={:.0}", live / count as f64);
    drop(agents);
}

/// Bytes held by the parts of one agent that owns its model and tool (no sharing).
fn idle_own(count: usize) {
    let measure = |what: &str, f: &mut dyn FnMut() -> Box<dyn std::any::Any>| {
        let region = Region::new(ALLOCATOR);
        let held: Vec<_> = (0..count).map(|_| f()).collect();
        let stats = region.change();
        println!(
            "{what}: {:.0} bytes",
            (stats.bytes_allocated as f64 - stats.bytes_deallocated as f64) / count as f64
        );
        drop(held);
    };
    measure("scripted model (4 answers)", &mut || Box::new(script(false)));
    measure("function tool", &mut || Box::new(add_tool()));
    measure("toolkit with the tool", &mut || {
        let mut toolkit = towerscope::agent::toolkit::Toolkit::new();
        toolkit.add(add_tool());
        Box::new(toolkit)
    });
    measure("agent with its own model and tool", &mut || {
        Box::new(
            Agent::builder("bench")
                .system_prompt("You are a calculator.")
                .model(ScriptedModel::cycle("scripted", [ScriptedResponse::text("done")]))
                .tool(add_tool())
                .build()
                .expect("the agent builds"),
        )
    });
}

/// What the agent is built with, read from the arguments once (a build under `--fresh` must not
/// count the arguments' allocations).
struct Setup {
    streamed: bool,
    middlewares: usize,
    quiet: bool,
    first_layer: Option<String>,
    composed: bool,
    hints: bool,
}

/// The agent `setup` asks for, with its own model and tool (`--fresh` builds one per reply, as
/// the peer scenario's many replies do).
fn build_agent(setup: &Setup) -> Agent {
    let mut builder = Agent::builder("bench")
        .system_prompt("You are a calculator.")
        .model(script(setup.streamed))
        .tool(add_tool());
    for _ in 0..setup.middlewares {
        builder = if setup.quiet {
            builder.middleware(QuietPassThrough)
        } else {
            builder.middleware(FullPassThrough)
        };
    }
    builder = match setup.first_layer.as_deref() {
        None => builder,
        Some("reply") => builder.on_reply(PassThroughLayer),
        Some("reasoning") => builder.on_reasoning(PassThroughLayer),
        Some("model_call") => builder.on_model_call(PassThroughLayer),
        Some("acting") => builder.on_acting(PassThroughLayer),
        Some("permission") => builder.on_check_permission(PassThroughLayer),
        Some("compress") => builder.on_compress_context(PassThroughLayer),
        Some("quiet_reply") => builder.middleware(QuietLayer::Reply),
        Some("quiet_reasoning") => builder.middleware(QuietLayer::Reasoning),
        Some("system_prompt") => builder.on_system_prompt(towerscope::prompt_map(|_ctx, prompt| Ok(prompt))),
        Some(other) => panic!("--first-layer {other}: not a position"),
    };
    if setup.composed {
        builder = support::composed(builder, !flag("--no-prompt"));
    }
    if !setup.hints {
        builder = builder.hints(towerscope::agent::HintConfig::disabled());
    }
    builder.build().expect("the agent builds")
}

fn main() {
    if let Some(count) = arg("--idle").and_then(|n| n.parse().ok()) {
        return idle(count);
    }
    if let Some(count) = arg("--idle-own").and_then(|n| n.parse().ok()) {
        return idle_own(count);
    }
    let replies: u64 = arg("--replies").and_then(|n| n.parse().ok()).unwrap_or(2000);
    let setup = Setup {
        streamed: flag("--streamed"),
        middlewares: arg("--middlewares").and_then(|n| n.parse().ok()).unwrap_or(0),
        quiet: flag("--quiet"),
        first_layer: arg("--first-layer"),
        composed: flag("--composed"),
        hints: !flag("--no-hints"),
    };
    let read_stream = flag("--stream-reader");
    let fresh = flag("--fresh");
    let build_only = flag("--build-only");
    let agent = build_agent(&setup);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let input = Msg::user("user", "What is 1+2, 3+4 and 5+6?");
    let state = AgentState::new();
    let one = |agent: &Agent| {
        let built;
        let agent = if fresh {
            built = build_agent(&setup);
            if build_only {
                return;
            }
            &built
        } else {
            agent
        };
        agent.load_state(state.clone()).expect("idle");
        rt.block_on(async {
            if read_stream {
                let mut stream = agent.reply_stream(input.clone());
                let mut last = None;
                while let Some(item) = stream.next().await {
                    last = Some(item.expect("reply"));
                }
                assert!(last.and_then(|i| i.as_final().cloned()).is_some());
            } else {
                let msg = agent.reply(input.clone()).await.expect("reply");
                assert_eq!(msg.text_content().as_deref(), Some("done"));
            }
        });
    };
    for _ in 0..100 {
        one(&agent);
    }
    let region = Region::new(ALLOCATOR);
    for _ in 0..replies {
        one(&agent);
    }
    let stats = region.change();
    println!(
        "replies={replies} middlewares={} quiet={} first_layer={} streamed={} stream_reader={read_stream} hints={} \
         fresh={fresh} allocs_per_reply={:.1} bytes_per_reply={:.0}",
        setup.middlewares,
        setup.quiet,
        setup.first_layer.as_deref().unwrap_or("-"),
        setup.streamed,
        setup.hints,
        (stats.allocations + stats.reallocations) as f64 / replies as f64,
        stats.bytes_allocated as f64 / replies as f64
    );
}
