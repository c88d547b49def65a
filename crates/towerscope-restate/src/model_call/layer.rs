use tower_layer::Layer;

use super::service::JournalModelService;
use crate::step::Steps;

/// Journals every model call as one step (see the [module docs](super)).
#[derive(Debug, Clone)]
pub struct JournalModelLayer {
    steps: Steps,
}

impl JournalModelLayer {
    /// A layer that hands its steps to `steps`.
    pub fn new(steps: Steps) -> Self {
        Self { steps }
    }
}

impl<S> Layer<S> for JournalModelLayer {
    type Service = JournalModelService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        JournalModelService::new(inner, self.steps.clone())
    }
}
