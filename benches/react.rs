//! One ReAct reply, end to end: 4 model calls and 3 `add(a, b)` tool calls on the scripted model,
//! with 0, 1, 5 and 10 pass-through middlewares installed on every position (the reference's
//! benchmark scenario; `scripts/bench-python.sh` runs the same scenario on AgentScope 2.0.11).
//!
//! ```sh
//! cargo bench --bench react
//! ```
//!
//! - `react/whole/N` and `react/streamed/N`: N middlewares, each a [`Middleware`] bundle hooking
//!   all six onion positions and the system-prompt fold with pass-through tower layers, installed
//!   one by one (each erased at build time).
//! - `react/composed/N`: the same N pass-through layers per position composed with a
//!   `ServiceBuilder` and installed once per position (erased once).
//! - `react/events/N`: the whole answers of `react/whole/N`, read with `reply_stream` (every
//!   event built and read; `Agent::reply` skips them when nobody can read them).
//! - `react/first_layer/P`: one pass-through layer on position P only (a pass-through
//!   transformer for `system_prompt`): what the first layer of each position costs.
//! - `react/quiet/N` and `react/first_layer/quiet_reply`, `.../quiet_reasoning`: the same
//!   pass-throughs from middlewares that say they read no events (`Middleware::reads_events`),
//!   so `Agent::reply` builds none.
//!
//! The agent is reused; its state is reset before each reply (a fresh session, as the reference
//! benchmark does).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use towerscope::agent::{Agent, AgentBuilder, AgentState};
use towerscope::{Msg, prompt_map};

#[path = "support/mod.rs"]
mod support;

use support::{FullPassThrough, PassThroughLayer, QuietLayer, QuietPassThrough, add_tool, script};

fn builder(streamed: bool) -> AgentBuilder {
    Agent::builder("bench")
        .system_prompt("You are a calculator.")
        .model(script(streamed))
        .tool(add_tool())
}

fn agent(streamed: bool, middlewares: usize) -> Agent {
    let mut b = builder(streamed);
    for _ in 0..middlewares {
        b = b.middleware(FullPassThrough);
    }
    b.build().expect("the bench agent builds")
}

fn quiet_agent(middlewares: usize) -> Agent {
    let mut b = builder(false);
    for _ in 0..middlewares {
        b = b.middleware(QuietPassThrough);
    }
    b.build().expect("the bench agent builds")
}

/// One layer per position made of ten pass-throughs composed with `ServiceBuilder`: erased once
/// per position instead of once per middleware.
fn composed_agent() -> Agent {
    support::composed(builder(false), false)
        .build()
        .expect("the bench agent builds")
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let mut group = c.benchmark_group("react");
    group.warm_up_time(std::time::Duration::from_millis(500));
    group.measurement_time(std::time::Duration::from_secs(3));
    group.sample_size(40);
    let input = Msg::user("user", "What is 1+2, 3+4 and 5+6?");
    let run = |group: &mut criterion::BenchmarkGroup<'_, _>, id: BenchmarkId, agent: Agent| {
        let state = AgentState::new();
        // Check the scenario once: 4 model calls, 3 tool results, "done".
        let msg = rt
            .block_on(agent.reply(input.clone()))
            .expect("the bench reply succeeds");
        assert_eq!(msg.text_content().as_deref(), Some("done"));
        let results = agent.state().context.iter().flat_map(|m| m.tool_results()).count();
        assert_eq!(results, 3);
        group.bench_function(id, |b| {
            b.to_async(&rt).iter(|| {
                agent.load_state(state.clone()).expect("idle agent");
                let reply = agent.reply(input.clone());
                async move { black_box(reply.await.expect("reply")) }
            })
        });
    };
    for n in [0, 1, 5, 10] {
        run(&mut group, BenchmarkId::new("whole", n), agent(false, n));
    }
    for n in [1, 10] {
        run(&mut group, BenchmarkId::new("quiet", n), quiet_agent(n));
    }
    for n in [0, 10] {
        run(&mut group, BenchmarkId::new("streamed", n), agent(true, n));
    }
    run(&mut group, BenchmarkId::new("composed", 10), composed_agent());
    // One pass-through layer on one position: what the first layer of each position costs.
    let one = |position: &str| {
        let b = builder(false);
        match position {
            "reply" => b.on_reply(PassThroughLayer),
            "reasoning" => b.on_reasoning(PassThroughLayer),
            "model_call" => b.on_model_call(PassThroughLayer),
            "acting" => b.on_acting(PassThroughLayer),
            "permission" => b.on_check_permission(PassThroughLayer),
            "compress" => b.on_compress_context(PassThroughLayer),
            "quiet_reply" => b.middleware(QuietLayer::Reply),
            "quiet_reasoning" => b.middleware(QuietLayer::Reasoning),
            _ => b.on_system_prompt(prompt_map(|_ctx, prompt| Ok(prompt))),
        }
        .build()
        .expect("the bench agent builds")
    };
    for position in [
        "reply",
        "reasoning",
        "model_call",
        "acting",
        "permission",
        "compress",
        "system_prompt",
        "quiet_reply",
        "quiet_reasoning",
    ] {
        run(&mut group, BenchmarkId::new("first_layer", position), one(position));
    }
    // The same reply read as a stream: every event is built and read (`reply` builds none
    // when no on_reply/on_reasoning layer can read them).
    for n in [0, 10] {
        let agent = agent(false, n);
        let state = AgentState::new();
        group.bench_function(BenchmarkId::new("events", n), |b| {
            b.to_async(&rt).iter(|| {
                agent.load_state(state.clone()).expect("idle agent");
                let mut stream = agent.reply_stream(input.clone());
                async move {
                    let mut items = 0usize;
                    while let Some(item) = futures_util::StreamExt::next(&mut stream).await {
                        black_box(item.expect("reply"));
                        items += 1;
                    }
                    items
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
