//! Reading OpenAI answers: the streamed chunks (SSE) and the complete response, into
//! [`ChatResponse`]s.
//!
//! A stream's chunks carry the deltas of this event only: reasoning as a thinking block, content
//! (and a refusal) as a text block, and each tool call delta as a tool call block with the call's
//! id and the arguments fragment; the call's name is in the chunk that brought it (its first,
//! usually), later chunks of the call carry an empty name. A delta belongs to the latest call of
//! its `index` unless it starts another call: once the call's arguments are complete, a delta
//! with a name or new arguments; before any, one with a name and another id. Servers that give
//! every call index 0, or none, still make one call each, and proxies that give every chunk an
//! id of its own still make one. Arguments sent as a JSON object are taken as their text. Blocks of one kind share
//! their id across chunks, so chunks accumulate with
//! [`ChatResponse::append_chat_response`]. At `[DONE]` comes the complete response (or, before
//! any finish reason, the error of a stream that ended early): thinking,
//! text, then the tool calls in the order they started; the usage (with cached prompt tokens);
//! the response id; and in `metadata` the response `model` and the `finish_reason`.

use std::collections::HashMap;
use std::time::Instant;

use serde_json::{Map, Value};
use towerscope_core::{
    AgentError, ChatResponse, ChatUsage, ContentBlock, Id, JsonScan, TextBlock, ThinkingBlock, ToolCallBlock,
};

use super::ids::{block_id, call_id, generated_call_id};
use super::wire::{CompletionWire, MessageWire, UsageWire};
use crate::http::chunk as blocks;
use crate::http::chunk::{MAX_TOOL_CALLS, too_many_calls};
use crate::http::names::Names;
use crate::http::sse::{Step, StreamDecoder};

/// A tool call being assembled from its deltas.
#[derive(Debug)]
struct Call {
    id: Id,
    name: String,
    arguments: String,
    /// Where the arguments stand: whether they are complete.
    scan: JsonScan,
}

/// What the answer holds so far.
#[derive(Debug, Default)]
struct Answer {
    response_id: Option<Id>,
    model: Option<String>,
    thinking: Option<(Id, String)>,
    text: Option<(Id, String)>,
    calls: Vec<Call>,
    /// The latest call of each index.
    by_index: HashMap<u32, usize>,
    usage: Option<ChatUsage>,
    finish_reason: Option<String>,
}

impl Answer {
    /// Takes in the top-level fields of a chunk or response. An empty id or model (Azure's
    /// first chunk, its prompt filter results, has both) is no value.
    fn header(&mut self, wire: &CompletionWire<'_>) {
        if self.response_id.is_none() {
            self.response_id = wire.id.as_deref().filter(|id| !id.is_empty()).map(Id::from);
        }
        if self.model.is_none() {
            self.model = wire
                .model
                .as_deref()
                .filter(|model| !model.is_empty())
                .map(str::to_owned);
        }
        if let Some(usage) = &wire.usage {
            self.usage = Some(chat_usage(usage));
        }
    }

