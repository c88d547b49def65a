use std::task::{Context, Poll};

use tower_service::Service;
use towerscope_core::{AgentError, ModelCallRequest, ModelOutput};

use super::future::ResponseFuture;
use super::limiter::Admission;
use super::{RateLimitLayer, RateLimiter, RateLimits};

/// Limits the rate of the calls of its inner service. See the [module docs](super).
///
/// Unlike `tower::limit::RateLimit`, it is `Clone` and every clone shares the limit; a call over
/// the limit waits in its response future (or fails fast), so `poll_ready` only reports the inner
/// service's readiness.
#[derive(Debug, Clone)]
pub struct RateLimit<S> {
    inner: S,
    limiter: RateLimiter,
}

impl<S> RateLimit<S> {
    /// Limits `inner` with `limiter`.
    pub fn new(inner: S, limiter: RateLimiter) -> Self {
        Self { inner, limiter }
    }

    /// A layer with a new limiter enforcing `limits`.
    pub fn layer(limits: RateLimits) -> RateLimitLayer {
        RateLimitLayer::new(limits)
    }

    /// The shared limiter.
    pub fn limiter(&self) -> &RateLimiter {
        &self.limiter
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Consumes `self`, returning the inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S> Service<ModelCallRequest> for RateLimit<S>
where
    S: Service<ModelCallRequest, Response = ModelOutput, Error = AgentError> + Clone,
{
    type Response = ModelOutput;
    type Error = AgentError;
    type Future = ResponseFuture<S>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: ModelCallRequest) -> Self::Future {
        let tokens = self.limiter.counts_tokens().then(|| self.limiter.clone());
        match self.limiter.admit() {
            Admission::Now => ResponseFuture::called(self.inner.call(req), tokens),
            Admission::Queued(ticket) => {
                // The instance polled ready waits with the request and is called on its turn.
                let clone = self.inner.clone();
                let inner = std::mem::replace(&mut self.inner, clone);
                ResponseFuture::queued(ticket, inner, req, tokens)
            }
            Admission::Refused(error) => ResponseFuture::refused(error),
        }
    }
}
