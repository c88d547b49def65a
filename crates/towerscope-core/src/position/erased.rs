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
//! unchanged (that future is already erased and passes through without a new allocation) and
//! where the service answers with a [`Ready`] future: its result is held as it is, unboxed
//! (most positions' implementations answer at once, with a stream or a decision).

use std::any::Any;
use std::fmt;
use std::future::{Future, Ready, poll_fn};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use tower_layer::Layer;
use tower_service::Service;

use crate::AgentError;

/// The future of an [`ErasedService`]: a response known at once, held as it is, or a boxed
/// future (an error known at once is boxed: errors are rare, and holding one inline would make
/// every erased future as large as [`AgentError`]).
///
/// A layer that forwards its inner erased service's future hands this type on unchanged, and
/// the boundary above it passes it through without boxing it again. Make one with
/// [`ErasedFuture::new`], [`ErasedFuture::ready`] or `From` a boxed future.
///
/// ```
/// use towerscope_core::{AgentError, ErasedFuture};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), AgentError> {
/// let now: ErasedFuture<u32> = ErasedFuture::ready(Ok(1));
/// let later: ErasedFuture<u32> = ErasedFuture::new(async { Ok(2) });
/// assert_eq!(now.await? + later.await?, 3);
/// # Ok(())
/// # }
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct ErasedFuture<Resp> {
    state: State<Resp>,
}

enum State<Resp> {
    Ready(Option<Resp>),
    Failed(Option<Box<AgentError>>),
    Boxed(BoxedFuture<Resp>),
}

type BoxedFuture<Resp> = Pin<Box<dyn Future<Output = Result<Resp, AgentError>> + Send>>;

impl<Resp> ErasedFuture<Resp> {
    /// Erases `future`: boxes it, unless it already is an `ErasedFuture` (returned as is) or a
    /// [`Ready`] future (its result is held unboxed).
    #[inline(always)]
    pub fn new<F>(future: F) -> Self
    where
        F: Future<Output = Result<Resp, AgentError>> + Send + 'static,
        Resp: 'static,
    {
        let mut slot = Some(future);
        let any = &mut slot as &mut dyn Any;
        if let Some(erased) = any.downcast_mut::<Option<ErasedFuture<Resp>>>().and_then(Option::take) {
            return erased;
        }
        if let Some(ready) = any
            .downcast_mut::<Option<Ready<Result<Resp, AgentError>>>>()
            .and_then(Option::take)
        {
            return Self::ready(ready.into_inner());
        }
        match slot {
            Some(future) => Self::from(Box::pin(future) as BoxedFuture<Resp>),
            None => Self::ready(Err(AgentError::Middleware(
                "an erased future was taken twice".to_owned(),
            ))),
        }
    }

    /// A future that answers `result` at its first poll; an `Ok` response is held with no
    /// allocation.
    pub fn ready(result: Result<Resp, AgentError>) -> Self {
        let state = match result {
            Ok(response) => State::Ready(Some(response)),
            Err(err) => State::Failed(Some(Box::new(err))),
        };
        Self { state }
    }
}

impl<Resp> From<BoxedFuture<Resp>> for ErasedFuture<Resp> {
    fn from(boxed: BoxedFuture<Resp>) -> Self {
        Self {
            state: State::Boxed(boxed),
        }
    }
}

// The result is only ever moved out, never pinned in place.
impl<Resp> Unpin for ErasedFuture<Resp> {}

impl<Resp> Future for ErasedFuture<Resp> {
    type Output = Result<Resp, AgentError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.state {
            State::Ready(response) => Poll::Ready(response.take().ok_or_else(ended)),
            State::Failed(err) => Poll::Ready(Err(err.take().map_or_else(ended, |err| *err))),
            State::Boxed(future) => future.as_mut().poll(cx),
        }
    }
}

fn ended() -> AgentError {
    AgentError::Middleware("an erased future was polled after it ended".to_owned())
}

impl<Resp> fmt::Debug for ErasedFuture<Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            State::Ready(_) | State::Failed(_) => "ready",
            State::Boxed(_) => "boxed",
        };
        f.debug_tuple("ErasedFuture").field(&state).finish()
    }
}

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
            Poll::Ready(Ok(())) => ErasedFuture::new(svc.call(req)),
            Poll::Ready(Err(err)) => ErasedFuture::ready(Err(err)),
            Poll::Pending => ErasedFuture::new(async move {
                poll_fn(|cx| svc.poll_ready(cx)).await?;
                svc.call(req).await
            }),
        }
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

    #[tokio::test]
    async fn a_ready_answer_is_held_unboxed_and_a_pending_one_is_boxed() {
        let svc = ErasedService::new(tower::service_fn(|x: u32| {
            std::future::ready(Ok::<_, AgentError>(x + 1))
        }));
        let fut = svc.clone().call(1);
        assert_eq!(format!("{fut:?}"), "ErasedFuture(\"ready\")");
        assert_eq!(fut.await.ok(), Some(2));

        let svc = ErasedService::new(tower::service_fn(|x: u32| async move { Ok::<_, AgentError>(x + 1) }));
        let fut = svc.clone().call(1);
        assert_eq!(format!("{fut:?}"), "ErasedFuture(\"boxed\")");
        assert_eq!(fut.await.ok(), Some(2));
    }

    #[tokio::test]
    async fn a_ready_future_polled_again_after_its_answer_is_an_error_not_a_panic() {
        let mut fut = ErasedFuture::ready(Ok(7u32));
        assert_eq!(
            std::future::poll_fn(|cx| Pin::new(&mut fut).poll(cx)).await.ok(),
            Some(7)
        );
        let again = std::future::poll_fn(|cx| Pin::new(&mut fut).poll(cx)).await;
        assert!(matches!(again, Err(AgentError::Middleware(m)) if m.contains("after it ended")));
    }
}
