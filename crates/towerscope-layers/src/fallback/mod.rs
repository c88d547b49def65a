//! Model fallback: when a model call fails, call the next model of a list.
//!
//! [`FallbackLayer`] serves `on_model_call`. On a failed attempt it calls its inner service
//! again with the request's `model` replaced by the next fallback model (everything else
//! unchanged). A predicate ([`FallbackLayer::when`]) decides which errors fall back; by default
//! every error does.
//!
//! Unlike the reference's `ModelFallback` example, failures while the answer streams fall back
//! too:
//!
//! - if nothing of the failed attempt has reached the consumer yet, the switch is silent;
//! - if chunks were already delivered, the layer first sends
//!   [`ChatResponse::restart`](towerscope_core::ChatResponse::restart), then the fallback's
//!   chunks. The agent answers the marker with a `CUSTOM` `model_call_restart` event listing the
//!   blocks to discard, and the stored message (and one rebuilt with `Msg::append_event`) holds
//!   only the fallback's output.
//!
//! The marker's reason reaches the client and the layer's log line is read by operators: both
//! name the error by its [`kind`](towerscope_core::AgentError::kind) only (with an HTTP error's
//! status, a timeout's deadline), never by its text, which can echo the prompt
//! (`model primary failed mid-stream (http_error 502); restarting on fallback model backup`).
//!
//! When every model failed, the call fails with the last one's error, and a warning
//! (`towerscope::fallback`) says how many models were tried and names the last.
//!
//! As in the reference, the `MODEL_CALL_START` event still names the agent's primary model.
//!
//! # Order
//!
//! ```text
//!  fallback ─▶ retry ─▶ timeout ─▶ model      each model gets its retries, each attempt its deadline
//! ```
//!
//! # Example
//!
//! ```
//! use towerscope_agent::Agent;
//! use towerscope_core::{AgentError, Msg};
//! use towerscope_layers::FallbackLayer;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), AgentError> {
//! let primary = ScriptedModel::new("primary", [ScriptedResponse::error(AgentError::model_retryable("503"))]);
//! let backup = ScriptedModel::new("backup", [ScriptedResponse::text("Hello from the backup")]);
//! let agent = Agent::builder("assistant")
//!     .model(primary.clone())
//!     .on_model_call(FallbackLayer::to(backup.clone()))
//!     .build()?;
//! let answer = agent.reply(Msg::user("user", "Hi")).await?;
//! assert_eq!(answer.text_content().as_deref(), Some("Hello from the backup"));
//! assert_eq!(backup.requests()[0].model, "backup");
//! # Ok(()) }
//! ```

mod future;
mod layer;
mod service;

pub use future::ResponseFuture;
pub use layer::{ErrorPredicate, FallbackLayer};
pub use service::Fallback;

#[cfg(test)]
mod tests;
