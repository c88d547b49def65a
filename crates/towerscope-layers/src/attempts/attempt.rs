//! One attempt: wait (backoff), poll the service ready, call it, await the answer.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::Sleep;
use tower_service::Service;
use towerscope_core::{AgentError, ModelCallRequest, ModelOutput};

use super::{Core, Recovery};

pin_project! {
    #[project = AttemptProj]
    #[derive(Debug)]
    pub(crate) enum Attempt<F> {
        // Awaiting the answer of the service.
        Called {
            #[pin]
            future: F,
        },
        // Waiting before the next attempt.
        Waiting {
            #[pin]
            sleep: Sleep,
        },
        // Polling the service ready, then calling it.
        Ready,
        // Nothing in flight.
        Idle,
    }
}

impl<F> Attempt<F> {
    /// The next attempt, after `delay`.
    pub(crate) fn after(delay: Option<Duration>) -> Self {
        match delay {
            Some(d) if !d.is_zero() => Self::Waiting {
                sleep: tokio::time::sleep(d),
            },
            _ => Self::Ready,
        }
    }
}

/// Drives the attempt to its answer.
pub(crate) fn poll_attempt<S, P>(
    mut attempt: Pin<&mut Attempt<S::Future>>,
    core: &mut Core<S, P>,
    cx: &mut Context<'_>,
) -> Poll<Result<ModelOutput, AgentError>>
where
    S: Service<ModelCallRequest, Response = ModelOutput, Error = AgentError>,
{
    loop {
        match attempt.as_mut().project() {
            AttemptProj::Waiting { sleep } => {
                ready!(sleep.poll(cx));
                attempt.set(Attempt::Ready);
            }
            AttemptProj::Ready => {
                if let Err(e) = ready!(core.service.poll_ready(cx)) {
                    attempt.set(Attempt::Idle);
                    return Poll::Ready(Err(e));
                }
                let future = core.service.call(core.request.clone());
                attempt.set(Attempt::Called { future });
            }
            AttemptProj::Called { future } => {
                let output = ready!(future.poll(cx));
                attempt.set(Attempt::Idle);
                return Poll::Ready(output);
            }
            AttemptProj::Idle => {
                return Poll::Ready(Err(AgentError::State(
                    "a model-call attempt was polled after it completed".to_owned(),
                )));
            }
        }
    }
}

/// After a failed attempt: arms the next one and returns `true`, or returns `false` to give up.
pub(crate) fn next_attempt<S, P>(
    mut attempt: Pin<&mut Attempt<S::Future>>,
    core: &mut Core<S, P>,
    error: &AgentError,
    mut restart: impl FnMut(String),
) -> bool
where
    S: Service<ModelCallRequest>,
    P: Recovery,
{
    let Some((next, delay)) = core.policy.next(&core.request, error) else {
        return false;
    };
    restart(core.policy.restart_reason(&core.request, error, &next));
    core.request = next;
    attempt.set(Attempt::after(delay));
    true
}
