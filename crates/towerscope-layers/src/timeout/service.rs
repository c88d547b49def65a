use std::task::{Context, Poll};

use tower_service::Service;
use towerscope_core::AgentError;

use super::TimeoutLayer;
use super::deadline::{Clock, Deadlines};
use super::future::ResponseFuture;
use crate::position::{PositionRequest, PositionResponse};

/// Bounds the calls of its inner service in time. See the [module docs](super).
#[derive(Debug, Clone)]
pub struct Timeout<S> {
    inner: S,
    deadlines: Deadlines,
}

impl<S> Timeout<S> {
    /// Applies the deadlines of `layer` to `inner`.
    pub fn new(inner: S, layer: TimeoutLayer) -> Self {
        Self {
            inner,
            deadlines: layer.deadlines(),
        }
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

impl<S, Req> Service<Req> for Timeout<S>
where
    Req: PositionRequest,
    S: Service<Req, Error = AgentError>,
    S::Response: PositionResponse,
{
    type Response = S::Response;
    type Error = AgentError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        let clock = Clock::start(self.deadlines, req.target());
        ResponseFuture::new(self.inner.call(req), clock)
    }
}
