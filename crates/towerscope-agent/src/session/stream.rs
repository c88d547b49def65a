//! [`SessionStream`]: a reply's events, then the save of its session.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use towerscope_core::{AgentError, EventStream, ReplyItem};

use super::bound::Bound;
use super::store::StoreFuture;

/// A reply's items, then the save of its session: when the reply's stream ends (completed,
/// parked for the user or an external tool, interrupted, failed) the session is saved before
/// this stream ends; a failed save (a [`Conflict`](AgentError::Conflict), an unreachable
/// store) is its last item. Dropped before its end, it drops the reply's stream (which stores
/// the part of an answer that was streamed), then saves from a task of its own.
pub struct SessionStream {
    inner: EventStream,
    phase: Phase,
    bound: Arc<Bound>,
}

enum Phase {
    Streaming,
    Saving(StoreFuture<'static, ()>),
    Done,
}

impl SessionStream {
    pub(crate) fn new(inner: EventStream, bound: Arc<Bound>) -> Self {
        Self {
            inner,
            phase: Phase::Streaming,
            bound,
        }
    }
}

impl Stream for SessionStream {
    type Item = Result<ReplyItem, AgentError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            match &mut this.phase {
                Phase::Streaming => match ready!(this.inner.as_mut().poll_next(cx)) {
                    Some(item) => return Poll::Ready(Some(item)),
                    None => this.phase = Phase::Saving(Arc::clone(&this.bound).save()),
                },
                Phase::Saving(save) => {
                    let saved = ready!(save.as_mut().poll(cx));
                    this.phase = Phase::Done;
                    return Poll::Ready(saved.err().map(Err));
                }
                Phase::Done => return Poll::Ready(None),
            }
        }
    }
}

impl Drop for SessionStream {
    fn drop(&mut self) {
        // The reply's stream goes first: what it stores as it is dropped (the reasoning step
        // keeps the part of an answer that was streamed) belongs in the save.
        drop(std::mem::replace(
            &mut self.inner,
            Box::pin(futures_util::stream::empty()),
        ));
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Streaming => Arc::clone(&self.bound).save_detached(),
            Phase::Saving(save) => match tokio::runtime::Handle::try_current() {
                // A save under way finishes, so the agent's revision stays right.
                Ok(runtime) => drop(runtime.spawn(save)),
                Err(_) => {
                    tracing::warn!(session = %self.bound.key, "a session save was dropped outside a tokio runtime")
                }
            },
            Phase::Done => {}
        }
    }
}

impl fmt::Debug for SessionStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionStream")
            .field("session", &self.bound)
            .finish_non_exhaustive()
    }
}
