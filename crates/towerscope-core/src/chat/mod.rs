//! The model side: chat responses and their usage, tool choice, tool schemas.
//!
//! A chat model answers with [`ChatResponse`]s: one complete response, or a stream of chunks
//! (`is_last == false`) that [`ChatResponse::append_chat_response`] accumulates by block id. The
//! JSON matches the reference (`"type": "chat_response"`, usage with `"type": "chat"`).
//!
//! # Example
//!
//! ```
//! use towerscope_core::chat::{ChatResponse, ChatUsage, ModelFinishedReason, ToolChoice, ToolSchema};
//! use towerscope_core::message::{ContentBlock, TextBlock, ToolCallBlock};
//!
//! // Two streamed chunks of the same text block and of the same tool call.
//! let mut response = ChatResponse::chunk(vec![
//!     TextBlock::new("Let me ").with_id("t1").into(),
//!     ToolCallBlock::new("call_1", "get_weather", r#"{"city":"#).into(),
//! ]);
//! let last = ChatResponse::new(vec![
//!     TextBlock::new("check.").with_id("t1").into(),
//!     ToolCallBlock::new("call_1", "get_weather", r#" "Paris"}"#).into(),
//! ])
//! .with_usage(ChatUsage::new(12, 7).with_time(0.4));
//! response.append_chat_response(&last);
//!
//! assert_eq!(response.text().as_deref(), Some("Let me check."));
//! assert_eq!(response.tool_calls().next().map(|c| c.input.as_str()), Some(r#"{"city": "Paris"}"#));
//! assert_eq!(response.usage.as_ref().map(|u| u.to_usage().input_tokens), Some(12));
//! assert_eq!(response.finished_reason, ModelFinishedReason::Completed);
//!
//! // Tool choice and schemas in their wire forms.
//! assert_eq!(serde_json::to_value(ToolChoice::tool("get_weather"))?["mode"], "get_weather");
//! let schema = ToolSchema::new("get_weather", "Weather of a city", serde_json::json!({"type": "object"}));
//! assert_eq!(serde_json::to_value(&schema)?["function"]["name"], "get_weather");
//! # Ok::<(), serde_json::Error>(())
//! ```

mod accumulate;
mod json_scan;
mod response;
mod restart;
mod tools;

pub use json_scan::JsonScan;
pub use response::ChatResponse;
pub use restart::{RESTART_EVENT, RESTART_KEY};
pub use tools::{ToolChoice, ToolChoiceMode, ToolSchema};

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::AgentError;
use crate::message::Usage;

/// How a model call finished.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelFinishedReason {
    /// The model finished its answer.
    #[default]
    Completed,
    /// The call was cancelled (the answer may be partial).
    Interrupted,
}

/// Usage of one chat model call, serialized with `"type": "chat"`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(try_from = "ChatUsageWire")]
pub struct ChatUsage {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Seconds the call took.
    pub time: f64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_input_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_input_tokens: u64,
    /// Provider-specific details.
    pub metadata: Option<Map<String, Value>>,
}

impl ChatUsage {
    /// Usage with input and output tokens, no cache tokens, and no duration (see
    /// [`with_time`](Self::with_time)).
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            ..Self::default()
        }
    }

    /// Sets the call's duration in seconds.
    #[must_use]
    pub fn with_time(mut self, seconds: f64) -> Self {
        self.time = seconds;
        self
    }

    /// The token counts as a message [`Usage`].
    pub fn to_usage(&self) -> Usage {
        Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_input_tokens: self.cache_input_tokens,
            cache_creation_input_tokens: self.cache_creation_input_tokens,
        }
    }
}

impl Serialize for ChatUsage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("ChatUsage", 7)?;
        out.serialize_field("input_tokens", &self.input_tokens)?;
        out.serialize_field("output_tokens", &self.output_tokens)?;
        out.serialize_field("time", &self.time)?;
        out.serialize_field("cache_creation_input_tokens", &self.cache_creation_input_tokens)?;
        out.serialize_field("cache_input_tokens", &self.cache_input_tokens)?;
        out.serialize_field("type", "chat")?;
        out.serialize_field("metadata", &self.metadata)?;
        out.end()
    }
}

#[derive(Deserialize)]
struct ChatUsageWire {
    input_tokens: u64,
    output_tokens: u64,
    #[serde(default)]
    time: f64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    #[serde(default)]
    cache_input_tokens: u64,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

impl TryFrom<ChatUsageWire> for ChatUsage {
    type Error = AgentError;

    fn try_from(wire: ChatUsageWire) -> Result<Self, AgentError> {
        check_type_tag(wire.kind.as_deref(), "chat", "chat usage")?;
        Ok(Self {
            input_tokens: wire.input_tokens,
            output_tokens: wire.output_tokens,
            time: wire.time,
            cache_creation_input_tokens: wire.cache_creation_input_tokens,
            cache_input_tokens: wire.cache_input_tokens,
            metadata: wire.metadata,
        })
    }
}

/// Checks an optional constant `"type"` tag.
fn check_type_tag(found: Option<&str>, expected: &str, what: &str) -> Result<(), AgentError> {
    match found {
        Some(found) if found != expected => Err(AgentError::validation(format!(
            "a {what} has type \"{expected}\", found \"{found}\""
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chat_usage_wire_form() {
        let mut usage = ChatUsage::new(10, 5).with_time(1.5);
        usage.cache_input_tokens = 3;
        let value = serde_json::to_value(&usage).unwrap();
        assert_eq!(
            value,
            json!({"input_tokens": 10, "output_tokens": 5, "time": 1.5, "cache_creation_input_tokens": 0,
                   "cache_input_tokens": 3, "type": "chat", "metadata": null})
        );
        assert_eq!(serde_json::from_value::<ChatUsage>(value).unwrap(), usage);
        assert_eq!(
            usage.to_usage(),
            Usage {
                input_tokens: 10,
                output_tokens: 5,
                cache_input_tokens: 3,
                cache_creation_input_tokens: 0
            }
        );
        let err =
            serde_json::from_value::<ChatUsage>(json!({"input_tokens": 1, "output_tokens": 1, "type": "embedding"}))
                .unwrap_err();
        assert!(
            err.to_string()
                .contains(r#"a chat usage has type "chat", found "embedding""#),
            "{err}"
        );
        let err = serde_json::from_value::<ChatUsage>(json!({"input_tokens": 1})).unwrap_err();
        assert!(err.to_string().contains("missing field `output_tokens`"), "{err}");
    }

    #[test]
    fn finished_reason_wire_form() {
        assert_eq!(
            serde_json::to_value(ModelFinishedReason::Interrupted).unwrap(),
            "interrupted"
        );
        assert_eq!(ModelFinishedReason::default(), ModelFinishedReason::Completed);
    }
}
