use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use pin_project_lite::pin_project;
use towerscope_core::AgentError;

use super::record::{Outcome, Recorder};
use crate::position::PositionItem;

pin_project! {
    /// A streamed answer under [`Timing`](super::Timing): records the time to the first item, and
    /// the time to the end of the stream, its first error item (consumers stop there), or its
    /// drop. The stream is timed to its end, as the agent reads it: an error after the last item
    /// (a layer rejecting an answer it saw whole) makes the call an error; a stream dropped
    /// after its last item counts as answered.
    #[derive(Debug)]
    pub struct TimingStream<St> {
        #[pin]
        inner: St,
        recorder: Recorder,
    }
}

impl<St> TimingStream<St> {
    pub(crate) fn new(inner: St, recorder: Recorder) -> Self {
        Self { inner, recorder }
    }
}

impl<St, T> Stream for TimingStream<St>
where
    St: Stream<Item = Result<T, AgentError>>,
    T: PositionItem,
{
    type Item = Result<T, AgentError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let item = ready!(this.inner.poll_next(cx));
        match &item {
            Some(Ok(item)) => {
                this.recorder.item();
                if item.is_last() {
                    this.recorder.answered();
                }
            }
            // Consumers (the agent, retry and fallback) drop a stream at its first error: record
            // the error now, not the drop that follows.
            Some(Err(_)) => {
                this.recorder.item();
                this.recorder.finish(Outcome::Error);
            }
            None => this.recorder.finish(Outcome::Ok),
        }
        Poll::Ready(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}
