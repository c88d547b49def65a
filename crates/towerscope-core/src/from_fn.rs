//! Middleware from an async closure, as in axum's `from_fn`.
//!
//! The closure receives the request and a [`Next`] that runs the rest of the stack. It can
//! change the request, call `next` once, twice (clone it first) or never, and change the result.
//! Each closure's future is boxed once per call where the stack is erased; write a
//! [`tower::Layer`] with a named future and compose it with `ServiceBuilder` when that matters.
//!
//! # Example
//!
//! ```
//! use std::time::Instant;
//! use towerscope_core::{from_fn, LayerStack, ModelCallNext, ModelCallRequest, ModelOutput};
//!
//! let timing = from_fn(|req: ModelCallRequest, next: ModelCallNext| async move {
//!     let model = req.model.model_name().to_owned();
//!     let start = Instant::now();
//!     let out = next.run(req).await;
//!     println!("{model}: {:?}", start.elapsed());
//!     out
//! });
//! let mut stack = LayerStack::<ModelCallRequest, ModelOutput>::new();
//! stack.push(timing);
//! assert_eq!(stack.len(), 1);
//! ```

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::task::{Context, Poll};

use tower::ServiceExt;
use tower_layer::Layer;
use tower_service::Service;

use crate::AgentError;
use crate::position::ErasedService;

/// The rest of the stack, handed to a [`from_fn`] closure.
pub struct Next<Req, Resp> {
    inner: ErasedService<Req, Resp>,
}

impl<Req, Resp> Next<Req, Resp>
where
    Req: Send + 'static,
    Resp: 'static,
{
    /// Wraps an erased service as the rest of a stack.
    pub fn new(inner: ErasedService<Req, Resp>) -> Self {
        Self { inner }
    }

    /// Runs the rest of the stack with `req`.
    pub async fn run(self, req: Req) -> Result<Resp, AgentError> {
        self.inner.oneshot(req).await
    }
}

impl<Req, Resp> Clone for Next<Req, Resp> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<Req, Resp> fmt::Debug for Next<Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Next").finish_non_exhaustive()
    }
}

/// The rest of an `on_reply` stack.
pub type ReplyNext = Next<crate::ReplyRequest, crate::EventStream>;
/// The rest of an `on_reasoning` stack.
pub type ReasoningNext = Next<crate::ReasoningRequest, crate::EventStream>;
/// The rest of an `on_model_call` stack.
pub type ModelCallNext = Next<crate::ModelCallRequest, crate::ModelOutput>;
/// The rest of an `on_acting` stack.
pub type ActingNext = Next<crate::ActingRequest, crate::ToolStream>;
/// The rest of an `on_check_permission` stack.
pub type PermissionNext = Next<crate::PermissionRequest, crate::PermissionDecision>;
/// The rest of an `on_compress_context` stack.
pub type CompressNext = Next<crate::CompressRequest, ()>;

/// A layer from an async closure. See the [module docs](self).
pub fn from_fn<F, Req, Resp, Fut>(f: F) -> FromFnLayer<F, Req, Resp>
where
    F: Fn(Req, Next<Req, Resp>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Resp, AgentError>> + Send + 'static,
{
    FromFnLayer {
        f,
        _marker: PhantomData,
    }
}

/// The layer [`from_fn`] returns.
pub struct FromFnLayer<F, Req, Resp> {
    f: F,
    _marker: PhantomData<fn(Req) -> Resp>,
}

impl<F: Clone, Req, Resp> Clone for FromFnLayer<F, Req, Resp> {
    fn clone(&self) -> Self {
        Self {
            f: self.f.clone(),
            _marker: PhantomData,
        }
    }
}

impl<F, Req, Resp> fmt::Debug for FromFnLayer<F, Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FromFnLayer").finish_non_exhaustive()
    }
}

impl<F: Clone, Req, Resp> Layer<ErasedService<Req, Resp>> for FromFnLayer<F, Req, Resp> {
    type Service = FromFn<F, Req, Resp>;

    fn layer(&self, inner: ErasedService<Req, Resp>) -> Self::Service {
        FromFn {
            f: self.f.clone(),
            inner,
        }
    }
}

/// The service [`FromFnLayer`] builds.
pub struct FromFn<F, Req, Resp> {
    f: F,
    inner: ErasedService<Req, Resp>,
}

impl<F: Clone, Req, Resp> Clone for FromFn<F, Req, Resp> {
    fn clone(&self) -> Self {
        Self {
            f: self.f.clone(),
            inner: self.inner.clone(),
        }
    }
}

impl<F, Req, Resp> fmt::Debug for FromFn<F, Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FromFn").finish_non_exhaustive()
    }
}

impl<F, Req, Resp, Fut> Service<Req> for FromFn<F, Req, Resp>
where
    F: Fn(Req, Next<Req, Resp>) -> Fut,
    Fut: Future<Output = Result<Resp, AgentError>>,
    Req: Send + 'static,
    Resp: 'static,
{
    type Response = Resp;
    type Error = AgentError;
    type Future = Fut;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Readiness of the inner stack is driven inside `Next::run`.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Req) -> Self::Future {
        (self.f)(req, Next::new(self.inner.clone()))
    }
}
