use std::task::{Context, Poll};

use tower_service::Service;
use towerscope_core::AgentError;

use super::future::ResponseFuture;
use super::record::Recorder;
use super::{TimingLayer, Timings};
use crate::position::{PositionRequest, PositionResponse};

/// Times the calls of its inner service. See the [module docs](super).
#[derive(Debug, Clone)]
pub struct Timing<S> {
    inner: S,
    timings: Timings,
}

impl<S> Timing<S> {
    /// Times the calls of `inner`, reporting to `timings`.
    pub fn new(inner: S, timings: Timings) -> Self {
        Self { inner, timings }
    }

    /// A layer reporting to a new handle.
    pub fn layer() -> TimingLayer {
        TimingLayer::new()
    }

    /// The handle the measurements go to.
    pub fn timings(&self) -> &Timings {
        &self.timings
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

impl<S, Req> Service<Req> for Timing<S>
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
        let recorder = Recorder::start(self.timings.clone(), Req::POSITION, req.target());
        ResponseFuture::new(self.inner.call(req), recorder)
    }
}
