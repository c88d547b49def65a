//! Protocol 0.3 on the same endpoint, for the clients that still speak it (a2a-sdk 0.3, and
//! a 1.x SDK client reading a 0.3 card): its method names (`message/send`, `message/stream`,
//! `tasks/get`, `tasks/cancel`, `tasks/resubscribe`) are served by the 1.0 methods, and their
//! answers rewritten in 0.3's shapes (`kind`-tagged objects, lower-case states and roles, a
//! status update's `final`).
//!
//! A 0.3 request needs no rewriting beyond `configuration.blocking`: 0.3's parts
//! (`{"kind": "text", "text": ...}`) and roles (`"user"`) are read by the 1.0 types as they are.

use serde_json::{Map, Value, json};

/// The 1.0 method serving a 0.3 method name.
pub(crate) fn method(name: &str) -> Option<&'static str> {
    Some(match name {
        "message/send" => "SendMessage",
        "message/stream" => "SendStreamingMessage",
        "tasks/get" => "GetTask",
        "tasks/cancel" => "CancelTask",
        "tasks/resubscribe" => "SubscribeToTask",
        _ => return None,
    })
}

/// 0.3's `configuration.blocking: false` is 1.0's `returnImmediately: true`, and its file parts
/// (`{"kind": "file", "file": {"bytes" | "uri", "mimeType", "name"}}`) are 1.0's `raw` or `url`
/// parts with a `mediaType` and a `filename`.
pub(crate) fn params(mut params: Value) -> Value {
    if let Some(config) = params.get_mut("configuration").and_then(Value::as_object_mut)
        && let Some(blocking) = config.remove("blocking").and_then(|b| b.as_bool())
    {
        config.insert("returnImmediately".to_owned(), Value::Bool(!blocking));
    }
    if let Some(parts) = params
        .get_mut("message")
        .and_then(|m| m.get_mut("parts"))
        .and_then(Value::as_array_mut)
    {
        for part in parts {
            file_part(part);
        }
    }
    params
}

/// A 0.3 file part, rewritten in place as a 1.0 one (anything else is left as it is).
fn file_part(part: &mut Value) {
    let Some(p) = part.as_object_mut() else { return };
    if p.get("kind").and_then(Value::as_str) != Some("file") {
        return;
    }
    let Some(Value::Object(file)) = p.remove("file") else {
        return;
    };
    for (from, to) in [
        ("bytes", "raw"),
        ("uri", "url"),
        ("name", "filename"),
        ("mimeType", "mediaType"),
    ] {
        if let Some(value) = file.get(from) {
            p.insert(to.to_owned(), value.clone());
        }
    }
}

/// A 1.0 result (`{"task": ..}`, `{"message": ..}`, `{"statusUpdate": ..}`,
/// `{"artifactUpdate": ..}`, or a bare task) in 0.3's shape.
pub(crate) fn result(value: Value) -> Value {
    let Value::Object(mut obj) = value else { return value };
    if obj.len() == 1 {
        if let Some(t) = obj.remove("task") {
            return task(t);
        }
        if let Some(m) = obj.remove("message") {
            return message(m);
        }
        if let Some(u) = obj.remove("statusUpdate") {
            return status_update(u);
        }
        if let Some(u) = obj.remove("artifactUpdate") {
            return artifact_update(u);
        }
    }
    task(Value::Object(obj))
}

fn task(value: Value) -> Value {
    let Value::Object(mut t) = value else { return value };
    t.insert("kind".to_owned(), json!("task"));
    map_field(&mut t, "status", status);
    map_list(&mut t, "artifacts", artifact);
    map_list(&mut t, "history", message);
    Value::Object(t)
}

fn message(value: Value) -> Value {
    let Value::Object(mut m) = value else { return value };
    m.insert("kind".to_owned(), json!("message"));
    if let Some(role) = m.get_mut("role") {
        *role = json!(if role == "ROLE_AGENT" { "agent" } else { "user" });
    }
    map_list(&mut m, "parts", part);
    Value::Object(m)
}

fn status(value: Value) -> Value {
    let Value::Object(mut s) = value else { return value };
    if let Some(state) = s.get_mut("state") {
        *state = json!(state_name(state.as_str().unwrap_or("")));
    }
    map_field(&mut s, "message", message);
    Value::Object(s)
}

fn state_name(v1: &str) -> &'static str {
    match v1 {
        "TASK_STATE_SUBMITTED" => "submitted",
        "TASK_STATE_WORKING" => "working",
        "TASK_STATE_COMPLETED" => "completed",
        "TASK_STATE_FAILED" => "failed",
        "TASK_STATE_CANCELED" => "canceled",
        "TASK_STATE_INPUT_REQUIRED" => "input-required",
        "TASK_STATE_REJECTED" => "rejected",
        "TASK_STATE_AUTH_REQUIRED" => "auth-required",
        _ => "unknown",
    }
}

