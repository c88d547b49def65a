use tower_layer::Layer;

use super::service::JournalToolService;
use crate::step::Steps;

/// Journals every tool call as one step (see the [module docs](super)).
#[derive(Debug, Clone)]
pub struct JournalToolLayer {
    steps: Steps,
}

impl JournalToolLayer {
    /// A layer that hands its steps to `steps`.
    pub fn new(steps: Steps) -> Self {
        Self { steps }
    }
}

impl<S> Layer<S> for JournalToolLayer {
    type Service = JournalToolService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        JournalToolService::new(inner, self.steps.clone())
    }
}
