//! Built-in towerscope layers: timing, rate limit, fallback, retry, timeout, call limits, dynamic
//! system prompt, and pre/post hooks.
//!
//! Every layer here is a plain [`tower::Layer`] with a named, pin-projected future (and stream,
//! where the position answers with one). Each works two ways:
//!
//! - through the agent builder, over the position's erased service:
//!   `Agent::builder(..).on_model_call(TimeoutLayer::new(..))`;
//! - in a generic [`tower::ServiceBuilder`] over any
//!   `S: Service<ModelCallRequest, Response = ModelOutput, Error = AgentError>`, where nothing is
//!   boxed per call except where a streamed answer is wrapped.
//!
//! | Module           | Layer                  | Positions                                             |
//! |------------------|------------------------|-------------------------------------------------------|
//! | [`timing`]       | [`TimingLayer`]        | `on_model_call`, `on_acting`, `on_reasoning`, `on_reply` |
//! | [`rate_limit`]   | [`RateLimitLayer`]     | `on_model_call`                                       |
//! | [`fallback`]     | [`FallbackLayer`]      | `on_model_call`                                       |
//! | [`retry`]        | [`RetryLayer`]         | `on_model_call`                                       |
//! | [`timeout`]      | [`TimeoutLayer`]       | `on_model_call`, `on_acting`                          |
//! | [`call_limit`]   | [`CallLimitLayer`]     | `on_model_call`, `on_acting`                          |
//! | [`dynamic_prompt`] | [`DynamicContext`]   | `on_system_prompt`                                    |
//! | [`hooks`]        | [`Hooks`] (a [`Middleware`](towerscope_core::Middleware)) | `on_reply`, `on_reasoning`, `on_acting`, `observe` |
//!
//! # Order
//!
//! The first layer installed is the outermost. A robust model-call stack reads, outside in:
//!
//! ```text
//!  call limit ─▶ fallback ─▶ retry ─▶ rate limit ─▶ timeout ─▶ model
//!   counts one    switches    tries    spaces every  bounds every
//!   logical call  the model   again    attempt       attempt
//! ```
//!
//! so that every attempt is rate limited and bounded by its own deadline, a timed-out attempt is
//! retried, and the fallback model is tried once the primary's retries are spent.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use towerscope_agent::Agent;
//! use towerscope_core::Msg;
//! use towerscope_layers::{CallLimitLayer, RetryLayer, TimeoutLayer};
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let agent = Agent::builder("assistant")
//!     .model(ScriptedModel::new("scripted", [ScriptedResponse::text("Hello!")]))
//!     .on_model_call(CallLimitLayer::new().model_calls_per_reply(10))
//!     .on_model_call(RetryLayer::new(3))
//!     .on_model_call(TimeoutLayer::new(Duration::from_secs(60)))
//!     .build()?;
//! let answer = agent.reply(Msg::user("user", "Hi")).await?;
//! assert_eq!(answer.text_content().as_deref(), Some("Hello!"));
//! # Ok(()) }
//! ```

mod attempts;
pub mod call_limit;
pub mod dynamic_prompt;
pub mod fallback;
pub mod hooks;
pub mod position;
pub mod rate_limit;
pub mod retry;
pub mod timeout;
pub mod timing;

pub use call_limit::CallLimitLayer;
pub use dynamic_prompt::DynamicContext;
pub use fallback::FallbackLayer;
pub use hooks::{Hook, HookRegistry, HookType, Hooks};
pub use rate_limit::RateLimitLayer;
pub use retry::RetryLayer;
pub use timeout::TimeoutLayer;
pub use timing::{TimingLayer, Timings};

#[cfg(test)]
mod testing;
