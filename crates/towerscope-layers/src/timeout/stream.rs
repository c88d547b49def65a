use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use pin_project_lite::pin_project;
use tokio::time::Instant;
use towerscope_core::AgentError;

use super::deadline::{Clock, Timer};
use crate::position::PositionItem;

pin_project! {
    /// A streamed answer under [`Timeout`](super::Timeout): yields one
    /// [`AgentError::Timeout`] and ends when the first chunk, the next chunk or the end of the
    /// call does not come in time.
    #[derive(Debug)]
    pub struct TimeoutStream<St> {
        #[pin]
        inner: St,
        #[pin]
        timer: Timer,
        clock: Clock,
        done: bool,
    }
}

impl<St> TimeoutStream<St> {
    pub(crate) fn new(inner: St, clock: Clock) -> Self {
        Self {
            inner,
            timer: Timer::new(clock.before_first()),
            clock,
            done: false,
        }
    }
}

impl<St, T> Stream for TimeoutStream<St>
where
    St: Stream<Item = Result<T, AgentError>>,
    T: PositionItem,
{
    type Item = Result<T, AgentError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        if *this.done {
            return Poll::Ready(None);
        }
        match this.inner.poll_next(cx) {
            Poll::Ready(Some(item)) => {
                // The deadlines hold to the end of the stream, after its last item too: the
                // agent reads it to its end, and a layer may still work there (a verdict on
                // the whole answer).
                this.timer.as_mut().set_next(this.clock.after_chunk(Instant::now()));
                return Poll::Ready(Some(item));
            }
            Poll::Ready(None) => {
                *this.done = true;
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        match this.timer.as_mut().poll_expired(cx) {
            Poll::Ready((kind, after)) => {
                *this.done = true;
                Poll::Ready(Some(Err(this.clock.error(kind, after))))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}
