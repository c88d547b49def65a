//! The erased service of a position: shared behind an `Arc`, so cloning it is a reference-count
//! bump, whatever the depth of the stack below it.
//!
//! `tower::util::BoxCloneSyncService` clones by cloning the boxed service, which clones every
//! layer below it: an allocation per layer on every clone. A position is cloned for every call
//! (the agent and `from_fn`'s `Next` call clones, as tower's clone-then-call rule asks), so that
//! cost grew with the square of the stack depth. [`ErasedService`] instead keeps the service
//! behind an `Arc` and clones only the outermost layer (whose inner service is again an
//! `ErasedService`, so the clone stays shallow) at the start of each call. Each call costs one
//! boxed future per erased boundary, except where a layer forwards its inner service's future
//! unchanged: that future is already erased and passes through without a new allocation.

use std::any::Any;
use std::fmt;
use std::future::{Future, poll_fn};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

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
    Resp: 'static,
{
    fn call_shared(&self, req: Req) -> ErasedFuture<Resp> {
        let mut svc = self.clone();
        // Most services are ready at once: ask without a task first, so the common case needs
        // no wrapper future. A service that is not ready is polled again, with the caller's
        // waker, inside the returned future.
        match svc.poll_ready(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(Ok(())) => erase_future(svc.call(req)),
            Poll::Ready(Err(err)) => Box::pin(async move { Err(err) }),
            Poll::Pending => Box::pin(async move {
                poll_fn(|cx| svc.poll_ready(cx)).await?;
                svc.call(req).await
            }),
        }
    }
}

/// Boxes `future`, unless it already is an [`ErasedFuture`] (a layer that forwards its inner
/// service's future, as pass-through layers do): then it is returned as is, with no allocation.
fn erase_future<F, Resp>(future: F) -> ErasedFuture<Resp>
where
    F: Future<Output = Result<Resp, AgentError>> + Send + 'static,
    Resp: 'static,
{
    let mut slot = Some(future);
    if let Some(erased) = (&mut slot as &mut dyn Any).downcast_mut::<Option<ErasedFuture<Resp>>>() {
        if let Some(erased) = erased.take() {
            return erased;
        }
    }
    match slot {
        Some(future) => Box::pin(future),
        None => Box::pin(async { Err(AgentError::Middleware("an erased future was taken twice".to_owned())) }),
    }
}

/// A type-erased service of a position. Cloning it is cheap; it is always ready (the inner
/// service's readiness is awaited inside each call).
///
/// # Readiness stops at an erased boundary
///
/// Each layer installed on a position is erased on its own, so a readiness-sensitive pair
/// must be installed together: `ServiceBuilder::new().load_shed().concurrency_limit(n)` in one
/// `on_model_call(..)` sheds load when the limit is reached, while the same two layers installed
/// with two calls never shed (the outer one always sees an erased, ready service) and the call
/// waits for the limit instead. Both behaviours are tested in the agent's `readiness` tests.
/// Note also that tower's limits count the call's future: on a position that answers with a
/// stream, the stream is read after the permit is released.
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
        Resp: 'static,
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
    Resp: 'static,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use tower::ServiceExt;

    /// Not ready on its first poll (and wakes the task), ready afterwards.
    #[derive(Clone)]
    struct SlowStart(Arc<AtomicU32>);

    impl Service<u32> for SlowStart {
        type Response = u32;
        type Error = AgentError;
        type Future = std::future::Ready<Result<u32, AgentError>>;

        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
            if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, req: u32) -> Self::Future {
            std::future::ready(Ok(req * 2))
        }
    }

    #[tokio::test]
    async fn a_service_not_ready_at_once_is_polled_again_in_the_call() {
        let polls = Arc::new(AtomicU32::new(0));
        let svc = ErasedService::new(SlowStart(Arc::clone(&polls)));
        assert_eq!(svc.clone().oneshot(21).await.ok(), Some(42));
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    }

    #[derive(Clone)]
    struct Broken;

    impl Service<u32> for Broken {
        type Response = u32;
        type Error = AgentError;
        type Future = std::future::Ready<Result<u32, AgentError>>;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
            Poll::Ready(Err(AgentError::Overloaded))
        }

        fn call(&mut self, _req: u32) -> Self::Future {
            std::future::ready(Ok(0))
        }
    }

    #[tokio::test]
    async fn a_readiness_error_is_the_call_error() {
        let err = ErasedService::new(Broken).oneshot(1).await.err();
        assert!(matches!(err, Some(AgentError::Overloaded)));
    }

    #[tokio::test]
    async fn a_forwarded_erased_future_passes_through() {
        // A layer whose future is its inner service's erased future.
        #[derive(Clone)]
        struct Forward(ErasedService<u32, u32>);
        impl Service<u32> for Forward {
            type Response = u32;
            type Error = AgentError;
            type Future = ErasedFuture<u32>;
            fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
                self.0.poll_ready(cx)
            }
            fn call(&mut self, req: u32) -> Self::Future {
                self.0.call(req)
            }
        }
        let inner = ErasedService::new(tower::service_fn(|x: u32| async move { Ok::<_, AgentError>(x + 1) }));
        let outer = ErasedService::new(Forward(inner));
        assert_eq!(outer.oneshot(1).await.ok(), Some(2));
    }
}
