//! [`CassetteFuture`]: the answer of a [`CassetteService`](super::CassetteService).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use towerscope_core::BoxError;

use super::body::Recorder;

pin_project! {
    /// A replayed answer, ready at once, or the transport's answer being recorded.
    pub struct CassetteFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project! {
    #[project = Projected]
    enum State<F> {
        // Answered from the cassette (or refused).
        Ready { result: Option<Result<reqwest::Response, BoxError>> },
        // Sent; the answer is recorded.
        Forward {
            #[pin]
            inner: F,
            recorder: Option<Recorder>,
        },
    }
}

impl<F> CassetteFuture<F> {
    pub(crate) fn ready(result: Result<reqwest::Response, BoxError>) -> Self {
        Self {
            state: State::Ready { result: Some(result) },
        }
    }

    pub(crate) fn forward(inner: F, recorder: Recorder) -> Self {
        Self {
            state: State::Forward {
                inner,
                recorder: Some(recorder),
            },
        }
    }
}

impl<F, E> Future for CassetteFuture<F>
where
    F: Future<Output = Result<reqwest::Response, E>>,
    E: Into<BoxError>,
{
    type Output = Result<reqwest::Response, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            Projected::Ready { result } => Poll::Ready(
                result
                    .take()
                    .unwrap_or_else(|| Err("the cassette's answer was taken already".into())),
            ),
            Projected::Forward { inner, recorder } => {
                let answer = match inner.poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(answer) => answer,
                };
                let Some(recorder) = recorder.take() else {
                    return Poll::Ready(Err("the cassette's answer was taken already".into()));
                };
                Poll::Ready(match answer {
                    Ok(response) => recorder.respond(response),
                    Err(err) => {
                        let err: BoxError = err.into();
                        recorder.failed(&*err);
                        Err(err)
                    }
                })
            }
        }
    }
}

impl<F> std::fmt::Debug for CassetteFuture<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.state {
            State::Ready { .. } => f.write_str("CassetteFuture::Ready"),
            State::Forward { .. } => f.write_str("CassetteFuture::Forward"),
        }
    }
}
