//! The shared state of a rate limit: the recent calls and tokens, and the queue of waiting
//! callers, served in order.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Waker};
use std::time::Duration;

use tokio::time::Instant;
use towerscope_core::AgentError;

use super::backend::{BackendFuture, Decision, RateLimitBackend, Remote, WhenUnavailable};
use super::limits::{Binding, RateLimits};
use super::log::WindowLog;

/// One rate limit, shared by every clone (and every agent it is installed on).
///
/// See the [module docs](super) for an example.
#[derive(Clone)]
pub struct RateLimiter {
    shared: Arc<Shared>,
}

struct Shared {
    limits: RateLimits,
    state: Mutex<State>,
    /// Where the counts live when the limit is shared by many processes (`None`: here).
    remote: Option<Remote>,
}

#[derive(Default)]
struct State {
    last_start: Option<Instant>,
    /// The starts of the request window (bounded: see [`WindowLog`]).
    starts: WindowLog,
    /// The tokens of the token window, as the answers reported them.
    tokens: WindowLog,
    queue: VecDeque<Waiter>,
    /// The live front's ticket, and when it was told it may go (woken at the front, or the
    /// limit's wait over): past [`STALLED_AFTER`] more, it counts as stalled.
    front_due: Option<(u64, Instant)>,
    next_ticket: u64,
}

struct Waiter {
    ticket: u64,
    waker: Option<Waker>,
    /// Its caller was told to go and did not poll in time (a reply whose reader stopped): it
    /// keeps its place, but nobody waits for it until it polls again.
    stalled: bool,
}

/// How long the front of the queue has to take its turn once it may go, before the calls
/// behind it stop waiting for it: a caller polls its future at once when woken, unless its
/// reader stopped reading.
pub(crate) const STALLED_AFTER: Duration = Duration::from_secs(1);

/// How far ahead "never" is: thirty years, as for tokio's own timers.
const NEVER: Duration = Duration::from_secs(86_400 * 365 * 30);

/// `t + d`, or a time that never comes when the sum overflows an [`Instant`]: an interval or
/// window of `Duration::MAX` means "never again", not a panic (while the state is locked).
pub(crate) fn plus(t: Instant, d: Duration) -> Instant {
    // `t + NEVER` overflows no platform's `Instant`; `t` is only the last resort of the types.
    t.checked_add(d).or_else(|| t.checked_add(NEVER)).unwrap_or(t)
}

impl State {
    fn prune(&mut self, now: Instant, limits: &RateLimits) {
        if let Some((n, window)) = limits.requests {
            self.starts.prune(now, window);
            self.starts.keep_last(u128::from(n));
        }
        if let Some((_, window)) = limits.tokens {
            self.tokens.prune(now, window);
        }
    }

    /// The earliest time a call may start, and the limit that decides it (`None`: now).
    fn ready_at(&mut self, now: Instant, limits: &RateLimits) -> (Instant, Option<Binding>) {
        self.prune(now, limits);
        let mut at = now;
        let mut binding = None;
        let mut later = |t: Instant, b: Binding| {
            if t > at {
                at = t;
                binding = Some(b);
            }
        };
        if let (Some(interval), Some(last)) = (limits.min_interval, self.last_start) {
            later(plus(last, interval), Binding::Interval(interval));
        }
        if let Some((n, window)) = limits.requests
            && let Some(t) = self.starts.under_at(u128::from(n), window)
        {
            later(t, Binding::Requests(n, window));
        }
        if let Some((limit, window)) = limits.tokens
            && let Some(t) = self.tokens.under_at(u128::from(limit), window)
        {
            later(t, Binding::Tokens(limit, window));
        }
        (at, binding)
    }

    fn start(&mut self, now: Instant, limits: &RateLimits) {
        self.last_start = Some(now);
        if let Some((_, window)) = limits.requests {
            self.starts.push(now, 1, window);
        }
    }

    /// The first waiter not stalled: the one whose turn it is.
    fn front(&self) -> Option<usize> {
        self.queue.iter().position(|w| !w.stalled)
    }

