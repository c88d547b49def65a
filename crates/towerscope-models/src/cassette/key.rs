//! [`RequestKey`]: what a request is matched on: method, path, model, each message's role,
//! name and contents (texts, tool calls with their arguments, tool results, and a digest of
//! each image, audio or file part), the offered tools' definitions (name, description and
//! schema), and every other field of the body (`tool_choice`, `temperature`, `max_tokens`,
//! `stream`, a response format, extra fields...). Ids and times that differ from run to run are
//! left out: tool-call ids are not part of the key, and in texts a time
//! (`2026-11-25T11:30:00`, the agent's hints) reads `<time>` and a 32-hex-digit id reads
//! `<id>`.
//!
//! Both providers' bodies are read: OpenAI's `messages` with `content` parts and `tool_calls`,
//! Anthropic's `system` and content blocks (`text`, `tool_use`, `tool_result`, `thinking`).

use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

use super::file::RecordedRequest;

/// What a request is matched on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RequestKey {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) model: Option<String>,
    pub(crate) messages: Vec<MessageKey>,
    /// The offered tools' names, in order.
    pub(crate) tools: Vec<String>,
    /// Each offered tool's whole definition, as compact JSON (times and ids normalised).
    pub(crate) tool_definitions: Vec<String>,
    /// Every other top-level field of the body, `(name, compact JSON)`, sorted by name.
    pub(crate) options: Vec<(String, String)>,
}

/// The body's fields the key reads on their own; every other one is an option.
const OWN_FIELDS: [&str; 4] = ["model", "messages", "system", "tools"];

/// One message: its role and its parts, each as a line of text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct MessageKey {
    pub(crate) role: String,
    pub(crate) parts: Vec<String>,
}

impl MessageKey {
    /// `role: part | part`.
    pub(crate) fn describe(&self) -> String {
        format!("{}: {}", self.role, self.parts.join(" | "))
    }
}

impl RequestKey {
    /// The key of a (redacted) request.
    pub(crate) fn of(request: &RecordedRequest) -> Self {
        let body = request.body.as_ref();
        let field = |name: &str| body.and_then(|b| b.get(name));
        let mut messages = Vec::new();
        if let Some(system) = field("system") {
            messages.push(MessageKey {
                role: "system".to_owned(),
                parts: content_parts(system),
            });
        }
        for message in field("messages").and_then(Value::as_array).into_iter().flatten() {
            messages.push(message_key(message));
        }
        if let Some(text) = &request.body_text {
            messages.push(MessageKey {
                role: "body".to_owned(),
                parts: vec![normalize(text)],
            });
        }
        let offered = field("tools")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let tools = offered
            .iter()
            .map(|tool| {
                tool.pointer("/function/name")
                    .or_else(|| tool.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("(unnamed)")
                    .to_owned()
            })
            .collect();
        let tool_definitions = offered.iter().map(compact).collect();
        let mut options: Vec<(String, String)> = body
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(name, _)| !OWN_FIELDS.contains(&name.as_str()))
            .map(|(name, value)| (name.clone(), compact(value)))
            .collect();
        options.sort();
        Self {
            method: request.method.clone(),
            path: request.path.clone(),
            model: field("model").and_then(Value::as_str).map(str::to_owned),
            messages,
            tools,
            tool_definitions,
            options,
        }
    }
}

fn message_key(message: &Value) -> MessageKey {
    let role = message.get("role").and_then(Value::as_str).unwrap_or("(no role)");
    let mut parts = message.get("content").map(content_parts).unwrap_or_default();
    if role == "tool" {
        // OpenAI's tool result: its content is the result.
        parts = parts.into_iter().map(|p| format!("result: {p}")).collect();
    }
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = call.pointer("/function/name").and_then(Value::as_str).unwrap_or("");
        let arguments = call
            .pointer("/function/arguments")
            .map(canonical_json)
            .unwrap_or_default();
        parts.push(format!("call {name} {arguments}"));
    }
    // A name the model sees is matched too, written after the role when it is not the role.
    let role = match message.get("name").and_then(Value::as_str) {
        Some(name) if name != role => format!("{role} ({name})"),
        _ => role.to_owned(),
    };
    MessageKey { role, parts }
}

