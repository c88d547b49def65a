//! Interrupting a running reply from outside ([`Agent::interrupt`](crate::Agent::interrupt)).
//!
//! The reference cancels the task that consumes the reply; the agent then closes the calls left
//! open, emits `REPLY_END(interrupted)` and the interruption message. In Rust, dropping the
//! reply stream cancels it too, but then nothing more can be emitted; an interrupt instead
//! cancels the reply loop at its current await point (a model call, a tool, a middleware) and
//! lets the stream end the reference's way.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// The interrupt signal of one agent (one reply runs at a time).
#[derive(Debug, Default)]
pub(crate) struct Interrupt {
    requested: AtomicBool,
    notify: Notify,
}

impl Interrupt {
    /// Asks the running reply to stop.
    pub(crate) fn trigger(&self) {
        self.requested.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Forgets an earlier request (a new reply starts).
    pub(crate) fn reset(&self) {
        self.requested.store(false, Ordering::Release);
    }

    /// Resolves once an interrupt was requested.
    pub(crate) async fn requested(&self) {
        loop {
            let notified = self.notify.notified();
            let mut notified = std::pin::pin!(notified);
            // Register before checking the flag, so a trigger in between is not lost.
            notified.as_mut().enable();
            if self.requested.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}
