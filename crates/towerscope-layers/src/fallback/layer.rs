use std::fmt;
use std::sync::Arc;

use tower_layer::Layer;
use towerscope_core::{AgentError, ChatModel, ModelRef};

use super::Fallback;
use crate::attempts::Outline;

/// Decides whether an error is worth acting on (falling back, retrying).
pub type ErrorPredicate = Arc<dyn Fn(&AgentError) -> bool + Send + Sync>;

/// Calls the next model of a list when a model call fails. See the [module docs](super).
#[derive(Clone)]
pub struct FallbackLayer {
    models: Arc<[ModelRef]>,
    predicate: Option<ErrorPredicate>,
}

impl FallbackLayer {
    /// Falls back to `models`, in order, on any error.
    pub fn new(models: impl IntoIterator<Item = ModelRef>) -> Self {
        Self {
            models: models.into_iter().collect(),
            predicate: None,
        }
    }

    /// Falls back to one model, on any error.
    pub fn to(model: impl ChatModel) -> Self {
        Self::new([Arc::new(model) as ModelRef])
    }

    /// Falls back only on errors for which `predicate` returns `true` (default: every error).
    #[must_use]
    pub fn when(mut self, predicate: impl Fn(&AgentError) -> bool + Send + Sync + 'static) -> Self {
        self.predicate = Some(Arc::new(predicate));
        self
    }

    /// The fallback models, in the order they are tried.
    pub fn models(&self) -> &[ModelRef] {
        &self.models
    }

    pub(crate) fn policy(&self) -> FallbackPolicy {
        FallbackPolicy {
            models: Arc::clone(&self.models),
            predicate: self.predicate.clone(),
            next: 0,
        }
    }
}

impl fmt::Debug for FallbackLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FallbackLayer")
            .field(
                "models",
                &self.models.iter().map(|m| m.model_name()).collect::<Vec<_>>(),
            )
            .field("predicate", &self.predicate.as_ref().map(|_| "custom"))
            .finish()
    }
}

impl<S> Layer<S> for FallbackLayer {
    type Service = Fallback<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Fallback::new(inner, self.clone())
    }
}

/// The state of one call: which fallback model comes next.
pub(crate) struct FallbackPolicy {
    models: Arc<[ModelRef]>,
    predicate: Option<ErrorPredicate>,
    next: usize,
}

impl crate::attempts::Recovery for FallbackPolicy {
    fn next(
        &mut self,
        failed: &towerscope_core::ModelCallRequest,
        error: &AgentError,
    ) -> Option<(towerscope_core::ModelCallRequest, Option<std::time::Duration>)> {
        if self.predicate.as_ref().is_some_and(|p| !p(error)) {
            return None;
        }
        let Some(model) = self.models.get(self.next) else {
            if self.next > 0 {
                // The error returned names the last model only: say that every one was tried.
                tracing::warn!(
                    target: "towerscope::fallback",
                    models_tried = self.next + 1,
                    last = failed.model.model_name(),
                    error.kind = error.kind(),
                    http.status = Outline(error).status(),
                    "every fallback model failed; the last one's error is returned",
                );
            }
            return None;
        };
        self.next += 1;
        tracing::warn!(
            target: "towerscope::fallback",
            failed = failed.model.model_name(),
            next = model.model_name(),
            error.kind = error.kind(),
            http.status = Outline(error).status(),
            "model call failed; falling back",
        );
        let mut request = failed.clone();
        request.model = Arc::clone(model);
        Some((request, None))
    }

    fn restart_reason(
        &self,
        failed: &towerscope_core::ModelCallRequest,
        error: &AgentError,
        next: &towerscope_core::ModelCallRequest,
    ) -> String {
        format!(
            "model {} failed mid-stream ({}); restarting on fallback model {}",
            failed.model.model_name(),
            Outline(error),
            next.model.model_name()
        )
    }
}
