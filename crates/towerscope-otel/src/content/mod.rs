//! The captured content (opt-in): messages, system instructions, tool definitions, tool
//! arguments and results, as the JSON strings the spans record.
//!
//! The message format is the reference's (AgentScope 2.x `_converter.py`), which follows the
//! GenAI conventions' `gen-ai-input-messages.json` / `gen-ai-output-messages.json` schemas: a
//! message is `{"role", "parts", "name"}` (output messages add `"finish_reason"`), and a block
//! becomes a part:
//!
//! | block | part |
//! |---|---|
//! | text | `{"type": "text", "content"}` |
//! | thinking | `{"type": "reasoning", "content"}` |
//! | tool call | `{"type": "tool_call", "id", "name", "arguments"}` (the JSON arguments, or the raw text) |
//! | tool result | `{"type": "tool_call_response", "id", "response"}` (the output's text) |
//! | data at a URL | `{"type": "uri", "uri", "modality"}` |
//! | inline data | `{"type": "blob", "content", "media_type", "modality"}` |
//! | hint | dropped |
//!
//! Every string goes through [`crate::redact`] first. The JSON is written straight into the
//! attribute's `String` (no `serde_json::Value` in between); a text with nothing to redact is
//! copied once, from the message into the attribute.

use std::borrow::Cow;

use towerscope_core::{
    ChatResponse, ContentBlock, DataBlock, DataSource, MediaBlock, ModelFinishedReason, Msg, Role, ToolOutput,
};

mod tools;

pub(crate) use tools::{ToolDefinitions, external_result, tool_arguments, tool_result};

use crate::json::{push_display, push_string};
use crate::redact::{redact_json_text, redacted_json};

/// The most bytes of one captured value (a text, a tool's arguments or result, a file's
/// base64): past it the value is cut, and says how much was left out. A 10 MB tool result
/// would otherwise be copied into its span and into every later model call's input, and one
/// such span can make a collector refuse the whole batch it is exported in.
pub const MAX_CAPTURED_VALUE_BYTES: usize = 64 << 10;

/// `s`, or its first [`MAX_CAPTURED_VALUE_BYTES`] (at a character boundary) and a note of what
/// was cut.
pub(crate) fn cut(s: &str) -> Cow<'_, str> {
    if s.len() <= MAX_CAPTURED_VALUE_BYTES {
        return Cow::Borrowed(s);
    }
    let mut end = MAX_CAPTURED_VALUE_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…[{} bytes cut]", &s[..end], s.len() - end))
}

/// Cuts an owned value in place (see [`cut`]).
pub(crate) fn cut_owned(s: String) -> String {
    match cut(&s) {
        Cow::Borrowed(_) => s,
        Cow::Owned(cut) => cut,
    }
}

/// Appends a string literal of `s`, redacted (before it is cut: a credential cut in two could
/// escape the redaction), then cut.
pub(super) fn push_text(out: &mut String, s: &str) {
    // Read as JSON when it is (see `redact_json_text`), as text otherwise.
    push_string(out, &cut(&redact_json_text(s)));
}

fn modality(media_type: &str) -> &'static str {
    match media_type.split('/').next() {
        Some("image") => "image",
        Some("audio") => "audio",
        Some("video") => "video",
        _ => "unknown",
    }
}

