//! [`Sequence`]: ids that count from 1 and a clock that stands still, for one future: a test
//! that wraps a reply in [`Sequence::scope`] gets the same ids and timestamps on every run.
//!
//! Inside the scope, [`Id::new`](crate::Id::new) returns `00000000000000000000000000000001`,
//! `…02`, … in the order they are made, [`Timestamp::now`](crate::Timestamp::now) returns the
//! sequence's time, and so does the agent's system clock (the time its hints write). Outside the
//! scope nothing changes, so tests running in parallel in one process do not see each other's
//! sequences, unlike the process-wide [`set_id_factory`](crate::id::set_id_factory).
//!
//! The scope follows the future wherever it is polled, on any thread; a task the future spawns
//! is a future of its own and is not in the scope. While no scope is being polled, making an id
//! costs one more atomic load.
//!
//! # Example
//!
//! ```
//! use towerscope_core::{Id, Timestamp};
//! use towerscope_core::sequence::Sequence;
//!
//! # futures_util::FutureExt::now_or_never(async {
//! let (first, second, at) = Sequence::new().scope(async { (Id::new(), Id::new(), Timestamp::now()) }).await;
//! assert_eq!(first.to_string(), "00000000000000000000000000000001");
//! assert_eq!(second.as_u128(), Some(2));
//! assert_eq!(at.to_string(), "2026-01-01T00:00:00");
//! assert_ne!(Id::new().as_u128(), Some(3), "outside the scope ids are random again");
//! # });
//! ```

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pin_project_lite::pin_project;

/// 2026-01-01T00:00:00 UTC, the default time of a sequence.
const DEFAULT_MICROS: i64 = 1_767_225_600_000_000;

/// Ids counting from 1 and a fixed time; clones share the counter. See the [module docs](self).
#[derive(Clone)]
pub struct Sequence {
    state: Arc<State>,
}

struct State {
    next_id: AtomicU64,
    micros: i64,
}

impl Sequence {
    /// Ids from 1, the time 2026-01-01T00:00:00 UTC.
    pub fn new() -> Self {
        Self::at_micros(DEFAULT_MICROS)
    }

    /// Ids from 1, the time `time` (truncated to microseconds).
    pub fn at(time: SystemTime) -> Self {
        let micros = match time.duration_since(UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_micros()).unwrap_or(i64::MAX),
            Err(before) => -i64::try_from(before.duration().as_micros()).unwrap_or(i64::MAX),
        };
        Self::at_micros(micros)
    }

    fn at_micros(micros: i64) -> Self {
        Self {
            state: Arc::new(State {
                next_id: AtomicU64::new(1),
                micros,
            }),
        }
    }

    /// The sequence's time.
    pub fn time(&self) -> SystemTime {
        let micros = self.state.micros;
        let offset = Duration::from_micros(micros.unsigned_abs());
        let time = if micros >= 0 {
            UNIX_EPOCH.checked_add(offset)
        } else {
            UNIX_EPOCH.checked_sub(offset)
        };
        // A time the platform cannot represent stands at the epoch.
        time.unwrap_or(UNIX_EPOCH)
    }

    /// `future` with this sequence's ids and time while it is polled.
    pub fn scope<F: Future>(&self, future: F) -> Scoped<F> {
        Scoped {
            inner: future,
            sequence: self.clone(),
        }
    }
}

impl Default for Sequence {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Sequence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sequence")
            .field("next_id", &self.state.next_id.load(Ordering::Relaxed))
            .field("micros", &self.state.micros)
            .finish()
    }
}

pin_project! {
    /// A future polled inside a [`Sequence`]; see [`Sequence::scope`].
    #[derive(Debug)]
    pub struct Scoped<F> {
        #[pin]
        inner: F,
        sequence: Sequence,
    }
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _entered = Entered::enter(Arc::clone(&this.sequence.state));
        this.inner.poll(cx)
    }
}

thread_local! {
    /// The sequence of the future being polled on this thread.
    static CURRENT: RefCell<Option<Arc<State>>> = const { RefCell::new(None) };
}

/// How many scoped polls are running, on any thread: while none is, ids skip the thread-local.
static POLLING: AtomicUsize = AtomicUsize::new(0);

/// A sequence entered for one poll; leaving restores the one around it (scopes nest).
struct Entered {
    previous: Option<Arc<State>>,
}

impl Entered {
    fn enter(state: Arc<State>) -> Self {
        POLLING.fetch_add(1, Ordering::AcqRel);
        let previous = CURRENT.with(|current| current.replace(Some(state)));
        Self { previous }
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|current| *current.borrow_mut() = previous);
        POLLING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The current sequence's state, if a scoped future is being polled on this thread.
#[inline]
fn current() -> Option<Arc<State>> {
    if POLLING.load(Ordering::Acquire) == 0 {
        return None;
    }
    CURRENT.try_with(|current| current.borrow().clone()).ok().flatten()
}

/// Whether a scoped future is being polled on this thread (draws nothing from it).
pub(crate) fn in_scope() -> bool {
    current().is_some()
}

/// The next id of the current sequence, as a number (inlined: every id asks, and the answer
/// is almost always the first check's `None`).
#[inline]
pub(crate) fn scoped_id() -> Option<u128> {
    current().map(|state| u128::from(state.next_id.fetch_add(1, Ordering::Relaxed)))
}

/// The current sequence's time, in microseconds since the Unix epoch.
pub(crate) fn scoped_micros() -> Option<i64> {
    current().map(|state| state.micros)
}

/// The current sequence's time, for clocks outside this crate (the agent's hint clock).
pub fn scoped_time() -> Option<SystemTime> {
    scoped_micros().map(|micros| Sequence::at_micros(micros).time())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{Id, Timestamp};

    #[tokio::test]
    async fn scopes_nest_and_follow_their_future_across_awaits() {
        let outer = Sequence::new();
        let inner = Sequence::at(UNIX_EPOCH + Duration::from_secs(60));
        let (a, (b, t), c) = outer
            .scope(async {
                let a = Id::new();
                let nested = inner.scope(async {
                    tokio::task::yield_now().await;
                    (Id::new(), Timestamp::now())
                });
                let b = nested.await;
                tokio::task::yield_now().await;
                (a, b, Id::new())
            })
            .await;
        assert_eq!((a.as_u128(), b.as_u128(), c.as_u128()), (Some(1), Some(1), Some(2)));
        assert_eq!(t.to_string(), "1970-01-01T00:01:00");
        assert_eq!(scoped_time(), None);
        assert_eq!(Id::new().len(), 32);
    }

    #[tokio::test]
    async fn two_sequences_polled_in_turn_keep_their_own_counters() {
        let (x, y) = (Sequence::new(), Sequence::new());
        let one = x.scope(async {
            let first = Id::new();
            tokio::task::yield_now().await;
            (first, Id::new())
        });
        let two = y.scope(async {
            let first = Id::new();
            tokio::task::yield_now().await;
            (first, Id::new())
        });
        let ((a, b), (c, d)) = futures_util::future::join(one, two).await;
        let numbers = [a, b, c, d].map(|id| id.as_u128().unwrap());
        assert_eq!(numbers, [1, 2, 1, 2]);
    }
}
