//! Reading Anthropic answers: the stream events (SSE) and the complete message, into
//! [`ChatResponse`]s.
//!
//! Each `content_block_delta` is one chunk: `text_delta` as text, `thinking_delta` as thinking,
//! `input_json_delta` as a fragment of a tool call (announced with its id and name at its
//! `content_block_start`; the fragments' chunks carry the id and an empty name, which merging
//! leaves as the start's). Signatures (`signature_delta`) are not chunks: they are kept for the
//! complete response, whose thinking blocks carry them in `extra["signature"]` (redacted
//! thinking in `extra["redacted_thinking_data"]`), as the API needs them back. `ping` is
//! skipped; an `error` event is an error; `message_stop` ends the stream with the complete
//! response: blocks in index order, the usage, the message id, and in `metadata` the `model`
//! and the `finish_reason` (`stop`, `length`, `tool_call`, `content_filter`; the provider's own
//! word as `provider_finish_reason`).
//!
//! Usage: `input_tokens` counts every input token, cached ones included (the API's
//! `input_tokens` plus `cache_read_input_tokens` plus `cache_creation_input_tokens`), as
//! OpenAI's `prompt_tokens` does; the two cache counts are kept apart as well.

use std::time::Instant;

use serde_json::{Map, Value};
use towerscope_core::{AgentError, ChatResponse, ChatUsage, ContentBlock, Id, TextBlock, ThinkingBlock, ToolCallBlock};

use super::ids::{block_id, call_id, generated_call_id};
use super::wire::{BlockWire, DeltaWire, EventWire, UsageWire};
use crate::http::chunk as blocks;
use crate::http::chunk::{MAX_TOOL_CALLS, too_many_calls};
use crate::http::names::Names;
use crate::http::sse::{Step, StreamDecoder};
use crate::http::text::Text;

/// The extra field of a thinking block holding its signature.
pub const SIGNATURE: &str = "signature";
/// The extra field of a (redacted) thinking block holding its encrypted data.
pub const REDACTED_DATA: &str = "redacted_thinking_data";

/// A content block being assembled.
#[derive(Debug)]
enum Block {
    Text {
        id: Id,
        text: String,
    },
    Thinking {
        id: Id,
        thinking: String,
        signature: String,
    },
    Redacted {
        id: Id,
        data: String,
    },
    ToolUse {
        id: Id,
        name: String,
        input: String,
    },
    Other,
}

/// What the answer holds so far.
#[derive(Debug, Default)]
struct Answer {
    id: Option<Id>,
    model: Option<String>,
    blocks: Vec<(u32, Block)>,
    /// Where each index's newest block is in `blocks` (a delta finds its block at once, however
    /// many there are).
    positions: std::collections::HashMap<u32, usize>,
    /// How many `tool_use` blocks were opened (at most [`MAX_TOOL_CALLS`]).
    calls: usize,
    /// Whether the server reported any usage (a proxy may send none: then the answer has none,
    /// rather than a free call).
    usage_seen: bool,
    input_tokens: u64,
    output_tokens: u64,
    cache_read: u64,
    cache_creation: u64,
    stop_reason: Option<String>,
    stop_sequence: Option<String>,
}

impl Answer {
    fn header(&mut self, message: &EventWire<'_>) {
        if self.id.is_none() {
            self.id = message.id.as_deref().map(Id::from);
        }
        if self.model.is_none() {
            self.model = message.model.as_deref().map(str::to_owned);
        }
        if let Some(usage) = &message.usage {
            self.usage(usage);
        }
        if let Some(reason) = &message.stop_reason {
            self.stop_reason = Some(reason.clone().into_owned());
        }
        if let Some(sequence) = &message.stop_sequence {
            self.stop_sequence = Some(sequence.clone().into_owned());
        }
    }

    fn usage(&mut self, usage: &UsageWire) {
        self.usage_seen |= usage.input_tokens.is_some()
            || usage.output_tokens.is_some()
            || usage.cache_read_input_tokens.is_some()
            || usage.cache_creation_input_tokens.is_some();
        let fields = [
            (&mut self.input_tokens, usage.input_tokens),
            (&mut self.output_tokens, usage.output_tokens),
            (&mut self.cache_read, usage.cache_read_input_tokens),
            (&mut self.cache_creation, usage.cache_creation_input_tokens),
        ];
        for (field, value) in fields {
            if let Some(value) = value {
                *field = value;
            }
        }
    }

