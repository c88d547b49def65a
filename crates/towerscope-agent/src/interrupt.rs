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

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use futures_util::future::Either;
use pin_project_lite::pin_project;

use tokio::sync::Notify;
use tokio::sync::futures::Notified;

/// The interrupt signal of one agent (one reply runs at a time).
#[derive(Debug, Default)]
pub(crate) struct Interrupt {
    requested: AtomicBool,
    shields: AtomicUsize,
    notify: Notify,
    /// Bumped before every notification: a waiter that saw the same value, with the same
    /// waker, and no request since, need not poll its `Notified` again (see [`Unless`]).
    generation: AtomicU64,
    /// Held while the agent is marked busy and an earlier request forgotten ([`begin`]), and
    /// while an interrupt checks that the agent is busy and asks ([`trigger_if_busy`]): so an
    /// interrupt is neither erased by the start it raced nor, meant for a reply that just
    /// ended, left for the next one.
    ///
    /// [`begin`]: Self::begin
    /// [`trigger_if_busy`]: Self::trigger_if_busy
    gate: std::sync::Mutex<()>,
}

impl Interrupt {
    /// Marks the agent busy (`false` when it already was) and forgets an earlier request.
    pub(crate) fn begin(&self, busy: &AtomicBool) -> bool {
        let _gate = self.gate.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if busy.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.reset();
        true
    }

    /// Asks the running work to stop if the agent is busy; whether it was.
    pub(crate) fn trigger_if_busy(&self, busy: &AtomicBool) -> bool {
        let _gate = self.gate.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !busy.load(Ordering::Acquire) {
            return false;
        }
        self.trigger();
        true
    }

    /// Asks the running reply to stop.
    pub(crate) fn trigger(&self) {
        // Sequentially consistent with the shield's drop (see there): of the two, at least one
        // sees the other's store.
        self.requested.store(true, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.notify.notify_waiters();
    }

    /// Forgets an earlier request (a new reply starts).
    pub(crate) fn reset(&self) {
        self.requested.store(false, Ordering::Release);
    }

    /// Whether an interrupt was requested.
    pub(crate) fn is_requested(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    /// Resolves once an interrupt was requested.
    pub(crate) fn requested(&self) -> Requested<'_> {
        Requested::new(self, Self::is_requested)
    }

    /// Resolves once an interrupt was requested and no [`Shield`] is held: the moment the loop
    /// may cancel the work in flight.
    pub(crate) fn requested_unshielded(&self) -> Requested<'_> {
        Requested::new(self, |i| i.is_requested() && i.shields.load(Ordering::SeqCst) == 0)
    }

    /// Holds off [`requested_unshielded`](Self::requested_unshielded) until the guard drops.
    pub(crate) fn shield(&self) -> Shield<'_> {
        self.shields.fetch_add(1, Ordering::AcqRel);
        Shield(self)
    }
}

pin_project! {
    /// The future of [`Interrupt::requested`] and [`Interrupt::requested_unshielded`]: resolves
    /// once `ready` holds, checked after each notification. Named (not an `async fn`) so that
    /// [`UnlessInterrupted`] can hold it without a box.
    pub(crate) struct Requested<'a> {
        interrupt: &'a Interrupt,
        ready: fn(&Interrupt) -> bool,
        #[pin]
        notified: Notified<'a>,
    }
}

impl<'a> Requested<'a> {
    fn new(interrupt: &'a Interrupt, ready: fn(&Interrupt) -> bool) -> Self {
        Self {
            interrupt,
            ready,
            notified: interrupt.notify.notified(),
        }
    }
}

impl Future for Requested<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut this = self.project();
        loop {
            // Register before checking, so a change in between is not lost.
            this.notified.as_mut().enable();
            if (this.ready)(this.interrupt) {
                return Poll::Ready(());
            }
            match this.notified.as_mut().poll(cx) {
                Poll::Ready(()) => this.notified.set(this.interrupt.notify.notified()),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// Keeps the reply loop from cancelling the holder on an interrupt; the holder watches for the
/// interrupt itself.
#[derive(Debug)]
pub(crate) struct Shield<'a>(&'a Interrupt);

impl Drop for Shield<'_> {
    fn drop(&mut self) {
        self.0.shields.fetch_sub(1, Ordering::SeqCst);
        // A shield going away can only make a wait ready when an interrupt was requested:
        // without one, notifying would wake the reply's own task for nothing, once per
        // reasoning step. No wake-up is lost: `trigger` stores its request and this drop its
        // count in one order (both sequentially consistent), so either this load sees the
        // request and notifies, or `trigger` comes after the count went down and its own
        // notification finds it.
        if self.0.is_requested() {
            self.0.generation.fetch_add(1, Ordering::AcqRel);
            self.0.notify.notify_waiters();
        }
    }
}

