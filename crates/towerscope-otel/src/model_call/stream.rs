//! [`ChatSpanStream`]: a model's stream, ending its chat span.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use pin_project_lite::pin_project;
use towerscope_core::{AgentError, ChatResponse};

use super::record::ChatRecord;

pin_project! {
    /// A model's stream of chunks under its `chat` span.
    ///
    /// The first chunk records the time to first chunk; the final (`is_last`) chunk records the
    /// response attributes; the end of the stream (which the agent reads past the final chunk)
    /// ends the span, as does dropping the stream after the final chunk. An error item (also
    /// after the final chunk: a layer rejecting the answer), the end of the stream without a
    /// final chunk, and dropping the stream before it each end the span with ERROR. The span is
    /// never attached to the thread, so the stream may be dropped anywhere.
    pub struct ChatSpanStream<S> {
        #[pin]
        inner: S,
        record: ChatRecord,
        // Set while the inner stream is polled.
        polling: bool,
    }

    impl<S> PinnedDrop for ChatSpanStream<S> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if *this.polling {
                this.record.panicked();
            } else {
                this.record.dropped();
            }
        }
    }
}

impl<S> ChatSpanStream<S> {
    pub(crate) fn new(inner: S, record: ChatRecord) -> Self {
        Self {
            inner,
            record,
            polling: false,
        }
    }
}

impl<S> fmt::Debug for ChatSpanStream<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatSpanStream")
            .field("done", &self.record.done())
            .finish_non_exhaustive()
    }
}

impl<S> Stream for ChatSpanStream<S>
where
    S: Stream<Item = Result<ChatResponse, AgentError>>,
{
    type Item = Result<ChatResponse, AgentError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let item = ready!(crate::span::marked(this.polling, || this.inner.poll_next(cx)));
        if this.record.done() {
            return Poll::Ready(item);
        }
        match &item {
            Some(Ok(chunk)) => {
                this.record.chunk();
                if chunk.is_last {
                    this.record.answered(chunk);
                }
            }
            Some(Err(err)) => this.record.fail(err),
            None => this.record.ended(),
        }
        Poll::Ready(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}