    /// Takes in a message or delta; with `chunk`, also collects the blocks of this delta. Fails
    /// past [`MAX_TOOL_CALLS`] calls.
    fn message(
        &mut self,
        message: &MessageWire<'_>,
        mut chunk: Option<&mut Vec<ContentBlock>>,
    ) -> Result<(), AgentError> {
        if let Some(reasoning) = message.reasoning_text().filter(|r| !r.is_empty()) {
            let (id, text) = self.thinking.get_or_insert_with(|| (block_id(), String::new()));
            text.push_str(reasoning);
            if let Some(out) = chunk.as_deref_mut() {
                out.push(blocks::thinking(reasoning, id));
            }
        }
        for piece in [&message.content, &message.refusal].into_iter().flatten() {
            if piece.is_empty() {
                continue;
            }
            let (id, text) = self.text.get_or_insert_with(|| (block_id(), String::new()));
            text.push_str(piece);
            if let Some(out) = chunk.as_deref_mut() {
                out.push(blocks::text(piece, id));
            }
        }
        let whole = chunk.is_none();
        for (position, delta) in message.tool_calls.iter().flatten().enumerate() {
            let index = delta.index.unwrap_or(position as u32);
            let function = delta.function.as_ref();
            let fragment = function.and_then(|f| f.arguments.as_deref()).unwrap_or_default();
            let wire_id = delta.id.as_deref().filter(|id| !id.is_empty());
            // A delta continues the latest call of its index unless it starts another: some
            // servers give every call index 0, or none, and some proxies give every chunk an id
            // of its own. Another call starts once the open call's arguments are complete, with
            // new arguments or a name under another id (a server may repeat the call's id and
            // name after its arguments), or before its arguments, with a name and another id. A
            // whole message lists whole calls.
            let open = if whole {
                None
            } else {
                self.by_index.get(&index).copied()
            };
            let named = function.is_some_and(|f| f.name.as_deref().is_some_and(|n| !n.is_empty()));
            let continues = open.filter(|&at| {
                let call = &self.calls[at];
                let renamed = named && wire_id.is_none_or(|id| call.id != *id);
                let another = if call.scan.is_started() {
                    call.scan.is_complete() && renamed || call.scan.starts_another(fragment)
                } else {
                    named && wire_id.is_some_and(|id| call.id != *id)
                };
                !another
            });
            let (at, new) = match continues {
                Some(at) => (at, false),
                None if self.calls.len() >= MAX_TOOL_CALLS => return Err(too_many_calls()),
                None => {
                    let id = match wire_id {
                        Some(id) => call_id(id),
                        None => generated_call_id(index),
                    };
                    self.calls.push(Call {
                        id,
                        name: String::new(),
                        arguments: String::new(),
                        scan: JsonScan::default(),
                    });
                    let at = self.calls.len() - 1;
                    self.by_index.insert(index, at);
                    (at, true)
                }
            };
            let call = &mut self.calls[at];
            // The name goes out in the chunk that brings it (usually the call's first); later
            // chunks of the call carry an empty name, which merging keeps from the first.
            let mut named = false;
            if call.name.is_empty()
                && let Some(name) = function.and_then(|f| f.name.as_deref())
            {
                call.name.push_str(name);
                named = true;
            }
            call.arguments.push_str(fragment);
            call.scan.feed(fragment);
            if let Some(out) = chunk.as_deref_mut() {
                let name = if new || named { call.name.as_str() } else { "" };
                out.push(ToolCallBlock::new(call.id.clone(), name, fragment).into());
            }
        }
        Ok(())
    }

    /// The complete response.
    fn finish(self, started: Instant) -> ChatResponse {
        let mut content = Vec::with_capacity(2 + self.calls.len());
        if let Some((id, thinking)) = self.thinking {
            content.push(ThinkingBlock::new(thinking).with_id(id).into());
        }
        if let Some((id, text)) = self.text {
            content.push(TextBlock::new(text).with_id(id).into());
        }
        for call in self.calls {
            content.push(ToolCallBlock::new(call.id, call.name, call.arguments).into());
        }
        let mut response = ChatResponse::new(content);
        if let Some(id) = self.response_id {
            response.id = id;
        }
        response.usage = self.usage.map(|u| u.with_time(started.elapsed().as_secs_f64()));
        let mut metadata = Map::new();
        if let Some(model) = self.model {
            metadata.insert("model".into(), Value::String(model));
        }
        if let Some(reason) = self.finish_reason {
            metadata.insert("finish_reason".into(), Value::String(finish_reason(&reason).to_owned()));
            metadata.insert("provider_finish_reason".into(), Value::String(reason));
        }
        response.metadata = metadata;
        response
    }
}

/// The provider's finish reason in the words of the GenAI conventions (`stop`, `length`,
/// `tool_call`, `content_filter`); any other reason as it is.
fn finish_reason(reason: &str) -> &str {
    match reason {
        "stop" => "stop",
        "length" => "length",
        "tool_calls" | "function_call" => "tool_call",
        "content_filter" => "content_filter",
        other => other,
    }
}

fn chat_usage(wire: &UsageWire) -> ChatUsage {
    let mut usage = ChatUsage::new(wire.prompt_tokens, wire.completion_tokens);
    let prompt = wire.prompt_tokens_details.as_ref();
    let completion = wire.completion_tokens_details.as_ref();
    usage.cache_input_tokens = prompt.and_then(|d| d.cached_tokens).unwrap_or(0);
    let details = [
        ("total_tokens", wire.total_tokens),
        ("reasoning_tokens", completion.and_then(|d| d.reasoning_tokens)),
        ("input_audio_tokens", prompt.and_then(|d| d.audio_tokens)),
        ("output_audio_tokens", completion.and_then(|d| d.audio_tokens)),
    ];
    let metadata: Map<String, Value> = details
        .into_iter()
        .filter_map(|(key, value)| Some((key.to_owned(), Value::from(value?))))
        .collect();
    if !metadata.is_empty() {
        usage.metadata = Some(metadata);
    }
    usage
}

