//! Messages in the OpenAI Chat Completions format.
//!
//! - A system message becomes a `system` message (an empty one is left out).
//! - A user message becomes a `user` message with the sender's `name`; text-only content is a
//!   string, content with media is a list of parts: `image_url` for images (URLs as they are,
//!   inline bytes as `data:` URLs), `input_audio` for inline WAV and MP3, `file` for inline PDFs.
//! - An assistant message is cut where the conversation changes turn: its text and tool calls
//!   become an `assistant` message (named), each tool result a `tool` message with its call's
//!   id, and each hint a `user` message. Media returned by tools follow the `tool` messages as a
//!   `user` message, since `tool` messages hold text only. Thinking is not sent back (the API
//!   takes none), nor media the model produced.
//!
//! Names are cut to what the API accepts (ASCII letters, digits, `_` and `-`, 64 at most), so
//! several agents in one conversation stay apart.

use std::borrow::Cow;

use serde::Serialize;
use towerscope_core::{
    AgentError, ContentBlock, DataBlock, DataSource, HintBlock, HintContent, MediaBlock, Msg, Role, ToolCallBlock,
    ToolOutput, ToolResultBlock,
};

use super::ids::wire_id;

/// One message on the wire.
#[derive(Debug, Serialize)]
pub(super) struct WireMessage<'a> {
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// `null` for an assistant message holding only tool calls.
    content: Option<WireContent<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
}

/// Content: a string, or a list of parts.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum WireContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<WirePart<'a>>),
}

/// One part of a user message.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WirePart<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl },
    InputAudio { input_audio: InputAudio<'a> },
    File { file: FilePart },
}

#[derive(Debug, Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Debug, Serialize)]
struct InputAudio<'a> {
    data: &'a str,
    format: &'static str,
}

#[derive(Debug, Serialize)]
struct FilePart {
    file_data: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    filename: Option<String>,
}

#[derive(Debug, Serialize)]
struct WireToolCall<'a> {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

/// Formats the conversation; `names` says whether messages carry their sender's name.
pub(super) fn format<'a>(
    messages: impl IntoIterator<Item = &'a Msg>,
    names: bool,
) -> Result<Vec<WireMessage<'a>>, AgentError> {
    let messages = messages.into_iter();
    let mut out = Vec::with_capacity(messages.size_hint().0);
    for msg in messages {
        let name = names.then(|| wire_name(&msg.name)).flatten();
        match msg.role {
            Role::System => {
                let text = join_text(&msg.content);
                if !text.is_empty() {
                    out.push(text_message("system", None, text));
                }
            }
            Role::User => out.push(user_message(name, &msg.content)?),
            Role::Assistant => Turns::new(name, &mut out).walk(&msg.content)?,
        }
    }
    Ok(out)
}

fn text_message<'a>(role: &'static str, name: Option<String>, text: Cow<'a, str>) -> WireMessage<'a> {
    WireMessage {
        role,
        name,
        content: Some(WireContent::Text(text)),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

fn join_text(blocks: &[ContentBlock]) -> Cow<'_, str> {
    let mut texts = blocks.iter().filter_map(ContentBlock::as_text).map(|t| t.text.as_str());
    match (texts.next(), texts.next()) {
        (None, _) => Cow::Borrowed(""),
        (Some(only), None) => Cow::Borrowed(only),
        (Some(first), Some(second)) => {
            let mut joined = format!("{first}\n{second}");
            for text in texts {
                joined.push('\n');
                joined.push_str(text);
            }
            Cow::Owned(joined)
        }
    }
}

fn user_message<'a>(name: Option<String>, blocks: &'a [ContentBlock]) -> Result<WireMessage<'a>, AgentError> {
    if !blocks.iter().any(|b| matches!(b, ContentBlock::Data(_))) {
        return Ok(text_message("user", name, join_text(blocks)));
    }
    let mut parts = Vec::with_capacity(blocks.len());
    for block in blocks {
        match block {
            ContentBlock::Text(t) => parts.push(WirePart::Text {
                text: Cow::Borrowed(&t.text),
            }),
            ContentBlock::Data(d) => parts.push(data_part(d)?),
            _ => {}
        }
    }
    Ok(WireMessage {
        role: "user",
        name,
        content: Some(WireContent::Parts(parts)),
        tool_calls: Vec::new(),
        tool_call_id: None,
    })
}