    /// The second waiter not stalled: the first to watch the front (see [`Turn::Watch`]).
    fn watcher(&self) -> Option<usize> {
        self.queue
            .iter()
            .enumerate()
            .filter(|(_, w)| !w.stalled)
            .nth(1)
            .map(|(i, _)| i)
    }

    /// Wakes the front, which may go from `now` (woken, it asks its turn again, which tells when
    /// the limit lets it go), and the waiter behind it, which watches it.
    ///
    /// The waiter `polling` (the caller of [`RateLimiter::turn`], which is told its place as it
    /// returns) is not woken.
    fn wake_front(&mut self, now: Instant, polling: Option<u64>) {
        let mut live = self.queue.iter_mut().filter(|w| !w.stalled);
        self.front_due = None;
        let front = live.next();
        if let Some(front) = &front {
            self.front_due = Some((front.ticket, now));
        }
        for waiter in front.into_iter().chain(live.next()) {
            if Some(waiter.ticket) != polling
                && let Some(waker) = waiter.waker.take()
            {
                waker.wake();
            }
        }
    }

    /// Stops waiting for fronts that were told to go more than [`STALLED_AFTER`] before `now`
    /// and did not take their turn (`polling`, the caller, which is taking its turn, is never
    /// one: see [`wake_front`](Self::wake_front)).
    ///
    /// The front after a stalled one was watching it, and should have skipped it when its time
    /// ran out: still there [`STALLED_AFTER`] after that, it is stalled too. So a run of stalled
    /// calls at the front is skipped at once by the first call behind them that polls.
    fn skip_stalled(&mut self, now: Instant, polling: Option<u64>) {
        while let Some((ticket, due)) = self.front_due
            && plus(due, STALLED_AFTER) <= now
            && let Some(front) = self.front()
            && self.queue[front].ticket == ticket
            && Some(ticket) != polling
        {
            self.queue[front].stalled = true;
            self.wake_front(now, polling);
            if let Some((next, _)) = self.front_due {
                self.front_due = Some((next, plus(due, STALLED_AFTER)));
            }
        }
    }
}

/// What a new call may do.
pub(crate) enum Admission {
    /// Start now (the start is recorded).
    Now,
    /// Wait for its turn.
    Queued(Ticket),
    /// Fail: over the limit in fail-fast mode.
    Refused(AgentError),
}

/// What a queued call may do when polled.
pub(crate) enum Turn {
    /// Start now (the start is recorded).
    Go,
    /// Others are ahead; the caller is woken when it is at the front.
    Wait,
    /// At the front, but the limit allows a start only at this time (ask again then, or when
    /// woken: the front changed).
    SleepUntil(Instant),
    /// Behind the front: ask again when woken, or at this time at the latest, when the front,
    /// and the waiters between, count as stalled if none has taken its turn.
    Watch(Instant),
    /// At the front: ask the shared backend (then [`Ticket::leave`] with its decision).
    Ask(BackendFuture),
}

impl RateLimiter {
    /// A limiter enforcing `limits`.
    pub fn new(limits: RateLimits) -> Self {
        Self::with_remote(limits, None)
    }

    /// A limiter enforcing `limits` together with every limiter, in any process, that uses the
    /// same backend (and the same limits); `when_unavailable` says what a call does when the
    /// backend cannot be reached. See the [module docs](super).
    pub fn with_backend(limits: RateLimits, backend: impl RateLimitBackend, when_unavailable: WhenUnavailable) -> Self {
        Self::with_remote(limits, Some(Remote::new(Arc::new(backend), when_unavailable)))
    }

    fn with_remote(limits: RateLimits, remote: Option<Remote>) -> Self {
        Self {
            shared: Arc::new(Shared {
                limits,
                state: Mutex::new(State::default()),
                remote,
            }),
        }
    }

