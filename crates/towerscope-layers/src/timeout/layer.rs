use std::time::Duration;

use tower_layer::Layer;

use super::Timeout;
use super::deadline::Deadlines;

/// Bounds the calls of a position in time. See the [module docs](super).
///
/// Each deadline is optional: [`new`](Self::new) sets the deadline of the whole call,
/// [`first_chunk`](Self::first_chunk) and [`idle`](Self::idle) those of a streamed answer. A
/// deadline too far ahead to fall on a clock (`Duration::MAX`) is no deadline.
#[derive(Debug, Clone, Copy, Default)]
pub struct TimeoutLayer {
    deadlines: Deadlines,
}

impl TimeoutLayer {
    /// Fails a call that has not ended (its stream included) within `call`.
    pub const fn new(call: Duration) -> Self {
        Self {
            deadlines: Deadlines {
                call: Some(call),
                first_chunk: None,
                idle: None,
            },
        }
    }

    /// No deadline at all; add them with the builder methods.
    pub const fn none() -> Self {
        Self {
            deadlines: Deadlines {
                call: None,
                first_chunk: None,
                idle: None,
            },
        }
    }

    /// Sets the deadline of the whole call, from the call to the end of its stream.
    #[must_use]
    pub const fn call(mut self, after: Duration) -> Self {
        self.deadlines.call = Some(after);
        self
    }

    /// Fails a call whose first chunk (or complete answer) has not arrived within `after` of the
    /// call.
    #[must_use]
    pub const fn first_chunk(mut self, after: Duration) -> Self {
        self.deadlines.first_chunk = Some(after);
        self
    }

    /// Fails a stream that goes quiet for `after` between two chunks.
    #[must_use]
    pub const fn idle(mut self, after: Duration) -> Self {
        self.deadlines.idle = Some(after);
        self
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Timeout::new(inner, *self)
    }
}

impl TimeoutLayer {
    pub(crate) fn deadlines(&self) -> Deadlines {
        self.deadlines
    }
}
