//! The peer-benchmark scenario on AutoAgents 0.4: its `ReActAgent` executor run as a
//! `DirectAgent` over a scripted `LLMProvider`, with a sliding-window memory cleared before
//! each reply and an `add` tool.
//!
//! ```sh
//! cargo run --release -- single --replies 2000
//! cargo run --release -- many --n 10000
//! ```
//!
//! A direct agent publishes protocol events into a bounded channel (1,000 events); nobody else
//! reads it here, so each reply drains what is waiting there before it returns (inside the
//! timed reply), or the agent would stall once the buffer is full. AutoAgents' extension points
//! are hooks (`AgentHooks`) and `LLMLayer` decorators of the provider, not a middleware stack
//! around every position, so `--middlewares M > 0` is reported as skipped.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use autoagents::core::agent::memory::SlidingWindowMemory;
use autoagents::core::agent::prebuilt::executor::ReActAgent;
use autoagents::core::agent::task::Task;
use autoagents::core::agent::{AgentBuilder, AgentDeriveT, AgentHooks, DirectAgent, DirectAgentHandle};
use autoagents::core::tool::{ToolCallError, ToolRuntime, ToolT};
use autoagents::llm::chat::{ChatMessage, ChatProvider, ChatResponse, StructuredOutputFormat, Tool};
use autoagents::llm::completion::{CompletionProvider, CompletionRequest, CompletionResponse};
use autoagents::llm::embedding::EmbeddingProvider;
use autoagents::llm::error::LLMError;
use autoagents::llm::models::ModelsProvider;
use autoagents::llm::{FunctionCall, LLMProvider, ToolCall};
use futures::{FutureExt, StreamExt};
use peer_harness::{BoxError, Calls, FINAL_TEXT, Peer, QUESTION, SYSTEM_PROMPT, Setup, TOOL_ARGS};
use serde_json::Value;

/// The scripted provider: answer number `i % 4` of the scenario.
struct ScriptedLlm {
    calls: Arc<Calls>,
    delay: Option<Duration>,
}

/// One scripted answer.
#[derive(Debug)]
struct Answer {
    text: Option<String>,
    tool_calls: Option<Vec<ToolCall>>,
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text.as_deref().unwrap_or_default())
    }
}

impl ChatResponse for Answer {
    fn text(&self) -> Option<String> {
        self.text.clone()
    }

    fn tool_calls(&self) -> Option<Vec<ToolCall>> {
        self.tool_calls.clone()
    }
}

#[async_trait]
impl ChatProvider for ScriptedLlm {
    async fn chat_with_tools(
        &self,
        _messages: &[ChatMessage],
        _tools: Option<&[Tool]>,
        _json_schema: Option<StructuredOutputFormat>,
    ) -> Result<Box<dyn ChatResponse>, LLMError> {
        let step = self.calls.model_called();
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
        let answer = match TOOL_ARGS.get(step % 4) {
            Some((a, b)) => Answer {
                text: None,
                tool_calls: Some(vec![ToolCall {
                    id: format!("call_{step}"),
                    call_type: "function".to_owned(),
                    function: FunctionCall {
                        name: "add".to_owned(),
                        arguments: format!(r#"{{"a": {a}, "b": {b}}}"#),
                    },
                }]),
            },
            None => Answer {
                text: Some(FINAL_TEXT.to_owned()),
                tool_calls: None,
            },
        };
        Ok(Box::new(answer))
    }
}

#[async_trait]
impl CompletionProvider for ScriptedLlm {
    async fn complete(
        &self,
        _req: &CompletionRequest,
        _json_schema: Option<StructuredOutputFormat>,
    ) -> Result<CompletionResponse, LLMError> {
        Err(LLMError::Generic("the scripted model only chats".to_owned()))
    }
}

#[async_trait]
impl EmbeddingProvider for ScriptedLlm {
    async fn embed(&self, _text: Vec<String>) -> Result<Vec<Vec<f32>>, LLMError> {
        Err(LLMError::Generic("the scripted model only chats".to_owned()))
    }
}

#[async_trait]
impl ModelsProvider for ScriptedLlm {}

impl LLMProvider for ScriptedLlm {}

/// `add(a, b)`.
#[derive(Debug)]
struct Add {
    calls: Arc<Calls>,
}

#[derive(serde::Deserialize)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[async_trait]
impl ToolRuntime for Add {
    async fn execute(&self, args: Value) -> Result<Value, ToolCallError> {
        self.calls.tool_called();
        let args: AddArgs = serde_json::from_value(args)?;
        Ok((args.a + args.b).into())
    }
}

impl ToolT for Add {
    fn name(&self) -> &str {
        "add"
    }

    fn description(&self) -> &str {
        "Add two integers."
    }

    fn args_schema(&self) -> Value {
        serde_json::json!({
            "type": "object",
            "properties": { "a": { "type": "integer" }, "b": { "type": "integer" } },
            "required": ["a", "b"]
        })
    }
}

/// The agent definition: a name, a description (its system prompt) and the tool.
#[derive(Debug)]
struct Calculator {
    calls: Arc<Calls>,
}

impl AgentDeriveT for Calculator {
    type Output = String;

    fn description(&self) -> &str {
        SYSTEM_PROMPT
    }

    fn output_schema(&self) -> Option<Value> {
        None
    }

    fn name(&self) -> &str {
        "calculator"
    }

    fn tools(&self) -> Vec<Box<dyn ToolT>> {
        vec![Box::new(Add {
            calls: Arc::clone(&self.calls),
        })]
    }
}

impl AgentHooks for Calculator {}

struct AutoAgents {
    handle: DirectAgentHandle<ReActAgent<Calculator>>,
    calls: Arc<Calls>,
}

impl Peer for AutoAgents {
    const NAME: &'static str = "autoagents";
    const VERSION: &'static str = "0.4.0";
    const MIDDLEWARE: bool = false;

    fn build(setup: &Setup) -> Result<Self, BoxError> {
        let calls = Arc::new(Calls::new());
        let llm: Arc<dyn LLMProvider> = Arc::new(ScriptedLlm {
            calls: Arc::clone(&calls),
            delay: setup.model_delay,
        });
        let agent = ReActAgent::new(Calculator {
            calls: Arc::clone(&calls),
        });
        // The builder is async but never waits: poll it once.
        let handle = AgentBuilder::<_, DirectAgent>::new(agent)
            .llm(llm)
            .memory(Box::new(SlidingWindowMemory::new(20)))
            .build()
            .now_or_never()
            .ok_or("building the AutoAgents agent did not complete at once")??;
        Ok(Self { handle, calls })
    }

    fn calls(&self) -> &Calls {
        &self.calls
    }

    async fn reply(&mut self) -> Result<String, BoxError> {
        if let Some(memory) = self.handle.agent.memory() {
            memory.lock().await.clear().await?;
        }
        let output = self.handle.agent.run(Task::new(QUESTION)).await?;
        while let Some(Some(_event)) = self.handle.rx.next().now_or_never() {}
        Ok(output)
    }
}

fn main() -> std::process::ExitCode {
    peer_harness::main::<AutoAgents>()
}
