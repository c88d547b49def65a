//! [`ToolSpanStream`]: a tool's stream, ending its execute_tool span.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use pin_project_lite::pin_project;
use towerscope_core::{AgentError, ToolItem};

use super::record::ToolRecord;

pin_project! {
    /// A tool's stream under its `execute_tool` span.
    ///
    /// Each `poll_next` attaches the span's context for the duration of the poll only (an agent
    /// called by the tool nests under it). The final [`ToolItem::Response`] records the result;
    /// the end of the stream (which the agent reads past the response), or its drop after the
    /// response, ends the span. An error item (also after the response: a layer rejecting the
    /// result), the end of the stream without a response, or dropping the stream before it
    /// ends it with ERROR (a drop when the user interrupted the reply, with OK).
    pub struct ToolSpanStream<S> {
        // An `Option` so that dropping the stream can drop the inner stream (and the spans
        // under this one) before this span ends.
        #[pin]
        inner: Option<S>,
        record: ToolRecord,
        // Set while the inner stream is polled.
        polling: bool,
    }

    impl<S> PinnedDrop for ToolSpanStream<S> {
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

impl<S> ToolSpanStream<S> {
    pub(crate) fn new(inner: S, record: ToolRecord) -> Self {
        Self {
            inner: Some(inner),
            record,
            polling: false,
        }
    }
}

impl<S> fmt::Debug for ToolSpanStream<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSpanStream")
            .field("ended", &self.record.ended())
            .finish_non_exhaustive()
    }
}

impl<S> Stream for ToolSpanStream<S>
where
    S: Stream<Item = Result<ToolItem, AgentError>>,
{
    type Item = Result<ToolItem, AgentError>;

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
            Some(Ok(ToolItem::Chunk(_))) => {}
            Some(Ok(ToolItem::Response(response))) => this.record.response(response),
            Some(Err(err)) => this.record.fail(err),
            None => this.record.stream_ended(),
        }
        Poll::Ready(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.as_ref().map_or((0, Some(0)), Stream::size_hint)
    }
}