    /// The name of the shared backend, if the counts live in one.
    pub fn backend(&self) -> Option<&str> {
        self.shared.remote.as_ref().map(|r| r.backend.name())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The limits enforced.
    pub fn limits(&self) -> RateLimits {
        self.shared.limits
    }

    /// How many calls are waiting for their turn.
    pub fn waiting(&self) -> usize {
        self.lock().queue.len()
    }

    /// The tokens counted in the current token window in this process (0 without a token limit,
    /// and with a backend, where the counts live in the backend).
    pub fn tokens_in_window(&self) -> u64 {
        let mut state = self.lock();
        state.prune(Instant::now(), &self.shared.limits);
        u64::try_from(state.tokens.total()).unwrap_or(u64::MAX)
    }

    /// How many waiters count as stalled.
    #[cfg(test)]
    pub(crate) fn stalled(&self) -> usize {
        self.lock().queue.iter().filter(|w| w.stalled).count()
    }

    /// How many entries the request and token logs hold.
    #[cfg(test)]
    pub(crate) fn log_len(&self) -> (usize, usize) {
        let state = self.lock();
        (state.starts.len(), state.tokens.len())
    }

    /// Whether answers must be looked at for their token usage.
    pub(crate) fn counts_tokens(&self) -> bool {
        self.shared.limits.tokens.is_some()
    }

    /// Counts the tokens of an answer that just arrived.
    pub(crate) fn record_tokens(&self, tokens: u64) {
        if tokens == 0 || !self.counts_tokens() {
            return;
        }
        if let Some(remote) = &self.shared.remote {
            remote.backend.record_tokens(&self.shared.limits, tokens);
            return;
        }
        let Some((_, window)) = self.shared.limits.tokens else {
            return;
        };
        // A usage figure a server got wrong (u64::MAX) holds calls back for a window; the sum
        // neither overflows nor forgets the other counts.
        self.lock().tokens.push(Instant::now(), tokens, window);
    }

    /// Admits a new call: now when nobody waits and the limits allow it, otherwise in the queue
    /// (or refused, in fail-fast mode).
    pub(crate) fn admit(&self) -> Admission {
        let limits = &self.shared.limits;
        let mut state = self.lock();
        // Read under the lock: starts are counted in the order of their times.
        let now = Instant::now();
        if self.shared.remote.is_some() {
            // Only the backend knows: every call asks it, in turn.
            return Admission::Queued(self.enqueue(&mut state));
        }
        state.skip_stalled(now, None);
        let (at, binding) = state.ready_at(now, limits);
        if state.front().is_none() && at <= now {
            state.start(now, limits);
            return Admission::Now;
        }
        if limits.fail_fast {
            let what = binding.map_or_else(|| "local rate limit".to_owned(), |b| b.to_string());
            return Admission::Refused(AgentError::rate_limited(
                format!("{what} reached"),
                Some(at.saturating_duration_since(now)),
            ));
        }
        Admission::Queued(self.enqueue(&mut state))
    }

    fn enqueue(&self, state: &mut State) -> Ticket {
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        if state.front().is_none() {
            // The new front may go as soon as it is polled (a call not polled at all stalls).
            state.front_due = Some((ticket, Instant::now()));
        }
        state.queue.push_back(Waiter {
            ticket,
            waker: None,
            stalled: false,
        });
        Ticket {
            limiter: self.clone(),
            id: ticket,
            served: false,
        }
    }

    fn turn(&self, ticket: u64, cx: &mut Context<'_>) -> Turn {
        let limits = &self.shared.limits;
        let mut state = self.lock();
        let Some(at) = state.queue.iter().position(|w| w.ticket == ticket) else {
            // Not queued (cannot happen: a ticket leaves the queue when served or dropped).
            return Turn::Wait;
        };
        let now = Instant::now();
        // Woken whenever its place may have changed, whatever it is told now.
        let waiter = &mut state.queue[at];
        match &waiter.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => waiter.waker = Some(cx.waker().clone()),
        }
        // Polled: not stalled (back in its place if it was), and a front that polls is taking
        // its turn now, whenever it was told it could.
        state.queue[at].stalled = false;
        if state.front() == Some(at) {
            state.front_due = Some((ticket, now));
        }
        state.skip_stalled(now, Some(ticket));
        let front = state.front();
        if front != Some(at) {
            // Each waiter watches the front, the k-th behind it giving it k times
            // `STALLED_AFTER`: the one right behind skips a stalled front, the next skips both
            // when that one stalled too, and so on. Each waiter wakes about once per k seconds
            // while it waits. With a backend too: a front that waits for the backend's answer
            // longer than that is passed, and the next call asks beside it (the backend decides
            // each start atomically, so the limit holds either way).
            let behind = state.queue.iter().take(at).filter(|w| !w.stalled).count();
            let patience = STALLED_AFTER.saturating_mul(u32::try_from(behind).unwrap_or(u32::MAX));
            return match state.front_due {
                Some((_, due)) => Turn::Watch(plus(due, patience)),
                None => Turn::Wait,
            };
        }
        if let Some(remote) = &self.shared.remote {
            return Turn::Ask(remote.ask(limits, now));
        }
        let (ready, _) = state.ready_at(now, limits);
        if ready > now {
            state.front_due = Some((ticket, ready));
            return Turn::SleepUntil(ready);
        }
        state.start(now, limits);
        state.queue.remove(at);
        state.wake_front(now, None);
        Turn::Go
    }

