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
//! every position, default 0), `--streamed`, `--stream-reader` (read the event stream instead of
//! `Agent::reply`), `--no-hints` (runtime-state hints off; they are on by default, and each
//! reply of this scenario starts from a fresh state, so each is a first reply that tells the
//! time), `--idle N` (instead: the bytes N idle agents hold, sharing one model and one
//! toolkit, as a service holding many conversations does).

use std::alloc::System;
use std::task::{Context, Poll};

use futures_util::StreamExt;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tower::{Layer, Service};
use towerscope::agent::toolkit::FunctionTool;
use towerscope::agent::{Agent, AgentState};
use towerscope::models::{ScriptedModel, ScriptedResponse};
use towerscope::{
    ActingLayer, CompressLayer, ErasedLayer, Middleware, ModelCallLayer, Msg, PermissionLayer, ReasoningLayer,
    ReplyLayer,
};

#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Add two integers.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    /// First operand.
    a: i64,
    /// Second operand.
    b: i64,
}

#[derive(Clone, Copy, Debug, Default)]
struct PassThroughLayer;

impl<S> Layer<S> for PassThroughLayer {
    type Service = PassThrough<S>;

    fn layer(&self, inner: S) -> PassThrough<S> {
        PassThrough(inner)
    }
}

#[derive(Clone, Debug)]
struct PassThrough<S>(S);

impl<S: Service<R>, R> Service<R> for PassThrough<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> S::Future {
        self.0.call(req)
    }
}

struct FullPassThrough;

impl Middleware for FullPassThrough {
    fn on_reply(&self) -> Option<ReplyLayer> {
        Some(ErasedLayer::new(PassThroughLayer))
    }
    fn on_reasoning(&self) -> Option<ReasoningLayer> {
        Some(ErasedLayer::new(PassThroughLayer))
    }
    fn on_model_call(&self) -> Option<ModelCallLayer> {
        Some(ErasedLayer::new(PassThroughLayer))
    }
    fn on_acting(&self) -> Option<ActingLayer> {
        Some(ErasedLayer::new(PassThroughLayer))
    }
    fn on_check_permission(&self) -> Option<PermissionLayer> {
        Some(ErasedLayer::new(PassThroughLayer))
    }
    fn on_compress_context(&self) -> Option<CompressLayer> {
        Some(ErasedLayer::new(PassThroughLayer))
    }
}

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
    toolkit.add(FunctionTool::new("add", |args: Add| async move {
        (args.a + args.b).to_string()
    }));
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
    measure("scripted model (4 answers)", &mut || {
        Box::new(ScriptedModel::cycle(
            "scripted",
            [
                ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
                ScriptedResponse::tool_call("c2", "add", r#"{"a": 3, "b": 4}"#),
                ScriptedResponse::tool_call("c3", "add", r#"{"a": 5, "b": 6}"#),
                ScriptedResponse::text("done"),
            ],
        ))
    });
    measure("function tool", &mut || {
        Box::new(FunctionTool::new("add", |args: Add| async move {
            (args.a + args.b).to_string()
        }))
    });
    measure("toolkit with the tool", &mut || {
        let mut toolkit = towerscope::agent::toolkit::Toolkit::new();
        toolkit.add(FunctionTool::new("add", |args: Add| async move {
            (args.a + args.b).to_string()
        }));
        Box::new(toolkit)
    });
    measure("agent with its own model and tool", &mut || {
        Box::new(
            Agent::builder("bench")
                .system_prompt("You are a calculator.")
                .model(ScriptedModel::cycle("scripted", [ScriptedResponse::text("done")]))
                .tool(FunctionTool::new("add", |args: Add| async move {
                    (args.a + args.b).to_string()
                }))
                .build()
                .expect("the agent builds"),
        )
    });
}

fn main() {
    if let Some(count) = arg("--idle").and_then(|n| n.parse().ok()) {
        return idle(count);
    }
    if let Some(count) = arg("--idle-own").and_then(|n| n.parse().ok()) {
        return idle_own(count);
    }
    let replies: u64 = arg("--replies").and_then(|n| n.parse().ok()).unwrap_or(2000);
    let middlewares: usize = arg("--middlewares").and_then(|n| n.parse().ok()).unwrap_or(0);
    let streamed = flag("--streamed");
    let read_stream = flag("--stream-reader");
    let hints = !flag("--no-hints");
    let r = |resp: ScriptedResponse| if streamed { resp.streamed() } else { resp.whole() };
    let model = ScriptedModel::cycle(
        "scripted",
        [
            r(ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#).with_usage(50, 10)),
            r(ScriptedResponse::tool_call("c2", "add", r#"{"a": 3, "b": 4}"#).with_usage(60, 10)),
            r(ScriptedResponse::tool_call("c3", "add", r#"{"a": 5, "b": 6}"#).with_usage(70, 10)),
            r(ScriptedResponse::text("done").with_usage(80, 2)),
        ],
    );
    let mut builder = Agent::builder("bench")
        .system_prompt("You are a calculator.")
        .model(model)
        .tool(FunctionTool::new("add", |args: Add| async move {
            (args.a + args.b).to_string()
        }));
    for _ in 0..middlewares {
        builder = builder.middleware(FullPassThrough);
    }
    if !hints {
        builder = builder.hints(towerscope::agent::HintConfig::disabled());
    }
    let agent = builder.build().expect("the agent builds");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let input = Msg::user("user", "What is 1+2, 3+4 and 5+6?");
    let state = AgentState::new();
    let one = |agent: &Agent| {
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
        "replies={replies} middlewares={middlewares} streamed={streamed} stream_reader={read_stream} hints={hints} \
         allocs_per_reply={:.1} bytes_per_reply={:.0}",
        (stats.allocations + stats.reallocations) as f64 / replies as f64,
        stats.bytes_allocated as f64 / replies as f64
    );
}
