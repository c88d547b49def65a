use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use tower_service::Service;
use towerscope_core::{AgentError, ModelCallRequest, ModelOutput};

use super::attempt::{Attempt, next_attempt, poll_attempt};
use super::stream::AttemptsStream;
use super::{Core, Recovery};

pin_project! {
    /// The opening phase: attempts until one answers, then hands a stream over to an
    /// [`AttemptsStream`].
    pub(crate) struct AttemptsFuture<S, P>
    where
        S: Service<ModelCallRequest>,
    {
        #[pin]
        attempt: Attempt<S::Future>,
        core: Option<Core<S, P>>,
    }
}

impl<S, P> AttemptsFuture<S, P>
where
    S: Service<ModelCallRequest>,
{
    /// `future` is the first attempt, already called on `service` with `request`.
    pub(crate) fn new(future: S::Future, service: S, request: ModelCallRequest, policy: P) -> Self {
        Self {
            attempt: Attempt::Called { future },
            core: Some(Core {
                service,
                request,
                policy,
            }),
        }
    }
}

impl<S, P> Future for AttemptsFuture<S, P>
where
    S: Service<ModelCallRequest, Response = ModelOutput, Error = AgentError> + Send + 'static,
    S::Future: Send + 'static,
    P: Recovery,
{
    type Output = Result<ModelOutput, AgentError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let Some(core) = this.core.as_mut() else {
            return Poll::Ready(Err(AgentError::State(
                "a model-call future was polled after it completed".to_owned(),
            )));
        };
        loop {
            match ready!(poll_attempt(this.attempt.as_mut(), core, cx)) {
                Ok(ModelOutput::Complete(response)) => {
                    core.policy.succeeded();
                    *this.core = None;
                    return Poll::Ready(Ok(ModelOutput::Complete(response)));
                }
                Ok(ModelOutput::Stream(stream)) => {
                    let Some(core) = this.core.take() else {
                        return Poll::Ready(Err(AgentError::State("a model-call future lost its state".to_owned())));
                    };
                    return Poll::Ready(Ok(ModelOutput::Stream(Box::pin(AttemptsStream::new(stream, core)))));
                }
                Err(error) => {
                    // Nothing reached the consumer yet: switch silently.
                    if !next_attempt(this.attempt.as_mut(), core, &error, |_| {}) {
                        *this.core = None;
                        return Poll::Ready(Err(error));
                    }
                }
            }
        }
    }
}

impl<S, P> fmt::Debug for AttemptsFuture<S, P>
where
    S: Service<ModelCallRequest>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttemptsFuture")
            .field("model", &self.core.as_ref().map(|c| c.request.model.model_name()))
            .finish_non_exhaustive()
    }
}
