//! The content of tools: `gen_ai.tool.definitions` (written once per tool list),
//! `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use towerscope_core::{MediaBlock, ToolChoice, ToolChoiceMode, ToolOutput, ToolResponse, ToolSchema};

use super::{joined_text, push_media_part, push_text};
use crate::json::push_string;
use crate::redact::{REDACTED, is_sensitive_key, redact_json_text};

/// Appends a JSON value with the values of credential keys replaced and strings redacted.
fn push_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            // Writing into a `String` cannot fail.
            let _ = write!(out, "{n}");
        }
        Value::String(s) => push_text(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, value)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_string(out, key);
                out.push(':');
                if is_sensitive_key(key) {
                    push_string(out, REDACTED);
                } else {
                    push_value(out, value);
                }
            }
            out.push('}');
        }
    }
}

/// `gen_ai.tool.definitions`, written once per tool list.
///
/// The model calls of a reply (and of the replies that follow) are offered the same list: the
/// toolkit hands out one `Arc` per set of active groups. The text of the last list is kept with
/// the list itself, and a call offered the same `Arc` shares it. Keeping the `Arc` also keeps
/// its address from being reused by another list.
#[derive(Debug, Default)]
pub(crate) struct ToolDefinitions {
    last: Mutex<Option<Written>>,
}

/// A tool list and its `gen_ai.tool.definitions`.
#[derive(Debug)]
struct Written {
    tools: Arc<[ToolSchema]>,
    text: Arc<str>,
}

impl ToolDefinitions {
    /// The definitions of `tools`: `None` when there are none or the tool choice is `none`.
    pub(crate) fn get(&self, tools: &Arc<[ToolSchema]>, choice: Option<&ToolChoice>) -> Option<Arc<str>> {
        if tools.is_empty() || choice.is_some_and(|c| c.mode == ToolChoiceMode::None) {
            return None;
        }
        let lock = || self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(last) = &*lock()
            && Arc::ptr_eq(&last.tools, tools)
        {
            return Some(Arc::clone(&last.text));
        }
        let text: Arc<str> = Arc::from(tool_definitions(tools));
        *lock() = Some(Written {
            tools: Arc::clone(tools),
            text: Arc::clone(&text),
        });
        Some(text)
    }
}

/// The text of `gen_ai.tool.definitions`.
fn tool_definitions(tools: &[ToolSchema]) -> String {
    let mut out = String::with_capacity(256 * tools.len());
    out.push('[');
    for (i, tool) in tools.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(r#"{"type":"function","name":"#);
        push_string(&mut out, &tool.name);
        out.push_str(r#","description":"#);
        push_text(&mut out, &tool.description);
        out.push_str(r#","parameters":"#);
        push_value(&mut out, &tool.parameters);
        out.push('}');
    }
    out.push(']');
    out
}

/// `gen_ai.tool.call.arguments`: the raw arguments, re-encoded only when redacted.
pub(crate) fn tool_arguments(raw: &str) -> String {
    super::cut_owned(redact_json_text(raw).into_owned())
}

/// `gen_ai.tool.call.result` of a tool response: its text when it holds only text, else its
/// blocks as parts.
pub(crate) fn tool_result(response: &ToolResponse) -> String {
    if response.content.iter().all(|b| b.as_text().is_some()) {
        let text = joined_text(&response.content);
        // A JSON result is read as JSON: a sensitive key holding an object or an array is not
        // found by reading it as text.
        let text = if let Cow::Owned(redacted) = redact_json_text(&text) {
            redacted
        } else {
            text.into_owned()
        };
        return super::cut_owned(text);
    }
    media_parts(&response.content)
}

fn media_parts(blocks: &[MediaBlock]) -> String {
    let mut out = String::with_capacity(128);
    out.push('[');
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_media_part(&mut out, block);
    }
    out.push(']');
    out
}

/// `gen_ai.tool.call.result` of an external execution result: the output as JSON (a text output
/// becomes a quoted JSON string, as in the reference).
pub(crate) fn external_result(output: &ToolOutput) -> String {
    match output {
        ToolOutput::Text(t) => {
            let mut out = String::with_capacity(t.len() + 2);
            push_text(&mut out, t);
            out
        }
        ToolOutput::Blocks(blocks) => media_parts(blocks),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(text: &str) -> Value {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }

    #[test]
    fn tool_definitions_and_results() {
        let tools: Arc<[ToolSchema]> = Arc::from([ToolSchema::new(
            "add",
            "Add numbers",
            json!({"type": "object", "properties": {"a": {"type": "number", "minimum": -1.5}, "api_key": {"type": "string"}}}),
        )]);
        let definitions = ToolDefinitions::default();
        assert_eq!(definitions.get(&tools, Some(&ToolChoice::none())), None);
        assert_eq!(definitions.get(&Arc::from([]), None), None);
        assert_eq!(
            parsed(&definitions.get(&tools, None).unwrap()),
            json!([{"type": "function", "name": "add", "description": "Add numbers", "parameters":
                {"type": "object", "properties": {"a": {"type": "number", "minimum": -1.5}, "api_key": "[REDACTED]"}}}])
        );
        assert_eq!(tool_result(&ToolResponse::text("5")), "5");
        assert_eq!(tool_result(&ToolResponse::text("token=abc123")), "token=[REDACTED]");
        assert_eq!(external_result(&ToolOutput::Text("R".into())), r#""R""#);
        assert_eq!(
            parsed(&external_result(&ToolOutput::Blocks(vec![
                MediaBlock::text("a"),
                MediaBlock::text("b")
            ]))),
            json!([{"type": "text", "content": "a"}, {"type": "text", "content": "b"}])
        );
        assert_eq!(tool_arguments(r#"{"a": 2}"#), r#"{"a": 2}"#);
    }

    #[test]
    fn tool_definitions_are_written_once_per_tool_list() {
        let list =
            || -> Arc<[ToolSchema]> { Arc::from([ToolSchema::new("add", "Add numbers", json!({"type": "object"}))]) };
        let (first, second) = (list(), list());
        let definitions = ToolDefinitions::default();
        let text = definitions.get(&first, None).unwrap();
        assert!(
            Arc::ptr_eq(&text, &definitions.get(&first, None).unwrap()),
            "the same list shares its text"
        );
        let other = definitions.get(&second, None).unwrap();
        assert!(!Arc::ptr_eq(&text, &other), "another list is written again");
        assert_eq!(text, other);
    }
}
