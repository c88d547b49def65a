//! [`BroadcastLayer`]: the `on_reply` layer that broadcasts each finished reply.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;
use towerscope_core::{AgentError, EventStream, ReplyItem, ReplyRequest};

use super::Broadcaster;

/// Broadcasts the final message of every finished reply through a [`Broadcaster`]. Installed
/// by the broadcaster as a middleware; see it for where to put it in the onion.
#[derive(Debug, Clone)]
pub struct BroadcastLayer {
    broadcaster: Broadcaster,
}

impl BroadcastLayer {
    /// Broadcasts through `broadcaster`.
    pub fn new(broadcaster: Broadcaster) -> Self {
        Self { broadcaster }
    }
}

impl<S> Layer<S> for BroadcastLayer {
    type Service = BroadcastService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        BroadcastService {
            inner,
            broadcaster: self.broadcaster.clone(),
        }
    }
}

/// The `on_reply` service of a [`BroadcastLayer`]: the inner reply, whose final message is
/// broadcast as it passes (events pass untouched).
#[derive(Debug, Clone)]
pub struct BroadcastService<S> {
    inner: S,
    broadcaster: Broadcaster,
}

impl<S> BroadcastService<S> {
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

impl<S> Service<ReplyRequest> for BroadcastService<S>
where
    S: Service<ReplyRequest, Response = EventStream, Error = AgentError>,
{
    type Response = EventStream;
    type Error = AgentError;
    type Future = BroadcastFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: ReplyRequest) -> Self::Future {
        BroadcastFuture {
            inner: self.inner.call(req),
            broadcaster: Some(self.broadcaster.clone()),
        }
    }
}

pin_project! {
    /// The response future of [`BroadcastService`]: the inner reply stream, wrapped to
    /// broadcast its final message.
    #[derive(Debug)]
    pub struct BroadcastFuture<F> {
        #[pin]
        inner: F,
        broadcaster: Option<Broadcaster>,
    }
}

impl<F> Future for BroadcastFuture<F>
where
    F: Future<Output = Result<EventStream, AgentError>>,
{
    type Output = Result<EventStream, AgentError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let output = ready!(this.inner.poll(cx));
        Poll::Ready(output.map(|inner| match this.broadcaster.take() {
            Some(broadcaster) => Box::pin(BroadcastStream { inner, broadcaster }) as EventStream,
            None => inner,
        }))
    }
}

/// A reply stream whose final message is broadcast when it passes, if the reply finished (a
/// reply parked for the user is broadcast when the reply resuming it finishes) and did not end
/// with an error: that message is the error's text, not something the speaker said.
struct BroadcastStream {
    inner: EventStream,
    broadcaster: Broadcaster,
}

impl Stream for BroadcastStream {
    type Item = Result<ReplyItem, AgentError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let item = ready!(self.inner.as_mut().poll_next(cx));
        if let Some(Ok(ReplyItem::Final(msg))) = &item
            && msg.finished_reason.is_some()
            && msg.finished_reason != Some(towerscope_core::ReplyFinishedReason::Error)
        {
            self.broadcaster.broadcast(msg);
        }
        Poll::Ready(item)
    }
}