fn push_data_part(out: &mut String, block: &DataBlock) {
    match &block.source {
        DataSource::Url { url, media_type } => {
            out.push_str(r#"{"type":"uri","uri":"#);
            push_text(out, url);
            out.push_str(r#","modality":"#);
            push_string(out, modality(media_type));
        }
        DataSource::Base64 { data, media_type } => {
            out.push_str(r#"{"type":"blob","content":"#);
            push_string(out, &cut(data));
            out.push_str(r#","media_type":"#);
            push_string(out, media_type);
            out.push_str(r#","modality":"#);
            push_string(out, modality(media_type));
        }
    }
    out.push('}');
}

pub(super) fn push_media_part(out: &mut String, block: &MediaBlock) {
    match block {
        MediaBlock::Text(t) => push_text_part(out, "text", &t.text),
        MediaBlock::Data(d) => push_data_part(out, d),
    }
}

fn push_text_part(out: &mut String, kind: &str, text: &str) {
    out.push_str(r#"{"type":"#);
    push_string(out, kind);
    out.push_str(r#","content":"#);
    push_text(out, text);
    out.push('}');
}

/// The text of media blocks joined with `"\n"` (as `text_content` does); borrowed for one block.
pub(super) fn joined_text(blocks: &[MediaBlock]) -> Cow<'_, str> {
    let mut texts = blocks.iter().filter_map(MediaBlock::as_text);
    let Some(first) = texts.next() else {
        return Cow::Borrowed("");
    };
    let mut joined = Cow::Borrowed(first.text.as_str());
    for text in texts {
        let joined = joined.to_mut();
        joined.push('\n');
        joined.push_str(&text.text);
    }
    joined
}

fn output_text(output: &ToolOutput) -> Cow<'_, str> {
    match output {
        ToolOutput::Text(text) => Cow::Borrowed(text),
        ToolOutput::Blocks(blocks) => joined_text(blocks),
    }
}

/// Appends the parts of `blocks` (hints dropped), each after a comma unless `*first`.
fn push_parts(out: &mut String, blocks: &[ContentBlock], first: &mut bool) {
    for block in blocks {
        if matches!(block, ContentBlock::Hint(_)) {
            continue;
        }
        if !std::mem::take(first) {
            out.push(',');
        }
        match block {
            ContentBlock::Text(t) => push_text_part(out, "text", &t.text),
            ContentBlock::Thinking(t) => push_text_part(out, "reasoning", &t.thinking),
            ContentBlock::ToolCall(c) => {
                out.push_str(r#"{"type":"tool_call","id":"#);
                push_display(out, &c.id);
                out.push_str(r#","name":"#);
                push_string(out, &c.name);
                out.push_str(r#","arguments":"#);
                // Long arguments as their (cut) text: whole, they would be the value's size.
                if c.input.len() > MAX_CAPTURED_VALUE_BYTES || !redacted_json(&c.input, out) {
                    push_text(out, &c.input);
                }
                out.push('}');
            }
            ContentBlock::ToolResult(r) => {
                out.push_str(r#"{"type":"tool_call_response","id":"#);
                push_display(out, &r.id);
                out.push_str(r#","response":"#);
                push_text(out, &output_text(&r.output));
                out.push('}');
            }
            ContentBlock::Data(d) => push_data_part(out, d),
            ContentBlock::Hint(_) => {}
        }
    }
}

fn push_message(out: &mut String, msg: &Msg, finish_reason: Option<&str>) {
    out.push_str(r#"{"role":"#);
    push_string(out, msg.role.as_str());
    out.push_str(r#","parts":["#);
    push_parts(out, &msg.content, &mut true);
    out.push_str(r#"],"name":"#);
    push_string(out, &msg.name);
    if let Some(reason) = finish_reason {
        out.push_str(r#","finish_reason":"#);
        push_string(out, reason);
    }
    out.push('}');
}

/// The most bytes of one `gen_ai.input.messages` (about): its newest messages up to this, the
/// older ones counted in a note in their place. Each value is cut at
/// [`MAX_CAPTURED_VALUE_BYTES`], but a model call's input is the whole conversation: forty
/// tool results of 60 KB made each later chat span carry all of them, 2.4 MB in one attribute
/// and 49 MB over one reply's spans, past what collectors take in one request (4 MiB by
/// default for the OTel Collector's gRPC receiver).
pub const MAX_CAPTURED_MESSAGES_BYTES: usize = 1 << 20;

/// `gen_ai.input.messages` of messages (no system messages among them expected): their newest
/// parts that fit in [`MAX_CAPTURED_MESSAGES_BYTES`] (the newest always), after a note of what
/// was left out. A reply's turn is one message holding its calls and results, so the budget
/// counts parts, not messages. What is left out is not serialised.
pub(crate) fn input_messages<'a>(msgs: impl IntoIterator<Item = &'a Msg>) -> String {
    let msgs: Vec<&Msg> = msgs.into_iter().collect();
    // Newest first: each kept message's opening and closing (its role and name, counted in
    // the budget like its parts) and its kept parts, newest first.
    let mut kept: Vec<(String, String, Vec<String>)> = Vec::new();
    let mut size = 0;
    // Parts left out of the oldest message kept (the one the budget ran out in).
    let mut parts_left_out = 0;
    'messages: for msg in msgs.iter().rev() {
        let mut open = String::from(r#"{"role":"#);
        push_string(&mut open, msg.role.as_str());
        open.push_str(r#","parts":["#);
        let mut close = String::from(r#"],"name":"#);
        push_string(&mut close, &cut(&msg.name));
        close.push('}');
        let wrapper = open.len() + close.len() + 1;
        if !kept.is_empty() && size + wrapper > MAX_CAPTURED_MESSAGES_BYTES {
            break;
        }
        size += wrapper;
        let blocks: Vec<&ContentBlock> = msg
            .content
            .iter()
            .filter(|b| !matches!(b, ContentBlock::Hint(_)))
            .collect();
        let mut parts = Vec::new();
        for (at, block) in blocks.iter().enumerate().rev() {
            let mut part = String::new();
            push_parts(&mut part, std::slice::from_ref(*block), &mut true);
            let first = kept.is_empty() && parts.is_empty();
            if !first && size + part.len() > MAX_CAPTURED_MESSAGES_BYTES {
                if !parts.is_empty() {
                    parts_left_out = at + 1;
                    kept.push((open, close, parts));
                }
                break 'messages;
            }
            size += part.len() + 1;
            parts.push(part);
        }
        kept.push((open, close, parts));
    }
    let messages_left_out = msgs.len() - kept.len();
    let mut out = String::with_capacity(size + 256);
    out.push('[');
    if messages_left_out > 0 || parts_left_out > 0 {
        let split = if parts_left_out > 0 {
            format!(", and {parts_left_out} earlier part(s) of the next")
        } else {
            String::new()
        };
        out.push_str(r#"{"role":"system","parts":[{"type":"text","content":"#);
        push_string(
            &mut out,
            &format!(
                "…[not recorded: {messages_left_out} earlier message(s){split}; the captured input keeps its newest \
                 parts up to {MAX_CAPTURED_MESSAGES_BYTES} bytes]"
            ),
        );
        out.push_str(r#"}],"name":""}"#);
    }
    for (open, close, parts) in kept.iter().rev() {
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(open);
        for (i, part) in parts.iter().rev().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(part);
        }
        out.push_str(close);
    }
    out.push(']');
    out
}

/// Splits a model call's messages into `gen_ai.system_instructions` (the leading system
/// messages, as parts) and `gen_ai.input.messages` (the rest).
pub(crate) fn model_input(msgs: &towerscope_core::Messages) -> (Option<String>, String) {
    let system = msgs.iter().take_while(|m| m.role == Role::System).count();
    let instructions = (system > 0).then(|| {
        let mut out = String::with_capacity(128);
        out.push('[');
        let mut first = true;
        for msg in msgs.iter().take(system) {
            push_parts(&mut out, &msg.content, &mut first);
        }
        out.push(']');
        out
    });
    (instructions, input_messages(msgs.iter().skip(system)))
}

/// The finish reason of a model answer: `interrupted` when the user cut it short; otherwise the
/// provider's, which the decoders put in `metadata["finish_reason"]` in the conventions' words
/// (`stop`, `length`, `tool_call`, `content_filter`); without one, `tool_call` or `stop` from
/// the answer's blocks.
pub(crate) fn finish_reason(response: &ChatResponse) -> &str {
    if response.finished_reason == ModelFinishedReason::Interrupted {
        return "interrupted";
    }
    let reported = response.metadata.get("finish_reason").and_then(|r| r.as_str());
    match reported {
        Some(reason) if !reason.is_empty() => reason,
        _ if response.tool_calls().next().is_some() => "tool_call",
        _ => "stop",
    }
}

/// `gen_ai.output.messages` of a model answer.
pub(crate) fn chat_output(response: &ChatResponse, finish_reason: &str) -> String {
    let mut out = String::with_capacity(128);
    out.push_str(r#"[{"role":"assistant","parts":["#);
    push_parts(&mut out, &response.content, &mut true);
    out.push_str(r#"],"finish_reason":"#);
    push_string(&mut out, finish_reason);
    out.push_str("}]");
    out
}

/// `gen_ai.output.messages` of a reply's final message.
pub(crate) fn reply_output(msg: &Msg, finish_reason: &str) -> String {
    let mut out = String::with_capacity(128);
    out.push('[');
    push_message(&mut out, msg, Some(finish_reason));
    out.push(']');
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use towerscope_core::{HintBlock, ToolResultState};

    fn parsed(text: &str) -> Value {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }

    /// The budget counts each message's role and name, and a message with no parts: many
    /// short messages, or hint-only ones, stay within it (they made 2.3 and 4.9 times the
    /// budget); the note says no part was split when none was.
    #[test]
    fn many_small_or_empty_messages_stay_within_the_budget() {
        let ok = Msg::user("user", "ok");
        let hint = Msg::new(
            "assistant",
            Role::Assistant,
            vec![ContentBlock::Hint(towerscope_core::HintBlock::new("psst", None))],
        )
        .unwrap();
        for msg in [&ok, &hint] {
            let many: Vec<&Msg> = std::iter::repeat_n(msg, 200_000).collect();
            let text = input_messages(many.iter().copied());
            assert!(text.len() <= MAX_CAPTURED_MESSAGES_BYTES + 1024, "{} bytes", text.len());
            let json = parsed(&text);
            let note = json[0]["parts"][0]["content"].as_str().unwrap();
            assert!(note.contains("earlier message(s);"), "{note}");
            assert!(!note.contains("part(s) of the next"), "{note}");
        }
    }

    /// Past the budget, the newest parts are kept in their order, the message they belong to
    /// with them, after a note of what was left out; one turn (a message of many parts) is cut
    /// inside.
    #[test]
    fn input_messages_keep_their_newest_parts_within_the_budget() {
        // Twenty parts of 60 KiB in one turn (each under the value cut): 1.2 MB.
        let part = |c: char| ContentBlock::text(c.to_string().repeat(60 << 10));
        let question = Msg::new("user", Role::User, vec![part('q')]).unwrap();
        let letters: Vec<char> = ('a'..='t').collect();
        let turn = Msg::new("a", Role::Assistant, letters.iter().map(|&c| part(c)).collect()).unwrap();
        let json: serde_json::Value = serde_json::from_str(&input_messages([&question, &turn])).unwrap();
        let messages = json.as_array().unwrap();
        assert_eq!(messages.len(), 2, "the note and the turn");
        let note = messages[0]["parts"][0]["content"].as_str().unwrap();
        assert!(
            note.starts_with("…[not recorded: 1 earlier message(s), and 3 earlier part(s) of the next;"),
            "{note}"
        );
        let kept: String = messages[1]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["content"].as_str().unwrap().chars().next().unwrap())
            .collect();
        assert_eq!(kept, "defghijklmnopqrst", "the newest parts, in their order");
        assert_eq!(messages[1]["role"], "assistant");
        // Within the budget: everything, no note.
        let small = Msg::user("user", "hi");
        let all: serde_json::Value = serde_json::from_str(&input_messages([&small, &small])).unwrap();
        assert_eq!(all.as_array().unwrap().len(), 2);
        assert_eq!(all[0]["parts"][0]["content"], "hi");
    }

    #[test]
    fn every_block_kind_has_its_part() {
        let msg = Msg::new(
            "bot \"quoted\"",
            Role::Assistant,
            vec![
                ContentBlock::text("hi\n\"there\"\t\\"),
                ContentBlock::thinking("hmm"),
                ContentBlock::tool_call("c1", "get_weather", r#"{"city": "Paris", "api_key": "k"}"#),
                ContentBlock::tool_call("c2", "broken", r#"{"city": "#),
                ContentBlock::tool_result("c1", "get_weather", "sunny", ToolResultState::Success),
                ContentBlock::data_url("https://x/a.png", "image/png"),
                ContentBlock::data_base64("AAAA", "audio/wav"),
                ContentBlock::Hint(HintBlock::new("psst", None)),
            ],
        )
        .unwrap();
        assert_eq!(
            parsed(&reply_output(&msg, "stop")),
            json!([{
                "role": "assistant",
                "name": "bot \"quoted\"",
                "finish_reason": "stop",
                "parts": [
                    {"type": "text", "content": "hi\n\"there\"\t\\"},
                    {"type": "reasoning", "content": "hmm"},
                    {"type": "tool_call", "id": "c1", "name": "get_weather",
                     "arguments": {"city": "Paris", "api_key": "[REDACTED]"}},
                    {"type": "tool_call", "id": "c2", "name": "broken", "arguments": r#"{"city": "#},
                    {"type": "tool_call_response", "id": "c1", "response": "sunny"},
                    {"type": "uri", "uri": "https://x/a.png", "modality": "image"},
                    {"type": "blob", "content": "AAAA", "media_type": "audio/wav", "modality": "audio"},
                ]
            }])
        );
    }

    #[test]
    fn a_message_of_hints_only_has_no_parts() {
        let msg = Msg::new(
            "a",
            Role::Assistant,
            vec![ContentBlock::Hint(HintBlock::new("psst", None))],
        )
        .unwrap();
        assert_eq!(
            parsed(&input_messages([&msg])),
            json!([{"role": "assistant", "name": "a", "parts": []}])
        );
        assert_eq!(input_messages([]), "[]");
    }

    #[test]
    fn system_messages_become_instructions() {
        let msgs = towerscope_core::Messages::from(vec![
            Msg::system("system", "Be brief."),
            Msg::system("system", "Answer in French."),
            Msg::user("user", "Hi, my password: hunter2"),
        ]);
        let (instructions, input) = model_input(&msgs);
        assert_eq!(
            parsed(&instructions.unwrap()),
            json!([{"type": "text", "content": "Be brief."}, {"type": "text", "content": "Answer in French."}])
        );
        assert_eq!(
            parsed(&input),
            json!([{"role": "user", "name": "user", "parts": [{"type": "text", "content": "Hi, my password: [REDACTED]"}]}])
        );
        let with_head = towerscope_core::Messages::with_head(std::sync::Arc::from([]), &msgs);
        assert_eq!(
            model_input(&with_head).1,
            input,
            "a request's shared messages read the same"
        );
    }

    #[test]
    fn the_providers_finish_reason_wins_over_the_derived_one() {
        let mut response = ChatResponse::new(vec![ContentBlock::text("cut sh")]);
        assert_eq!(finish_reason(&response), "stop");
        response.metadata.insert("finish_reason".into(), "length".into());
        assert_eq!(finish_reason(&response), "length");
        response.metadata.insert("finish_reason".into(), "".into());
        assert_eq!(finish_reason(&response), "stop", "an empty reason is no reason");
        let calls = ChatResponse::new(vec![ContentBlock::tool_call("c1", "add", "{}")]);
        assert_eq!(finish_reason(&calls), "tool_call");
    }

    #[test]
    fn tool_result_text_blocks_are_joined_by_lines() {
        let blocks = vec![MediaBlock::text("one"), MediaBlock::text("two")];
        assert_eq!(joined_text(&blocks), "one\ntwo");
        assert!(matches!(joined_text(&blocks[..1]), Cow::Borrowed("one")));
        assert_eq!(joined_text(&[]), "");
    }
}