    /// What the backend's answer to the front call means.
    fn decide(&self, answer: Result<super::Verdict, AgentError>) -> Decision {
        match &self.shared.remote {
            Some(remote) => remote.decide(answer, &self.shared.limits),
            None => Decision::Go,
        }
    }

    /// The front call `ticket` is due to take its turn again at `due`.
    fn front_due_at(&self, ticket: u64, due: Instant) {
        let mut state = self.lock();
        if let Some(front) = state.front()
            && state.queue[front].ticket == ticket
        {
            state.front_due = Some((ticket, due));
        }
    }

    fn abandon(&self, ticket: u64) {
        let mut state = self.lock();
        let (front, watcher) = (state.front(), state.watcher());
        if let Some(pos) = state.queue.iter().position(|w| w.ticket == ticket) {
            state.queue.remove(pos);
            if front == Some(pos) {
                state.wake_front(Instant::now(), None);
            } else if watcher == Some(pos)
                && let Some(next) = state.watcher()
                && let Some(waker) = state.queue[next].waker.take()
            {
                // The next one watches the front now.
                waker.wake();
            }
        }
    }
}

impl fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiter")
            .field("limits", &self.shared.limits)
            .field("backend", &self.shared.remote)
            .field("waiting", &self.waiting())
            .finish()
    }
}

/// A caller's place in the queue; leaving the queue (dropping the call) lets the next one go.
pub(crate) struct Ticket {
    limiter: RateLimiter,
    id: u64,
    served: bool,
}

impl Ticket {
    pub(crate) fn poll_turn(&mut self, cx: &mut Context<'_>) -> Turn {
        let turn = self.limiter.turn(self.id, cx);
        if matches!(turn, Turn::Go) {
            self.served = true;
        }
        turn
    }
}

impl Ticket {
    /// The backend answered the call at the front: it leaves the queue (letting the next call
    /// ask) unless it must wait, in which case it stays at the front and asks again later.
    pub(crate) fn leave(&mut self, answer: Result<super::Verdict, AgentError>) -> Decision {
        let decision = self.limiter.decide(answer);
        match &decision {
            // Due again when the backend said: the calls behind watch for that, and pass it
            // when it is not polled then (a reply whose reader stopped reading).
            Decision::Sleep(after) => self.limiter.front_due_at(self.id, plus(Instant::now(), *after)),
            _ => {
                self.served = true;
                self.limiter.abandon(self.id);
            }
        }
        decision
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.served {
            self.limiter.abandon(self.id);
        }
    }
}

impl fmt::Debug for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticket")
            .field("id", &self.id)
            .field("served", &self.served)
            .finish()
    }
}
