use std::task::{Context, Poll};

use tower_service::Service;
use towerscope_core::{AgentError, ModelCallRequest, ModelOutput};

use super::{FallbackLayer, ResponseFuture};
use crate::attempts::AttemptsFuture;

/// Calls the next model of a list when a call of its inner service fails. See the
/// [module docs](super).
#[derive(Debug, Clone)]
pub struct Fallback<S> {
    inner: S,
    layer: FallbackLayer,
}

impl<S> Fallback<S> {
    /// Falls back as `layer` says around `inner`.
    pub fn new(inner: S, layer: FallbackLayer) -> Self {
        Self { inner, layer }
    }

    /// The configuration.
    pub fn config(&self) -> &FallbackLayer {
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

impl<S> Service<ModelCallRequest> for Fallback<S>
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
        // Call the instance that was polled ready; keep it for later attempts, which poll it again.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let future = inner.call(req.clone());
        ResponseFuture::new(AttemptsFuture::new(future, inner, req, self.layer.policy()))
    }
}
