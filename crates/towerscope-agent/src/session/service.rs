//! [`SessionService`] and its [`ResponseFuture`]: load, then call the reply.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use tower::Service;
use towerscope_core::{AgentError, EventStream, ReplyInput, ReplyRequest};

use super::bound::Bound;
use super::store::StoreFuture;
use super::stream::SessionStream;

/// The service of a [`SessionLayer`](super::SessionLayer): loads the session, calls the inner
/// `on_reply` service, and answers with a [`SessionStream`] that saves the session when the
/// reply ends.
#[derive(Clone)]
pub struct SessionService<S> {
    inner: S,
    bound: Arc<Bound>,
}

impl<S> SessionService<S> {
    pub(crate) fn new(inner: S, bound: Arc<Bound>) -> Self {
        Self { inner, bound }
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Consumes `self`, returning the inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: fmt::Debug> fmt::Debug for SessionService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionService")
            .field("inner", &self.inner)
            .field("session", &self.bound)
            .finish()
    }
}

impl<S> Service<ReplyRequest> for SessionService<S>
where
    S: Service<ReplyRequest, Response = EventStream, Error = AgentError> + Clone,
{
    type Response = EventStream;
    type Error = AgentError;
    type Future = ResponseFuture<S>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: ReplyRequest) -> Self::Future {
        // The instance polled ready is called once the session is loaded.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        // A confirmation or an external result resumes a parked reply and runs the calls after
        // it: taken first, so the same one delivered twice (a retry) runs them once.
        let claim = matches!(req.input, ReplyInput::Confirm(_) | ReplyInput::External(_));
        ResponseFuture {
            state: State::Loading {
                load: Box::pin(Arc::clone(&self.bound).load_for(claim)),
            },
            waiting: Some((inner, req)),
            bound: Arc::clone(&self.bound),
            release: ReleaseClaim {
                bound: Arc::clone(&self.bound),
                armed: true,
            },
        }
    }
}

pin_project! {
    /// The response future of [`SessionService`]: loads the session into the agent, then
    /// opens the reply. A failed load fails the reply before it starts (nothing is saved).
    pub struct ResponseFuture<S>
    where
        S: Service<ReplyRequest>,
    {
        #[pin]
        state: State<S::Future>,
        waiting: Option<(S, ReplyRequest)>,
        bound: Arc<Bound>,
        release: ReleaseClaim,
    }
}

/// Takes the agent's claim on a parked reply out of the session when the reply never opens
/// (its future dropped, or failed, after the load claimed the reply): the stream whose save
/// would take it out is never made, and the claim would hold off every retry until it lapses.
struct ReleaseClaim {
    bound: Arc<Bound>,
    armed: bool,
}

impl Drop for ReleaseClaim {
    fn drop(&mut self) {
        if self.armed && self.bound.holds_claim() {
            Arc::clone(&self.bound).release_detached();
        }
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Loading {
            load: StoreFuture<'static, ()>,
        },
        Opening {
            #[pin]
            future: F,
        },
    }
}

impl<S> Future for ResponseFuture<S>
where
    S: Service<ReplyRequest, Response = EventStream, Error = AgentError>,
{
    type Output = Result<EventStream, AgentError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match this.state.as_mut().project() {
                StateProj::Loading { load } => {
                    ready!(load.as_mut().poll(cx))?;
                    let Some((mut inner, req)) = this.waiting.take() else {
                        return Poll::Ready(Err(AgentError::State(
                            "a session future was polled after it completed".to_owned(),
                        )));
                    };
                    let future = inner.call(this.bound.rebind(req));
                    this.state.set(State::Opening { future });
                }
                StateProj::Opening { future } => {
                    let stream = ready!(future.poll(cx))?;
                    // The stream's save takes the claim out from now on.
                    this.release.armed = false;
                    let saving: EventStream = Box::pin(SessionStream::new(stream, Arc::clone(this.bound)));
                    return Poll::Ready(Ok(saving));
                }
            }
        }
    }
}

impl<S> fmt::Debug for ResponseFuture<S>
where
    S: Service<ReplyRequest>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("session", &self.bound)
            .finish_non_exhaustive()
    }
}
