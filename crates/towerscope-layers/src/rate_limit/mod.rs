//! Rate limit: space model calls out, cap the calls per window and the tokens per minute, shared
//! by every agent the layer is installed on.
//!
//! [`RateLimitLayer`] serves `on_model_call`. Its [`RateLimits`] combine:
//!
//! - a minimum interval between the starts of two calls (the reference's `RateLimit` example);
//! - a number of calls started per window;
//! - a number of tokens per window, counted from the usage the answers report (a complete
//!   response, or the final chunk of a stream).
//!
//! The windows are counted in bounded memory, whatever the limit: past 1,024 entries, calls (or
//! answers' tokens) less than 1/1024 of the window apart share one entry, which leaves the
//! window with the newest of them. A limit is never exceeded; a call can start up to 1/1024
//! of the window later than under an exact log.
//!
//! Over the limit, a call waits (a tokio timer; no thread is blocked) or, with
//! [`RateLimits::fail_fast`], fails at once with `AgentError::RateLimited` whose `retry_after`
//! says when the limit allows the next call. Waiting calls are served in the order they were made
//! (first come, first served), and a waiting call that is dropped (a timeout, a cancelled reply)
//! leaves the queue. A call starts only when its future is polled: one whose turn came and that
//! is not polled within a second (a reply whose reader stopped reading: a stalled web client)
//! keeps its place, but the calls behind it stop waiting for it; polled again, it takes the
//! next turn.
//!
//! # Across processes
//!
//! By default the counts live in this process. [`RateLimitLayer::with_backend`] keeps them in
//! a [`RateLimitBackend`] shared by many processes instead (`RedisBackend`, feature `redis`: one
//! Lua script per decision, a sliding log, the same limits with the same meaning), so N
//! processes of a web service share one provider budget. The calls of one process still queue
//! here, in order, and only the one at the front asks the backend; a call told to wait sleeps
//! and asks again. A front that is not polled a second past its turn (or that waits longer for
//! the backend's answer) is passed, as in one process. When the backend cannot be reached, the
//! call does what the [`WhenUnavailable`] given to the layer says: go through with a warning,
//! or fail with a retryable `AgentError::Unavailable`; until the backend is asked again, five
//! seconds later, the next calls do the same at once, not each after the backend's timeout. A
//! backend call is boxed (it is I/O); the in-process limiter allocates nothing per call.
//!
//! # Differences from `tower::limit::RateLimit`
//!
//! tower's `RateLimit` keeps its window per instance, is not `Clone` (so it cannot sit in an
//! erased, cloneable position or behind `Retry`), waits in `poll_ready`, and panics when called
//! without being ready. Here the state lives in a shared [`RateLimiter`] (an `Arc`): every clone
//! of the layer and of its service counts against the same limit, `poll_ready` only forwards the
//! inner service's readiness, and the waiting happens in the named response future.
//!
//! # Example
//!
//! Three agents sharing one limit of one call per second:
//!
//! ```
//! use std::time::Duration;
//! use towerscope_agent::Agent;
//! use towerscope_core::Msg;
//! use towerscope_layers::RateLimitLayer;
//! use towerscope_layers::rate_limit::RateLimits;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let limit = RateLimitLayer::new(RateLimits::new().min_interval(Duration::from_secs(1)));
//! let agents = (0..3)
//!     .map(|i| {
//!         Agent::builder(format!("agent-{i}"))
//!             .model(ScriptedModel::new("scripted", [ScriptedResponse::text("done")]))
//!             .on_model_call(limit.clone())
//!             .build()
//!     })
//!     .collect::<Result<Vec<_>, _>>()?;
//! let start = tokio::time::Instant::now();
//! let replies = futures_util::future::join_all(agents.iter().map(|a| a.reply(Msg::user("user", "go")))).await;
//! assert!(replies.iter().all(Result::is_ok));
//! assert_eq!(start.elapsed(), Duration::from_secs(2)); // calls at 0 s, 1 s and 2 s
//! # Ok(()) }
//! ```

mod backend;
mod future;
mod layer;
mod limiter;
mod limits;
mod log;
#[cfg(feature = "redis")]
mod redis;
mod service;

pub use backend::{BackendFuture, HeldBy, RateLimitBackend, Verdict, WhenUnavailable};
pub use future::ResponseFuture;
pub use layer::RateLimitLayer;
pub use limiter::RateLimiter;
pub use limits::RateLimits;
#[cfg(feature = "redis")]
pub use redis::RedisBackend;
pub use service::RateLimit;

#[cfg(test)]
mod backend_tests;
#[cfg(test)]
mod tests;
