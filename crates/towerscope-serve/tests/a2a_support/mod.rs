//! What the A2A tests share: an agent factory whose behaviour follows the context id, and a
//! server on an ephemeral loopback port.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{AgentError, ContentBlock, DataSource, Msg, PermissionDecision, Role};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_serve::a2a::A2aConfig;

/// Every item of `far`'s reply to `input`, and its final message (the last item).
pub(crate) async fn reply_items(
    far: &impl towerscope_team::Participant,
    input: impl Into<towerscope_core::ReplyInput>,
) -> (Vec<towerscope_core::ReplyItem>, Msg) {
    use futures_util::StreamExt;
    let items: Vec<towerscope_core::ReplyItem> = far.reply_stream(input.into()).map(Result::unwrap).collect().await;
    let Some(towerscope_core::ReplyItem::Final(last)) = items.last() else {
        panic!("the reply ended without its final message: {items:?}")
    };
    let last = last.clone();
    (items, last)
}

/// Delete a file.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Delete {
    /// The path.
    path: String,
}

/// The paths the `delete` tool really deleted, in every test of the process.
pub(crate) static DELETED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// The answer of a `chat-*` context's first reply.
pub(crate) const CHAT_ANSWER: &str = "Hello from towerscope, streamed in pieces.";
/// The answer of a `chat-*` context's second reply.
pub(crate) const CHAT_SECOND: &str = "Still here, same session.";

/// An agent per context, by the context id's prefix:
/// - `chat-*`: answers [`CHAT_ANSWER`], then [`CHAT_SECOND`];
/// - `confirm-*`: calls `delete` (which asks for confirmation), then answers `Deleted /tmp/a.`;
/// - `deny-*`: the same for `/tmp/keep-me`, then answers `Kept it.`;
/// - `mixed-*`: calls `delete` (asks) and the external `lookup` (allowed) in one round, decided
///   together, then answers `Both done.`;
/// - `drip-*`: answers [`CHAT_ANSWER`] with 20 ms between streamed pieces;
/// - `slow-*`: answers after a minute (for cancellation);
/// - `veiled-*`: streams a minute-long answer in pieces 20 ms apart, then answers `Next.`,
///   through an `on_reply` layer that replaces every final message with a new one, `Veiled.`,
///   which carries no finished reason;
/// - `files-*`: answers with what its model was sent last (see [`heard`]) and a 1×1 PNG;
/// - `fail-*`: its model fails with a message holding a fake key;
/// - `panic-*`: the factory panics;
/// - anything else: the factory fails.
pub(crate) fn agent(context: &str) -> Result<Agent, AgentError> {
    let (prefix, _) = context.split_once('-').unwrap_or((context, ""));
    let model = match prefix {
        "chat" => ScriptedModel::new(
            "m",
            [ScriptedResponse::text(CHAT_ANSWER), ScriptedResponse::text(CHAT_SECOND)],
        ),
        "confirm" => ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/a"}"#),
                ScriptedResponse::text("Deleted /tmp/a."),
            ],
        ),
        "deny" => ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/keep-me"}"#),
                ScriptedResponse::text("Kept it."),
            ],
        ),
        "mixed" => ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/mixed"}"#).and_tool_call(
                    "c2",
                    "lookup",
                    r#"{"key": "k"}"#,
                ),
                ScriptedResponse::text("Both done."),
            ],
        ),
        "drip" => ScriptedModel::new(
            "m",
            [ScriptedResponse::text(CHAT_ANSWER).chunk_delay(Duration::from_millis(20))],
        ),
        "slow" => ScriptedModel::new(
            "m",
            [ScriptedResponse::text("Too late.").delay(Duration::from_secs(60))],
        ),
        "veiled" => ScriptedModel::new(
            "m",
            [
                ScriptedResponse::text("slowly ".repeat(3000)).chunk_delay(Duration::from_millis(20)),
                ScriptedResponse::text("Next."),
            ],
        ),
        "fail" => ScriptedModel::new(
            "m",
            [ScriptedResponse::error(AgentError::model(
                "upstream said: invalid key sk-SECRET-123",
            ))],
        ),
        "files" => ScriptedModel::new("m", []).respond_with(|req| {
            let heard = req.messages.iter().rev().find(|m| m.role == Role::User).map(heard);
            Some(ScriptedResponse::text(heard.unwrap_or_default()).and_data(DOT_PNG, "image/png"))
        }),
        "panic" => panic!("a bug in the factory"),
        _ => return Err(AgentError::Validation(format!("no agent for {context}"))),
    };
    let mut builder = Agent::builder("helper");
    if prefix == "veiled" {
        builder = builder.on_reply(towerscope_core::from_fn(veil));
    }
    builder
        .model(model)
        .tool(
            FunctionTool::new("delete", |a: Delete| async move {
                DELETED.lock().unwrap().push(a.path.clone());
                format!("deleted {}", a.path)
            })
            .concurrency_safe(true),
        )
        .tool(Lookup(
            serde_json::json!({"type": "object", "properties": {"key": {"type": "string"}}}),
        ))
        .default_permission(PermissionDecision::Ask {
            suggested_rules: vec![],
        })
        .build()
}

