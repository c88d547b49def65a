//! Ids and timestamps that a replay rebuilds: inside a durable reply, [`Id::new`] and
//! [`Timestamp::now`] read a [`ReplaySource`] seeded from the journal instead of the random
//! generator and the system clock.
//!
//! A durable reply runs its agent inside [`ReplaySource::scope`]. The ids it makes are a
//! sequence drawn from Restate's per-invocation random seed (the same on every attempt of one
//! invocation), and its timestamps start at a time read once from the journal and advance
//! with each journaled step's completion time, one microsecond per read in between. Two
//! attempts of one invocation that take the same path therefore build messages and events
//! with the same ids and timestamps.
//!
//! The work inside a journaled step (the model call, the tool) runs in an
//! [unjournaled](ReplaySource::unjournaled) scope: a replay skips it, so it must not draw from
//! the reply's sequence.
//!
//! Both work through towerscope-core's process-wide factories ([`set_id_factory`],
//! [`set_timestamp_factory`]), installed once by [`install`]; outside a scope they give
//! what core gives by default (a random version-4 id, the system time). A process that serves
//! durable agents must not install other factories.
//!
//! # Example
//!
//! ```
//! use towerscope_core::{Id, Timestamp};
//! use towerscope_restate::replay::ReplaySource;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! towerscope_restate::replay::install();
//! let start = Timestamp::from_micros(1_795_248_355_000_000);
//! let first = ReplaySource::new(7, start).scope(async { (Id::new(), Timestamp::now()) }).await;
//! let again = ReplaySource::new(7, start).scope(async { (Id::new(), Timestamp::now()) }).await;
//! assert_eq!(first, again);
//! assert_eq!(first.1, start);
//! assert_ne!(Id::new(), first.0);
//! # }
//! ```

use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::time::{SystemTime, UNIX_EPOCH};

use towerscope_core::id::{set_id_factory, set_timestamp_factory};
use towerscope_core::{Id, Timestamp};

tokio::task_local! {
    static SOURCE: ReplaySource;
}

/// Where the ids and timestamps of a durable reply come from (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct ReplaySource(Option<Arc<Sequence>>);

#[derive(Debug)]
struct Sequence {
    seed: u64,
    next: AtomicU64,
    /// Microseconds since the epoch of the next timestamp.
    now: AtomicI64,
}

impl ReplaySource {
    /// A source whose ids derive from `seed` and whose time starts at `start`.
    pub fn new(seed: u64, start: Timestamp) -> Self {
        Self(Some(Arc::new(Sequence {
            seed,
            next: AtomicU64::new(0),
            now: AtomicI64::new(start.as_micros()),
        })))
    }

    /// A source that gives random ids and the system time, for work a replay skips.
    pub fn unjournaled() -> Self {
        Self(None)
    }

    /// Runs `future` with this source behind [`Id::new`] and [`Timestamp::now`].
    pub fn scope<F: Future>(self, future: F) -> tokio::task::futures::TaskLocalFuture<Self, F> {
        SOURCE.scope(self, future)
    }

    /// Runs `f` at once with this source behind [`Id::new`] and [`Timestamp::now`]: for
    /// synchronous code inside a durable reply that a replay may not run again, such as an
    /// event sink (with [`unjournaled`](Self::unjournaled)).
    pub fn sync_scope<R>(self, f: impl FnOnce() -> R) -> R {
        SOURCE.sync_scope(self, f)
    }

    /// Moves the clock to `at` if that is later (a journaled step's completion time).
    pub fn advance_to(&self, at: Timestamp) {
        if let Some(seq) = &self.0 {
            seq.now.fetch_max(at.as_micros(), Ordering::Relaxed);
        }
    }

    fn id(&self) -> Id {
        match &self.0 {
            Some(seq) => {
                let n = seq.next.fetch_add(1, Ordering::Relaxed);
                let hi = mix(seq.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                let lo = mix(hi ^ seq.seed.rotate_left(17) ^ n);
                uuid4((u128::from(hi) << 64) | u128::from(lo))
            }
            None => random_id(),
        }
    }

    fn now(&self) -> Timestamp {
        match &self.0 {
            Some(seq) => Timestamp::from_micros(seq.now.fetch_add(1, Ordering::Relaxed)),
            None => system_now(),
        }
    }
}

/// Installs the process-wide id and timestamp factories that read the current scope's source
/// (once; later calls do nothing).
pub fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        set_id_factory(|| SOURCE.try_with(ReplaySource::id).unwrap_or_else(|_| random_id()));
        set_timestamp_factory(|| SOURCE.try_with(ReplaySource::now).unwrap_or_else(|_| system_now()));
    });
}

/// splitmix64's finaliser: a bijection that spreads every input bit over the output.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The bits as a version-4 UUID, as core writes its ids.
fn uuid4(mut bits: u128) -> Id {
    bits = (bits & !(0xF << 76)) | (0x4 << 76);
    bits = (bits & !(0x3 << 62)) | (0x2 << 62);
    Id::from_u128(bits)
}

fn random_id() -> Id {
    uuid4(fastrand::u128(..))
}

fn system_now() -> Timestamp {
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros();
    Timestamp::from_micros(i64::try_from(micros).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_source_repeats_its_sequence_and_unjournaled_work_does_not_draw_from_it() {
        install();
        let start = Timestamp::from_micros(1_000_000);
        let run = |skip_work: bool| {
            ReplaySource::new(42, start).scope(async move {
                let a = Id::new();
                if !skip_work {
                    // Work inside a step: a replay does not run it.
                    let _ = ReplaySource::unjournaled()
                        .scope(async { (Id::new(), Timestamp::now()) })
                        .await;
                }
                let b = Id::new();
                (a, b, Timestamp::now(), Timestamp::now())
            })
        };
        let first = run(false).await;
        let replay = run(true).await;
        assert_eq!(first, replay);
        assert_ne!(first.0, first.1);
        assert_eq!(first.0.to_string().len(), 32);
        assert_eq!(first.2.as_micros() + 1, first.3.as_micros());
        let other_seed = ReplaySource::new(43, start).scope(async { Id::new() }).await;
        assert_ne!(other_seed, first.0);
    }

    #[tokio::test]
    async fn the_clock_follows_journaled_steps() {
        install();
        let source = ReplaySource::new(1, Timestamp::from_micros(10));
        let times = source
            .clone()
            .scope(async {
                let before = Timestamp::now();
                source.advance_to(Timestamp::from_micros(500));
                let after = Timestamp::now();
                source.advance_to(Timestamp::from_micros(20));
                (before, after, Timestamp::now())
            })
            .await;
        assert_eq!(times.0.as_micros(), 10);
        assert_eq!(times.1.as_micros(), 500);
        assert_eq!(times.2.as_micros(), 501, "the clock never goes back");
    }
}
