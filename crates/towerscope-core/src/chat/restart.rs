//! The restart marker: how a layer tells the consumer of a model stream to discard what the
//! stream delivered so far.
//!
//! A fallback or retry layer that must restart a stream after chunks already reached the
//! consumer sends a restart chunk before the new attempt's chunks. The agent's reasoning step
//! answers it with a `CUSTOM` event named [`RESTART_EVENT`] listing the block ids to discard,
//! and [`Msg::append_event`](crate::Msg::append_event) removes those blocks, so a message
//! rebuilt from the stream never mixes two attempts' output.
//!
//! # Example
//!
//! ```
//! use towerscope_core::ChatResponse;
//!
//! let marker = ChatResponse::restart("primary model failed mid-stream; switched to fallback");
//! assert!(!marker.is_last);
//! assert_eq!(marker.restart_reason(), Some("primary model failed mid-stream; switched to fallback"));
//! ```

use serde_json::Value;

use super::ChatResponse;

/// The metadata key of a restart chunk.
pub const RESTART_KEY: &str = "towerscope.restart";

/// The name of the `CUSTOM` event that tells consumers to discard blocks.
pub const RESTART_EVENT: &str = "model_call_restart";

impl ChatResponse {
    /// A restart chunk: discard what this model call streamed so far.
    pub fn restart(reason: impl Into<String>) -> Self {
        let mut chunk = Self::chunk(Vec::new());
        chunk
            .metadata
            .insert(RESTART_KEY.to_owned(), Value::String(reason.into()));
        chunk
    }

    /// The reason, if this chunk is a restart marker.
    pub fn restart_reason(&self) -> Option<&str> {
        self.metadata.get(RESTART_KEY).and_then(Value::as_str)
    }
}
