use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tower::retry::budget::{Budget, TpsBudget};
use tower_layer::Layer;
use towerscope_core::AgentError;

use super::policy::{RetryConfig, SharedBudget};
use super::{Backoff, Retry, RetryPolicy};

/// The longest retry-after hint [`RetryLayer`] waits for unless told otherwise
/// ([`RetryLayer::max_retry_after`]).
pub const DEFAULT_MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Calls the model again when a call fails with a retryable error. See the
/// [module docs](super).
///
/// Clones share the configuration and the retry budget.
#[derive(Clone)]
pub struct RetryLayer {
    config: Arc<RetryConfig>,
}

impl RetryLayer {
    /// At most `max_attempts` attempts per call (the first one included), for retryable errors,
    /// with the default [`Backoff`] and a [`TpsBudget`] shared by the layer's clones (10 retries
    /// per second at least, plus 20 % of the successful calls of the last 10 s).
    pub fn new(max_attempts: u32) -> Self {
        Self {
            config: Arc::new(RetryConfig {
                max_attempts: max_attempts.max(1),
                backoff: Backoff::default(),
                max_retry_after: Some(DEFAULT_MAX_RETRY_AFTER),
                predicate: None,
                budget: Some(Arc::new(TpsBudget::default())),
            }),
        }
    }

    fn config(&mut self) -> &mut RetryConfig {
        Arc::make_mut(&mut self.config)
    }

    /// The delays between attempts when the error gives no retry-after hint.
    #[must_use]
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.config().backoff = backoff;
        self
    }

    /// Gives up (returns the error, for a fallback to act on) when the provider's retry-after
    /// hint is longer than `max` (default 60 s, as OpenAI's own clients: a server or proxy
    /// answering "retry after a day" does not hold the call for a day; `Duration::MAX` honours
    /// any hint).
    #[must_use]
    pub fn max_retry_after(mut self, max: Duration) -> Self {
        self.config().max_retry_after = Some(max);
        self
    }

    /// Retries the errors for which `predicate` returns `true` (default:
    /// [`AgentError::is_retryable`]).
    #[must_use]
    pub fn when(mut self, predicate: impl Fn(&AgentError) -> bool + Send + Sync + 'static) -> Self {
        self.config().predicate = Some(Arc::new(predicate));
        self
    }

    /// Withdraws every retry from `budget` and deposits every success; share one budget between
    /// layers to bound the retries they make together.
    #[must_use]
    pub fn budget(mut self, budget: impl Budget + Send + Sync + 'static) -> Self {
        self.config().budget = Some(Arc::new(budget));
        self
    }

    /// Uses an already shared budget.
    #[must_use]
    pub fn shared_budget(mut self, budget: SharedBudget) -> Self {
        self.config().budget = Some(budget);
        self
    }

    /// No budget: every call gets its `max_attempts`.
    #[must_use]
    pub fn no_budget(mut self) -> Self {
        self.config().budget = None;
        self
    }

    /// The attempts allowed per call.
    pub fn max_attempts(&self) -> u32 {
        self.config.max_attempts
    }

    /// A fresh policy for one call; also usable with `tower::retry::RetryLayer`.
    pub fn policy(&self) -> RetryPolicy {
        RetryPolicy::new(Arc::clone(&self.config))
    }
}

impl fmt::Debug for RetryLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryLayer")
            .field("max_attempts", &self.config.max_attempts)
            .field("backoff", &self.config.backoff)
            .field("max_retry_after", &self.config.max_retry_after)
            .field("predicate", &self.config.predicate.as_ref().map(|_| "custom"))
            .field("budget", &self.config.budget.is_some())
            .finish()
    }
}

impl<S> Layer<S> for RetryLayer {
    type Service = Retry<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Retry::new(inner, self.clone())
    }
}
