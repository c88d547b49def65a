use std::sync::atomic::{AtomicU64, Ordering};

use tower_layer::Layer;
use towerscope_core::AgentContext;

use super::CallLimit;
use super::counts::{CallCounts, Limits, SessionCounts, reply_counts};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Limits the model calls and tool calls of a reply or a session. See the [module docs](super).
///
/// Install one layer (or clones of it) on both `on_model_call` and `on_acting`; clones count
/// together, separately made layers count separately.
#[derive(Debug, Clone)]
pub struct CallLimitLayer {
    id: u64,
    limits: Limits,
    sessions: SessionCounts,
}

impl CallLimitLayer {
    /// No limit yet; set them with the builder methods.
    pub fn new() -> Self {
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            limits: Limits::default(),
            sessions: SessionCounts::default(),
        }
    }

    /// At most `n` model calls per reply.
    #[must_use]
    pub fn model_calls_per_reply(mut self, n: u32) -> Self {
        self.limits.model_reply = Some(n);
        self
    }

    /// At most `n` tool calls per reply.
    #[must_use]
    pub fn tool_calls_per_reply(mut self, n: u32) -> Self {
        self.limits.tool_reply = Some(n);
        self
    }

    /// At most `n` model calls per session, across replies.
    #[must_use]
    pub fn model_calls_per_session(mut self, n: u32) -> Self {
        self.limits.model_session = Some(n);
        self
    }

    /// At most `n` tool calls per session, across replies.
    #[must_use]
    pub fn tool_calls_per_session(mut self, n: u32) -> Self {
        self.limits.tool_session = Some(n);
        self
    }

    /// The per-session counts of this layer and its clones.
    pub fn session_counts(&self) -> &SessionCounts {
        &self.sessions
    }

    /// The calls this layer counted in the reply of `ctx` (only kinds with a per-reply limit
    /// are counted per reply).
    pub fn reply_counts(&self, ctx: &AgentContext) -> CallCounts {
        reply_counts(self.id, ctx)
    }

    pub(crate) fn parts(&self) -> (u64, Limits, &SessionCounts) {
        (self.id, self.limits, &self.sessions)
    }
}

impl Default for CallLimitLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> Layer<S> for CallLimitLayer {
    type Service = CallLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CallLimit::new(inner, self.clone())
    }
}