/// A 1×1 PNG, base64: what a `files-*` agent answers with.
pub(crate) const DOT_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// What a message holds, block by block, as a `files-*` agent tells it: `text 'T'`, `data
/// MEDIA NAME N bytes`, `data MEDIA url URL`.
pub(crate) fn heard(msg: &Msg) -> String {
    msg.content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(t) => format!("text '{}'", t.text),
            ContentBlock::Data(d) => match &d.source {
                DataSource::Base64 { media_type, .. } => format!(
                    "data {media_type} {} {} bytes",
                    d.name.as_deref().unwrap_or("-"),
                    d.source.decode_bytes().map_or(0, |b| b.len())
                ),
                DataSource::Url { url, media_type } => format!("data {media_type} url {url}"),
            },
            other => format!("{} block", other.kind().as_str()),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Replaces the reply's final message with a new one, `Veiled.` (no finished reason).
fn veil(
    req: towerscope_core::ReplyRequest,
    next: towerscope_core::ReplyNext,
) -> futures_util::future::BoxFuture<'static, Result<towerscope_core::EventStream, AgentError>> {
    use futures_util::StreamExt;
    use towerscope_core::{EventStream, Msg, ReplyItem};
    Box::pin(async move {
        let inner = next.run(req).await?;
        Ok(Box::pin(inner.map(|item| match item {
            Ok(ReplyItem::Final(_)) => Ok(ReplyItem::Final(Msg::assistant("helper", "Veiled."))),
            item => item,
        })) as EventStream)
    })
}

/// `lookup`: a tool the caller runs, allowed without asking and safe to run beside others, so a
/// round calling it and `delete` decides both at once (two requests in one reply).
struct Lookup(serde_json::Value);

impl towerscope_agent::toolkit::Tool for Lookup {
    fn name(&self) -> &str {
        "lookup"
    }

    fn description(&self) -> &str {
        "Looks a key up; the caller runs it."
    }

    fn input_schema(&self) -> &serde_json::Value {
        &self.0
    }

    fn external(&self) -> bool {
        true
    }

    fn concurrency_safe(&self) -> bool {
        true
    }

    fn check_permission(&self, _input: &serde_json::Value) -> Option<PermissionDecision> {
        Some(PermissionDecision::Allow)
    }

    fn call(&self, _input: serde_json::Value) -> towerscope_agent::toolkit::ToolChunkStream {
        panic!("an external tool is never called by the agent")
    }
}

/// Serves `config`'s A2A routes for [`agent`] on 127.0.0.1, on an ephemeral port; returns the
/// base URL. The server lives as long as the test's runtime.
pub(crate) async fn serve(config: A2aConfig) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = config.routes(Arc::new(agent));
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// An agent for any context that echoes what it was last told (`heard: <text>`), takes a
/// minute when told something containing `slowly`, and answers 17 MiB in 64 KiB words, as fast
/// as it can, when told something containing `flood`.
pub(crate) fn echo_agent(_context: &str) -> Result<Agent, AgentError> {
    let model = ScriptedModel::new("m", []).respond_with(|req| {
        let last = req
            .messages
            .iter()
            .rev()
            .find_map(|m| m.text_content())
            .unwrap_or_default();
        if last.contains("flood") {
            let word = format!("{} ", "x".repeat((64 << 10) - 1));
            return Some(ScriptedResponse::text(word.repeat(17 * 16)));
        }
        let answer = ScriptedResponse::text(format!("heard: {last}"));
        Some(if last.contains("slowly") {
            answer.delay(Duration::from_secs(60))
        } else {
            answer
        })
    });
    Agent::builder("echo").model(model).build()
}

/// Serves `config`'s A2A routes for [`echo_agent`], as [`serve`] does.
pub(crate) async fn serve_echo(config: A2aConfig) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = config.routes(Arc::new(echo_agent));
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}