/// A data block as a user-message part.
fn data_part(block: &DataBlock) -> Result<WirePart<'_>, AgentError> {
    let media_type = block.source.media_type();
    let unsupported = || {
        AgentError::validation(format!(
            "OpenAI chat completions take images, inline WAV or MP3 audio and inline PDF files; \
             the data block '{}' ({media_type}) cannot be sent: drop or convert it",
            block.name.as_deref().unwrap_or("unnamed")
        ))
    };
    match &block.source {
        DataSource::Url { url, .. } if media_type.starts_with("image/") => Ok(WirePart::ImageUrl {
            image_url: ImageUrl { url: url.clone() },
        }),
        DataSource::Base64 { data, .. } if media_type.starts_with("image/") => Ok(WirePart::ImageUrl {
            image_url: ImageUrl {
                url: format!("data:{media_type};base64,{data}"),
            },
        }),
        DataSource::Base64 { data, .. } if media_type.starts_with("audio/") => {
            let format = match media_type {
                "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
                "audio/mpeg" | "audio/mp3" => "mp3",
                _ => return Err(unsupported()),
            };
            Ok(WirePart::InputAudio {
                input_audio: InputAudio { data, format },
            })
        }
        DataSource::Base64 { data, .. } if media_type == "application/pdf" => Ok(WirePart::File {
            file: FilePart {
                file_data: format!("data:{media_type};base64,{data}"),
                filename: block.name.clone(),
            },
        }),
        _ => Err(unsupported()),
    }
}

/// The text and media of a hint or tool output.
fn media_parts(blocks: &[MediaBlock]) -> Result<Vec<WirePart<'_>>, AgentError> {
    blocks
        .iter()
        .map(|block| match block {
            MediaBlock::Text(t) => Ok(WirePart::Text {
                text: Cow::Borrowed(&t.text),
            }),
            MediaBlock::Data(d) => data_part(d),
        })
        .collect()
}

/// The messages of one assistant message, cut at each change of turn.
struct Turns<'a, 'o> {
    name: Option<String>,
    out: &'o mut Vec<WireMessage<'a>>,
    texts: Vec<&'a str>,
    calls: Vec<WireToolCall<'a>>,
    /// Media returned by the tool results just written, sent after them as a user message.
    tool_media: Vec<WirePart<'a>>,
}

impl<'a, 'o> Turns<'a, 'o> {
    fn new(name: Option<String>, out: &'o mut Vec<WireMessage<'a>>) -> Self {
        Self {
            name,
            out,
            texts: Vec::new(),
            calls: Vec::new(),
            tool_media: Vec::new(),
        }
    }

    fn walk(mut self, blocks: &'a [ContentBlock]) -> Result<(), AgentError> {
        for block in blocks {
            match block {
                ContentBlock::Text(t) => {
                    self.flush_tool_media();
                    self.texts.push(&t.text);
                }
                ContentBlock::ToolCall(call) => {
                    self.flush_tool_media();
                    self.calls.push(tool_call(call));
                }
                ContentBlock::ToolResult(result) => {
                    self.flush_turn();
                    self.tool_result(result)?;
                }
                ContentBlock::Hint(hint) => {
                    self.flush_turn();
                    self.flush_tool_media();
                    self.out.push(hint_message(hint)?);
                }
                ContentBlock::Thinking(_) | ContentBlock::Data(_) => {}
            }
        }
        self.flush_turn();
        self.flush_tool_media();
        Ok(())
    }

    fn flush_turn(&mut self) {
        if self.texts.is_empty() && self.calls.is_empty() {
            return;
        }
        let content = match self.texts.len() {
            0 => None,
            1 => Some(WireContent::Text(Cow::Borrowed(self.texts[0]))),
            _ => Some(WireContent::Text(Cow::Owned(self.texts.join("\n")))),
        };
        self.texts.clear();
        self.out.push(WireMessage {
            role: "assistant",
            name: self.name.clone(),
            content,
            tool_calls: std::mem::take(&mut self.calls),
            tool_call_id: None,
        });
    }

