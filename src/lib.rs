//! towerscope: an agent middleware runtime where every extension point is a [`tower`](https://docs.rs/tower) middleware.
//!
//! This is the facade crate: it re-exports the workspace's crates and offers a [`prelude`].
//!
//! - at the root: everything of `towerscope_core` (messages, events, ids, the seven positions,
//!   `Middleware`, `from_fn`, errors), so `towerscope::Msg`, `towerscope::message::...`,
//!   `towerscope::event::...` (the core crate is not re-exported as a module named `core`: that
//!   name would shadow `::core` for glob importers);
//! - [`agent`]: the ReAct [`Agent`](agent::Agent), its toolkit and structured output.
//! - [`models`]: chat models, including the network-free [`models::ScriptedModel`]; with the
//!   features `openai` and `anthropic`, `models::openai::OpenAiChatModel` (OpenAI and every
//!   compatible server) and `models::anthropic::AnthropicChatModel`; with the feature
//!   `cassette`, `models::cassette`: record a session's provider traffic once, replay it in tests.
//! - [`layers`]: built-in layers: timing, rate limit, fallback, retry, timeout, call limits, dynamic
//!   system prompt, pre/post hooks.
//! - sessions: [`agent::session`] saves an agent's state in a [`JsonFileStore`](agent::session::JsonFileStore)
//!   (embedded) or, with the feature `redis`, in Redis (`RedisStore`), where a rate limit can be
//!   shared by many processes too (`layers::rate_limit::RedisBackend`).
//! - `otel` (feature `otel`): OpenTelemetry GenAI spans and metrics as one middleware, and OTLP
//!   export in one call (`towerscope_otel`).
//! - `restate` (feature `restate`): durable agents on Restate, replies that survive their process
//!   and run no tool twice (`towerscope_restate`).
//! - several agents and a person (`towerscope_team`): [`Participant`], the interface agents,
//!   people and pipelines share; [`hub`] (`MsgHub`: participants that hear each other);
//!   [`pipeline`] (sequential, fan-out, merged streams, the team and goal pipelines); [`user`] (a person
//!   as a participant); [`console`] (rendering replies in a terminal, and a chat with
//!   confirmations and Ctrl-C; `console::ctrl_c` with the `ctrl-c` feature).
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
pub use towerscope_core::*;
pub use towerscope_layers as layers;
pub use towerscope_models as models;
#[cfg(feature = "otel")]
pub use towerscope_otel as otel;
#[cfg(feature = "restate")]
pub use towerscope_restate as restate;
#[cfg(feature = "serve")]
pub use towerscope_serve as serve;
pub use towerscope_team::{Participant, console, hub, pipeline, shared_copy, user};

/// Redis (feature `redis`): the session store and the shared rate-limit backend, in one place.
///
/// ```no_run
/// use towerscope::redis::{RedisBackend, RedisStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), towerscope::AgentError> {
/// let sessions = RedisStore::open("redis://127.0.0.1:6379/")?;
/// let limit = RedisBackend::open("redis://127.0.0.1:6379/", "provider-a")?;
/// # Ok(()) }
/// ```
#[cfg(feature = "redis")]
pub mod redis {
    pub use towerscope_agent::session::RedisStore;
    pub use towerscope_layers::rate_limit::RedisBackend;
}

/// The types most programs and layer authors need, in one import: the agent, its builder and
/// reply stream, tools, messages and events, every position's request and `Next`, the scripted
/// model, and the [`Participant`] interface.
pub mod prelude {
    pub use towerscope_agent::session::{JsonFileStore, SessionStore};
    pub use towerscope_agent::toolkit::{FunctionTool, Tool, Toolkit};
    pub use towerscope_agent::{Agent, AgentBuilder, AgentState, ReplyStream};
    pub use towerscope_core::ModelRef;
    pub use towerscope_core::prelude::*;
    #[cfg(feature = "anthropic")]
    pub use towerscope_models::anthropic::AnthropicChatModel;
    #[cfg(feature = "openai")]
    pub use towerscope_models::openai::OpenAiChatModel;
    pub use towerscope_models::{ScriptedModel, ScriptedResponse};
    pub use towerscope_team::Participant;
}
