//! Messages in the Anthropic Messages format.
//!
//! - System messages become the top-level `system` prompt (empty ones are left out).
//! - User messages become `user` turns: text, images (`image`, inline or by URL) and PDFs
//!   (`document`).
//! - An assistant message (an agent's whole reply) becomes `assistant` content: text, thinking
//!   blocks that carry a signature (or redacted thinking data) exactly as they came, and
//!   `tool_use` blocks; its tool results and hints go into `user` turns (`tool_result` with
//!   `is_error` for failed, denied and interrupted calls). Consecutive blocks of one role share
//!   one turn.
//! - Thinking without a signature (from another provider) is left out: the API rejects it.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value};
use towerscope_core::{
    AgentError, ContentBlock, DataBlock, DataSource, HintContent, MediaBlock, Msg, Role, ThinkingBlock, ToolCallBlock,
    ToolOutput, ToolResultBlock, ToolResultState,
};

use super::decode::{REDACTED_DATA, SIGNATURE};
use super::ids::wire_id;

/// `{"type": "ephemeral"}`: a prompt-cache breakpoint.
#[derive(Debug, Clone, Copy, Serialize)]
pub(super) struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

/// The one cache control the API knows.
pub(super) const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

/// A turn of the conversation.
#[derive(Debug, Serialize)]
pub(super) struct WireMessage<'a> {
    pub(super) role: &'static str,
    pub(super) content: Vec<WireBlock<'a>>,
}

/// A content block on the wire.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireBlock<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: Source<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Document {
        source: Source<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: String,
        name: &'a str,
        input: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: String,
        content: ToolResultContent<'a>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
}

impl WireBlock<'_> {
    /// Puts a cache breakpoint on this block; `false` for blocks that cannot hold one.
    pub(super) fn mark_cache(&mut self) -> bool {
        match self {
            Self::Text { cache_control, .. }
            | Self::Image { cache_control, .. }
            | Self::Document { cache_control, .. }
            | Self::ToolUse { cache_control, .. }
            | Self::ToolResult { cache_control, .. } => {
                *cache_control = Some(EPHEMERAL);
                true
            }
            Self::Thinking { .. } | Self::RedactedThinking { .. } => false,
        }
    }
}

/// Where the bytes of an image or document are.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Source<'a> {
    Base64 { media_type: &'a str, data: &'a str },
    Url { url: &'a str },
}

/// What a tool returned: text, or text and images.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum ToolResultContent<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<WireBlock<'a>>),
}

/// The system prompt and the turns.
#[derive(Debug, Default)]
pub(super) struct Formatted<'a> {
    pub(super) system: Vec<Cow<'a, str>>,
    pub(super) messages: Vec<WireMessage<'a>>,
}

impl<'a> Formatted<'a> {
    fn push(&mut self, role: &'static str, block: WireBlock<'a>) {
        match self.messages.last_mut() {
            Some(last) if last.role == role => last.content.push(block),
            _ => self.messages.push(WireMessage {
                role,
                content: vec![block],
            }),
        }
    }
}