    fn flush_tool_media(&mut self) {
        if self.tool_media.is_empty() {
            return;
        }
        self.out.push(WireMessage {
            role: "user",
            name: None,
            content: Some(WireContent::Parts(std::mem::take(&mut self.tool_media))),
            tool_calls: Vec::new(),
            tool_call_id: None,
        });
    }

    fn tool_result(&mut self, result: &'a ToolResultBlock) -> Result<(), AgentError> {
        let text = match &result.output {
            ToolOutput::Text(text) => Cow::Borrowed(text.as_str()),
            ToolOutput::Blocks(blocks) => {
                let mut media = blocks.iter().filter_map(MediaBlock::as_data).peekable();
                if media.peek().is_some() {
                    self.tool_media.push(WirePart::Text {
                        text: Cow::Owned(format!("The tool '{}' returned:", result.name)),
                    });
                    for data in media {
                        self.tool_media.push(data_part(data)?);
                    }
                }
                Cow::Owned(result.output.text_content().unwrap_or_default())
            }
        };
        self.out.push(WireMessage {
            role: "tool",
            name: None,
            content: Some(WireContent::Text(text)),
            tool_calls: Vec::new(),
            tool_call_id: Some(wire_id(&result.id)),
        });
        Ok(())
    }
}

fn tool_call(call: &ToolCallBlock) -> WireToolCall<'_> {
    WireToolCall {
        id: wire_id(&call.id),
        kind: "function",
        function: WireFunction {
            name: &call.name,
            arguments: if is_json_object(&call.input) { &call.input } else { "{}" },
        },
    }
}

/// Whether `arguments` are a JSON object. Empty arguments, and broken ones (a call cut short;
/// the agent answered it with an error result), go back as `{}`: servers that parse the
/// history (vLLM, SGLang, llama.cpp) refuse the whole request otherwise, and every later turn
/// of the conversation with it.
fn is_json_object(arguments: &str) -> bool {
    arguments.trim_start().starts_with('{') && serde_json::from_str::<serde::de::IgnoredAny>(arguments).is_ok()
}

fn hint_message(hint: &HintBlock) -> Result<WireMessage<'_>, AgentError> {
    let content = match &hint.hint {
        HintContent::Text(text) => WireContent::Text(Cow::Borrowed(text)),
        HintContent::Blocks(blocks) if blocks.iter().all(|b| b.as_text().is_some()) => {
            WireContent::Text(Cow::Owned(hint.text().unwrap_or_default()))
        }
        HintContent::Blocks(blocks) => WireContent::Parts(media_parts(blocks)?),
    };
    Ok(WireMessage {
        role: "user",
        name: None,
        content: Some(content),
        tool_calls: Vec::new(),
        tool_call_id: None,
    })
}