/// The decoder of a streamed answer.
#[derive(Debug)]
pub(crate) struct OpenAiStream {
    names: Names,
    started: Instant,
    answer: Answer,
}

impl OpenAiStream {
    /// A decoder for a call that started at `started`.
    pub(crate) fn new(names: Names, started: Instant) -> Self {
        Self {
            names,
            started,
            answer: Answer::default(),
        }
    }

    /// The error of a stream that `ended` mid-answer, before its finish reason, and its likely
    /// `cause`: retryable, as a cut connection is.
    fn early_end(&self, ended: &str, cause: &str) -> AgentError {
        AgentError::Stream(format!(
            "the {} stream of {} {ended} mid-answer, before its finish reason; {cause}",
            self.names.provider, self.names.endpoint
        ))
    }
}

impl StreamDecoder for OpenAiStream {
    fn event(&mut self, name: &str, data: &str) -> Result<Step, AgentError> {
        if name == "error" {
            // llama.cpp's `error:` line, `{"code", "message", "type"}`.
            return Err(self.names.provider_error(data.as_bytes()));
        }
        if data.trim() == "[DONE]" {
            if self.answer.finish_reason.is_none() {
                // A server that failed mid-answer may still close with `[DONE]` (llama.cpp):
                // what came is not the whole answer.
                return Err(self.early_end("ended with [DONE]", "the server probably failed while answering"));
            }
            let answer = std::mem::take(&mut self.answer);
            return Ok(Step::Final(answer.finish(self.started)));
        }
        let wire: CompletionWire<'_> =
            serde_json::from_str(data).map_err(|e| self.names.decode_error("stream chunk", &e, data))?;
        if wire.error.is_some() {
            return Err(self.names.provider_error(data.as_bytes()));
        }
        self.answer.header(&wire);
        let mut content = Vec::new();
        if let Some(choice) = &wire.choice {
            if let Some(delta) = &choice.delta {
                self.answer.message(delta, Some(&mut content))?;
            }
            if let Some(reason) = &choice.finish_reason {
                self.answer.finish_reason = Some(reason.clone().into_owned());
            }
        }
        Ok(if content.is_empty() {
            Step::Skip
        } else {
            // Chunks before the server named the response share one id, which the whole
            // response keeps.
            let id = self.answer.response_id.get_or_insert_with(Id::new);
            Step::Chunk(blocks::chunk(content, id))
        })
    }

    fn ended(&mut self) -> Result<ChatResponse, AgentError> {
        if self.answer.finish_reason.is_some() {
            // Whole but for `[DONE]` (a server that never sends it, or a last line without its
            // blank line); a usage chunk that was to follow is lost.
            let answer = std::mem::take(&mut self.answer);
            return Ok(answer.finish(self.started));
        }
        Err(self.early_end("ended", "the connection was probably cut"))
    }
}

/// The complete response of a non-streamed call (or of a server that answered a streamed call
/// with JSON).
pub(crate) fn complete_response(names: &Names, body: &[u8], started: Instant) -> Result<ChatResponse, AgentError> {
    let text = String::from_utf8_lossy(body);
    let wire: CompletionWire<'_> =
        serde_json::from_str(&text).map_err(|e| names.decode_error("chat completion", &e, &text))?;
    if wire.error.is_some() {
        return Err(names.provider_error(body));
    }
    let mut answer = Answer::default();
    answer.header(&wire);
    let choice = wire.choice.as_ref().ok_or_else(|| {
        AgentError::model(format!(
            "the {} chat completion from {} holds no choice",
            names.provider, names.endpoint
        ))
    })?;
    if let Some(message) = choice.message.as_ref().or(choice.delta.as_ref()) {
        answer.message(message, None)?;
    }
    answer.finish_reason = choice.finish_reason.as_deref().map(str::to_owned);
    Ok(answer.finish(started))
}