/// Formats the conversation.
pub(super) fn format<'a>(messages: impl IntoIterator<Item = &'a Msg>) -> Result<Formatted<'a>, AgentError> {
    let mut out = Formatted::default();
    for msg in messages {
        match msg.role {
            Role::System => out.system.extend(
                msg.content
                    .iter()
                    .filter_map(ContentBlock::as_text)
                    .map(|t| Cow::Borrowed(t.text.as_str())),
            ),
            Role::User => {
                for block in &msg.content {
                    match block {
                        ContentBlock::Text(t) if has_text(&t.text) => out.push("user", text(&t.text)),
                        ContentBlock::Data(d) => out.push("user", data(d)?),
                        _ => {}
                    }
                }
            }
            Role::Assistant => {
                for block in &msg.content {
                    match block {
                        ContentBlock::Text(t) if has_text(&t.text) => out.push("assistant", text(&t.text)),
                        ContentBlock::Thinking(t) => {
                            if let Some(block) = thinking(t) {
                                out.push("assistant", block);
                            }
                        }
                        ContentBlock::ToolCall(call) => out.push("assistant", tool_use(call)),
                        ContentBlock::ToolResult(result) => out.push("user", tool_result(result)?),
                        ContentBlock::Hint(hint) => match &hint.hint {
                            HintContent::Text(hint) if has_text(hint) => out.push("user", text(hint)),
                            HintContent::Text(_) => {}
                            HintContent::Blocks(blocks) => {
                                for block in media(blocks)? {
                                    out.push("user", block);
                                }
                            }
                        },
                        ContentBlock::Text(_) | ContentBlock::Data(_) => {}
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Whether a text may be sent as a text block: the API refuses blocks of whitespace only (and
/// the whole request with them), which other models write (`"\n\n"` before a tool call) and an
/// answer from a fallback model brings into the conversation.
fn has_text(text: &str) -> bool {
    !text.trim().is_empty()
}

fn text(text: &str) -> WireBlock<'_> {
    WireBlock::Text {
        text: Cow::Borrowed(text),
        cache_control: None,
    }
}

fn thinking(block: &ThinkingBlock) -> Option<WireBlock<'_>> {
    let field = |key: &str| block.extra.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    if let Some(signature) = field(SIGNATURE) {
        return Some(WireBlock::Thinking {
            thinking: &block.thinking,
            signature,
        });
    }
    field(REDACTED_DATA).map(|data| WireBlock::RedactedThinking { data })
}

fn tool_use(call: &ToolCallBlock) -> WireBlock<'_> {
    let input = match serde_json::from_str::<Value>(&call.input) {
        Ok(value @ Value::Object(_)) => value,
        // Empty or broken arguments (the agent answered the broken ones with an error result):
        // the API takes objects only.
        _ => Value::Object(Map::new()),
    };
    WireBlock::ToolUse {
        id: wire_id(&call.id),
        name: &call.name,
        input,
        cache_control: None,
    }
}

fn tool_result(result: &ToolResultBlock) -> Result<WireBlock<'_>, AgentError> {
    let content = match &result.output {
        ToolOutput::Text(text) => ToolResultContent::Text(Cow::Borrowed(text)),
        ToolOutput::Blocks(blocks) => ToolResultContent::Blocks(media(blocks)?),
    };
    Ok(WireBlock::ToolResult {
        tool_use_id: wire_id(&result.id),
        content,
        is_error: matches!(
            result.state,
            ToolResultState::Error | ToolResultState::Denied | ToolResultState::Interrupted
        ),
        cache_control: None,
    })
}

fn media(blocks: &[MediaBlock]) -> Result<Vec<WireBlock<'_>>, AgentError> {
    let mut out = Vec::with_capacity(blocks.len());
    for block in blocks {
        match block {
            MediaBlock::Text(t) if has_text(&t.text) => out.push(text(&t.text)),
            MediaBlock::Text(_) => {}
            MediaBlock::Data(d) => out.push(data(d)?),
        }
    }
    Ok(out)
}

fn data(block: &DataBlock) -> Result<WireBlock<'_>, AgentError> {
    let media_type = block.source.media_type();
    let source = match &block.source {
        DataSource::Base64 { data, media_type } => Source::Base64 { media_type, data },
        DataSource::Url { url, .. } => Source::Url { url },
    };
    if media_type.starts_with("image/") {
        Ok(WireBlock::Image {
            source,
            cache_control: None,
        })
    } else if media_type == "application/pdf" {
        Ok(WireBlock::Document {
            source,
            title: block.name.as_deref(),
            cache_control: None,
        })
    } else {
        Err(AgentError::validation(format!(
            "Anthropic messages take images and PDF documents; the data block '{}' ({media_type}) cannot be sent: \
             drop or convert it",
            block.name.as_deref().unwrap_or("unnamed")
        )))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_round_with_signed_thinking() {
        let mut signed = ThinkingBlock::new("I should look it up.");
        signed.extra.insert(SIGNATURE.into(), json!("EqQBsig"));
        let mut redacted = ThinkingBlock::new("");
        redacted.extra.insert(REDACTED_DATA.into(), json!("EmwKAhenc"));
        let reply = Msg::assistant_blocks(
            "bot",
            vec![
                signed.into(),
                redacted.into(),
                ThinkingBlock::new("from another provider").into(),
                ContentBlock::tool_call("toolu_1", "get_weather", r#"{"city":"Paris"}"#),
                ContentBlock::tool_call("toolu_2", "get_weather", r#"{"city":"#),
                ContentBlock::tool_result("toolu_1", "get_weather", "sunny", ToolResultState::Success),
                ContentBlock::tool_result("toolu_2", "get_weather", "invalid JSON", ToolResultState::Error),
                ContentBlock::hint("be brief", None),
                ContentBlock::text("Sunny."),
            ],
        );
        let messages = [
            Msg::system("s", "You are brief."),
            Msg::user("alice", "Weather?"),
            reply,
        ];
        let formatted = format(&messages).unwrap();
        assert_eq!(formatted.system, ["You are brief."]);
        assert_eq!(
            serde_json::to_value(&formatted.messages).unwrap(),
            json!([
                {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "I should look it up.", "signature": "EqQBsig"},
                    {"type": "redacted_thinking", "data": "EmwKAhenc"},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "invalid JSON", "is_error": true},
                    {"type": "text", "text": "be brief"}
                ]},
                {"role": "assistant", "content": [{"type": "text", "text": "Sunny."}]}
            ])
        );
    }

    #[test]
    fn images_documents_and_what_cannot_go() {
        let user = Msg::new(
            "u",
            Role::User,
            vec![
                ContentBlock::data_url("https://example.invalid/a.png", "image/png"),
                DataBlock::base64("JVBE", "application/pdf")
                    .with_name("report.pdf")
                    .into(),
            ],
        )
        .unwrap();
        let value = serde_json::to_value(&format(&[user]).unwrap().messages).unwrap();
        assert_eq!(
            value[0]["content"],
            json!([
                {"type": "image", "source": {"type": "url", "url": "https://example.invalid/a.png"}},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}, "title": "report.pdf"}
            ])
        );
        let audio = Msg::new("u", Role::User, vec![ContentBlock::data_base64("UklG", "audio/wav")]).unwrap();
        let err = format(&[audio]).unwrap_err();
        assert!(err.to_string().contains("(audio/wav) cannot be sent"), "{err}");
    }

    /// A history from another provider (Kimi K2 through vLLM names its calls
    /// `functions.get_weather:0`) goes to Anthropic, after a fallback or a session moved to it,
    /// with ids the API accepts (`^[a-zA-Z0-9_-]+$`): each call and its result under one id,
    /// two ids that differ only in a refused character under two; Anthropic's own ids as they
    /// are.
    #[test]
    fn tool_ids_of_other_providers_go_out_in_the_alphabet_anthropic_accepts() {
        let ids = [
            "functions.get_weather:0",
            "functions.get_weather_0",
            "toolu_01A-b",
            "",
            "é",
        ];
        let mut blocks = Vec::new();
        for id in ids {
            blocks.push(ContentBlock::tool_call(id, "get_weather", r#"{"city":"Paris"}"#));
        }
        for id in ids {
            blocks.push(ContentBlock::tool_result(
                id,
                "get_weather",
                "sunny",
                ToolResultState::Success,
            ));
        }
        let reply = Msg::assistant_blocks("bot", blocks);
        let value = serde_json::to_value(format(&[Msg::user("u", "Weather?"), reply]).unwrap().messages).unwrap();
        let uses: Vec<&str> = value[1]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["id"].as_str().unwrap())
            .collect();
        let results: Vec<&str> = value[2]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["tool_use_id"].as_str().unwrap())
            .collect();
        assert_eq!(uses, results, "each result answers its call");
        let accepted =
            |id: &str| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        assert!(uses.iter().all(|id| accepted(id)), "{uses:?}");
        assert_eq!(uses[2], "toolu_01A-b");
        assert!(uses[0].starts_with("functions_get_weather_0_"), "{}", uses[0]);
        let distinct: std::collections::HashSet<_> = uses.iter().collect();
        assert_eq!(distinct.len(), ids.len(), "{uses:?}");
    }

    #[test]
    fn text_of_whitespace_only_is_not_sent() {
        // Another model's "\n\n" before a tool call, a blank user message, an empty hint: the
        // API refuses a text block without non-whitespace text, and the whole request with it.
        let reply = Msg::assistant_blocks(
            "bot",
            vec![
                ContentBlock::text("\n\n"),
                ContentBlock::tool_call("toolu_1", "get_weather", r#"{"city":"Paris"}"#),
                ContentBlock::tool_result("toolu_1", "get_weather", "sunny", ToolResultState::Success),
                ContentBlock::hint(" ", None),
                ContentBlock::text("Sunny."),
            ],
        );
        let messages = [
            Msg::system("s", "You are brief."),
            Msg::user("alice", "Weather?"),
            Msg::user("alice", " "),
            reply,
        ];
        let formatted = format(&messages).unwrap();
        assert_eq!(formatted.system, ["You are brief."]);
        assert_eq!(
            serde_json::to_value(&formatted.messages).unwrap(),
            json!([
                {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}
                ]},
                {"role": "assistant", "content": [{"type": "text", "text": "Sunny."}]}
            ])
        );
    }
}
