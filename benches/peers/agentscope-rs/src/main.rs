//! The peer-benchmark scenario on agentscope-rs (crate `agentscope-core` 0.1.0-alpha.1, a port
//! of AgentScope-Java): a `ReActAgent` over a scripted `Model` and a `FunctionTool` `add`, with
//! `--middlewares M` pass-through middlewares in its `MiddlewareChain`.
//!
//! ```sh
//! cargo run --release -- single --replies 2000 --middlewares 5
//! cargo run --release -- many --n 10000
//! ```
//!
//! Its middleware is an onion like ours: `on_agent`, `on_reasoning`, `on_acting` and
//! `on_model_call` each get a boxed `next` and return a boxed event stream; `on_system_prompt` is
//! a fold. The pass-through implements those five by forwarding. Before each reply the agent's
//! conversation is cleared (`clear_context`), inside the timed reply as for every peer.

use std::sync::Arc;
use std::time::Duration;

use agentscope_core::agent::{ReActAgent, RuntimeContext};
use agentscope_core::message::{ContentBlock, JsonMap, Msg, TextBlock, ToolResultBlock, ToolUseBlock};
use agentscope_core::middleware::{
    ActingInput, AgentInput, Middleware, MiddlewareChain, ModelCallInput, Next, ReasoningInput,
};
use agentscope_core::model::{ChatResponse, GenerateOptions, Model, ToolSchema};
use agentscope_core::tool::{FunctionTool, ToolExecutionContext, Toolkit};
use async_trait::async_trait;
use futures::stream::BoxStream;
use peer_harness::{BoxError, Calls, FINAL_TEXT, Peer, QUESTION, SYSTEM_PROMPT, Setup, TOOL_ARGS};

/// The scripted model: answer number `i % 4` of the scenario.
struct ScriptedModel {
    calls: Arc<Calls>,
    delay: Option<Duration>,
}

impl Model for ScriptedModel {
    fn stream(
        &self,
        _messages: Vec<Msg>,
        _tools: Vec<ToolSchema>,
        _options: GenerateOptions,
    ) -> BoxStream<'_, agentscope_core::Result<ChatResponse>> {
        let step = self.calls.model_called();
        let block = match TOOL_ARGS.get(step % 4) {
            Some((a, b)) => {
                let mut input = JsonMap::new();
                input.insert("a".to_owned(), (*a).into());
                input.insert("b".to_owned(), (*b).into());
                ContentBlock::ToolUse(ToolUseBlock::new(&format!("call_{step}"), "add", input))
            }
            None => ContentBlock::Text(TextBlock::new(FINAL_TEXT)),
        };
        let response = ChatResponse::builder().content(vec![block]).build();
        let delay = self.delay;
        Box::pin(futures::stream::once(async move {
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            Ok(response)
        }))
    }

    fn model_name(&self) -> &str {
        "scripted"
    }
}

/// Forwards every onion hook to `next`, and the system prompt unchanged.
struct PassThrough;

#[async_trait]
impl Middleware for PassThrough {
    fn on_agent(
        &self,
        _ctx: &RuntimeContext,
        input: AgentInput,
        next: Next<AgentInput>,
    ) -> agentscope_core::middleware::EventStream {
        next(input)
    }

    fn on_reasoning(
        &self,
        _ctx: &RuntimeContext,
        input: ReasoningInput,
        next: Next<ReasoningInput>,
    ) -> agentscope_core::middleware::EventStream {
        next(input)
    }

    fn on_acting(
        &self,
        _ctx: &RuntimeContext,
        input: ActingInput,
        next: Next<ActingInput>,
    ) -> agentscope_core::middleware::EventStream {
        next(input)
    }

    fn on_model_call(
        &self,
        _ctx: &RuntimeContext,
        input: ModelCallInput,
        next: Next<ModelCallInput>,
    ) -> agentscope_core::middleware::EventStream {
        next(input)
    }

    async fn on_system_prompt(&self, _ctx: &RuntimeContext, current_prompt: String) -> String {
        current_prompt
    }
}

fn add_tool(calls: Arc<Calls>) -> FunctionTool {
    FunctionTool::new(
        "add",
        "Add two integers.",
        serde_json::json!({
            "type": "object",
            "properties": { "a": { "type": "integer" }, "b": { "type": "integer" } },
            "required": ["a", "b"]
        }),
        Box::new(move |args: JsonMap, _ctx: ToolExecutionContext| {
            calls.tool_called();
            match (
                args.get("a").and_then(|v| v.as_i64()),
                args.get("b").and_then(|v| v.as_i64()),
            ) {
                (Some(a), Some(b)) => Ok(ToolResultBlock::text((a + b).to_string())),
                _ => Ok(ToolResultBlock::text("add needs integer a and b".to_owned())),
            }
        }),
    )
}

struct AgentScopeRs {
    agent: ReActAgent,
    calls: Arc<Calls>,
}

impl Peer for AgentScopeRs {
    const NAME: &'static str = "agentscope-rs";
    const VERSION: &'static str = "0.1.0-alpha.1";
    const MIDDLEWARE: bool = true;

    fn build(setup: &Setup) -> Result<Self, BoxError> {
        let calls = Arc::new(Calls::new());
        let toolkit = Toolkit::new();
        toolkit.register_tool(Arc::new(add_tool(Arc::clone(&calls))));
        let mut chain = MiddlewareChain::new();
        for _ in 0..setup.middlewares {
            chain.add(Box::new(PassThrough));
        }
        let model: Arc<dyn Model> = Arc::new(ScriptedModel {
            calls: Arc::clone(&calls),
            delay: setup.model_delay,
        });
        let agent = ReActAgent::builder()
            .name("bench")
            .sys_prompt(SYSTEM_PROMPT)
            .model(model)
            .toolkit(toolkit)
            .middleware_chain(chain)
            .max_iters(10)
            .build()?;
        Ok(Self { agent, calls })
    }

    fn calls(&self) -> &Calls {
        &self.calls
    }

    async fn reply(&mut self) -> Result<String, BoxError> {
        self.agent.clear_context();
        let reply = self.agent.call(vec![Msg::user(QUESTION)]).await?;
        Ok(reply.text_content())
    }
}

fn main() -> std::process::ExitCode {
    peer_harness::main::<AgentScopeRs>()
}
