use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tower_service::Service;
use towerscope_core::{AgentError, ModelCallRequest, ModelOutput};

use super::layer::FallbackPolicy;
use crate::attempts::AttemptsFuture;

pin_project! {
    /// The response future of [`Fallback`](super::Fallback). A streamed answer comes back
    /// wrapped (and boxed again) so that failures in the middle of the stream fall back too.
    pub struct ResponseFuture<S>
    where
        S: Service<ModelCallRequest>,
    {
        #[pin]
        inner: AttemptsFuture<S, FallbackPolicy>,
    }
}

impl<S> ResponseFuture<S>
where
    S: Service<ModelCallRequest>,
{
    pub(crate) fn new(inner: AttemptsFuture<S, FallbackPolicy>) -> Self {
        Self { inner }
    }
}

impl<S> Future for ResponseFuture<S>
where
    S: Service<ModelCallRequest, Response = ModelOutput, Error = AgentError> + Send + 'static,
    S::Future: Send + 'static,
{
    type Output = Result<ModelOutput, AgentError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().inner.poll(cx)
    }
}

impl<S> fmt::Debug for ResponseFuture<S>
where
    S: Service<ModelCallRequest>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ResponseFuture").field(&self.inner).finish()
    }
}
