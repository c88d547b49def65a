//! [`RateLimitBackend`]: where a rate limit shared by many processes keeps its counts, and what
//! a limiter does when that place cannot be reached.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use towerscope_core::AgentError;

use super::RateLimits;

/// The future of [`RateLimitBackend::try_start`].
pub type BackendFuture = Pin<Box<dyn Future<Output = Result<Verdict, AgentError>> + Send>>;

/// Which limit holds a call back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeldBy {
    /// The minimum interval between two starts.
    MinInterval,
    /// The number of calls per window.
    Requests,
    /// The number of tokens per window.
    Tokens,
}

/// A backend's answer to a call that wants to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Start now: the backend counted the start.
    Start,
    /// The limits allow a start only `after` this long, because of `held_by`.
    Wait {
        /// How long until a start may be allowed.
        after: Duration,
        /// The limit that holds the call back.
        held_by: HeldBy,
    },
}

/// Where a [`RateLimiter`](super::RateLimiter) shared by many processes keeps its counts: the
/// `RedisBackend` (feature `redis`), or your own.
///
/// A limiter with a backend keeps its local queue (calls of one process ask the backend in the
/// order they were made, one at a time) and asks the backend whether the call at the front may
/// start; the backend must decide and count atomically across every process.
pub trait RateLimitBackend: Send + Sync + 'static {
    /// Starts a call if `limits` allow it now, counting the start; otherwise says how long to
    /// wait. Fails when the backend cannot be reached.
    fn try_start(&self, limits: &RateLimits) -> BackendFuture;

    /// Counts `tokens` used by a call that just answered. Must not block: an implementation
    /// that does I/O spawns it (and logs its failures).
    fn record_tokens(&self, limits: &RateLimits, tokens: u64);

    /// What the backend is, for messages ("redis rate limit gpt-4o").
    fn name(&self) -> &str;
}

/// What a limiter does when its backend cannot be reached: the user's choice, made when the
/// limiter is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenUnavailable {
    /// Let the call through unlimited, with a warning (logged when the backend goes away and
    /// when it is back, not at every call). Availability over the budget.
    FailOpen,
    /// Fail the call with [`AgentError::Unavailable`] (retryable: a
    /// [`RetryLayer`](crate::RetryLayer) outside the limit tries again). The budget over
    /// availability.
    Fail,
}

/// A limiter's backend and its policy.
pub(crate) struct Remote {
    pub(crate) backend: Arc<dyn RateLimitBackend>,
    pub(crate) when_unavailable: WhenUnavailable,
    /// Whether the backend failed last time (to log each outage once).
    down: AtomicBool,
    /// While the backend is down: when it was last asked (a probe), and the error it gave.
    /// The calls between two probes are decided without asking it (see [`PROBE_EVERY`]).
    outage: std::sync::Mutex<Option<(tokio::time::Instant, AgentError)>>,
}

/// How often a limiter whose backend is down asks it again; the calls in between are let
/// through or failed at once, as [`WhenUnavailable`] says, instead of each waiting for the
/// backend's timeout behind the one before it.
pub(crate) const PROBE_EVERY: Duration = Duration::from_secs(5);

/// What the call at the front of the queue does after asking the backend.
pub(crate) enum Decision {
    Go,
    Sleep(Duration),
    Fail(AgentError),
}

impl Remote {
    pub(crate) fn new(backend: Arc<dyn RateLimitBackend>, when_unavailable: WhenUnavailable) -> Self {
        Self {
            backend,
            when_unavailable,
            down: AtomicBool::new(false),
            outage: std::sync::Mutex::new(None),
        }
    }

    /// The backend's answer for the call at the front: asked, or, while the backend is down
    /// and was probed less than [`PROBE_EVERY`] ago, its last error at once.
    pub(crate) fn ask(&self, limits: &RateLimits, now: tokio::time::Instant) -> BackendFuture {
        let mut outage = self.outage.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match outage.as_mut() {
            Some((probed, error)) if now < *probed + PROBE_EVERY => {
                let error = error.clone();
                Box::pin(std::future::ready(Err(error)))
            }
            Some((probed, _)) => {
                // This call probes: the next ones wait for its answer no longer than they
                // would for any front.
                *probed = now;
                drop(outage);
                self.backend.try_start(limits)
            }
            None => {
                drop(outage);
                self.backend.try_start(limits)
            }
        }
    }

    /// What the backend's answer means for the call, in fail-fast mode or not.
    pub(crate) fn decide(&self, answer: Result<Verdict, AgentError>, limits: &RateLimits) -> Decision {
        let verdict = match answer {
            Ok(verdict) => {
                *self.outage.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
                if self.down.swap(false, Ordering::AcqRel) {
                    tracing::info!(
                        backend = self.backend.name(),
                        "the shared rate limit is reachable again"
                    );
                }
                verdict
            }
            Err(e) => {
                {
                    let mut outage = self.outage.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    match outage.as_mut() {
                        Some((_, last)) => *last = e.clone(),
                        None => *outage = Some((tokio::time::Instant::now(), e.clone())),
                    }
                }
                if !self.down.swap(true, Ordering::AcqRel) {
                    tracing::warn!(
                        backend = self.backend.name(),
                        error = %e,
                        policy = ?self.when_unavailable,
                        "the shared rate limit is unreachable"
                    );
                }
                return match self.when_unavailable {
                    WhenUnavailable::FailOpen => Decision::Go,
                    WhenUnavailable::Fail => Decision::Fail(e),
                };
            }
        };
        match verdict {
            Verdict::Start => Decision::Go,
            Verdict::Wait { after, held_by } if limits.fail_fast => Decision::Fail(AgentError::rate_limited(
                format!("shared {} reached ({})", describe(held_by, limits), self.backend.name()),
                Some(after),
            )),
            Verdict::Wait { after, .. } => Decision::Sleep(after),
        }
    }
}

fn describe(held_by: HeldBy, limits: &RateLimits) -> String {
    match (held_by, limits.min_interval, limits.requests, limits.tokens) {
        (HeldBy::MinInterval, Some(d), _, _) => format!("rate limit of one call every {d:?}"),
        (HeldBy::Requests, _, Some((n, w)), _) => format!("rate limit of {n} calls per {w:?}"),
        (HeldBy::Tokens, _, _, Some((n, w))) => format!("rate limit of {n} tokens per {w:?}"),
        _ => "rate limit".to_owned(),
    }
}

impl fmt::Debug for Remote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Remote")
            .field("backend", &self.backend.name())
            .field("when_unavailable", &self.when_unavailable)
            .finish()
    }
}
