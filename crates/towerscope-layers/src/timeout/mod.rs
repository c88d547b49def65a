//! Timeout: a deadline per call, and per stream a deadline for the first chunk and for the idle
//! time between chunks.
//!
//! [`TimeoutLayer`] serves `on_model_call` and `on_acting`. When a deadline passes the call fails
//! with [`AgentError::Timeout`](towerscope_core::AgentError::Timeout), naming what timed out and
//! which deadline:
//!
//! - a model call that times out is an error that retry and fallback act on (it is
//!   [`is_retryable`](towerscope_core::AgentError::is_retryable));
//! - a tool that times out ends the `on_acting` stream with the error, which the agent turns
//!   into an error tool result the model sees.
//!
//! | Deadline                     | Runs from                 | Kind                                 |
//! |------------------------------|---------------------------|--------------------------------------|
//! | [`new`](TimeoutLayer::new) / [`call`](TimeoutLayer::call) | the call | [`TimeoutKind::Call`](towerscope_core::TimeoutKind::Call): the answer and its whole stream |
//! | [`first_chunk`](TimeoutLayer::first_chunk) | the call | [`TimeoutKind::FirstChunk`](towerscope_core::TimeoutKind::FirstChunk): the first chunk, or the complete answer |
//! | [`idle`](TimeoutLayer::idle) | each chunk                | [`TimeoutKind::Idle`](towerscope_core::TimeoutKind::Idle): the next chunk |
//!
//! One timer per call (a `tokio::time::Sleep` inside the named future, then inside the
//! [`TimeoutStream`]) is reset in place for the nearest deadline. A streamed answer is wrapped
//! and boxed again.
//!
//! # Differences from `tower::timeout`
//!
//! As in tower-http's timeout, the error type stays [`AgentError`](towerscope_core::AgentError),
//! so the layer composes with the rest of a position's stack without conversions, and the
//! deadline covers the stream of the answer, not only the future that opens it.
//!
//! # Order
//!
//! Installed inside a retry or fallback layer, each attempt gets its own deadline; installed
//! outside, the deadline bounds all attempts together.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use tower::{ServiceBuilder, ServiceExt};
//! use towerscope_core::{AgentError, ChatModel, ModelCallRequest, TimeoutKind};
//! use towerscope_layers::TimeoutLayer;
//! # use std::sync::Arc;
//! # use towerscope_core::{AgentContext, Msg};
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let slow = ScriptedModel::new("slow", [ScriptedResponse::text("late").delay(Duration::from_secs(30))]);
//! let model = tower::service_fn(|req: ModelCallRequest| req.model.clone().call(req));
//! let svc = ServiceBuilder::new()
//!     .layer(TimeoutLayer::new(Duration::from_secs(60)).first_chunk(Duration::from_secs(10)))
//!     .service(model);
//! # let request = ModelCallRequest {
//! #     ctx: AgentContext::new("a", "s", "r"),
//! #     model: Arc::new(slow.clone()),
//! #     messages: vec![Msg::user("user", "hi")].into(),
//! #     tools: Arc::from(vec![]),
//! #     tool_choice: None,
//! # };
//! let err = svc.oneshot(request).await.unwrap_err();
//! assert!(matches!(err, AgentError::Timeout { kind: TimeoutKind::FirstChunk, .. }));
//! assert!(err.is_retryable());
//! assert!(err.to_string().starts_with("model call slow timed out: no first chunk within 10s"));
//! # }
//! ```

mod deadline;
mod future;
mod layer;
mod service;
mod stream;

pub use future::ResponseFuture;
pub use layer::TimeoutLayer;
pub use service::Timeout;
pub use stream::TimeoutStream;

#[cfg(test)]
mod tests;
