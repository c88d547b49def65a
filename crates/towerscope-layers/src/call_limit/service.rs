use std::task::{Context, Poll};

use tower_service::Service;
use towerscope_core::{ActingRequest, AgentError, LimitKind, ModelCallRequest};

use super::CallLimitLayer;
use super::counts::admit;
use super::future::ResponseFuture;
use crate::position::PositionRequest;

/// A request whose calls a [`CallLimit`] counts: model calls and tool calls.
pub trait CountedRequest: PositionRequest {
    /// What a call of this request counts as.
    const KIND: LimitKind;
}

impl CountedRequest for ModelCallRequest {
    const KIND: LimitKind = LimitKind::ModelCalls;
}

impl CountedRequest for ActingRequest {
    const KIND: LimitKind = LimitKind::ToolCalls;
}

/// Counts the calls of its inner service and refuses those over the limit. See the
/// [module docs](super).
#[derive(Debug, Clone)]
pub struct CallLimit<S> {
    inner: S,
    layer: CallLimitLayer,
}

impl<S> CallLimit<S> {
    /// Applies the limits of `layer` to `inner` (counting with `layer` and its clones).
    pub fn new(inner: S, layer: CallLimitLayer) -> Self {
        Self { inner, layer }
    }

    /// The layer's configuration and counts.
    pub fn limits(&self) -> &CallLimitLayer {
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

impl<S, Req> Service<Req> for CallLimit<S>
where
    Req: CountedRequest,
    S: Service<Req, Error = AgentError>,
{
    type Response = S::Response;
    type Error = AgentError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        let (id, limits, sessions) = self.layer.parts();
        match admit(id, &limits, sessions, req.ctx(), Req::KIND) {
            Ok(()) => ResponseFuture::called(self.inner.call(req)),
            Err(e) => ResponseFuture::refused(e),
        }
    }
}
