//! The towerscope ReAct agent.
//!
//! An [`Agent`] reasons with a model, calls tools, feeds the results back and answers,
//! streaming typed [`AgentEvent`](towerscope_core::AgentEvent)s the whole way. Every step passes
//! through a position where middleware can be installed:
//!
//! ```text
//! on_reply                         the whole reply (this crate's reply loop is its innermost service)
//!  └─ each round:
//!      on_compress_context         count the input, compress over the threshold (`compress`)
//!      (runtime-state hint)        `<system-reminder>` time / context length, HINT_BLOCK (`hints`)
//!      on_reasoning                MODEL_CALL_START … MODEL_CALL_END, candidate final message
//!       ├─ on_system_prompt        fold over the system prompt
//!       └─ on_model_call           the chat model
//!      per tool call:
//!       on_check_permission        allow / deny / ask the user
//!       on_acting                  the toolkit
//! ```
//!
//! The loop follows AgentScope 2.x (`_reply_impl`, `_next_action`, `_reasoning_impl`). Where it
//! deliberately differs, the difference is documented where it happens:
//!
//! - **the default permission**: in the `Default` permission mode a tool no rule and no check
//!   of the tool covers is allowed ([`ReactConfig::default_permission`]), where the reference
//!   asks the user; destructive tools (MCP tools without annotations among them) and calls that
//!   require confirmation are still asked about. Kept deliberately: a towerscope tool is code its
//!   developer registered, and the modes give the stricter behaviours (`Explore`, `DontAsk`,
//!   `default_permission(Ask)` for the reference's). See [`permission`];
//! - context compression is opt-in ([`AgentBuilder::context`]): an agent without a
//!   [`ContextConfig`] never counts tokens (the reference always has one); the summary call
//!   goes through `on_model_call`, so retry, fallback, rate limits and tracing cover it;
//! - timezones are fixed offsets with a name ([`clock::Timezone`]): no timezone database;
//! - an `on_acting` stack that ends without a final `ToolResponse`, or fails, closes the call
//!   with an error result (the reference loops forever, or raises);
//! - a reply whose stream is dropped leaves no call without a result: the next reply closes
//!   them as interrupted; [`Agent::interrupt`] stops a running reply the reference's way
//!   (closing events, `REPLY_END(interrupted)`, the interruption message) without needing to
//!   cancel the task that consumes it.
//!
//! # Example
//!
//! ```
//! use futures_util::StreamExt;
//! use towerscope_agent::{Agent, toolkit::FunctionTool};
//! use towerscope_core::{AgentEvent, Msg, ReplyItem};
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! /// Add two numbers.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let model = ScriptedModel::new("scripted", [
//!     ScriptedResponse::tool_call("c1", "add", r#"{"a": 2, "b": 3}"#),
//!     ScriptedResponse::text("2 + 3 = 5"),
//! ]);
//! let agent = Agent::builder("calculator")
//!     .model(model)
//!     .tool(FunctionTool::new("add", |args: Add| async move { (args.a + args.b).to_string() }))
//!     .build()?;
//! let mut stream = agent.reply_stream(Msg::user("user", "2 + 3?"));
//! let mut kinds = Vec::new();
//! while let Some(item) = stream.next().await {
//!     match item? {
//!         ReplyItem::Event(e) => kinds.push(e.event_type().as_str()),
//!         ReplyItem::Final(msg) => assert_eq!(msg.text_content().as_deref(), Some("2 + 3 = 5")),
//!     }
//! }
//! assert_eq!(kinds.first(), Some(&"REPLY_START"));
//! assert_eq!(kinds.last(), Some(&"REPLY_END"));
//! assert!(kinds.contains(&"TOOL_RESULT_END"));
//! # Ok(()) }
//! ```

// Modules import only modules below them (the agent and its builder are the one pair that know
// each other). Top to bottom: agent, builder > observe, reply > reasoning, acting, resume, hints >
// runtime, emit > positions > permission, compress, mcp > hint_config, tasks (its tools) >
// toolkit, mailbox, state > tasks::task, clock, structured, generator, interrupt.
mod acting;
mod agent;
mod builder;
pub mod clock;
pub mod compress;
mod emit;
mod generator;
mod hint_config;
pub mod hints;
mod interrupt;
mod mailbox;
#[cfg(feature = "mcp")]
pub mod mcp;
mod observe;
pub mod permission;
mod positions;
mod reasoning;
mod reply;
mod resume;
mod runtime;
pub mod session;
pub mod state;
pub mod structured;
pub mod tasks;
pub mod toolkit;

pub use agent::{Agent, ReplyFuture, ReplyStream, structured_value};
pub use builder::AgentBuilder;
pub use hint_config::{
    DEFAULT_HINT_SOURCE, DEFAULT_HINT_TEMPLATE, DEFAULT_TASK_TOOL_NAMES, DEFAULT_TOOL_RETRIES_HINT, HintConfig,
};
pub use runtime::ReactConfig;
pub use state::{AgentState, ReplyContext, WaitingCalls};
pub use towerscope_core::{ContextConfig, PermissionMode};
