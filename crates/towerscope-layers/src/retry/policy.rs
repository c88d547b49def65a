use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Sleep;
use tower::retry::Policy;
use tower::retry::budget::Budget;
use towerscope_core::{AgentError, ModelCallRequest, ModelOutput};

use super::Backoff;
use crate::attempts::{Outline, Recovery};
use crate::fallback::ErrorPredicate;

/// A budget shared by the clones of a retry layer.
pub type SharedBudget = Arc<dyn Budget + Send + Sync>;

/// The configuration of a [`RetryLayer`](super::RetryLayer), shared by its clones.
#[derive(Clone)]
pub(crate) struct RetryConfig {
    pub(crate) max_attempts: u32,
    pub(crate) backoff: Backoff,
    pub(crate) max_retry_after: Option<Duration>,
    pub(crate) predicate: Option<ErrorPredicate>,
    pub(crate) budget: Option<SharedBudget>,
}

/// The retry decision for one call: how many attempts were made, and whether the next is
/// allowed.
///
/// It is also a [`tower::retry::Policy`], for a plain `tower::retry::Retry` that only retries
/// failed openings (see the [module docs](super)).
#[derive(Clone)]
pub struct RetryPolicy {
    config: Arc<RetryConfig>,
    attempts: u32,
}

impl RetryPolicy {
    pub(crate) fn new(config: Arc<RetryConfig>) -> Self {
        Self { config, attempts: 1 }
    }

    /// How many attempts were made so far (1 before any retry).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The delay before the next attempt, or `None` when `error` must not be retried.
    fn decide(&mut self, model: &str, error: &AgentError) -> Option<Duration> {
        let config = &*self.config;
        if self.attempts >= config.max_attempts {
            return None;
        }
        let retryable = match &config.predicate {
            Some(p) => p(error),
            None => error.is_retryable(),
        };
        if !retryable {
            return None;
        }
        let hint = error.retry_after();
        if let (Some(hint), Some(max)) = (hint, config.max_retry_after)
            && hint > max
        {
            tracing::warn!(
                target: "towerscope::retry",
                model, ?hint, ?max, error.kind = error.kind(), http.status = Outline(error).status(),
                "not retrying: the provider asks to wait longer than max_retry_after",
            );
            return None;
        }
        if let Some(budget) = &config.budget
            && !budget.withdraw()
        {
            tracing::warn!(
                target: "towerscope::retry",
                model, error.kind = error.kind(), http.status = Outline(error).status(),
                "not retrying: retry budget exhausted",
            );
            return None;
        }
        // The hint, but never less than the backoff: a hint of zero (a gateway's `retry-after:
        // 0`, a date in the past on a skewed clock) would retry at once, again and again.
        let backoff = config.backoff.delay(self.attempts);
        let delay = hint.map_or(backoff, |hint| hint.max(backoff));
        self.attempts += 1;
        tracing::info!(
            target: "towerscope::retry",
            model, attempt = self.attempts, ?delay, error.kind = error.kind(), http.status = Outline(error).status(),
            "retrying model call",
        );
        Some(delay)
    }

    fn deposit(&self) {
        if let Some(budget) = &self.config.budget {
            budget.deposit();
        }
    }
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("attempts", &self.attempts)
            .field("max_attempts", &self.config.max_attempts)
            .finish_non_exhaustive()
    }
}

impl Recovery for RetryPolicy {
    fn next(&mut self, failed: &ModelCallRequest, error: &AgentError) -> Option<(ModelCallRequest, Option<Duration>)> {
        let delay = self.decide(failed.model.model_name(), error)?;
        Some((failed.clone(), Some(delay)))
    }

    fn succeeded(&mut self) {
        self.deposit();
    }

    fn restart_reason(&self, failed: &ModelCallRequest, error: &AgentError, _next: &ModelCallRequest) -> String {
        format!(
            "attempt {} of model {} failed mid-stream ({}); retrying",
            self.attempts - 1,
            failed.model.model_name(),
            Outline(error)
        )
    }
}

/// Retries failed openings only: errors in the middle of a stream are not seen by
/// `tower::retry::Retry`.
impl Policy<ModelCallRequest, ModelOutput, AgentError> for RetryPolicy {
    type Future = Sleep;

    fn retry(&mut self, req: &mut ModelCallRequest, result: &mut Result<ModelOutput, AgentError>) -> Option<Sleep> {
        match result {
            Ok(_) => {
                self.deposit();
                None
            }
            Err(error) => {
                let delay = self.decide(req.model.model_name(), error)?;
                Some(tokio::time::sleep(delay))
            }
        }
    }

    fn clone_request(&mut self, req: &ModelCallRequest) -> Option<ModelCallRequest> {
        Some(req.clone())
    }
}
