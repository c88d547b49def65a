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
//! | tool call | `{"type": "tool_call", "id", "name", "arguments"}` (parsed JSON, or the raw text) |
//! | tool result | `{"type": "tool_call_response", "id", "response"}` (the output's text) |
//! | data at a URL | `{"type": "uri", "uri", "modality"}` |
//! | inline data | `{"type": "blob", "content", "media_type", "modality"}` |
//! | hint | dropped |
//!
//! Every string goes through [`crate::redact`] first.

use serde_json::{Map, Value, json};
use towerscope_core::{
    ChatResponse, ContentBlock, DataBlock, DataSource, MediaBlock, ModelFinishedReason, Msg, Role, ToolChoice,
    ToolChoiceMode, ToolOutput, ToolResponse, ToolSchema,
};

use crate::redact::{redact_json_text, redact_text, redact_value};

fn text(s: &str) -> Value {
    Value::String(redact_text(s).into_owned())
}

fn modality(media_type: &str) -> &'static str {
    match media_type.split('/').next() {
        Some("image") => "image",
        Some("audio") => "audio",
        Some("video") => "video",
        _ => "unknown",
    }
}

fn data_part(block: &DataBlock) -> Value {
    match &block.source {
        DataSource::Url { url, media_type } => {
            json!({"type": "uri", "uri": text(url), "modality": modality(media_type)})
        }
        DataSource::Base64 { data, media_type } => json!({
            "type": "blob", "content": data, "media_type": media_type, "modality": modality(media_type)
        }),
    }
}

fn media_part(block: &MediaBlock) -> Value {
    match block {
        MediaBlock::Text(t) => json!({"type": "text", "content": text(&t.text)}),
        MediaBlock::Data(d) => data_part(d),
    }
}

/// The parts of a message's blocks (hints dropped).
pub(crate) fn parts(content: &[ContentBlock]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(t) => Some(json!({"type": "text", "content": text(&t.text)})),
            ContentBlock::Thinking(t) => Some(json!({"type": "reasoning", "content": text(&t.thinking)})),
            ContentBlock::ToolCall(c) => Some(json!({
                "type": "tool_call", "id": c.id, "name": c.name, "arguments": arguments(&c.input)
            })),
            ContentBlock::ToolResult(r) => Some(json!({
                "type": "tool_call_response", "id": r.id,
                "response": text(&r.output.text_content().unwrap_or_default())
            })),
            ContentBlock::Data(d) => Some(data_part(d)),
            ContentBlock::Hint(_) => None,
        })
        .collect()
}

/// Tool call arguments as a part value: parsed JSON (redacted), or the raw text (redacted).
fn arguments(raw: &str) -> Value {
    match serde_json::from_str::<Value>(raw) {
        Ok(mut value) => {
            redact_value(&mut value);
            value
        }
        Err(_) => text(raw),
    }
}

fn message(msg: &Msg, finish_reason: Option<&str>) -> Value {
    let mut out = Map::new();
    out.insert("role".into(), msg.role.as_str().into());
    out.insert("parts".into(), Value::Array(parts(&msg.content)));
    out.insert("name".into(), msg.name.to_string().into());
    if let Some(reason) = finish_reason {
        out.insert("finish_reason".into(), reason.into());
    }
    Value::Object(out)
}

/// `gen_ai.input.messages` of messages (no system messages among them expected).
pub(crate) fn input_messages<'a>(msgs: impl IntoIterator<Item = &'a Msg>) -> String {
    Value::Array(msgs.into_iter().map(|m| message(m, None)).collect()).to_string()
}

/// Splits a model call's messages into `gen_ai.system_instructions` (the leading system
/// messages, as parts) and `gen_ai.input.messages` (the rest).
pub(crate) fn model_input(msgs: &towerscope_core::Messages) -> (Option<String>, String) {
    let system = msgs.iter().take_while(|m| m.role == Role::System).count();
    let instructions = (system > 0).then(|| {
        let parts: Vec<Value> = msgs.iter().take(system).flat_map(|m| parts(&m.content)).collect();
        Value::Array(parts).to_string()
    });
    (instructions, input_messages(msgs.iter().skip(system)))
}

/// The finish reason of a model answer: `interrupted`, `tool_call` or `stop`.
pub(crate) fn finish_reason(response: &ChatResponse) -> &'static str {
    if response.finished_reason == ModelFinishedReason::Interrupted {
        "interrupted"
    } else if response.tool_calls().next().is_some() {
        "tool_call"
    } else {
        "stop"
    }
}

