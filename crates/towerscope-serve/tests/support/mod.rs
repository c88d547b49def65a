//! What the serve tests share: a scripted agent on a file session store, and SSE parsing.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;
use towerscope_agent::Agent;
use towerscope_agent::session::JsonFileStore;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{AgentError, ContentBlock, Id, Role};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_serve::agui::frontend_tools;

/// Look up the weather of a city.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct City {
    /// The city.
    pub city: String,
}

/// Delete a file.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Path {
    /// The file.
    pub path: String,
}

/// The long text a "long" question gets, streamed word by word.
pub const LONG: &str = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen \
                        sixteen seventeen eighteen nineteen twenty";

/// A model answering from the conversation: "weather" calls `get_weather`, "delete" calls
/// `delete_file` (confirmed first), "delete both" calls it twice in one turn, "color" calls the
/// front-end tool `pick_color`, "flaky" breaks mid-answer every other call (served by
/// [`retrying_factory`]), "crash" fails, "long" streams [`LONG`] slowly, "slow" waits 400 ms, "wait" 40 s; a tool result is answered with
/// `Result: <text>`; anything else with `Hello!`. The question is the last user message not from
/// the application (the AG-UI endpoint's context and notes).
pub fn model() -> ScriptedModel {
    let attempts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    ScriptedModel::cycle("scripted", [ScriptedResponse::text("unused")])
        .record(true)
        .respond_with(move |req| {
            let last = req.messages.last()?;
            if let Some(ContentBlock::ToolResult(result)) = last.content.last() {
                let text = result.output.text_content().unwrap_or_default();
                return Some(ScriptedResponse::text(format!("Result: {text}")));
            }
            let question = req
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User && &*m.name != "application")
                .and_then(|m| m.text_content())
                .unwrap_or_default();
            let id = Id::new();
            Some(if question.contains("weather") {
                ScriptedResponse::thinking("I should look it up.").and_tool_call(
                    id,
                    "get_weather",
                    r#"{"city": "Paris"}"#,
                )
            } else if question.contains("delete both") {
                ScriptedResponse::tool_call(id, "delete_file", r#"{"path": "/tmp/a"}"#).and_tool_call(
                    Id::new(),
                    "delete_file",
                    r#"{"path": "/tmp/b"}"#,
                )
            } else if question.contains("delete") {
                ScriptedResponse::tool_call(id, "delete_file", r#"{"path": "/tmp/a"}"#)
            } else if question.contains("color and size") && req.tools.iter().any(|t| t.name == "pick_size") {
                ScriptedResponse::tool_call(id, "pick_color", r#"{"palette": "warm"}"#).and_tool_call(
                    Id::new(),
                    "pick_size",
                    "{}",
                )
            } else if question.contains("color") && req.tools.iter().any(|t| t.name == "pick_color") {
                ScriptedResponse::tool_call(id, "pick_color", r#"{"palette": "warm"}"#)
            } else if question.contains("long") {
                ScriptedResponse::text(LONG).chunk_delay(Duration::from_millis(40))
            } else if question.contains("wait") {
                ScriptedResponse::text("Done waiting.").delay(Duration::from_secs(40))
            } else if question.contains("flaky") {
                // Every other call breaks after its thinking and some text; the factory's retry
                // layer calls again, which answers.
                if attempts
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                    .is_multiple_of(2)
                {
                    ScriptedResponse::thinking("Let me see.")
                        .and_text("A partial answer that")
                        .fail_mid_stream(3, AgentError::Stream("connection reset".into()))
                } else {
                    ScriptedResponse::text("Recovered.")
                }
            } else if question.contains("crash") {
                ScriptedResponse::error(towerscope_core::AgentError::model("the model crashed"))
            } else if question.contains("slow") {
                ScriptedResponse::text("Finally.").delay(Duration::from_millis(400))
            } else {
                ScriptedResponse::text("Hello!")
            })
        })
}

/// A fresh folder for a test's sessions.
pub fn session_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("towerscope-serve-{test}-{}-{}", std::process::id(), Id::new()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    dir
}

/// The factory the tests serve: [`model`], `get_weather`, `delete_file` (asks first), the
/// run's front-end tools, sessions in `dir`.
pub fn factory(
    model: ScriptedModel,
    dir: PathBuf,
) -> impl Fn(&str) -> Result<Agent, AgentError> + Send + Sync + 'static {
    factory_with(model, dir, false)
}