/// The parts of a `content` (or Anthropic `system`): a string, or an array of parts/blocks.
fn content_parts(content: &Value) -> Vec<String> {
    match content {
        Value::String(text) => vec![normalize(text)],
        Value::Array(blocks) => blocks.iter().map(block_part).collect(),
        Value::Null => Vec::new(),
        other => vec![normalize(&other.to_string())],
    }
}

fn block_part(block: &Value) -> String {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    let text = |name: &str| {
        block
            .get(name)
            .and_then(Value::as_str)
            .map(normalize)
            .unwrap_or_default()
    };
    match kind {
        "text" => text("text"),
        "thinking" => format!("thinking: {}", text("thinking")),
        "tool_use" => {
            let name = block.get("name").and_then(Value::as_str).unwrap_or("");
            let input = block.get("input").map(canonical_json).unwrap_or_default();
            format!("call {name} {input}")
        }
        "tool_result" => {
            let content = block.get("content").map(content_parts).unwrap_or_default();
            // Anthropic marks a failed, denied or interrupted call's result: another request
            // than the same text of a call that ran.
            let failed = block.get("is_error").and_then(Value::as_bool) == Some(true);
            let what = if failed { "result (error)" } else { "result" };
            format!("{what}: {}", content.join(" "))
        }
        "" => normalize(&block.to_string()),
        // An image, audio or file part: its bytes (or URL) are matched by a digest, which
        // the diff shows; the key is built again in each process, so the hasher need not
        // stay the same across Rust releases.
        other => {
            let mut hasher = DefaultHasher::new();
            // Its bytes as sent (a time or an id in an image is part of the image).
            block.to_string().hash(&mut hasher);
            format!("({other} {:016x})", hasher.finish())
        }
    }
}

/// Tool arguments as compact JSON whichever way they were sent (a JSON string, an object).
fn canonical_json(value: &Value) -> String {
    let parsed = match value {
        Value::String(text) => serde_json::from_str::<Value>(text).ok(),
        _ => None,
    };
    compact(parsed.as_ref().unwrap_or(value))
}

/// A value as compact JSON, with times and ids normalised.
fn compact(value: &Value) -> String {
    normalize(&value.to_string())
}

