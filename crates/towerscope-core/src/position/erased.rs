//! The erased service of a position: shared behind an `Arc`, so cloning it is a reference-count
//! bump, whatever the depth of the stack below it.
//!
//! `tower::util::BoxCloneSyncService` clones by cloning the boxed service, which clones every
//! layer below it: an allocation per layer on every clone. A position is cloned for every call
//! (the agent and `from_fn`'s `Next` call clones, as tower's clone-then-call rule asks), so that
//! cost grew with the square of the stack depth. [`ErasedService`] instead keeps the service
//! behind an `Arc` and clones only the outermost layer (whose inner service is again an
//! `ErasedService`, so the clone stays shallow) at the start of each call. Each call costs one
//! boxed future per erased boundary.

use std::fmt;
use std::future::{Future, poll_fn};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;

use crate::AgentError;

/// The future of an [`ErasedService`].
pub type ErasedFuture<Resp> = Pin<Box<dyn Future<Output = Result<Resp, AgentError>> + Send>>;

trait CallShared<Req, Resp>: Send + Sync {
    fn call_shared(&self, req: Req) -> ErasedFuture<Resp>;
}

impl<S, Req, Resp> CallShared<Req, Resp> for S
where
    S: Service<Req, Response = Resp, Error = AgentError> + Clone + Send + Sync + 'static,
    S::Future: Send + 'static,
    Req: Send + 'static,
{
    fn call_shared(&self, req: Req) -> ErasedFuture<Resp> {
        let mut svc = self.clone();
        Box::pin(async move {
            poll_fn(|cx| svc.poll_ready(cx)).await?;
            svc.call(req).await
        })
    }
}

/// A type-erased service of a position. Cloning it is cheap; it is always ready (the inner
/// service's readiness is awaited inside each call).
pub struct ErasedService<Req, Resp> {
    inner: Arc<dyn CallShared<Req, Resp>>,
}

impl<Req, Resp> ErasedService<Req, Resp> {
    /// Erases `service`.
    pub fn new<S>(service: S) -> Self
    where
        S: Service<Req, Response = Resp, Error = AgentError> + Clone + Send + Sync + 'static,
        S::Future: Send + 'static,
        Req: Send + 'static,
    {
        Self {
            inner: Arc::new(service),
        }
    }
}

impl<Req, Resp> Clone for ErasedService<Req, Resp> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<Req, Resp> fmt::Debug for ErasedService<Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ErasedService").finish_non_exhaustive()
    }
}

impl<Req, Resp> Service<Req> for ErasedService<Req, Resp> {
    type Response = Resp;
    type Error = AgentError;
    type Future = ErasedFuture<Resp>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Req) -> Self::Future {
        self.inner.call_shared(req)
    }
}

trait LayerShared<Req, Resp>: Send + Sync {
    fn layer_shared(&self, inner: ErasedService<Req, Resp>) -> ErasedService<Req, Resp>;
}

struct Eraser<L, Req, Resp>(L, PhantomData<fn(Req) -> Resp>);

impl<L, Req, Resp> LayerShared<Req, Resp> for Eraser<L, Req, Resp>
where
    L: Layer<ErasedService<Req, Resp>> + Send + Sync,
    L::Service: Service<Req, Response = Resp, Error = AgentError> + Clone + Send + Sync + 'static,
    <L::Service as Service<Req>>::Future: Send + 'static,
    Req: Send + 'static,
{
    fn layer_shared(&self, inner: ErasedService<Req, Resp>) -> ErasedService<Req, Resp> {
        ErasedService::new(self.0.layer(inner))
    }
}

/// A type-erased layer over a position's [`ErasedService`]. Cloning it is cheap.
pub struct ErasedLayer<Req, Resp> {
    inner: Arc<dyn LayerShared<Req, Resp>>,
}

impl<Req, Resp> ErasedLayer<Req, Resp> {
    /// Erases `layer`.
    pub fn new<L>(layer: L) -> Self
    where
        L: Layer<ErasedService<Req, Resp>> + Send + Sync + 'static,
        L::Service: Service<Req, Response = Resp, Error = AgentError> + Clone + Send + Sync + 'static,
        <L::Service as Service<Req>>::Future: Send + 'static,
        Req: Send + 'static,
        Resp: 'static,
    {
        Self {
            inner: Arc::new(Eraser(layer, PhantomData)),
        }
    }
}

impl<Req, Resp> Clone for ErasedLayer<Req, Resp> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<Req, Resp> fmt::Debug for ErasedLayer<Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ErasedLayer").finish_non_exhaustive()
    }
}

impl<Req, Resp> Layer<ErasedService<Req, Resp>> for ErasedLayer<Req, Resp> {
    type Service = ErasedService<Req, Resp>;

    fn layer(&self, inner: ErasedService<Req, Resp>) -> Self::Service {
        self.inner.layer_shared(inner)
    }
}
