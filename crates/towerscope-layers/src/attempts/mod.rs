//! Several attempts of one model call, over the opening of the call and over its stream: the
//! engine of [`Fallback`](crate::fallback::Fallback) and [`Retry`](crate::retry::Retry).
//!
//! A [`Recovery`] decides, after a failed attempt, what the next attempt sends and how long to
//! wait first. The engine:
//!
//! - while the call opens ([`AttemptsFuture`]): a failed attempt is replaced silently;
//! - once a stream was returned ([`AttemptsStream`]): an error item, or a failure to open a
//!   later attempt, is replaced too. When chunks of the failed attempt already reached the
//!   consumer, the engine first sends [`ChatResponse::restart`] so that the consumer discards
//!   them (the agent emits a `model_call_restart` event and the stored message never mixes two
//!   attempts). A later attempt that answers with a complete response is delivered as one chunk
//!   of its blocks followed by the response itself, so the consumer sees its blocks stream.
//!
//! Every attempt after the first polls the service ready again before calling it.

mod attempt;
mod future;
mod outline;
mod stream;

pub(crate) use future::AttemptsFuture;
pub(crate) use outline::Outline;

use std::time::Duration;

use towerscope_core::{AgentError, ModelCallRequest};

#[cfg(doc)]
use stream::AttemptsStream;
#[cfg(doc)]
use towerscope_core::ChatResponse;

/// What to do after a failed attempt.
pub(crate) trait Recovery: Send + 'static {
    /// The request of the next attempt and the delay before it, or `None` to give up (the
    /// error goes to the caller).
    fn next(&mut self, failed: &ModelCallRequest, error: &AgentError) -> Option<(ModelCallRequest, Option<Duration>)>;

    /// The call succeeded: a complete answer, or a stream read to its end past its final chunk
    /// with no error (a layer below may still reject an answer after that chunk).
    fn succeeded(&mut self) {}

    /// The reason sent with the restart marker when output of the failed attempt is discarded.
    /// It reaches clients: it names the error by its [`Outline`] only, never its text.
    fn restart_reason(&self, failed: &ModelCallRequest, error: &AgentError, next: &ModelCallRequest) -> String;
}

/// The state shared by the opening and the streaming phase.
pub(crate) struct Core<S, P> {
    pub(crate) service: S,
    pub(crate) request: ModelCallRequest,
    pub(crate) policy: P,
}
