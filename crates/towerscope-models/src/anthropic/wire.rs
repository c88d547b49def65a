//! The JSON of the Anthropic Messages API: stream events and the complete message, read without
//! copying strings that need no unescaping. One flat shape per object keeps decoding cheap.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

/// A stream event (`message_start`, `content_block_delta`, ...) or a complete message
/// (`"type": "message"`).
#[derive(Debug, Deserialize)]
pub(super) struct EventWire<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(super) kind: Option<Cow<'a, str>>,
    /// A complete message: its id.
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) model: Option<Cow<'a, str>>,
    /// A complete message: its blocks.
    #[serde(borrow, default)]
    pub(super) content: Option<Vec<BlockWire<'a>>>,
    #[serde(borrow, default)]
    pub(super) stop_reason: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) stop_sequence: Option<Cow<'a, str>>,
    /// `message_start`: the message so far.
    #[serde(borrow, default)]
    pub(super) message: Option<Box<EventWire<'a>>>,
    #[serde(default)]
    pub(super) index: Option<u32>,
    #[serde(borrow, default)]
    pub(super) content_block: Option<BlockWire<'a>>,
    #[serde(borrow, default)]
    pub(super) delta: Option<DeltaWire<'a>>,
    #[serde(default)]
    pub(super) usage: Option<UsageWire>,
    #[serde(default)]
    pub(super) error: Option<IgnoredAny>,
}

/// A content block: at `content_block_start`, or in a complete message.
#[derive(Debug, Deserialize)]
pub(super) struct BlockWire<'a> {
    #[serde(rename = "type", borrow)]
    pub(super) kind: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(super) text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) signature: Option<Cow<'a, str>>,
    /// Redacted thinking.
    #[serde(borrow, default)]
    pub(super) data: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) input: Option<Value>,
}

/// The delta of `content_block_delta` (`text_delta`, `thinking_delta`, `signature_delta`,
/// `input_json_delta`) or of `message_delta` (stop reason).
#[derive(Debug, Deserialize)]
pub(super) struct DeltaWire<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(super) kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) signature: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) partial_json: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) stop_reason: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) stop_sequence: Option<Cow<'a, str>>,
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
