//! The JSON of the Anthropic Messages API: stream events and the complete message, read without
//! copying strings that need no unescaping. One flat shape per object keeps decoding cheap.

use serde::Deserialize;

use crate::http::text::Text;
use serde::de::IgnoredAny;
use serde_json::Value;

/// A stream event (`message_start`, `content_block_delta`, ...) or a complete message
/// (`"type": "message"`).
#[derive(Debug, Deserialize)]
#[serde(bound(deserialize = "'de: 'a"))]
pub(super) struct EventWire<'a> {
    #[serde(rename = "type", default)]
    pub(super) kind: Option<Text<'a>>,
    /// A complete message: its id.
    #[serde(default)]
    pub(super) id: Option<Text<'a>>,
    #[serde(default)]
    pub(super) model: Option<Text<'a>>,
    /// A complete message: its blocks.
    #[serde(default)]
    pub(super) content: Option<Vec<BlockWire<'a>>>,
    #[serde(default)]
    pub(super) stop_reason: Option<Text<'a>>,
    #[serde(default)]
    pub(super) stop_sequence: Option<Text<'a>>,
    /// `message_start`: the message so far.
    #[serde(default)]
    pub(super) message: Option<Box<EventWire<'a>>>,
    #[serde(default)]
    pub(super) index: Option<u32>,
    #[serde(default)]
    pub(super) content_block: Option<BlockWire<'a>>,
    #[serde(default)]
    pub(super) delta: Option<DeltaWire<'a>>,
    #[serde(default)]
    pub(super) usage: Option<UsageWire>,
    #[serde(default)]
    pub(super) error: Option<IgnoredAny>,
}

/// A content block: at `content_block_start`, or in a complete message.
#[derive(Debug, Deserialize)]
#[serde(bound(deserialize = "'de: 'a"))]
pub(super) struct BlockWire<'a> {
    #[serde(rename = "type")]
    pub(super) kind: Text<'a>,
    #[serde(default)]
    pub(super) text: Option<Text<'a>>,
    #[serde(default)]
    pub(super) thinking: Option<Text<'a>>,
    #[serde(default)]
    pub(super) signature: Option<Text<'a>>,
    /// Redacted thinking.
    #[serde(default)]
    pub(super) data: Option<Text<'a>>,
    #[serde(default)]
    pub(super) id: Option<Text<'a>>,
    #[serde(default)]
    pub(super) name: Option<Text<'a>>,
    #[serde(default)]
    pub(super) input: Option<Value>,
}

/// The delta of `content_block_delta` (`text_delta`, `thinking_delta`, `signature_delta`,
/// `input_json_delta`) or of `message_delta` (stop reason).
#[derive(Debug, Deserialize)]
#[serde(bound(deserialize = "'de: 'a"))]
pub(super) struct DeltaWire<'a> {
    #[serde(rename = "type", default)]
    pub(super) kind: Option<Text<'a>>,
    #[serde(default)]
    pub(super) text: Option<Text<'a>>,
    #[serde(default)]
    pub(super) thinking: Option<Text<'a>>,
    #[serde(default)]
    pub(super) signature: Option<Text<'a>>,
    #[serde(default)]
    pub(super) partial_json: Option<Text<'a>>,
    #[serde(default)]
    pub(super) stop_reason: Option<Text<'a>>,
    #[serde(default)]
    pub(super) stop_sequence: Option<Text<'a>>,
}

/// Token usage; `message_delta` sends cumulative counts, often only `output_tokens`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct UsageWire {
    #[serde(default)]
    pub(super) input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) output_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_read_input_tokens: Option<u64>,
}
