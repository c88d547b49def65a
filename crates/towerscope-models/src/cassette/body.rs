//! Response bodies: one that records each chunk as it passes to the client, and one that
//! replays recorded chunks with their boundaries.

use std::error::Error;
use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use pin_project_lite::pin_project;
use towerscope_core::BoxError;

use super::file::{End, Failure, FailureClass, Interaction, Outcome, RecordedRequest, ResponseHead};
use super::redact::Secrets;
use super::store::Cassette;

/// An interaction being recorded; written when its body ends, fails or is dropped.
pub(crate) struct Recorder {
    pub(crate) cassette: Cassette,
    pub(crate) n: u32,
    pub(crate) request: RecordedRequest,
    pub(crate) secrets: Secrets,
}

impl Recorder {
    /// Records a request that failed before any response.
    pub(crate) fn failed(self, err: &(dyn Error + 'static)) {
        let why = failure(&self.secrets, err);
        self.cassette.finish(Interaction {
            n: self.n,
            request: self.request,
            outcome: Outcome::Failed(why),
        });
    }

    /// The response, its body recorded as the client reads it.
    pub(crate) fn respond(self, response: reqwest::Response) -> Result<reqwest::Response, BoxError> {
        let head = ResponseHead {
            status: response.status().as_u16(),
            headers: self.cassette.rules().response(response.headers(), &self.secrets),
        };
        let mut builder = http::Response::builder().status(response.status());
        for (name, value) in response.headers() {
            builder = builder.header(name, value);
        }
        let body = RecordingBody {
            inner: response.bytes_stream(),
            body: Some(Pending {
                recorder: self,
                head,
                chunks: Vec::new(),
            }),
            types: PhantomData,
        };
        let rebuilt = builder.body(reqwest::Body::wrap_stream(body))?;
        Ok(reqwest::Response::from(rebuilt))
    }
}

/// A body being recorded.
struct Pending {
    recorder: Recorder,
    head: ResponseHead,
    chunks: Vec<Vec<u8>>,
}

impl Pending {
    fn push(&mut self, chunk: &[u8]) {
        self.chunks.push(chunk.to_vec());
    }

    /// Writes the interaction, its chunks scrubbed together: a secret may span two.
    fn end(self, end: End) {
        let Pending { recorder, head, chunks } = self;
        let chunks = recorder.secrets.scrub_chunks(chunks);
        recorder.cassette.finish(Interaction {
            n: recorder.n,
            request: recorder.request,
            outcome: Outcome::Response { head, chunks, end },
        });
    }
}

/// How many chunks a dropped body reads, of those already received, to see whether it ended.
const READ_ON_DROP: usize = 8;

pin_project! {
    /// The server's body, each chunk recorded as it passes; the interaction is written when
    /// the body ends or fails, or when the client drops it: then whatever had already arrived
    /// is recorded too, and the end is `complete` if the body had ended, `stopped` if not.
    struct RecordingBody<S, B, E>
    where
        S: Stream<Item = Result<B, E>>,
        B: AsRef<[u8]>,
        E: Error,
        E: 'static,
    {
        #[pin]
        inner: S,
        body: Option<Pending>,
        types: PhantomData<fn() -> (B, E)>,
    }

    impl<S, B, E> PinnedDrop for RecordingBody<S, B, E>
    where
        S: Stream<Item = Result<B, E>>,
        B: AsRef<[u8]>,
        E: Error,
        E: 'static,
    {
        fn drop(this: Pin<&mut Self>) {
            let mut this = this.project();
            let Some(mut body) = this.body.take() else { return };
            // The client had what it wanted (an SSE decoder stops at the final event): read what
            // already arrived, without waiting, to tell a finished body from one cut short.
            let waker = futures_util::task::noop_waker();
            let mut cx = Context::from_waker(&waker);
            let mut end = End::Stopped;
            for _ in 0..READ_ON_DROP {
                match this.inner.as_mut().poll_next(&mut cx) {
                    Poll::Ready(Some(Ok(chunk))) => body.push(chunk.as_ref()),
                    Poll::Ready(Some(Err(err))) => {
                        end = End::Broke(failure(&body.recorder.secrets, &err));
                        break;
                    }
                    Poll::Ready(None) => {
                        end = End::Complete;
                        break;
                    }
                    Poll::Pending => break,
                }
            }
            body.end(end);
        }
    }
}

impl<S, B, E> Stream for RecordingBody<S, B, E>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: Error + 'static,
{
    type Item = Result<B, E>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let item = match this.inner.poll_next(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(item) => item,
        };
        match &item {
            Some(Ok(chunk)) => {
                if let Some(body) = this.body.as_mut() {
                    body.push(chunk.as_ref());
                }
            }
            Some(Err(err)) => {
                if let Some(body) = this.body.take() {
                    let why = failure(&body.recorder.secrets, err);
                    body.end(End::Broke(why));
                }
            }
            None => {
                if let Some(body) = this.body.take() {
                    body.end(End::Complete);
                }
            }
        }
        Poll::Ready(item)
    }
}

/// A failure the recording holds: replayed with the text it was recorded with, and its class
/// (the provider's error conversion reads it, so that a recorded timeout replays as a timeout).
#[derive(Debug)]
pub(crate) struct Replayed(pub(crate) Failure);

impl Replayed {
    /// Whether the recorded failure timed out.
    pub(crate) fn timed_out(&self) -> bool {
        self.0.class == Some(FailureClass::Timeout)
    }

    /// Whether the recorded failure could not connect.
    pub(crate) fn could_not_connect(&self) -> bool {
        self.0.class == Some(FailureClass::Connect)
    }
}

impl fmt::Display for Replayed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.text)
    }
}

impl Error for Replayed {}

/// `err` as recorded: its chain's text, scrubbed, and whether the transport timed out or could
/// not connect.
fn failure(secrets: &Secrets, err: &(dyn Error + 'static)) -> Failure {
    let mut class = None;
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(e) = e.downcast_ref::<reqwest::Error>() {
            if e.is_timeout() {
                class = Some(FailureClass::Timeout);
                break;
            }
            if e.is_connect() {
                class = Some(FailureClass::Connect);
                break;
            }
        }
        if let Some(e) = e.downcast_ref::<Replayed>() {
            class = e.0.class;
            break;
        }
        next = e.source();
    }
    Failure {
        text: secrets.scrub_text(&chain(err)),
        class,
    }
}

/// The recorded answer: the response with its chunks, or the recorded failure.
pub(crate) fn replay(outcome: Outcome) -> Result<reqwest::Response, BoxError> {
    let (head, chunks, end) = match outcome {
        Outcome::Failed(why) => return Err(Box::new(Replayed(why))),
        Outcome::Response { head, chunks, end } => (head, chunks, end),
    };
    let mut builder = http::Response::builder().status(head.status);
    for (name, value) in &head.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let mut items: Vec<Result<Vec<u8>, Replayed>> = chunks.into_iter().map(Ok).collect();
    match end {
        End::Complete => {}
        End::Broke(why) => items.push(Err(Replayed(why))),
        End::Stopped => items.push(Err(Replayed(Failure::from(
            "the recording ends here: the client stopped reading this body when it was recorded",
        )))),
    }
    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(items));
    Ok(reqwest::Response::from(builder.body(body)?))
}

/// An error and its sources, `: `-separated.
pub(crate) fn chain(err: &(dyn Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}
