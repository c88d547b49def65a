use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use towerscope_core::AgentError;

use super::deadline::{Clock, Timer};
use super::stream::TimeoutStream;
use crate::position::PositionResponse;

pin_project! {
    /// The response future of [`Timeout`](super::Timeout): fails with
    /// [`AgentError::Timeout`] when the answer does not come in time, and wraps a streamed answer
    /// in a [`TimeoutStream`].
    #[derive(Debug)]
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        #[pin]
        timer: Timer,
        clock: Clock,
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn new(inner: F, clock: Clock) -> Self {
        Self {
            inner,
            timer: Timer::new(clock.before_first()),
            clock,
        }
    }
}

impl<F, R> Future for ResponseFuture<F>
where
    F: Future<Output = Result<R, AgentError>>,
    R: PositionResponse,
{
    type Output = Result<R, AgentError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(result) = this.inner.poll(cx) {
            return Poll::Ready(result.map(|response| {
                let deadlines = this.clock.deadlines();
                if !deadlines.any() {
                    return response;
                }
                match response.into_stream() {
                    Ok(stream) => R::from_stream(Box::pin(TimeoutStream::new(stream, this.clock.clone()))),
                    Err(complete) => complete,
                }
            }));
        }
        this.timer
            .poll_expired(cx)
            .map(|(kind, after)| Err(this.clock.error(kind, after)))
    }
}
