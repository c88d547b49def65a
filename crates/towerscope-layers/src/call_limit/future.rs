use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use towerscope_core::AgentError;

pin_project! {
    /// The response future of [`CallLimit`](super::CallLimit): the inner call, or the
    /// [`AgentError::CallLimit`] that refused it.
    #[derive(Debug)]
    pub struct ResponseFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project! {
    #[project = StateProj]
    #[derive(Debug)]
    enum State<F> {
        Called {
            #[pin]
            future: F,
        },
        Refused {
            error: Option<AgentError>,
        },
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn called(future: F) -> Self {
        Self {
            state: State::Called { future },
        }
    }

    pub(crate) fn refused(error: AgentError) -> Self {
        Self {
            state: State::Refused { error: Some(error) },
        }
    }
}

impl<F, R> Future for ResponseFuture<F>
where
    F: Future<Output = Result<R, AgentError>>,
{
    type Output = Result<R, AgentError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Called { future } => future.poll(cx),
            StateProj::Refused { error } => Poll::Ready(Err(error
                .take()
                .unwrap_or_else(|| AgentError::State("a call-limit future was polled after it completed".into())))),
        }
    }
}
