use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use pin_project_lite::pin_project;
use tokio::time::Sleep;
use tower_service::Service;
use towerscope_core::{AgentError, ChatResponse, ModelCallRequest, ModelOutput};

use super::RateLimiter;
use super::backend::{BackendFuture, Decision};
use super::limiter::{Ticket, Turn};

pin_project! {
    /// The response future of [`RateLimit`](super::RateLimit): waits for the caller's turn (in
    /// order of the calls), then calls the inner service; counts the tokens of the answer when a
    /// token limit is set (wrapping a streamed answer, boxed again, to see its final chunk).
    pub struct ResponseFuture<S>
    where
        S: Service<ModelCallRequest>,
    {
        #[pin]
        state: State<S::Future>,
        queued: Option<Queued<S>>,
        tokens: Option<RateLimiter>,
    }
}

struct Queued<S> {
    ticket: Ticket,
    service: S,
    request: ModelCallRequest,
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        // Waiting for the turn.
        Queued,
        // At the front of the queue, asking the shared backend.
        Asking {
            answer: BackendFuture,
        },
        // Told by the shared backend to wait this long before asking again.
        Sleeping {
            #[pin]
            sleep: Sleep,
        },
        // At the front, waiting for the limit to allow a start, or right behind it, watching
        // it: asks its turn again when woken (its place changed), or at the time.
        Waiting {
            #[pin]
            sleep: Sleep,
            armed: bool,
        },
        Called {
            #[pin]
            future: F,
        },
        Refused {
            error: Option<AgentError>,
        },
    }
}

impl<S> ResponseFuture<S>
where
    S: Service<ModelCallRequest>,
{
    pub(crate) fn called(future: S::Future, tokens: Option<RateLimiter>) -> Self {
        Self {
            state: State::Called { future },
            queued: None,
            tokens,
        }
    }

    pub(crate) fn queued(ticket: Ticket, service: S, request: ModelCallRequest, tokens: Option<RateLimiter>) -> Self {
        Self {
            state: State::Queued,
            queued: Some(Queued {
                ticket,
                service,
                request,
            }),
            tokens,
        }
    }

    pub(crate) fn refused(error: AgentError) -> Self {
        Self {
            state: State::Refused { error: Some(error) },
            queued: None,
            tokens: None,
        }
    }
}

impl<S> Future for ResponseFuture<S>
where
    S: Service<ModelCallRequest, Response = ModelOutput, Error = AgentError>,
{
    type Output = Result<ModelOutput, AgentError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match this.state.as_mut().project() {
                StateProj::Queued => {
                    let Some(queued) = this.queued.as_mut() else {
                        return Poll::Ready(Err(lost()));
                    };
                    match queued.ticket.poll_turn(cx) {
                        Turn::Wait => return Poll::Pending,
                        Turn::SleepUntil(at) | Turn::Watch(at) => this.state.set(State::Waiting {
                            sleep: tokio::time::sleep_until(at),
                            armed: false,
                        }),
                        Turn::Ask(answer) => this.state.set(State::Asking { answer }),
                        Turn::Go => {
                            let Some(Queued {
                                mut service, request, ..
                            }) = this.queued.take()
                            else {
                                return Poll::Ready(Err(lost()));
                            };
                            let future = service.call(request);
                            this.state.set(State::Called { future });
                        }
                    }
                }
                StateProj::Asking { answer } => {
                    let answer = ready!(answer.as_mut().poll(cx));
                    let Some(queued) = this.queued.as_mut() else {
                        return Poll::Ready(Err(lost()));
                    };
                    match queued.ticket.leave(answer) {
                        Decision::Go => {
                            let Some(Queued {
                                mut service, request, ..
                            }) = this.queued.take()
                            else {
                                return Poll::Ready(Err(lost()));
                            };
                            let future = service.call(request);
                            this.state.set(State::Called { future });
                        }
                        Decision::Sleep(after) => this.state.set(State::Sleeping {
                            sleep: tokio::time::sleep(after),
                        }),
                        Decision::Fail(error) => {
                            this.queued.take();
                            this.state.set(State::Refused { error: Some(error) });
                        }
                    }
                }
                StateProj::Sleeping { sleep } => {
                    ready!(sleep.poll(cx));
                    this.state.set(State::Queued);
                }
                StateProj::Waiting { sleep, armed } => {
                    // Armed at the first poll; any later poll is a wake (the front left, or the
                    // time is up): the turn is asked again.
                    if !*armed {
                        *armed = true;
                        if sleep.poll(cx).is_pending() {
                            return Poll::Pending;
                        }
                    }
                    this.state.set(State::Queued);
                }
                StateProj::Called { future } => {
                    let output = ready!(future.poll(cx));
                    return Poll::Ready(match (output, this.tokens.take()) {
                        (Ok(ModelOutput::Complete(r)), Some(limiter)) => {
                            limiter.record_tokens(tokens_of(&r));
                            Ok(ModelOutput::Complete(r))
                        }
                        (Ok(ModelOutput::Stream(s)), Some(limiter)) => {
                            Ok(ModelOutput::Stream(Box::pin(UsageStream { inner: s, limiter })))
                        }
                        (output, _) => output,
                    });
                }
                StateProj::Refused { error } => return Poll::Ready(Err(error.take().unwrap_or_else(lost))),
            }
        }
    }
}

fn lost() -> AgentError {
    AgentError::State("a rate-limit future was polled after it completed".to_owned())
}

fn tokens_of(response: &ChatResponse) -> u64 {
    response
        .usage
        .as_ref()
        .map_or(0, |u| u.input_tokens.saturating_add(u.output_tokens))
}

impl<S> fmt::Debug for ResponseFuture<S>
where
    S: Service<ModelCallRequest>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("queued", &self.queued.as_ref().map(|q| &q.ticket))
            .finish_non_exhaustive()
    }
}

pin_project! {
    /// A streamed answer under a token limit: counts the usage of its final chunk.
    struct UsageStream<St> {
        #[pin]
        inner: St,
        limiter: RateLimiter,
    }
}

impl<St> Stream for UsageStream<St>
where
    St: Stream<Item = Result<ChatResponse, AgentError>>,
{
    type Item = St::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let item = ready!(this.inner.poll_next(cx));
        if let Some(Ok(chunk)) = &item
            && chunk.is_last
        {
            this.limiter.record_tokens(tokens_of(chunk));
        }
        Poll::Ready(item)
    }
}
