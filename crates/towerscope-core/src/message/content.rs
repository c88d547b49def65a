//! The content block enum of messages and its kinds.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::id::{Id, Timestamp};

use super::block::{DataBlock, HintBlock, HintContent, MediaBlock, TextBlock, ThinkingBlock};
use super::tool_block::{ToolCallBlock, ToolOutput, ToolResultBlock, ToolResultState};

/// One block of a message's content, tagged by `"type"` in JSON.
///
/// ```
/// use towerscope_core::message::ContentBlock;
///
/// let block = ContentBlock::text("hello");
/// let json = serde_json::to_value(&block).unwrap();
/// assert_eq!(json["type"], "text");
/// assert_eq!(json["text"], "hello");
/// let back: ContentBlock = serde_json::from_value(json).unwrap();
/// assert_eq!(back, block);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text.
    Text(TextBlock),
    /// Model reasoning.
    Thinking(ThinkingBlock),
    /// Binary content: an image, audio, video or file.
    Data(DataBlock),
    /// A hint for the model.
    Hint(HintBlock),
    /// A tool call.
    ToolCall(ToolCallBlock),
    /// A tool result.
    ToolResult(ToolResultBlock),
}

/// The kind of a [`ContentBlock`], named as its JSON `"type"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// `"text"`
    Text,
    /// `"thinking"`
    Thinking,
    /// `"data"`
    Data,
    /// `"hint"`
    Hint,
    /// `"tool_call"`
    ToolCall,
    /// `"tool_result"`
    ToolResult,
}

impl BlockKind {
    /// The JSON `"type"` of blocks of this kind.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Thinking => "thinking",
            Self::Data => "data",
            Self::Hint => "hint",
            Self::ToolCall => "tool_call",
            Self::ToolResult => "tool_result",
        }
    }
}

impl fmt::Display for BlockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ContentBlock {
    /// A new text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextBlock::new(text))
    }

    /// A new thinking block.
    pub fn thinking(thinking: impl Into<String>) -> Self {
        Self::Thinking(ThinkingBlock::new(thinking))
    }

    /// A new data block with base64-encoded bytes.
    pub fn data_base64(data: impl Into<String>, media_type: impl Into<String>) -> Self {
        Self::Data(DataBlock::base64(data, media_type))
    }

    /// A new data block pointing at a URL.
    pub fn data_url(url: impl Into<String>, media_type: impl Into<String>) -> Self {
        Self::Data(DataBlock::url(url, media_type))
    }

    /// A new, finished hint block.
    pub fn hint(hint: impl Into<HintContent>, source: Option<String>) -> Self {
        Self::Hint(HintBlock::new(hint, source))
    }

    /// A new pending tool call.
    pub fn tool_call(id: impl Into<Id>, name: impl Into<String>, input: impl Into<String>) -> Self {
        Self::ToolCall(ToolCallBlock::new(id, name, input))
    }

    /// A new tool result for the call `id`.
    pub fn tool_result(
        id: impl Into<Id>,
        name: impl Into<String>,
        output: impl Into<ToolOutput>,
        state: ToolResultState,
    ) -> Self {
        Self::ToolResult(ToolResultBlock::new(id, name, output, state))
    }

    /// The block's kind.
    pub fn kind(&self) -> BlockKind {
        match self {
            Self::Text(_) => BlockKind::Text,
            Self::Thinking(_) => BlockKind::Thinking,
            Self::Data(_) => BlockKind::Data,
            Self::Hint(_) => BlockKind::Hint,
            Self::ToolCall(_) => BlockKind::ToolCall,
            Self::ToolResult(_) => BlockKind::ToolResult,
        }
    }

    /// The block's id (for tool calls and results, the tool call id).
    pub fn id(&self) -> &Id {
        match self {
            Self::Text(b) => &b.id,
            Self::Thinking(b) => &b.id,
            Self::Data(b) => &b.id,
            Self::Hint(b) => &b.id,
            Self::ToolCall(b) => &b.id,
            Self::ToolResult(b) => &b.id,
        }
    }

    /// When the block was created.
    pub fn created_at(&self) -> Timestamp {
        match self {
            Self::Text(b) => b.created_at,
            Self::Thinking(b) => b.created_at,
            Self::Data(b) => b.created_at,
            Self::Hint(b) => b.created_at,
            Self::ToolCall(b) => b.created_at,
            Self::ToolResult(b) => b.created_at,
        }
    }

    /// When the block was finished, if it was.
    pub fn finished_at(&self) -> Option<Timestamp> {
        match self {
            Self::Text(b) => b.finished_at,
            Self::Thinking(b) => b.finished_at,
            Self::Data(b) => b.finished_at,
            Self::Hint(b) => b.finished_at,
            Self::ToolCall(b) => b.finished_at,
            Self::ToolResult(b) => b.finished_at,
        }
    }

    /// The text block inside, if this is one.
    pub fn as_text(&self) -> Option<&TextBlock> {
        match self {
            Self::Text(b) => Some(b),
            _ => None,
        }
    }

    /// The thinking block inside, if this is one.
    pub fn as_thinking(&self) -> Option<&ThinkingBlock> {
        match self {
            Self::Thinking(b) => Some(b),
            _ => None,
        }
    }

    /// The data block inside, if this is one.
    pub fn as_data(&self) -> Option<&DataBlock> {
        match self {
            Self::Data(b) => Some(b),
            _ => None,
        }
    }

    /// The hint block inside, if this is one.
    pub fn as_hint(&self) -> Option<&HintBlock> {
        match self {
            Self::Hint(b) => Some(b),
            _ => None,
        }
    }

    /// The tool call inside, if this is one.
    pub fn as_tool_call(&self) -> Option<&ToolCallBlock> {
        match self {
            Self::ToolCall(b) => Some(b),
            _ => None,
        }
    }

    /// The tool result inside, if this is one.
    pub fn as_tool_result(&self) -> Option<&ToolResultBlock> {
        match self {
            Self::ToolResult(b) => Some(b),
            _ => None,
        }
    }
}