/// Runs `work` unless an interrupt comes first: `None` when it did. Then the reply is marked
/// interrupted before `work` is dropped, so a layer whose call is dropped can tell an
/// interruption from an abandoned call.
///
/// A named future rather than an `async fn`: an `async fn` would keep `work` twice in its
/// state (as its argument and as the pinned local), in every reasoning step in flight.
pub(crate) fn unless_interrupted<'a, F: Future>(
    interrupt: &'a Interrupt,
    ctx: &'a towerscope_core::AgentContext,
    work: F,
) -> UnlessInterrupted<'a, F> {
    UnlessInterrupted {
        inner: Unless::new(interrupt, work, interrupt.requested()),
        ctx,
    }
}

pin_project! {
    /// The future [`unless_interrupted`] returns.
    pub(crate) struct UnlessInterrupted<'a, W> {
        #[pin]
        inner: Unless<'a, W, Requested<'a>>,
        ctx: &'a towerscope_core::AgentContext,
    }
}

impl<W: Future> Future for UnlessInterrupted<'_, W> {
    type Output = Option<W::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match this.inner.poll(cx) {
            Poll::Ready(Either::Left(output)) => Poll::Ready(Some(output)),
            Poll::Ready(Either::Right(())) => {
                // `work` lives in this future: it is dropped after the mark, when the caller
                // drops the future.
                this.ctx.mark_interrupted();
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

pin_project! {
    /// `work`, unless `wait` (a wait for an interrupt of `interrupt`) ends first: `select`,
    /// except that `wait` is polled again only when it may have changed (an interrupt was
    /// requested, a notification was sent since its last poll, or the waker changed). A reply's
    /// loop is polled once per item it emits; polling the `Notified` each time cost as much
    /// as building a small event.
    pub(crate) struct Unless<'a, W, R> {
        #[pin]
        work: W,
        #[pin]
        wait: R,
        interrupt: &'a Interrupt,
        seen: Option<(u64, Waker)>,
    }
}

impl<'a, W, R> Unless<'a, W, R> {
    pub(crate) fn new(interrupt: &'a Interrupt, work: W, wait: R) -> Self {
        Self {
            work,
            wait,
            interrupt,
            seen: None,
        }
    }
}

/// Whether `a` wakes the task `b` wakes. `Waker::will_wake` alone says no for a clone of
/// tokio's waker (its vtable comes from another instance of a generic function), so a waker
/// with the same non-null data pointer counts as the same task too.
fn same_task(a: &Waker, b: &Waker) -> bool {
    a.will_wake(b) || (!a.data().is_null() && a.data() == b.data())
}

impl<W: Future, R: Future<Output = ()>> Future for Unless<'_, W, R> {
    type Output = Either<W::Output, ()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.work.poll(cx) {
            return Poll::Ready(Either::Left(output));
        }
        // Read before polling `wait`: a notification after this read bumps the generation, so
        // the next poll polls `wait` again.
        let generation = this.interrupt.generation.load(Ordering::Acquire);
        let unchanged = this.seen.as_ref().is_some_and(|(seen, waker)| {
            *seen == generation && same_task(waker, cx.waker()) && !this.interrupt.is_requested()
        });
        if unchanged {
            return Poll::Pending;
        }
        match this.wait.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Either::Right(())),
            Poll::Pending => {
                *this.seen = Some((generation, cx.waker().clone()));
                Poll::Pending
            }
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

    #[tokio::test(start_paused = true)]
    async fn an_interrupt_lands_after_notifications_without_a_request() {
        let interrupt = Arc::new(Interrupt::default());
        let waiter = Arc::clone(&interrupt);
        let wait = tokio::spawn(async move {
            let ctx = towerscope_core::AgentContext::new("a", "s", "r");
            unless_interrupted(&waiter, &ctx, std::future::pending::<()>()).await
        });
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            // A shield that comes and goes, with no request.
            drop(interrupt.shield());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!wait.is_finished(), "no interrupt was requested");
        interrupt.trigger();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(wait.is_finished(), "the interrupt lands");
        assert_eq!(wait.await.ok(), Some(None));
    }

    /// Counts the wake-ups of the waker it makes.
    struct CountWakes(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for CountWakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_shield_dropped_with_no_request_wakes_no_waiter_and_with_one_wakes_them() {
        let interrupt = Interrupt::default();
        let count = Arc::new(CountWakes(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let mut cx = Context::from_waker(&waker);
        let mut plain = std::pin::pin!(interrupt.requested());
        let mut unshielded = std::pin::pin!(interrupt.requested_unshielded());
        assert!(plain.as_mut().poll(&mut cx).is_pending());
        assert!(unshielded.as_mut().poll(&mut cx).is_pending());

        drop(interrupt.shield());
        assert_eq!(count.0.load(Ordering::SeqCst), 0, "no request: nothing to wake for");

        let shield = interrupt.shield();
        interrupt.trigger();
        assert_eq!(count.0.load(Ordering::SeqCst), 2, "the request wakes both waits");
        assert!(plain.as_mut().poll(&mut cx).is_ready());
        assert!(
            unshielded.as_mut().poll(&mut cx).is_pending(),
            "held back by the shield"
        );
        drop(shield);
        assert_eq!(
            count.0.load(Ordering::SeqCst),
            3,
            "the shield's drop wakes the held wait"
        );
        assert!(unshielded.as_mut().poll(&mut cx).is_ready());
    }
}