/// `gen_ai.output.messages` of a model answer.
pub(crate) fn chat_output(response: &ChatResponse, finish_reason: &str) -> String {
    json!([{"role": "assistant", "parts": parts(&response.content), "finish_reason": finish_reason}]).to_string()
}

/// `gen_ai.output.messages` of a reply's final message.
pub(crate) fn reply_output(msg: &Msg, finish_reason: &str) -> String {
    Value::Array(vec![message(msg, Some(finish_reason))]).to_string()
}

/// `gen_ai.tool.definitions`: `None` when there are no tools or the tool choice is `none`.
pub(crate) fn tool_definitions(tools: &[ToolSchema], choice: Option<&ToolChoice>) -> Option<String> {
    if tools.is_empty() || choice.is_some_and(|c| c.mode == ToolChoiceMode::None) {
        return None;
    }
    let defs: Vec<Value> = tools
        .iter()
        .map(|t| {
            let mut parameters = t.parameters.clone();
            redact_value(&mut parameters);
            json!({"type": "function", "name": t.name, "description": text(&t.description), "parameters": parameters})
        })
        .collect();
    Some(Value::Array(defs).to_string())
}

/// `gen_ai.tool.call.arguments`: the raw arguments, re-encoded only when redacted.
pub(crate) fn tool_arguments(raw: &str) -> String {
    redact_json_text(raw).into_owned()
}

/// `gen_ai.tool.call.result` of a tool response: its text when it holds only text, else its
/// blocks as parts.
pub(crate) fn tool_result(response: &ToolResponse) -> String {
    if response.content.iter().all(|b| b.as_text().is_some()) {
        return redact_text(&response.text_content().unwrap_or_default()).into_owned();
    }
    Value::Array(response.content.iter().map(media_part).collect()).to_string()
}

/// `gen_ai.tool.call.result` of an external execution result: the output as JSON (a text output
/// becomes a quoted JSON string, as in the reference).
pub(crate) fn external_result(output: &ToolOutput) -> String {
    match output {
        ToolOutput::Text(t) => text(t).to_string(),
        ToolOutput::Blocks(blocks) => Value::Array(blocks.iter().map(media_part).collect()).to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use towerscope_core::{HintBlock, ToolResultState};

    #[test]
    fn every_block_kind_has_its_part() {
        let msg = Msg::new(
            "bot",
            Role::Assistant,
            vec![
                ContentBlock::text("hi"),
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
        let value: Value = serde_json::from_str(&reply_output(&msg, "stop")).unwrap();
        assert_eq!(
            value,
            json!([{
                "role": "assistant",
                "name": "bot",
                "finish_reason": "stop",
                "parts": [
                    {"type": "text", "content": "hi"},
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
    fn system_messages_become_instructions() {
        let msgs = towerscope_core::Messages::from(vec![
            Msg::system("system", "Be brief."),
            Msg::user("user", "Hi, my password: hunter2"),
        ]);
        let (instructions, input) = model_input(&msgs);
        let instructions: Value = serde_json::from_str(&instructions.unwrap()).unwrap();
        assert_eq!(instructions, json!([{"type": "text", "content": "Be brief."}]));
        let input: Value = serde_json::from_str(&input).unwrap();
        assert_eq!(
            input,
            json!([{"role": "user", "name": "user", "parts": [{"type": "text", "content": "Hi, my password: [REDACTED]"}]}])
        );
    }

    #[test]
    fn tool_definitions_and_results() {
        let tools = [ToolSchema::new("add", "Add numbers", json!({"type": "object"}))];
        assert_eq!(tool_definitions(&tools, Some(&ToolChoice::none())), None);
        assert_eq!(tool_definitions(&[], None), None);
        let defs: Value = serde_json::from_str(&tool_definitions(&tools, None).unwrap()).unwrap();
        assert_eq!(
            defs,
            json!([{"type": "function", "name": "add", "description": "Add numbers", "parameters": {"type": "object"}}])
        );
        assert_eq!(tool_result(&ToolResponse::text("5")), "5");
        assert_eq!(external_result(&ToolOutput::Text("R".into())), r#""R""#);
        assert_eq!(tool_arguments(r#"{"a": 2}"#), r#"{"a": 2}"#);
    }
}
