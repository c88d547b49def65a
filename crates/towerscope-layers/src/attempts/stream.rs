use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use pin_project_lite::pin_project;
use tower_service::Service;
use towerscope_core::{AgentError, ChatResponse, ChatStream, ModelCallRequest, ModelOutput};

use super::attempt::{Attempt, next_attempt, poll_attempt};
use super::{Core, Recovery};

pin_project! {
    /// The streaming phase: forwards the current attempt's chunks and replaces a failed attempt,
    /// sending a restart marker first when its chunks already went out.
    pub(crate) struct AttemptsStream<S, P>
    where
        S: Service<ModelCallRequest>,
    {
        #[pin]
        attempt: Attempt<S::Future>,
        stream: Option<ChatStream>,
        core: Core<S, P>,
        // Chunks to send before anything else: a restart marker, a complete answer as chunks.
        queue: VecDeque<ChatResponse>,
        // Whether chunks of the current attempt reached the consumer.
        emitted: bool,
        // Whether the final chunk went out: what follows is forwarded as it is.
        answered: bool,
        finished: bool,
    }
}

impl<S, P> AttemptsStream<S, P>
where
    S: Service<ModelCallRequest>,
{
    pub(crate) fn new(stream: ChatStream, core: Core<S, P>) -> Self {
        Self {
            attempt: Attempt::Idle,
            stream: Some(stream),
            core,
            queue: VecDeque::new(),
            emitted: false,
            answered: false,
            finished: false,
        }
    }
}

impl<S, P> Stream for AttemptsStream<S, P>
where
    S: Service<ModelCallRequest, Response = ModelOutput, Error = AgentError>,
    P: Recovery,
{
    type Item = Result<ChatResponse, AgentError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            if let Some(chunk) = this.queue.pop_front() {
                return Poll::Ready(Some(Ok(chunk)));
            }
            if *this.finished {
                return Poll::Ready(None);
            }
            let error = if let Some(stream) = this.stream.as_mut() {
                let item = ready!(stream.as_mut().poll_next(cx));
                if *this.answered {
                    // After the final chunk the stream is read to its end, as the agent reads
                    // it: an inner layer's error there rejects the answer, and reaches the
                    // consumer as it is (an answer that went out is not attempted again).
                    match &item {
                        // Read to its end without an error: the call succeeded.
                        None => this.core.policy.succeeded(),
                        // The answer was rejected: the call failed, and ends here.
                        Some(Err(_)) => {}
                        Some(Ok(_)) => return Poll::Ready(item),
                    }
                    *this.finished = true;
                    *this.stream = None;
                    return Poll::Ready(item);
                }
                match item {
                    Some(Ok(chunk)) => {
                        if chunk.is_last {
                            *this.answered = true;
                        } else {
                            *this.emitted = true;
                        }
                        return Poll::Ready(Some(Ok(chunk)));
                    }
                    Some(Err(error)) => {
                        *this.stream = None;
                        error
                    }
                    None => {
                        // Ended without its final chunk: the consumer reports that as it sees fit.
                        *this.finished = true;
                        return Poll::Ready(None);
                    }
                }
            } else {
                match ready!(poll_attempt(this.attempt.as_mut(), this.core, cx)) {
                    Ok(ModelOutput::Stream(stream)) => {
                        *this.stream = Some(stream);
                        continue;
                    }
                    Ok(ModelOutput::Complete(response)) => {
                        this.core.policy.succeeded();
                        *this.finished = true;
                        if !response.content.is_empty() {
                            this.queue.push_back(ChatResponse::chunk(response.content.clone()));
                        }
                        this.queue.push_back(response);
                        continue;
                    }
                    Err(error) => error,
                }
            };
            let emitted = std::mem::take(this.emitted);
            let queue = &mut *this.queue;
            let restarting = next_attempt(this.attempt.as_mut(), this.core, &error, |reason| {
                if emitted {
                    queue.push_back(ChatResponse::restart(reason));
                }
            });
            if !restarting {
                *this.finished = true;
                return Poll::Ready(Some(Err(error)));
            }
        }
    }
}

impl<S, P> fmt::Debug for AttemptsStream<S, P>
where
    S: Service<ModelCallRequest>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttemptsStream")
            .field("model", &self.core.request.model.model_name())
            .field("emitted", &self.emitted)
            .field("answered", &self.answered)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}
