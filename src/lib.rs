//! towerscope: an agent middleware runtime where every extension point is a [`tower`](https://docs.rs/tower) middleware.
//!
//! This is the facade crate: it re-exports the workspace's crates and offers a [`prelude`].
//!
//! - [`core`]: messages, events, the seven positions, errors.
//! - [`agent`]: the ReAct [`Agent`](agent::Agent), its toolkit and structured output.
//! - [`models`]: chat models, including the network-free [`models::ScriptedModel`]; with the
//!   features `openai` and `anthropic`, `models::openai::OpenAiChatModel` (OpenAI and every
//!   compatible server) and `models::anthropic::AnthropicChatModel`.
//! - [`layers`]: built-in layers: timing, rate limit, fallback, retry, timeout, call limits, dynamic
//!   system prompt, pre/post hooks.
//! - `otel` (feature `otel`): OpenTelemetry GenAI spans and metrics as one middleware, and OTLP
//!   export in one call (`towerscope_otel`).
//!
//! # Example
//!
//! ```
//! use towerscope::prelude::*;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), AgentError> {
//! let agent = Agent::builder("assistant")
//!     .system_prompt("You are helpful.")
//!     .model(ScriptedModel::new("scripted", [ScriptedResponse::text("Hello!")]))
//!     .build()?;
//! let answer = agent.reply(Msg::user("user", "Hi")).await?;
//! assert_eq!(answer.text_content().as_deref(), Some("Hello!"));
//! # Ok(()) }
//! ```

pub use towerscope_agent as agent;
pub use towerscope_core as core;
pub use towerscope_layers as layers;
pub use towerscope_models as models;
#[cfg(feature = "otel")]
pub use towerscope_otel as otel;

/// The types most programs need, in one import.
pub mod prelude {
    pub use towerscope_agent::toolkit::{FunctionTool, Tool, Toolkit};
    pub use towerscope_agent::{Agent, AgentBuilder, AgentState};
    pub use towerscope_core::ModelRef;
    pub use towerscope_core::prelude::*;
    #[cfg(feature = "anthropic")]
    pub use towerscope_models::anthropic::AnthropicChatModel;
    #[cfg(feature = "openai")]
    pub use towerscope_models::openai::OpenAiChatModel;
    pub use towerscope_models::{ScriptedModel, ScriptedResponse};
}
