//! The peer-benchmark scenario on towerscope: an [`Agent`] over a cycling [`ScriptedModel`] and a
//! [`FunctionTool`] `add`, with `--middlewares M` pass-through middlewares installed one by one,
//! each hooking every position (like `FullPassThrough` in `benches/react.rs`), or with
//! `--layer-on P` one pass-through on the position `P` only; `--events read` replies through
//! `reply_stream` and reads every event (plain `reply` builds none, as nobody reads them).
//!
//! ```sh
//! cargo run --release -- single --replies 2000 --middlewares 5
//! cargo run --release -- single --replies 2000 --layer-on reasoning
//! cargo run --release -- many --n 10000
//! ```
//!
//! Only the public builder and reply API is used. Before each reply the agent gets a fresh
//! [`AgentState`] (a new conversation), inside the timed reply as for every peer.

mod pass_through;

use std::sync::Arc;

use peer_harness::{BoxError, Calls, Peer, QUESTION, SYSTEM_PROMPT, Setup, TOOL_ARGS};
use futures_util::StreamExt;
use towerscope::{Msg, ReplyItem};
use towerscope::agent::toolkit::FunctionTool;
use towerscope::agent::{Agent, AgentState};
use towerscope::models::{ScriptedModel, ScriptedResponse};

/// Add two integers.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    /// First operand.
    a: i64,
    /// Second operand.
    b: i64,
}

struct Towerscope {
    agent: Agent,
    model: ScriptedModel,
    calls: Arc<Calls>,
    /// Read every event of each reply (`--events read`).
    events: bool,
}

fn script(setup: &Setup) -> ScriptedModel {
    let delayed = |r: ScriptedResponse| match setup.model_delay {
        Some(d) => r.whole().delay(d),
        None => r.whole(),
    };
    let tool_calls = TOOL_ARGS.iter().enumerate().map(|(i, (a, b))| {
        ScriptedResponse::tool_call(format!("call_{i}"), "add", format!(r#"{{"a": {a}, "b": {b}}}"#)).with_usage(50, 10)
    });
    let answers = tool_calls.chain([ScriptedResponse::text(peer_harness::FINAL_TEXT).with_usage(80, 2)]);
    ScriptedModel::cycle("scripted", answers.map(delayed).collect::<Vec<_>>())
}

impl Peer for Towerscope {
    const NAME: &'static str = "towerscope";
    const VERSION: &'static str = "0.1.0 (this worktree)";
    const MIDDLEWARE: bool = true;
    const POSITIONS: &'static [&'static str] = pass_through::POSITIONS;

    fn build(setup: &Setup) -> Result<Self, BoxError> {
        let calls = Arc::new(Calls::new());
        let model = script(setup);
        let counter = Arc::clone(&calls);
        let add = FunctionTool::new("add", move |args: Add| {
            counter.tool_called();
            async move { (args.a + args.b).to_string() }
        });
        let mut builder = Agent::builder("bench")
            .system_prompt(SYSTEM_PROMPT)
            .model(model.clone())
            .tool(add);
        for _ in 0..setup.middlewares {
            builder = builder.middleware(pass_through::FullPassThrough);
        }
        if let Some(position) = &setup.layer_on {
            builder = builder.middleware(pass_through::OnePosition(position.clone()));
        }
        Ok(Self {
            agent: builder.build()?,
            model,
            calls,
            events: setup.events,
        })
    }

    fn calls(&self) -> &Calls {
        &self.calls
    }

    async fn reply(&mut self) -> Result<String, BoxError> {
        self.agent.load_state(AgentState::new())?;
        let before = self.model.calls();
        let msg = if self.events {
            // Every event built and read, as a peer that always builds them.
            let mut stream = self.agent.reply_stream(Msg::user("user", QUESTION));
            let mut last = None;
            while let Some(item) = stream.next().await {
                match item? {
                    ReplyItem::Final(msg) => last = Some(msg),
                    ReplyItem::Event(event) => drop(std::hint::black_box(event)),
                }
            }
            last.ok_or("the reply stream ended without its final message")?
        } else {
            self.agent.reply(Msg::user("user", QUESTION)).await?
        };
        self.calls.add_model_calls(self.model.calls() - before);
        Ok(msg.text_content().map(|t| t.to_string()).unwrap_or_default())
    }
}

fn main() -> std::process::ExitCode {
    peer_harness::main::<Towerscope>()
}