/// The sender's name as the API accepts it; `None` when nothing is left.
fn wire_name(name: &str) -> Option<String> {
    let cleaned: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
        .take(64)
        .collect();
    (!cleaned.trim_matches('_').is_empty()).then_some(cleaned)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use towerscope_core::{TextBlock, ToolResultState};

    fn wire(messages: &[Msg]) -> Value {
        serde_json::to_value(format(messages, true).unwrap()).unwrap()
    }

    #[test]
    fn an_assistant_message_is_cut_at_each_turn() {
        let reply = Msg::assistant_blocks(
            "Friday",
            vec![
                ContentBlock::thinking("look it up"),
                ContentBlock::text("Let me check."),
                ContentBlock::tool_call("call_1", "get_weather", r#"{"city":"Paris"}"#),
                ContentBlock::tool_call("call_2", "get_time", ""),
                ContentBlock::tool_result("call_1", "get_weather", "sunny", ToolResultState::Success),
                ContentBlock::tool_result("call_2", "get_time", "noon", ToolResultState::Success),
                ContentBlock::hint("<system-reminder>be brief</system-reminder>", None),
                ContentBlock::text("Sunny at noon."),
            ],
        );
        let messages = [
            Msg::system("system", "You are Friday."),
            Msg::user("alice smith", "Weather?"),
            reply,
        ];
        assert_eq!(
            wire(&messages),
            json!([
                {"role": "system", "content": "You are Friday."},
                {"role": "user", "name": "alice_smith", "content": "Weather?"},
                {"role": "assistant", "name": "Friday", "content": "Let me check.", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
                ]},
                {"role": "tool", "content": "sunny", "tool_call_id": "call_1"},
                {"role": "tool", "content": "noon", "tool_call_id": "call_2"},
                {"role": "user", "content": "<system-reminder>be brief</system-reminder>"},
                {"role": "assistant", "name": "Friday", "content": "Sunny at noon."}
            ])
        );
    }

    #[test]
    fn broken_arguments_go_back_as_an_empty_object() {
        // A call cut short (`finish_reason: length`, a dropped stream) that the agent answered
        // with an error: the history must still parse on servers that read it.
        for broken in [r#"{"city": "Par"#, "[1, 2]", "null", r#"{"a": 1} trailing"#, "  "] {
            let reply = Msg::assistant_blocks(
                "Friday",
                vec![
                    ContentBlock::tool_call("call_1", "get_weather", broken),
                    ContentBlock::tool_result("call_1", "get_weather", "invalid arguments", ToolResultState::Error),
                ],
            );
            let value = wire(&[Msg::user("alice", "Weather?"), reply]);
            assert_eq!(value[1]["tool_calls"][0]["function"]["arguments"], "{}", "{broken}");
        }
        let kept = Msg::assistant_blocks(
            "F",
            vec![ContentBlock::tool_call("c", "f", r#" {"a": [1, {"b": null}]}"#)],
        );
        assert_eq!(
            wire(&[kept])[0]["tool_calls"][0]["function"]["arguments"],
            r#" {"a": [1, {"b": null}]}"#
        );
    }

    #[test]
    fn media_parts_and_tool_media() {
        let user = Msg::new(
            "bob",
            Role::User,
            vec![
                ContentBlock::text("What is this?"),
                ContentBlock::data_url("https://example.invalid/cat.png", "image/png"),
                ContentBlock::data_base64("AAAA", "image/jpeg"),
                ContentBlock::data_base64("UklG", "audio/wav"),
                DataBlock::base64("JVBE", "application/pdf").with_name("a.pdf").into(),
            ],
        )
        .unwrap();
        let shot = vec![
            MediaBlock::Text(TextBlock::new("a screenshot")),
            DataBlock::base64("iVBO", "image/png").into(),
        ];
        let reply = Msg::assistant_blocks(
            "bot",
            vec![
                ContentBlock::tool_call("c1", "screenshot", "{}"),
                ContentBlock::ToolResult(ToolResultBlock::new("c1", "screenshot", shot, ToolResultState::Success)),
            ],
        );
        let value = wire(&[user, reply]);
        assert_eq!(
            value[0]["content"],
            json!([
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "https://example.invalid/cat.png"}},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}},
                {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
                {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"}}
            ])
        );
        assert_eq!(value[1]["content"], Value::Null);
        assert_eq!(
            value[2],
            json!({"role": "tool", "content": "a screenshot", "tool_call_id": "c1"})
        );
        assert_eq!(
            value[3],
            json!({"role": "user", "content": [
                {"type": "text", "text": "The tool 'screenshot' returned:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}
            ]})
        );

        let video = Msg::new("u", Role::User, vec![ContentBlock::data_base64("AAAA", "video/mp4")]).unwrap();
        let err = format(&[video], true).unwrap_err();
        assert!(err.to_string().contains("(video/mp4) cannot be sent"), "{err}");
    }

    #[test]
    fn names_are_made_acceptable_or_left_out() {
        assert_eq!(wire_name("Agent Smith #2").as_deref(), Some("Agent_Smith__2"));
        assert_eq!(wire_name("数据"), None);
        assert_eq!(wire_name(&"x".repeat(80)).map(|n| n.len()), Some(64));
        let without = serde_json::to_value(format(&[Msg::user("alice", "hi")], false).unwrap()).unwrap();
        assert_eq!(without, json!([{"role": "user", "content": "hi"}]));
    }
}