    /// Opens a block; returns the chunk that announces it, if any. Fails past
    /// [`MAX_TOOL_CALLS`] tool calls.
    fn start(&mut self, index: u32, wire: &BlockWire<'_>) -> Result<Option<ContentBlock>, AgentError> {
        let text = |field: &Option<Text<'_>>| field.as_deref().unwrap_or_default().to_owned();
        let (block, chunk) = match wire.kind.as_ref() {
            "text" => {
                let block = Block::Text {
                    id: block_id(),
                    text: text(&wire.text),
                };
                let chunk = match &block {
                    Block::Text { id, text } if !text.is_empty() => Some(blocks::text(text, id)),
                    _ => None,
                };
                (block, chunk)
            }
            "thinking" => {
                let block = Block::Thinking {
                    id: block_id(),
                    thinking: text(&wire.thinking),
                    signature: text(&wire.signature),
                };
                let chunk = match &block {
                    Block::Thinking { id, thinking, .. } if !thinking.is_empty() => {
                        Some(blocks::thinking(thinking, id))
                    }
                    _ => None,
                };
                (block, chunk)
            }
            "redacted_thinking" => (
                Block::Redacted {
                    id: block_id(),
                    data: text(&wire.data),
                },
                None,
            ),
            "tool_use" => {
                if self.calls >= MAX_TOOL_CALLS {
                    return Err(too_many_calls());
                }
                self.calls += 1;
                let id = match wire.id.as_deref().filter(|id| !id.is_empty()) {
                    Some(id) => call_id(id),
                    None => generated_call_id(index),
                };
                let name = text(&wire.name);
                // The API sends `{}` here and the arguments as deltas; a complete message sends
                // the arguments here.
                let input = match &wire.input {
                    Some(Value::Object(map)) if map.is_empty() => String::new(),
                    Some(value @ Value::Object(_)) => value.to_string(),
                    _ => String::new(),
                };
                let chunk = ToolCallBlock::new(id.clone(), name.clone(), input.clone()).into();
                (Block::ToolUse { id, name, input }, Some(chunk))
            }
            _ => (Block::Other, None),
        };
        self.positions.insert(index, self.blocks.len());
        self.blocks.push((index, block));
        Ok(chunk)
    }

    /// Adds a delta to its block; returns the chunk it makes, if any.
    fn delta(&mut self, index: u32, delta: &DeltaWire<'_>) -> Result<Option<ContentBlock>, AgentError> {
        // The latest block first: deltas come for the block last started.
        let found = match self.blocks.last() {
            Some((last, _)) if *last == index => Some(self.blocks.len() - 1),
            _ => self.positions.get(&index).copied(),
        };
        let position = match found {
            Some(position) => position,
            None => {
                // A delta without its start: open the block its kind implies.
                let kind = match delta.kind.as_deref() {
                    Some("text_delta") => "text",
                    Some("thinking_delta" | "signature_delta") => "thinking",
                    Some("input_json_delta") => "tool_use",
                    _ => return Ok(None),
                };
                let wire = BlockWire {
                    kind: Text(kind.into()),
                    text: None,
                    thinking: None,
                    signature: None,
                    data: None,
                    id: None,
                    name: None,
                    input: None,
                };
                self.start(index, &wire)?;
                self.blocks.len() - 1
            }
        };
        Ok(extend(&mut self.blocks[position].1, delta))
    }

    fn finish(mut self, started: Instant) -> ChatResponse {
        self.blocks.sort_by_key(|(index, _)| *index);
        let mut content = Vec::with_capacity(self.blocks.len());
        for (_, block) in self.blocks {
            match block {
                Block::Text { id, text } => content.push(TextBlock::new(text).with_id(id).into()),
                Block::Thinking {
                    id,
                    thinking,
                    signature,
                } => {
                    let mut block = ThinkingBlock::new(thinking).with_id(id);
                    if !signature.is_empty() {
                        block.extra.insert(SIGNATURE.into(), Value::String(signature));
                    }
                    content.push(block.into());
                }
                Block::Redacted { id, data } => {
                    let mut block = ThinkingBlock::new("").with_id(id);
                    block.extra.insert(REDACTED_DATA.into(), Value::String(data));
                    content.push(block.into());
                }
                Block::ToolUse { id, name, input } => content.push(ToolCallBlock::new(id, name, input).into()),
                Block::Other => {}
            }
        }
        let mut response = ChatResponse::new(content);
        if let Some(id) = self.id {
            response.id = id;
        }
        let mut usage = ChatUsage::new(
            self.input_tokens
                .saturating_add(self.cache_read)
                .saturating_add(self.cache_creation),
            self.output_tokens,
        )
        .with_time(started.elapsed().as_secs_f64());
        usage.cache_input_tokens = self.cache_read;
        usage.cache_creation_input_tokens = self.cache_creation;
        response.usage = self.usage_seen.then_some(usage);
        let mut metadata = Map::new();
        if let Some(model) = self.model {
            metadata.insert("model".into(), Value::String(model));
        }
        if let Some(reason) = self.stop_reason {
            metadata.insert("finish_reason".into(), Value::String(finish_reason(&reason).to_owned()));
            metadata.insert("provider_finish_reason".into(), Value::String(reason));
        }
        if let Some(sequence) = self.stop_sequence {
            metadata.insert("stop_sequence".into(), Value::String(sequence));
        }
        response.metadata = metadata;
        response
    }
}

