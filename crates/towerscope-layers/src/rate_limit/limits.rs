use std::fmt;
use std::time::Duration;

/// The limits of a [`RateLimiter`](super::RateLimiter): any combination of a minimum interval
/// between calls, a number of calls per window, and a number of tokens per window.
///
/// An interval or window too long to fall on a clock (`Duration::MAX`) never ends: the calls
/// over the limit wait for ever (in [fail-fast](Self::fail_fast) mode, are refused with a retry
/// hint of thirty years).
///
/// ```
/// use std::time::Duration;
/// use towerscope_layers::rate_limit::RateLimits;
///
/// let limits = RateLimits::new()
///     .min_interval(Duration::from_millis(200))
///     .requests_per_minute(60)
///     .tokens_per_minute(100_000);
/// assert!(!limits.is_fail_fast());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateLimits {
    pub(crate) min_interval: Option<Duration>,
    pub(crate) requests: Option<(u32, Duration)>,
    pub(crate) tokens: Option<(u64, Duration)>,
    pub(crate) fail_fast: bool,
}

impl RateLimits {
    /// No limit.
    pub const fn new() -> Self {
        Self {
            min_interval: None,
            requests: None,
            tokens: None,
            fail_fast: false,
        }
    }

    /// At least `interval` between the starts of two calls (the reference's `RateLimit` example).
    #[must_use]
    pub const fn min_interval(mut self, interval: Duration) -> Self {
        self.min_interval = Some(interval);
        self
    }

    /// At most `n` (at least 1) calls started in any `window`.
    #[must_use]
    pub const fn requests_per(mut self, n: u32, window: Duration) -> Self {
        self.requests = Some((if n == 0 { 1 } else { n }, window));
        self
    }

    /// At most `n` calls started in any minute.
    #[must_use]
    pub const fn requests_per_minute(self, n: u32) -> Self {
        self.requests_per(n, Duration::from_secs(60))
    }

    /// A call starts only while fewer than `n` (at least 1) tokens were used in the last
    /// `window`. Tokens are counted from the usage the answers report (input plus output tokens;
    /// a complete response, or the final chunk of a stream) at the time they arrive, so calls
    /// started together may overshoot once; the next calls wait until the window is under the
    /// limit again.
    #[must_use]
    pub const fn tokens_per(mut self, n: u64, window: Duration) -> Self {
        self.tokens = Some((if n == 0 { 1 } else { n }, window));
        self
    }

    /// At most `n` tokens per minute (see [`tokens_per`](Self::tokens_per)).
    #[must_use]
    pub const fn tokens_per_minute(self, n: u64) -> Self {
        self.tokens_per(n, Duration::from_secs(60))
    }

    /// Over the limit, fail at once with `AgentError::RateLimited` (saying when to retry)
    /// instead of waiting.
    #[must_use]
    pub const fn fail_fast(mut self) -> Self {
        self.fail_fast = true;
        self
    }

    /// Whether calls over the limit fail instead of waiting.
    pub const fn is_fail_fast(&self) -> bool {
        self.fail_fast
    }
}

/// Which limit holds a call back (for the error message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Binding {
    Interval(Duration),
    Requests(u32, Duration),
    Tokens(u64, Duration),
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Interval(d) => write!(f, "local rate limit of one call every {d:?}"),
            Self::Requests(n, w) => write!(f, "local rate limit of {n} calls per {w:?}"),
            Self::Tokens(n, w) => write!(f, "local rate limit of {n} tokens per {w:?}"),
        }
    }
}
