use tower_layer::Layer;

use super::{Timing, Timings};

/// Times every call of the positions it is installed on. See the [module docs](super).
///
/// Clones share the [`Timings`] handle, so one layer installed on several positions (and several
/// agents) reports to one place.
#[derive(Debug, Clone, Default)]
pub struct TimingLayer {
    timings: Timings,
}

impl TimingLayer {
    /// A layer reporting to a new [`Timings`] handle.
    pub fn new() -> Self {
        Self::default()
    }

    /// A layer reporting to `timings`.
    pub fn with_timings(timings: Timings) -> Self {
        Self { timings }
    }

    /// The handle the measurements go to.
    pub fn timings(&self) -> &Timings {
        &self.timings
    }
}

impl<S> Layer<S> for TimingLayer {
    type Service = Timing<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Timing::new(inner, self.timings.clone())
    }
}
