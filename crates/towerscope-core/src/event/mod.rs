//! The events an agent streams while it replies, and the events it accepts to resume a reply.
//!
//! [`AgentEvent`] has the 28 kinds of the reference (AgentScope 2.x), one struct each, and
//! serializes to the same JSON: `{"type": "TOOL_CALL_DELTA", "id": ..., "created_at": ...,
//! "metadata": {}, "reply_id": ..., "tool_call_id": ..., "delta": ...}`. Every event has an `id`,
//! a `created_at` timestamp and `metadata`; all but [`CustomEvent`] carry the `reply_id` of the
//! reply they belong to, which is the id of the reply's [`Msg`](crate::message::Msg).
//!
//! A reply's stream folds back into its message with
//! [`Msg::append_event`](crate::message::Msg::append_event).
//!
//! Kinds, by what they are for:
//!
//! * the reply and its model calls: [`ReplyStartEvent`], [`ReplyEndEvent`],
//!   [`ModelCallStartEvent`], [`ModelCallEndEvent`], [`ExceedMaxItersEvent`] (deprecated);
//! * streamed blocks: text, data and thinking `*Start`/`*Delta`/`*End`, [`HintBlockEvent`];
//! * tools: [`ToolCallStartEvent`] ... [`ToolResultEndEvent`];
//! * human in the loop, out: [`RequireUserConfirmEvent`], [`RequireExternalExecutionEvent`];
//! * human in the loop, in (sent to a parked reply): [`UserConfirmResultEvent`],
//!   [`UserInterruptEvent`], [`ExternalExecutionResultEvent`];
//! * anything else: [`CustomEvent`].
//!
//! # Example
//!
//! ```
//! use towerscope_core::event::{AgentEvent, EventType, ToolCallDeltaEvent};
//!
//! let event = AgentEvent::from(ToolCallDeltaEvent::new("reply_1", "call_1", r#"{"city": "#));
//! assert_eq!(event.event_type(), EventType::ToolCallDelta);
//! assert_eq!(event.reply_id().map(ToString::to_string).as_deref(), Some("reply_1"));
//!
//! let json = serde_json::to_value(&event)?;
//! assert_eq!(json["type"], "TOOL_CALL_DELTA");
//! assert_eq!(json["tool_call_id"], "call_1");
//! assert_eq!(serde_json::from_value::<AgentEvent>(json)?, event);
//!
//! // A malformed event names the missing field.
//! let err = serde_json::from_str::<AgentEvent>(r#"{"type": "TOOL_CALL_DELTA", "reply_id": "r"}"#).unwrap_err();
//! assert!(err.to_string().contains("missing field `tool_call_id`"));
//! # Ok::<(), serde_json::Error>(())
//! ```

/// Declares an event struct with the fields every event has (`id`, `created_at`, `metadata`)
/// followed by its own, and a `with_metadata` builder.
macro_rules! event_struct {
    (
        $(#[$attr:meta])*
        pub struct $name:ident {
            $(
                $(#[$field_attr:meta])*
                pub $field:ident : $ty:ty
            ),* $(,)?
        }
    ) => {
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        $(#[$attr])*
        pub struct $name {
            /// The event's id (generated when missing).
            #[serde(default = "crate::id::new_id")]
            pub id: crate::id::Id,
            /// When the event was created (generated when missing).
            #[serde(default = "crate::id::now_timestamp")]
            pub created_at: crate::id::Timestamp,
            /// Free-form metadata.
            #[serde(default)]
            pub metadata: serde_json::Map<String, serde_json::Value>,
            $(
                $(#[$field_attr])*
                pub $field: $ty,
            )*
        }

        impl $name {
            /// Replaces the event's metadata.
            #[must_use]
            pub fn with_metadata(mut self, metadata: serde_json::Map<String, serde_json::Value>) -> Self {
                self.metadata = metadata;
                self
            }
        }
    };
}

mod agent_event;
mod block;
mod fold;
mod hitl;
mod kinds;
mod reply;
mod tool;

#[cfg(test)]
mod fold_tests;
#[cfg(test)]
mod tests;

pub use agent_event::{AgentEvent, EventType};
pub use block::{
    DataBlockDeltaEvent, DataBlockEndEvent, DataBlockStartEvent, HintBlockEvent, TextBlockDeltaEvent,
    TextBlockEndEvent, TextBlockStartEvent, ThinkingBlockDeltaEvent, ThinkingBlockEndEvent, ThinkingBlockStartEvent,
};
pub use hitl::{
    ConfirmResult, ExternalExecutionResultEvent, RequireExternalExecutionEvent, RequireUserConfirmEvent,
    UserConfirmResultEvent, UserInterruptEvent,
};
pub use kinds::EventKinds;
pub use reply::{
    CustomEvent, ExceedMaxItersEvent, ModelCallEndEvent, ModelCallStartEvent, ReplyEndEvent, ReplyStartEvent,
};
pub use tool::{
    ToolCallDeltaEvent, ToolCallEndEvent, ToolCallStartEvent, ToolResultDataDeltaEvent, ToolResultEndEvent,
    ToolResultStartEvent, ToolResultTextDeltaEvent,
};

use crate::AgentError;

/// Checks the "exactly one of `data` / `url`" rule of the data delta events.
fn check_one_source(data: Option<&String>, url: Option<&String>) -> Result<(), AgentError> {
    if data.is_some() == url.is_some() {
        return Err(AgentError::validation(
            "exactly one of `data` or `url` must be provided",
        ));
    }
    Ok(())
}