/// `text` with times written as `<time>` and 32-hex-digit ids as `<id>`.
pub(crate) fn normalize(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        let replaced = if !starts_word {
            None
        } else if let Some(end) = time_at(bytes, i) {
            Some((end, "<time>"))
        } else {
            id_at(bytes, i).map(|end| (end, "<id>"))
        };
        match replaced {
            Some((end, with)) => {
                out.push_str(&text[copied..i]);
                out.push_str(with);
                copied = end;
                i = end;
            }
            None => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The end of `YYYY-MM-DD[T ]HH:MM:SS[.ffffff]` at `at`.
fn time_at(bytes: &[u8], at: usize) -> Option<usize> {
    let shape = b"dddd-dd-ddTdd:dd:dd";
    let candidate = bytes.get(at..at + shape.len())?;
    let fits = candidate.iter().zip(shape).all(|(&b, &s)| match s {
        b'd' => b.is_ascii_digit(),
        b'T' => b == b'T' || b == b' ',
        _ => b == s,
    });
    if !fits {
        return None;
    }
    let mut end = at + shape.len();
    if bytes.get(end) == Some(&b'.') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit) {
        end += 1;
        while bytes.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
    }
    Some(end)
}

/// The end of a 32-hex-digit id (lower case, not part of a longer word) at `at`.
fn id_at(bytes: &[u8], at: usize) -> Option<usize> {
    let end = at + 32;
    let candidate = bytes.get(at..end)?;
    let hex = candidate
        .iter()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
    let alone = !bytes.get(end).is_some_and(u8::is_ascii_alphanumeric);
    (hex && alone).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(body: Value) -> RequestKey {
        RequestKey::of(&RecordedRequest {
            method: "POST".into(),
            path: "/v1/x".into(),
            headers: Default::default(),
            body: Some(body),
            body_text: None,
        })
    }

    /// Two requests that differ only in whether a tool result failed (Anthropic's `is_error`)
    /// are two requests: one matched the other's recording.
    #[test]
    fn a_failed_tool_result_is_another_request() {
        let with = |is_error: Value| {
            key(json!({"model": "m", "messages": [
                {"role": "user", "content": "delete /tmp/a"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "rm", "input": {"p": "/tmp/a"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": is_error, "content": "done"}]}
            ]}))
        };
        assert_ne!(with(json!(true)), with(json!(false)));
        assert_eq!(with(json!(false)), with(Value::Null), "no flag is a call that ran");
    }

    #[test]
    fn times_and_ids_are_left_out_of_texts() {
        assert_eq!(
            normalize("now 2026-11-25T11:30:00.123 (UTC), id 0123456789abcdef0123456789abcdef."),
            "now <time> (UTC), id <id>."
        );
        assert_eq!(
            normalize("x0123456789abcdef0123456789abcdef"),
            "x0123456789abcdef0123456789abcdef"
        );
        assert_eq!(normalize("12026-11-25T11:30:00"), "12026-11-25T11:30:00");
        assert_eq!(normalize("é 2026-01-01 00:00:00"), "é <time>");
    }

    #[test]
    fn both_providers_shapes_give_the_same_parts() {
        let openai = key(json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
            ],
            "tools": [{"type": "function", "function": {"name": "get_weather"}}]
        }));
        let anthropic = key(json!({
            "model": "m",
            "system": [{"type": "text", "text": "Be brief."}],
            "messages": [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Paris"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "sunny"}]}
            ],
            "tools": [{"name": "get_weather"}]
        }));
        let described = |k: &RequestKey| k.messages.iter().map(MessageKey::describe).collect::<Vec<_>>();
        assert_eq!(
            described(&openai),
            [
                "system: Be brief.",
                "user: Weather?",
                r#"assistant: call get_weather {"city":"Paris"}"#,
                "tool: result: sunny"
            ]
        );
        assert_eq!(described(&anthropic)[..3], described(&openai)[..3]);
        assert_eq!(described(&anthropic)[3], "user: result: sunny");
        assert_eq!(
            (openai.tools, anthropic.tools),
            (vec!["get_weather".to_owned()], vec!["get_weather".to_owned()])
        );
    }

    #[test]
    fn options_tool_definitions_names_and_images_are_matched() {
        let base = json!({
            "model": "m",
            "stream": true,
            "messages": [
                {"role": "user", "name": "alice", "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}
                ]}
            ],
            "tools": [{"type": "function", "function": {"name": "look", "parameters": {"type": "object"}}}]
        });
        let changed = |edit: &dyn Fn(&mut Value)| {
            let mut body = base.clone();
            edit(&mut body);
            key(body)
        };
        let same = changed(&|_| {});
        assert_eq!(same, key(base.clone()));
        assert_eq!(same.options, [("stream".to_owned(), "true".to_owned())]);
        let image = &same.messages[0].parts[1];
        assert!(
            image.starts_with("(image_url ") && image.len() == 28 && !image.contains("iVBO"),
            "an image is matched by a digest, not its bytes: {image}"
        );
        assert_eq!(same.messages[0].role, "user (alice)");

        type Edit<'a> = (&'a str, &'a dyn Fn(&mut Value));
        let edits: [Edit<'_>; 6] = [
            ("tool_choice", &|b| b["tool_choice"] = json!("required")),
            ("temperature", &|b| b["temperature"] = json!(0.2)),
            ("stream", &|b| b["stream"] = json!(false)),
            ("schema", &|b| {
                b["tools"][0]["function"]["parameters"]["required"] = json!(["x"])
            }),
            ("image", &|b| {
                b["messages"][0]["content"][1]["image_url"]["url"] = json!("data:image/png;base64,iVBP")
            }),
            ("name", &|b| b["messages"][0]["name"] = json!("bob")),
        ];
        for (what, edit) in edits {
            assert_ne!(changed(edit), same, "a changed {what} is another request");
        }
        // A tool result with a name is still read as a result.
        let named = key(json!({"messages": [{"role": "tool", "name": "look", "tool_call_id": "c", "content": "ok"}]}));
        assert_eq!(named.messages[0].describe(), "tool (look): result: ok");
        // A time inside an option is normalised like one in a text.
        let at = |time: &str| changed(&|b| b["metadata"] = json!({"sent": time}));
        assert_eq!(at("2026-11-25T11:30:00"), at("2026-11-28T01:02:03"));
    }
}