/// Adds a delta to `block`; returns the chunk it makes, if any.
fn extend(block: &mut Block, delta: &DeltaWire<'_>) -> Option<ContentBlock> {
    match (block, delta.kind.as_deref()) {
        (Block::Text { id, text }, Some("text_delta")) => {
            let piece = delta.text.as_deref().filter(|t| !t.is_empty())?;
            text.push_str(piece);
            Some(blocks::text(piece, id))
        }
        (Block::Thinking { id, thinking, .. }, Some("thinking_delta")) => {
            let piece = delta.thinking.as_deref().filter(|t| !t.is_empty())?;
            thinking.push_str(piece);
            Some(blocks::thinking(piece, id))
        }
        (Block::Thinking { signature, .. }, Some("signature_delta")) => {
            signature.push_str(delta.signature.as_deref().unwrap_or_default());
            None
        }
        (Block::ToolUse { id, input, .. }, Some("input_json_delta")) => {
            let piece = delta.partial_json.as_deref().filter(|t| !t.is_empty())?;
            input.push_str(piece);
            // The name went out with the block's start; merging keeps it.
            Some(ToolCallBlock::new(id.clone(), "", piece).into())
        }
        _ => None,
    }
}

/// The stop reason in the words of the GenAI conventions (`stop`, `length`, `tool_call`,
/// `content_filter`); any other reason (`pause_turn`) as it is.
fn finish_reason(reason: &str) -> &str {
    match reason {
        "end_turn" | "stop_sequence" => "stop",
        "max_tokens" | "model_context_window_exceeded" => "length",
        "tool_use" => "tool_call",
        "refusal" => "content_filter",
        other => other,
    }
}

/// The decoder of a streamed answer.
#[derive(Debug)]
pub(crate) struct AnthropicStream {
    names: Names,
    started: Instant,
    answer: Answer,
    /// Whether a `message_delta` named why the message stopped.
    stopped: bool,
}

impl AnthropicStream {
    /// A decoder for a call that started at `started`.
    pub(crate) fn new(names: Names, started: Instant) -> Self {
        Self {
            names,
            started,
            answer: Answer::default(),
            stopped: false,
        }
    }
}

impl StreamDecoder for AnthropicStream {
    fn event(&mut self, name: &str, data: &str) -> Result<Step, AgentError> {
        if name == "error" {
            return Err(self.names.provider_error(data.as_bytes()));
        }
        let wire: EventWire<'_> =
            serde_json::from_str(data).map_err(|e| self.names.decode_error("stream event", &e, data))?;
        let kind = wire.kind.as_deref().unwrap_or(name);
        let block = match kind {
            "message_start" => {
                if let Some(message) = &wire.message {
                    self.answer.header(message);
                }
                None
            }
            "content_block_start" => match (&wire.content_block, wire.index) {
                (Some(block), Some(index)) => self.answer.start(index, block)?,
                _ => None,
            },
            "content_block_delta" => match (&wire.delta, wire.index) {
                (Some(delta), Some(index)) => self.answer.delta(index, delta)?,
                _ => None,
            },
            "message_delta" => {
                if let Some(delta) = &wire.delta {
                    if let Some(reason) = &delta.stop_reason {
                        self.answer.stop_reason = Some(reason.clone().into_owned());
                        self.stopped = true;
                    }
                    if let Some(sequence) = &delta.stop_sequence {
                        self.answer.stop_sequence = Some(sequence.clone().into_owned());
                    }
                }
                if let Some(usage) = &wire.usage {
                    self.answer.usage(usage);
                }
                None
            }
            "message_stop" => {
                let answer = std::mem::take(&mut self.answer);
                return Ok(Step::Final(answer.finish(self.started)));
            }
            "error" => return Err(self.names.provider_error(data.as_bytes())),
            _ if wire.error.is_some() => return Err(self.names.provider_error(data.as_bytes())),
            // `ping`, `content_block_stop`, and events this version does not know.
            _ => None,
        };
        Ok(match block {
            Some(block) => Step::Chunk(blocks::chunk(vec![block], self.answer.id.get_or_insert_with(Id::new))),
            None => Step::Skip,
        })
    }

    fn ended(&mut self) -> Result<ChatResponse, AgentError> {
        if self.stopped {
            // Whole but for `message_stop`: its `message_delta` named why it stopped.
            let answer = std::mem::take(&mut self.answer);
            return Ok(answer.finish(self.started));
        }
        Err(AgentError::Stream(format!(
            "the {} stream of {} ended without its message_stop event, before its stop reason; the connection was \
             probably cut",
            self.names.provider, self.names.endpoint
        )))
    }
}

/// The complete response of a non-streamed call (or of a server that answered a streamed call
/// with JSON).
pub(crate) fn complete_response(names: &Names, body: &[u8], started: Instant) -> Result<ChatResponse, AgentError> {
    let text = String::from_utf8_lossy(body);
    let wire: EventWire<'_> = serde_json::from_str(&text).map_err(|e| names.decode_error("message", &e, &text))?;
    if wire.error.is_some() || wire.kind.as_deref() == Some("error") {
        return Err(names.provider_error(body));
    }
    let mut answer = Answer::default();
    answer.header(&wire);
    // A complete message holds each block whole, as a stream's block starts would.
    for (index, block) in (0..).zip(wire.content.iter().flatten()) {
        answer.start(index, block)?;
    }
    Ok(answer.finish(started))
}
