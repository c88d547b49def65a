//! The response of a chat model and how streamed chunks accumulate.

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{ChatUsage, ModelFinishedReason, check_type_tag};
use crate::AgentError;
use crate::id::{Id, Timestamp, new_id, now_timestamp};
use crate::message::{BlockKind, ContentBlock, ToolCallBlock};

/// What a chat model answered: a complete response, or one chunk of a stream.
///
/// `content` holds only text, thinking, data and tool call blocks; deserialization rejects other
/// kinds. Serialized with `"type": "chat_response"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "ChatResponseWire")]
pub struct ChatResponse {
    /// The blocks of the answer (of this chunk, for a stream).
    pub content: Vec<ContentBlock>,
    /// Whether this is the last (complete) response of the call.
    pub is_last: bool,
    /// The response's id.
    pub id: Id,
    /// When the response was created.
    pub created_at: Timestamp,
    /// The call's usage, when known (usually on the last chunk).
    pub usage: Option<ChatUsage>,
    /// How the call finished.
    pub finished_reason: ModelFinishedReason,
    /// Provider-specific metadata.
    pub metadata: Map<String, Value>,
}

const CHAT_RESPONSE_KINDS: [BlockKind; 4] = [
    BlockKind::Text,
    BlockKind::Thinking,
    BlockKind::Data,
    BlockKind::ToolCall,
];

impl ChatResponse {
    /// A complete (`is_last`) response.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        Self {
            content,
            is_last: true,
            id: new_id(),
            created_at: now_timestamp(),
            usage: None,
            finished_reason: ModelFinishedReason::Completed,
            metadata: Map::new(),
        }
    }

    /// A chunk of a streamed response (`is_last == false`).
    pub fn chunk(content: Vec<ContentBlock>) -> Self {
        Self {
            is_last: false,
            ..Self::new(content)
        }
    }

    /// Sets the usage.
    #[must_use]
    pub fn with_usage(mut self, usage: ChatUsage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Sets how the call finished.
    #[must_use]
    pub fn with_finished_reason(mut self, finished_reason: ModelFinishedReason) -> Self {
        self.finished_reason = finished_reason;
        self
    }

    /// Checks that the content holds only text, thinking, data and tool call blocks.
    pub fn validate(&self) -> Result<(), AgentError> {
        check_content(&self.content)
    }

    /// The text of the text blocks joined with `"\n"`; `None` when there is none.
    pub fn text(&self) -> Option<String> {
        let mut texts = self.content.iter().filter_map(ContentBlock::as_text);
        let mut joined = texts.next()?.text.clone();
        for text in texts {
            joined.push('\n');
            joined.push_str(&text.text);
        }
        Some(joined)
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCallBlock> + '_ {
        self.content.iter().filter_map(ContentBlock::as_tool_call)
    }
}

fn check_content(content: &[ContentBlock]) -> Result<(), AgentError> {
    match content
        .iter()
        .map(ContentBlock::kind)
        .find(|kind| !CHAT_RESPONSE_KINDS.contains(kind))
    {
        Some(found) => Err(AgentError::validation(format!(
            "a chat response may only hold text, thinking, data and tool call blocks, found '{found}'"
        ))),
        None => Ok(()),
    }
}

impl Serialize for ChatResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("ChatResponse", 8)?;
        out.serialize_field("content", &self.content)?;
        out.serialize_field("is_last", &self.is_last)?;
        out.serialize_field("id", &self.id)?;
        out.serialize_field("created_at", &self.created_at)?;
        out.serialize_field("type", "chat_response")?;
        out.serialize_field("usage", &self.usage)?;
        out.serialize_field("finished_reason", &self.finished_reason)?;
        out.serialize_field("metadata", &self.metadata)?;
        out.end()
    }
}

#[derive(Deserialize)]
struct ChatResponseWire {
    content: Vec<ContentBlock>,
    is_last: bool,
    #[serde(default = "new_id")]
    id: Id,
    #[serde(default = "now_timestamp")]
    created_at: Timestamp,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    usage: Option<ChatUsage>,
    #[serde(default)]
    finished_reason: ModelFinishedReason,
    #[serde(default)]
    metadata: Map<String, Value>,
}

impl TryFrom<ChatResponseWire> for ChatResponse {
    type Error = AgentError;

    fn try_from(wire: ChatResponseWire) -> Result<Self, AgentError> {
        check_type_tag(wire.kind.as_deref(), "chat_response", "chat response")?;
        check_content(&wire.content)?;
        Ok(Self {
            content: wire.content,
            is_last: wire.is_last,
            id: wire.id,
            created_at: wire.created_at,
            usage: wire.usage,
            finished_reason: wire.finished_reason,
            metadata: wire.metadata,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::message::{HintBlock, TextBlock, ToolResultState};
    use serde_json::json;

    #[test]
    fn wire_form_and_validation() {
        let response = ChatResponse::new(vec![TextBlock::new("hi").with_id("t").into()])
            .with_finished_reason(ModelFinishedReason::Interrupted);
        let value = serde_json::to_value(&response).unwrap();
        assert_eq!(value["type"], "chat_response");
        assert_eq!(value["is_last"], true);
        assert_eq!(value["usage"], Value::Null);
        assert_eq!(value["finished_reason"], "interrupted");
        assert_eq!(value["metadata"], json!({}));
        assert_eq!(serde_json::from_value::<ChatResponse>(value).unwrap(), response);

        let hint: ContentBlock = HintBlock::new("h", None).into();
        let err = serde_json::from_value::<ChatResponse>(json!({"content": [hint], "is_last": true})).unwrap_err();
        assert!(
            err.to_string()
                .contains("a chat response may only hold text, thinking, data and tool call blocks, found 'hint'"),
            "{err}"
        );
        let err = serde_json::from_value::<ChatResponse>(
            json!({"content": [], "is_last": true, "type": "structured_response"}),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains(r#"a chat response has type "chat_response""#),
            "{err}"
        );
        let err = serde_json::from_value::<ChatResponse>(json!({"content": []})).unwrap_err();
        assert!(err.to_string().contains("missing field `is_last`"), "{err}");
        let result = ContentBlock::tool_result("c", "t", "x", ToolResultState::Success);
        assert!(ChatResponse::new(vec![result]).validate().is_err());
    }
}
