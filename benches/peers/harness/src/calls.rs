//! Per-reply call counters shared by an agent's scripted model and its tool.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use crate::BoxError;

/// Model calls and tool calls since the last [`check_reply`](Calls::check_reply).
#[derive(Debug, Default)]
pub struct Calls {
    model: AtomicU32,
    tool: AtomicU32,
}

impl Calls {
    /// Zeroed counters.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one model call and returns its 0-based index within the reply.
    pub fn model_called(&self) -> usize {
        self.model.fetch_add(1, Relaxed) as usize
    }

    /// Counts `n` model calls at once, for a scripted model that keeps its own count.
    pub fn add_model_calls(&self, n: usize) {
        self.model.fetch_add(n as u32, Relaxed);
    }

    /// Counts one tool call.
    pub fn tool_called(&self) {
        self.tool.fetch_add(1, Relaxed);
    }

    /// Fails unless the reply just finished made exactly 4 model calls and 3 tool calls, and
    /// resets the counters for the next reply.
    pub fn check_reply(&self) -> Result<(), BoxError> {
        let model = self.model.swap(0, Relaxed);
        let tool = self.tool.swap(0, Relaxed);
        if model == 4 && tool == 3 {
            Ok(())
        } else {
            Err(format!(
                "the reply made {model} model calls and {tool} tool calls; the scenario is 4 and 3, \
                 so this peer would be timed doing different work"
            )
            .into())
        }
    }
}
