use tower_layer::Layer;

use super::{RateLimit, RateLimitBackend, RateLimiter, RateLimits, WhenUnavailable};

/// Limits the rate of model calls, across every clone. See the [module docs](super).
///
/// Clones share one [`RateLimiter`]: install clones of one layer on many agents to give them one
/// limit together; layers made separately limit separately.
#[derive(Debug, Clone)]
pub struct RateLimitLayer {
    limiter: RateLimiter,
}

impl RateLimitLayer {
    /// A layer with a new limiter enforcing `limits`.
    pub fn new(limits: RateLimits) -> Self {
        Self::shared(RateLimiter::new(limits))
    }

    /// A layer with a new limiter enforcing `limits` with every limiter, in any process, that
    /// shares `backend` (see [`RateLimiter::with_backend`]).
    pub fn with_backend(limits: RateLimits, backend: impl RateLimitBackend, when_unavailable: WhenUnavailable) -> Self {
        Self::shared(RateLimiter::with_backend(limits, backend, when_unavailable))
    }

    /// A layer using an existing limiter (shared with the other layers using it).
    pub fn shared(limiter: RateLimiter) -> Self {
        Self { limiter }
    }

    /// The limiter this layer and its clones share.
    pub fn limiter(&self) -> &RateLimiter {
        &self.limiter
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimit::new(inner, self.limiter.clone())
    }
}