impl From<TextBlock> for ContentBlock {
    fn from(block: TextBlock) -> Self {
        Self::Text(block)
    }
}

impl From<ThinkingBlock> for ContentBlock {
    fn from(block: ThinkingBlock) -> Self {
        Self::Thinking(block)
    }
}

impl From<DataBlock> for ContentBlock {
    fn from(block: DataBlock) -> Self {
        Self::Data(block)
    }
}

impl From<HintBlock> for ContentBlock {
    fn from(block: HintBlock) -> Self {
        Self::Hint(block)
    }
}

impl From<ToolCallBlock> for ContentBlock {
    fn from(block: ToolCallBlock) -> Self {
        Self::ToolCall(block)
    }
}

impl From<ToolResultBlock> for ContentBlock {
    fn from(block: ToolResultBlock) -> Self {
        Self::ToolResult(block)
    }
}

impl From<MediaBlock> for ContentBlock {
    fn from(block: MediaBlock) -> Self {
        match block {
            MediaBlock::Text(b) => Self::Text(b),
            MediaBlock::Data(b) => Self::Data(b),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::message::DataSource;
    use serde_json::{Value, json};

    #[test]
    fn every_kind_round_trips_with_its_tag() {
        let blocks = vec![
            ContentBlock::text("t"),
            ContentBlock::thinking("th"),
            ContentBlock::data_base64("YWJj", "audio/wav"),
            ContentBlock::data_url("https://example.com/a.png", "image/png"),
            ContentBlock::hint("be brief", Some("system".into())),
            ContentBlock::hint(vec![MediaBlock::text("x")], None),
            ContentBlock::tool_call("c1", "search", "{}"),
            ContentBlock::tool_result("c1", "search", "found", ToolResultState::Success),
        ];
        for block in blocks {
            let value = serde_json::to_value(&block).unwrap();
            assert_eq!(value["type"], block.kind().as_str());
            assert_eq!(value["id"], block.id().to_string());
            let back: ContentBlock = serde_json::from_value(value).unwrap();
            assert_eq!(back, block);
        }
    }

    #[test]
    fn reference_shapes() {
        let block = ContentBlock::Data(DataBlock::url("https://x/y.png", "image/png").with_id("d1"));
        let value = serde_json::to_value(&block).unwrap();
        assert_eq!(
            value["source"],
            json!({"type": "url", "url": "https://x/y.png", "media_type": "image/png"})
        );
        assert_eq!(value["name"], Value::Null);
        assert_eq!(value["finished_at"], Value::Null);

        let hint = ContentBlock::hint("h", None);
        assert_eq!(hint.finished_at(), Some(hint.created_at()));
        let value = serde_json::to_value(&hint).unwrap();
        assert_eq!(value["hint"], "h");
        assert_eq!(value["source"], Value::Null);
    }

    #[test]
    fn thinking_keeps_provider_extras_without_the_tag() {
        let value = json!({"type": "thinking", "thinking": "", "id": "t1", "created_at": "2026-01-01T00:00:00",
                           "finished_at": null, "signature": "sig", "redacted_thinking_data": "enc"});
        let block: ContentBlock = serde_json::from_value(value.clone()).unwrap();
        let thinking = block.as_thinking().unwrap();
        assert_eq!(thinking.extra.len(), 2);
        assert_eq!(thinking.extra["signature"], "sig");
        assert_eq!(serde_json::to_value(&block).unwrap(), value);
    }

    #[test]
    fn missing_ids_and_timestamps_are_generated() {
        let block: ContentBlock = serde_json::from_value(json!({"type": "text", "text": "hi"})).unwrap();
        assert_eq!(block.id().len(), 32);
        assert!(block.created_at().as_micros() > 0);
        let hint: ContentBlock = serde_json::from_value(json!({"type": "hint", "hint": "h"})).unwrap();
        assert!(hint.finished_at().is_some());
    }

    #[test]
    fn malformed_blocks_name_the_problem() {
        let err = serde_json::from_value::<ContentBlock>(json!({"type": "text"})).unwrap_err();
        assert!(err.to_string().contains("missing field `text`"), "{err}");
        let err = serde_json::from_value::<ContentBlock>(json!({"type": "image", "url": "x"})).unwrap_err();
        assert!(err.to_string().contains("unknown variant `image`"), "{err}");
        let err = serde_json::from_value::<ContentBlock>(json!({"type": "hint", "hint": 3})).unwrap_err();
        assert!(
            err.to_string().contains("a string or a list of text and data blocks"),
            "{err}"
        );
        let err =
            serde_json::from_value::<ContentBlock>(json!({"type": "data", "source": {"type": "base64", "data": "x"}}))
                .unwrap_err();
        assert!(err.to_string().contains("missing field `media_type`"), "{err}");
    }

    #[test]
    fn data_source_media_type() {
        let source = DataSource::Base64 {
            data: String::new(),
            media_type: "audio/wav".into(),
        };
        assert_eq!(source.media_type(), "audio/wav");
    }
}
