//! [`ReplySpanStream`]: the reply's stream, ending its invoke_agent span.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use pin_project_lite::pin_project;
use towerscope_core::{AgentError, ReplyItem};

use super::record::ReplyRecord;

pin_project! {
    /// A reply's stream under its `invoke_agent` span.
    ///
    /// Each `poll_next` attaches the span's context for the duration of the poll only, so what
    /// the inner layers create while they run (chat and execute_tool spans, a nested agent's
    /// invoke_agent span) has it as parent, and nothing is left current when the poll returns.
    /// The span ends when the stream ends, or when the stream is dropped: after the final
    /// message that is a normal end, before it a cancellation (ERROR, `error.type = cancelled`),
    /// and in a poll that panicked (a model, tool or layer below) a failure (ERROR,
    /// `error.type = middleware_error`, the error the agent turns the panic into). Dropping it
    /// on any thread or task is safe.
    pub struct ReplySpanStream<S> {
        // An `Option` so that dropping the stream can drop the inner stream (and the spans
        // under this one) before this span ends.
        #[pin]
        inner: Option<S>,
        record: ReplyRecord,
        // Set while the inner stream is polled.
        polling: bool,
    }

    impl<S> PinnedDrop for ReplySpanStream<S> {
        fn drop(this: Pin<&mut Self>) {
            let mut this = this.project();
            this.inner.set(None);
            if *this.polling {
                this.record.panicked();
            } else {
                this.record.dropped();
            }
        }
    }
}

impl<S> ReplySpanStream<S> {
    pub(crate) fn new(inner: S, record: ReplyRecord) -> Self {
        Self {
            inner: Some(inner),
            record,
            polling: false,
        }
    }
}

impl<S> fmt::Debug for ReplySpanStream<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplySpanStream")
            .field("ended", &self.record.ended())
            .finish_non_exhaustive()
    }
}

impl<S> Stream for ReplySpanStream<S>
where
    S: Stream<Item = Result<ReplyItem, AgentError>>,
{
    type Item = Result<ReplyItem, AgentError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let Some(inner) = this.inner.as_pin_mut() else {
            return Poll::Ready(None);
        };
        if this.record.ended() {
            return inner.poll_next(cx);
        }
        let item = {
            let _attached = this.record.context().clone().attach();
            ready!(crate::span::marked(this.polling, || inner.poll_next(cx)))
        };
        match &item {
            Some(item) => this.record.observe(item),
            None => this.record.end(),
        }
        Poll::Ready(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.as_ref().map_or((0, Some(0)), Stream::size_hint)
    }
}