/// [`factory`] with a retry layer on the model calls (two attempts, for "flaky").
pub fn retrying_factory(
    model: ScriptedModel,
    dir: PathBuf,
) -> impl Fn(&str) -> Result<Agent, AgentError> + Send + Sync + 'static {
    factory_with(model, dir, true)
}

fn factory_with(
    model: ScriptedModel,
    dir: PathBuf,
    retry: bool,
) -> impl Fn(&str) -> Result<Agent, AgentError> + Send + Sync + 'static {
    let store = JsonFileStore::new(dir);
    move |session: &str| {
        let mut builder = Agent::builder("assistant")
            .model(model.clone())
            .tool(
                FunctionTool::new("get_weather", |c: City| async move { format!("sunny in {}", c.city) })
                    .read_only(true),
            )
            .tool(
                FunctionTool::new("delete_file", |p: Path| async move { format!("deleted {}", p.path) })
                    .requires_confirmation(|_| true),
            )
            .session(store.clone(), "web", session);
        if retry {
            let backoff = towerscope_layers::retry::Backoff::new(Duration::from_millis(1), Duration::from_millis(2));
            builder = builder.on_model_call(towerscope_layers::RetryLayer::new(2).backoff(backoff));
        }
        for tool in frontend_tools() {
            builder = builder.tool(tool);
        }
        builder.build()
    }
}

/// The events of an SSE body, as JSON.
pub fn events(sse: &str) -> Vec<Value> {
    sse.split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).expect("each event is JSON"))
        .collect()
}

/// The `type` of each event, a run of one type counted once.
pub fn types(events: &[Value]) -> Vec<String> {
    let mut types: Vec<String> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    types.dedup();
    types
}

/// Shares a value between a test and the factory.
pub fn shared<T>(value: T) -> Arc<T> {
    Arc::new(value)
}

/// The folder of the npm packages `scripts/web-clients.sh` installs. Without it the calling test
/// is skipped (`None`), unless `TOWERSCOPE_REQUIRE_WEB=1`, where it fails.
pub fn node_modules(test: &str) -> Option<String> {
    match std::env::var("TOWERSCOPE_NODE_MODULES") {
        Ok(dir) if !dir.is_empty() => Some(dir),
        _ if std::env::var("TOWERSCOPE_REQUIRE_WEB").as_deref() == Ok("1") => panic!(
            "{test} needs the web clients: TOWERSCOPE_REQUIRE_WEB=1 but TOWERSCOPE_NODE_MODULES is not set; run \
             `eval \"$(scripts/web-clients.sh)\"`"
        ),
        _ => {
            eprintln!("skipped {test}: TOWERSCOPE_NODE_MODULES is not set (eval \"$(scripts/web-clients.sh)\")");
            None
        }
    }
}

/// Serves `router` on an ephemeral loopback port until the returned sender is dropped or fired.
pub async fn serve(
    router: axum::Router,
) -> (
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(towerscope_serve::run_until(listener, router, async {
        let _ = stopped.await;
    }));
    (addr, stop, server)
}

/// Posts `body` to `/agui` and reads the whole answer.
pub async fn post(router: &Router, body: impl Into<Body>) -> (StatusCode, String) {
    let request = Request::post("/agui")
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.into())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

/// A run of `thread` with `messages`.
pub fn run(thread: &str, messages: Value) -> String {
    json!({"threadId": thread, "runId": format!("run-{}", fastrand_id()), "messages": messages}).to_string()
}

/// A fresh id.
pub fn fastrand_id() -> String {
    towerscope_core::Id::new().to_string()
}

/// The code of a JSON error body.
pub fn error_code(body: &str) -> String {
    let v: Value = serde_json::from_str(body).expect("a JSON error body");
    v["error"]["code"].as_str().expect("an error code").to_owned()
}

/// The test router on a fresh session folder, and its model.
pub fn router(test: &str) -> (Router, towerscope_models::ScriptedModel) {
    let model = model();
    (
        towerscope_serve::router(factory(model.clone(), session_dir(test))),
        model,
    )
}
