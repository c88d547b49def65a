//! Retry: call the model again after a retryable failure, with exponential backoff and jitter,
//! a maximum number of attempts, the provider's retry-after hint, and a retry budget.
//!
//! [`RetryLayer`] serves `on_model_call`. After a failed attempt it calls its inner service again
//! with the same request when:
//!
//! - attempts are left ([`RetryLayer::new`] takes the maximum, the first attempt included);
//! - the error is retryable ([`AgentError::is_retryable`](towerscope_core::AgentError::is_retryable)
//!   by default: rate limits, timeouts, overload, 408/429/5xx, broken streams; or
//!   [`RetryLayer::when`]);
//! - the retry budget allows it: clones of one layer share a [`Budget`](tower::retry::budget::Budget)
//!   (a [`TpsBudget`](tower::retry::budget::TpsBudget) by default) where successful calls deposit
//!   and retries withdraw, so a provider that keeps failing is not hammered.
//!
//! It waits the error's [`retry_after`](towerscope_core::AgentError::retry_after) hint when there
//! is one (or gives up when the hint exceeds [`RetryLayer::max_retry_after`], 60 s by default, so a
//! fallback can act), and the [`Backoff`] delay otherwise; never less than the backoff (a hint of
//! zero, or a date already past, would retry at once, again and again).
//!
//! Failures in the middle of a stream are retried too, with the rule of
//! [`fallback`](crate::fallback): silently when nothing was delivered yet, after a
//! [`ChatResponse::restart`](towerscope_core::ChatResponse::restart) marker otherwise.
//!
//! The marker's reason and the layer's log lines name the error by its
//! [`kind`](towerscope_core::AgentError::kind) only (with an HTTP error's status, a timeout's
//! deadline), never by its text, which can echo the prompt:
//! `attempt 1 of model m failed mid-stream (http_error 502); retrying`.
//!
//! # Why not `tower::retry::Retry`
//!
//! `tower::retry::Retry` only sees the future that opens the call: with a streaming model it
//! resolves as soon as the stream is returned, and errors while the stream is consumed go
//! unnoticed (as in the reference). Retrying those needs the stream itself wrapped, which a
//! `Policy` cannot do, so [`Retry`] is its own service. Its decision is a [`RetryPolicy`], which
//! also implements [`tower::retry::Policy`] for those who want tower's service (openings only):
//! `tower::retry::RetryLayer::new(RetryLayer::new(3).policy())`.
//!
//! # Order
//!
//! ```text
//!  fallback ─▶ retry ─▶ rate limit ─▶ timeout ─▶ model
//! ```
//!
//! Inside a fallback layer, each model gets its retries before the next model is tried.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use towerscope_agent::Agent;
//! use towerscope_core::{AgentError, Msg};
//! use towerscope_layers::RetryLayer;
//! use towerscope_layers::retry::Backoff;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), AgentError> {
//! let model = ScriptedModel::new("flaky", [
//!     ScriptedResponse::error(AgentError::rate_limited("slow down", Some(Duration::from_secs(2)))),
//!     ScriptedResponse::text("Hello!"),
//! ]);
//! let retry = RetryLayer::new(3).backoff(Backoff::new(Duration::from_millis(200), Duration::from_secs(5)));
//! let agent = Agent::builder("assistant").model(model.clone()).on_model_call(retry).build()?;
//! let start = tokio::time::Instant::now();
//! let answer = agent.reply(Msg::user("user", "Hi")).await?;
//! assert_eq!(answer.text_content().as_deref(), Some("Hello!"));
//! assert_eq!(model.calls(), 2);
//! assert_eq!(start.elapsed(), Duration::from_secs(2)); // the provider's hint
//! # Ok(()) }
//! ```

mod backoff;
mod future;
mod layer;
mod policy;
mod service;

pub use backoff::Backoff;
pub use future::ResponseFuture;
pub use layer::{DEFAULT_MAX_RETRY_AFTER, RetryLayer};
pub use policy::{RetryPolicy, SharedBudget};
pub use service::Retry;

#[cfg(test)]
mod tests;
