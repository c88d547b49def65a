use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use towerscope_core::AgentError;

use super::record::{Outcome, Recorder};
use super::stream::TimingStream;
use crate::position::PositionResponse;

pin_project! {
    /// The response future of [`Timing`](super::Timing): records the time to the answer, and
    /// wraps a streamed answer in a [`TimingStream`].
    #[derive(Debug)]
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        recorder: Option<Recorder>,
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn new(inner: F, recorder: Recorder) -> Self {
        Self {
            inner,
            recorder: Some(recorder),
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
        let result = ready!(this.inner.poll(cx));
        let Some(mut recorder) = this.recorder.take() else {
            return Poll::Ready(result);
        };
        recorder.opened();
        Poll::Ready(match result {
            Ok(response) => match response.into_stream() {
                Ok(stream) => Ok(R::from_stream(Box::pin(TimingStream::new(stream, recorder)))),
                Err(complete) => {
                    recorder.finish(Outcome::Ok);
                    Ok(complete)
                }
            },
            Err(e) => {
                recorder.finish(Outcome::Error);
                Err(e)
            }
        })
    }
}