fn artifact(value: Value) -> Value {
    let Value::Object(mut a) = value else { return value };
    map_list(&mut a, "parts", part);
    Value::Object(a)
}

fn part(value: Value) -> Value {
    let Value::Object(mut p) = value else { return value };
    let metadata = p.remove("metadata");
    let mut out = Map::new();
    if let Some(text) = p.remove("text") {
        out.insert("kind".to_owned(), json!("text"));
        out.insert("text".to_owned(), text);
    } else if let Some(data) = p.remove("data") {
        out.insert("kind".to_owned(), json!("data"));
        out.insert("data".to_owned(), data);
    } else {
        let mut file = Map::new();
        if let Some(raw) = p.remove("raw") {
            file.insert("bytes".to_owned(), raw);
        }
        if let Some(url) = p.remove("url") {
            file.insert("uri".to_owned(), url);
        }
        if let Some(name) = p.remove("filename") {
            file.insert("name".to_owned(), name);
        }
        if let Some(media) = p.remove("mediaType") {
            file.insert("mimeType".to_owned(), media);
        }
        out.insert("kind".to_owned(), json!("file"));
        out.insert("file".to_owned(), Value::Object(file));
    }
    if let Some(metadata) = metadata {
        out.insert("metadata".to_owned(), metadata);
    }
    Value::Object(out)
}

fn status_update(value: Value) -> Value {
    let Value::Object(mut u) = value else { return value };
    let state = u
        .get("status")
        .and_then(|s| s.get("state"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let last = matches!(
        state,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_REJECTED"
            | "TASK_STATE_INPUT_REQUIRED"
            | "TASK_STATE_AUTH_REQUIRED"
    );
    u.insert("kind".to_owned(), json!("status-update"));
    u.insert("final".to_owned(), Value::Bool(last));
    map_field(&mut u, "status", status);
    Value::Object(u)
}

fn artifact_update(value: Value) -> Value {
    let Value::Object(mut u) = value else { return value };
    u.insert("kind".to_owned(), json!("artifact-update"));
    map_field(&mut u, "artifact", artifact);
    Value::Object(u)
}

fn map_field(obj: &mut Map<String, Value>, key: &str, f: fn(Value) -> Value) {
    if let Some(v) = obj.remove(key) {
        obj.insert(key.to_owned(), f(v));
    }
}

fn map_list(obj: &mut Map<String, Value>, key: &str, f: fn(Value) -> Value) {
    if let Some(Value::Array(items)) = obj.remove(key) {
        obj.insert(key.to_owned(), Value::Array(items.into_iter().map(f).collect()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_0_3_file_part_is_read_as_a_1_0_one() {
        let v03 = json!({"message": {"role": "user", "parts": [
            {"kind": "text", "text": "see"},
            {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain", "name": "hi.txt"}},
            {"kind": "file", "file": {"uri": "https://example.com/a.png", "mimeType": "image/png"}},
        ]}});
        let v1 = params(v03);
        assert_eq!(
            v1["message"]["parts"],
            json!([
                {"kind": "text", "text": "see"},
                {"kind": "file", "raw": "aGk=", "mediaType": "text/plain", "filename": "hi.txt"},
                {"kind": "file", "url": "https://example.com/a.png", "mediaType": "image/png"},
            ])
        );
    }

    #[test]
    fn a_task_is_written_in_0_3_shapes() {
        let v1 = json!({"task": {
            "id": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "ok?"}, {"data": {"a": 1}}]}},
            "artifacts": [{"artifactId": "a", "parts": [{"text": "x"}]}],
        }});
        let v03 = result(v1);
        assert_eq!(v03["kind"], "task");
        assert_eq!(v03["status"]["state"], "input-required");
        assert_eq!(v03["status"]["message"]["kind"], "message");
        assert_eq!(v03["status"]["message"]["role"], "agent");
        assert_eq!(
            v03["status"]["message"]["parts"][0],
            json!({"kind": "text", "text": "ok?"})
        );
        assert_eq!(
            v03["status"]["message"]["parts"][1],
            json!({"kind": "data", "data": {"a": 1}})
        );
        assert_eq!(v03["artifacts"][0]["parts"][0]["kind"], "text");
    }

    #[test]
    fn a_status_update_says_whether_it_is_final() {
        let working = result(
            json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}),
        );
        assert_eq!(
            (working["kind"].as_str(), working["final"].as_bool()),
            (Some("status-update"), Some(false))
        );
        let done = result(
            json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        );
        assert_eq!(
            (done["status"]["state"].as_str(), done["final"].as_bool()),
            (Some("completed"), Some(true))
        );
    }

    #[test]
    fn blocking_false_is_return_immediately() {
        let p = params(json!({"message": {}, "configuration": {"blocking": false}}));
        assert_eq!(p["configuration"], json!({"returnImmediately": true}));
    }
}
