//! [`ChatChunks`]: an SSE body decoded into chat-response chunks by a provider's
//! [`StreamDecoder`], ending with the complete response or an error.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use pin_project_lite::pin_project;
use towerscope_core::sse::{SseDecoder, SseStream, SseStreamError};
use towerscope_core::{AgentError, ChatResponse};

/// What one SSE event means for the stream of chunks.
#[derive(Debug)]
pub(crate) enum Step {
    /// Nothing to deliver (a role-only delta, a ping, usage kept for the end).
    Skip,
    /// A chunk of the answer.
    Chunk(ChatResponse),
    /// The complete response: the stream is over.
    Final(ChatResponse),
}

/// A provider's reading of its SSE events.
pub(crate) trait StreamDecoder {
    /// One event: its name (`message` when the server gave none) and data. An `error` line
    /// (llama.cpp's report of a failure mid-stream, a field the SSE standard ignores) comes as
    /// an event named `error` whose data is the line's value.
    fn event(&mut self, name: &str, data: &str) -> Result<Step, AgentError>;

    /// The body ended cleanly (no transport error) before [`Step::Final`]: the final response
    /// when the answer is whole (the server named why it stopped, and only its closing event
    /// is missing, which the providers' own SDKs do not require), else the error to report.
    fn ended(&mut self) -> Result<ChatResponse, AgentError>;
}

pin_project! {
    /// The chunks of a provider's SSE body: every chunk the decoder makes, then its final
    /// (`is_last`) response; or an error item when the transport, the SSE framing or the decoder
    /// fails, or the body ends before the final response. Nothing follows the final response or
    /// an error.
    pub(crate) struct ChatChunks<S, D> {
        #[pin]
        events: SseStream<S>,
        decoder: D,
        done: bool,
    }
}

impl<S, D> ChatChunks<S, D> {
    /// Decodes `body` with `decoder`.
    pub(crate) fn new(body: S, decoder: D) -> Self {
        Self {
            events: SseStream::with_decoder(body, SseDecoder::new().field_as_event("error")),
            decoder,
            done: false,
        }
    }
}

impl<S, B, D> Stream for ChatChunks<S, D>
where
    S: Stream<Item = Result<B, AgentError>>,
    B: AsRef<[u8]>,
    D: StreamDecoder,
{
    type Item = Result<ChatResponse, AgentError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        if *this.done {
            return Poll::Ready(None);
        }
        loop {
            let item = match this.events.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(item) => item,
            };
            let result = match item {
                Some(Ok(event)) => match this.decoder.event(&event.event, &event.data) {
                    Ok(Step::Skip) => continue,
                    Ok(Step::Chunk(chunk)) => return Poll::Ready(Some(Ok(chunk))),
                    Ok(Step::Final(response)) => Ok(response),
                    Err(err) => Err(err),
                },
                Some(Err(SseStreamError::Transport(err))) => Err(err),
                Some(Err(SseStreamError::Sse(err))) => Err(AgentError::decode("the SSE stream", err)),
                None => this.decoder.ended(),
            };
            *this.done = true;
            return Poll::Ready(Some(result));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use futures_util::stream;
    use towerscope_core::TextBlock;

    /// Each event's data becomes a text chunk; `end` finishes.
    struct Echo;

    impl StreamDecoder for Echo {
        fn event(&mut self, name: &str, data: &str) -> Result<Step, AgentError> {
            match (name, data) {
                (_, "end") => Ok(Step::Final(ChatResponse::new(Vec::new()))),
                ("ping", _) => Ok(Step::Skip),
                ("boom", _) => Err(AgentError::model("boom")),
                _ => Ok(Step::Chunk(ChatResponse::chunk(vec![TextBlock::new(data).into()]))),
            }
        }

        fn ended(&mut self) -> Result<ChatResponse, AgentError> {
            Err(AgentError::Stream("ended early".into()))
        }
    }

    async fn run(pieces: Vec<Result<&'static [u8], AgentError>>) -> Vec<Result<String, String>> {
        ChatChunks::new(stream::iter(pieces), Echo)
            .map(|item| match item {
                Ok(chunk) if chunk.is_last => Ok("<last>".to_owned()),
                Ok(chunk) => Ok(chunk.text().unwrap_or_default()),
                Err(err) => Err(err.to_string()),
            })
            .collect()
            .await
    }

    #[tokio::test]
    async fn chunks_then_the_final_response_and_nothing_after() {
        let out = run(vec![
            Ok(b"data: a\n\nevent: ping\ndata: {}\n\n: keep-alive\n\nda"),
            Ok(b"ta: \xc3"),
            Ok(b"\xa9\n\ndata: end\n\ndata: after\n\n"),
        ])
        .await;
        assert_eq!(out, [Ok("a".into()), Ok("é".into()), Ok("<last>".into())]);
    }

    #[tokio::test]
    async fn errors_end_the_stream() {
        let early = run(vec![Ok(b"data: a\n\n")]).await;
        assert_eq!(early, [Ok("a".into()), Err("model stream broke: ended early".into())]);
        let cut = run(vec![
            Ok(b"data: a\n\n"),
            Err(AgentError::Stream("reset".into())),
            Ok(b"data: b\n\n"),
        ])
        .await;
        assert_eq!(cut, [Ok("a".into()), Err("model stream broke: reset".into())]);
        let failed = run(vec![Ok(b"event: boom\ndata: x\n\ndata: b\n\n")]).await;
        assert_eq!(failed, [Err("model error: boom".into())]);
        let bad_utf8 = run(vec![Ok(b"data: \xff\xfe\n\n")]).await;
        assert_eq!(bad_utf8.len(), 1);
        assert!(
            bad_utf8[0]
                .as_ref()
                .is_err_and(|e| e.contains("could not decode the SSE stream")),
            "{bad_utf8:?}"
        );
    }
}
