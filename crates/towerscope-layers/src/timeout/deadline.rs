//! The deadlines of one call and the one timer that enforces the nearest.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};
use towerscope_core::{AgentError, TimeoutKind};

use crate::position::CallTarget;

/// The configured deadlines (all optional).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Deadlines {
    pub(crate) call: Option<Duration>,
    pub(crate) first_chunk: Option<Duration>,
    pub(crate) idle: Option<Duration>,
}

impl Deadlines {
    pub(crate) fn any(&self) -> bool {
        self.call.is_some() || self.first_chunk.is_some() || self.idle.is_some()
    }
}

/// A deadline to arm: when, which kind, and the configured duration (for the error).
pub(crate) type Next = (Instant, TimeoutKind, Duration);

fn earliest(a: Option<Next>, b: Option<Next>) -> Option<Next> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// One call's start, deadlines and target.
///
/// A deadline too far ahead for an [`Instant`] (`Duration::MAX`, a natural "no deadline") is no
/// deadline.
#[derive(Debug, Clone)]
pub(crate) struct Clock {
    start: Instant,
    deadlines: Deadlines,
    target: CallTarget,
}

impl Clock {
    pub(crate) fn start(deadlines: Deadlines, target: CallTarget) -> Self {
        Self {
            start: Instant::now(),
            deadlines,
            target,
        }
    }

    pub(crate) fn deadlines(&self) -> &Deadlines {
        &self.deadlines
    }

    fn call(&self) -> Option<Next> {
        let after = self.deadlines.call?;
        Some((self.start.checked_add(after)?, TimeoutKind::Call, after))
    }

    /// The deadline before the first chunk (or the complete answer) arrives.
    pub(crate) fn before_first(&self) -> Option<Next> {
        let first = self
            .deadlines
            .first_chunk
            .and_then(|after| Some((self.start.checked_add(after)?, TimeoutKind::FirstChunk, after)));
        earliest(self.call(), first)
    }

    /// The deadline after a chunk arrived at `now`.
    pub(crate) fn after_chunk(&self, now: Instant) -> Option<Next> {
        let idle = self
            .deadlines
            .idle
            .and_then(|after| Some((now.checked_add(after)?, TimeoutKind::Idle, after)));
        earliest(self.call(), idle)
    }

    pub(crate) fn error(&self, kind: TimeoutKind, after: Duration) -> AgentError {
        AgentError::Timeout {
            what: self.target.to_string(),
            kind,
            after: Some(after),
        }
    }
}

pin_project! {
    /// A timer armed for the nearest deadline, or off.
    #[project = TimerProj]
    #[derive(Debug)]
    pub(crate) enum Timer {
        Off,
        Armed {
            #[pin]
            sleep: Sleep,
            kind: TimeoutKind,
            after: Duration,
        },
    }
}

impl Timer {
    pub(crate) fn new(next: Option<Next>) -> Self {
        match next {
            None => Self::Off,
            Some((at, kind, after)) => Self::Armed {
                sleep: tokio::time::sleep_until(at),
                kind,
                after,
            },
        }
    }

    /// Re-arms in place (no new timer when one is armed already).
    pub(crate) fn set_next(mut self: Pin<&mut Self>, next: Option<Next>) {
        match (self.as_mut().project(), next) {
            (TimerProj::Armed { sleep, kind, after }, Some((at, k, a))) => {
                sleep.reset(at);
                *kind = k;
                *after = a;
            }
            (TimerProj::Off, None) => {}
            (_, next) => self.set(Self::new(next)),
        }
    }

    /// Ready with the kind and duration of the deadline once it passed.
    pub(crate) fn poll_expired(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<(TimeoutKind, Duration)> {
        match self.project() {
            TimerProj::Off => Poll::Pending,
            TimerProj::Armed { sleep, kind, after } => sleep.poll(cx).map(|()| (*kind, *after)),
        }
    }
}
