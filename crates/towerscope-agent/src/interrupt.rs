//! Interrupting a running reply from outside ([`Agent::interrupt`](crate::Agent::interrupt)).
//!
//! The reference cancels the task that consumes the reply; the cancellation lands wherever the
//! reply is waiting, and the agent then closes what is open, emits `REPLY_END(interrupted)` and
//! the interruption message. In Rust, dropping the reply stream cancels it too, but then nothing
//! more can be emitted. An interrupt instead cancels the reply loop at its current await point
//! (a tool, a middleware) and lets the stream end the reference's way.
//!
//! The reasoning step is different: the reference turns a cancelled model call into an
//! `interrupted` answer, closes the open blocks, emits `MODEL_CALL_END(interrupted)` and keeps
//! what was streamed so far. So while it runs, the reasoning step holds a [`Shield`]: the loop
//! does not cancel it from outside, and the step watches for the interrupt itself at its own
//! await points (the system-prompt fold, opening the model call, each chunk).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::Notify;

/// The interrupt signal of one agent (one reply runs at a time).
#[derive(Debug, Default)]
pub(crate) struct Interrupt {
    requested: AtomicBool,
    shields: AtomicUsize,
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

    /// Whether an interrupt was requested.
    pub(crate) fn is_requested(&self) -> bool {
        self.requested.load(Ordering::Acquire)
    }

    /// Resolves once an interrupt was requested.
    pub(crate) async fn requested(&self) {
        self.wait_until(|| self.is_requested()).await;
    }

    /// Resolves once an interrupt was requested and no [`Shield`] is held: the moment the loop
    /// may cancel the work in flight.
    pub(crate) async fn requested_unshielded(&self) {
        self.wait_until(|| self.is_requested() && self.shields.load(Ordering::Acquire) == 0)
            .await;
    }

    /// Holds off [`requested_unshielded`](Self::requested_unshielded) until the guard drops.
    pub(crate) fn shield(&self) -> Shield<'_> {
        self.shields.fetch_add(1, Ordering::AcqRel);
        Shield(self)
    }

    async fn wait_until(&self, ready: impl Fn() -> bool) {
        loop {
            let notified = self.notify.notified();
            let mut notified = std::pin::pin!(notified);
            // Register before checking, so a change in between is not lost.
            notified.as_mut().enable();
            if ready() {
                return;
            }
            notified.await;
        }
    }
}

/// Keeps the reply loop from cancelling the holder on an interrupt; the holder watches for the
/// interrupt itself.
#[derive(Debug)]
pub(crate) struct Shield<'a>(&'a Interrupt);

impl Drop for Shield<'_> {
    fn drop(&mut self) {
        self.0.shields.fetch_sub(1, Ordering::AcqRel);
        self.0.notify.notify_waiters();
    }
}

/// Runs `work` unless an interrupt comes first: `None` when it did. Then the reply is marked
/// interrupted before `work` is dropped, so a layer whose call is dropped can tell an
/// interruption from an abandoned call.
pub(crate) async fn unless_interrupted<F: std::future::Future>(
    interrupt: &Interrupt,
    ctx: &towerscope_core::AgentContext,
    work: F,
) -> Option<F::Output> {
    let work = std::pin::pin!(work);
    let interrupted = std::pin::pin!(interrupt.requested());
    match futures_util::future::select(work, interrupted).await {
        futures_util::future::Either::Left((output, _)) => Some(output),
        futures_util::future::Either::Right(((), _work)) => {
            // `work` is pinned in this frame: it is dropped when this function returns, after
            // the mark.
            ctx.mark_interrupted();
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn a_shield_holds_back_the_unshielded_wait() {
        let interrupt = Arc::new(Interrupt::default());
        let shield_owner = Arc::clone(&interrupt);
        let waiter = Arc::clone(&interrupt);
        let wait = tokio::spawn(async move { waiter.requested_unshielded().await });
        let shielded = tokio::spawn(async move {
            let _shield = shield_owner.shield();
            tokio::time::sleep(Duration::from_secs(5)).await;
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        interrupt.trigger();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!wait.is_finished(), "an interrupt waits while a shield is held");
        assert!(shielded.await.is_ok());
        assert!(wait.await.is_ok(), "and lands once the shield drops");
        let ctx = towerscope_core::AgentContext::new("a", "s", "r");
        assert_eq!(
            unless_interrupted(&interrupt, &ctx, std::future::pending::<()>()).await,
            None
        );
        assert!(ctx.is_interrupted());
    }
}
