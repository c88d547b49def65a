use std::task::{Context, Poll};

use tower_service::Service;
use towerscope_core::{AgentError, ModelCallRequest, ModelOutput};

use super::{ResponseFuture, RetryLayer};
use crate::attempts::AttemptsFuture;

/// Calls its inner service again when a call fails with a retryable error. See the
/// [module docs](super).
#[derive(Debug, Clone)]
pub struct Retry<S> {
    inner: S,
    layer: RetryLayer,
}

impl<S> Retry<S> {
    /// Retries as `layer` says around `inner`.
    pub fn new(inner: S, layer: RetryLayer) -> Self {
        Self { inner, layer }
    }

    /// The configuration.
    pub fn config(&self) -> &RetryLayer {
        &self.layer
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

impl<S> Service<ModelCallRequest> for Retry<S>
where
    S: Service<ModelCallRequest, Response = ModelOutput, Error = AgentError> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = ModelOutput;
    type Error = AgentError;
    type Future = ResponseFuture<S>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: ModelCallRequest) -> Self::Future {
        // Call the instance that was polled ready; keep it for retries, which poll it again.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let future = inner.call(req.clone());
        ResponseFuture::new(AttemptsFuture::new(future, inner, req, self.layer.policy()))
    }
}
