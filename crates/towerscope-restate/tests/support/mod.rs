//! The durable tests' endpoint (this test binary, re-run as a child process) and its agents,
//! the Restate server's addresses, and HTTP calls to its ingress and admin API.
//!
//! One endpoint serves every scenario; the session key's prefix picks the agent:
//!
//! - `shop-…`: tools `charge` and `ship`; the model calls `charge`, then `ship`, then answers;
//! - `confirm-…`: tool `refund`, which needs the user's confirmation;
//! - `both-…`: one answer calls `refund` (confirmed) and the external `lookup`, decided in one
//!   concurrent batch;
//! - `slow-…`: a model that takes 1 s, no tools;
//! - `limit-…`: as `shop-`'s first call, with a call limit of one model call per reply inside
//!   the step;
//! - `changed-…`: as `shop-` in the endpoint started with `TOWERSCOPE_TEST_AGENT_VERSION=2`, `ship`
//!   has another schema and `charge` is gone;
//! - `pair-…`: one answer calls the slow (2 s) `pack` twice, both safe to run together;
//! - `panicky-…`: a model whose call panics.
//!
//! The event sink draws an id for each event it has not seen before (it keeps the first copy
//! of each `(invocation, seq)`, as the sink's docs advise) in sessions named `…-dedup-…`, and
//! panics on the second event of each invocation in sessions named `…-sinkpanic-…`.
//!
//! Side effects are counted in files under `side_effects(key)`: one line per model call
//! (`model_calls`), one per tool run (`tool_<name>`), and each event the endpoint sends
//! (`events.jsonl`, appended by every endpoint process).

#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use towerscope_agent::toolkit::{FunctionTool, Tool, ToolChunkStream};
use towerscope_agent::{Agent, HintConfig};
use towerscope_core::{
    AgentError, ChatModel, ChatResponse, ContentBlock, ModelCallRequest, ModelFuture, ModelOutput, TextBlock,
    ToolCallBlock,
};
use towerscope_layers::RetryLayer;
use towerscope_layers::retry::Backoff;
use towerscope_restate::{DurableAgent, DurableContext};

pub const ENDPOINT_ENV: &str = "TOWERSCOPE_RESTATE_TEST_ENDPOINT";

/// The Restate server's ingress and admin URLs; `None` (the test is skipped) without them,
/// unless `TOWERSCOPE_REQUIRE_RESTATE=1`, where it fails.
pub fn server(test: &str) -> Option<(String, String)> {
    match (
        std::env::var("TOWERSCOPE_RESTATE_INGRESS"),
        std::env::var("TOWERSCOPE_RESTATE_ADMIN"),
    ) {
        (Ok(ingress), Ok(admin)) => Some((ingress, admin)),
        _ if std::env::var("TOWERSCOPE_REQUIRE_RESTATE").as_deref() == Ok("1") => panic!(
            "{test} needs a Restate server: TOWERSCOPE_REQUIRE_RESTATE=1 but TOWERSCOPE_RESTATE_INGRESS/ADMIN are not set; \
             run `eval \"$(scripts/restate-server.sh start)\"`"
        ),
        _ => {
            eprintln!("{test}: skipped, no Restate server (eval \"$(scripts/restate-server.sh start)\")");
            None
        }
    }
}

/// A fresh session key with this prefix.
pub fn key(prefix: &str) -> String {
    format!("{prefix}-{:016x}", fastrand_u64())
}

fn fastrand_u64() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    t ^ (u64::from(std::process::id()) << 32)
}

/// Where the side effects of session `key` are counted.
pub fn side_effects(key: &str) -> PathBuf {
    let dir = std::env::temp_dir().join("towerscope-restate-tests").join(key);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Lines in a side-effect file (0 when it does not exist).
pub fn count(key: &str, file: &str) -> usize {
    std::fs::read_to_string(side_effects(key).join(file))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

fn micros() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros()
}

/// The (start, end) microseconds of the slow model's calls in session `key`.
pub fn model_spans(key: &str) -> Vec<(u128, u128)> {
    let text = std::fs::read_to_string(side_effects(key).join("model_spans")).unwrap_or_default();
    let mut spans = Vec::new();
    let mut start = 0;
    for line in text.lines() {
        let (kind, at) = line.split_once(' ').unwrap();
        let at: u128 = at.parse().unwrap();
        if kind == "start" {
            start = at;
        } else {
            spans.push((start, at));
        }
    }
    spans
}

fn append(key: &str, file: &str, line: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(side_effects(key).join(file))
        .unwrap();
    writeln!(f, "{line}").unwrap();
}

/// A free loopback port.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// An endpoint process (this binary running `endpoint_process`); killed with SIGKILL on drop.
pub struct Endpoint {
    pub child: Child,
    pub port: u16,
}

impl Endpoint {
    /// Starts an endpoint on `port`, with `env`, and waits until it listens.
    pub fn start(port: u16, env: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "endpoint_process",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(ENDPOINT_ENV, port.to_string())
        .stdin(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the endpoint did not listen on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child, port }
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Registers the endpoint on `port` with the admin API.
pub async fn register(admin: &str, port: u16) {
    let response = client()
        .post(format!("{admin}/deployments"))
        .json(&json!({"uri": format!("http://127.0.0.1:{port}"), "force": true}))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body = response.text().await.unwrap();
    assert!(status.is_success(), "registering the endpoint: {status} {body}");
}

/// Calls `handler` of the object `Agent` with key `key` through the ingress; the status and
/// the JSON body.
pub async fn call(ingress: &str, key: &str, handler: &str, body: Value) -> (u16, Value) {
    let request = client().post(format!("{ingress}/Agent/{key}/{handler}"));
    let request = if body.is_null() { request } else { request.json(&body) };
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// The stored conversation of a session with ids and timestamps replaced by their order of
/// first appearance: two runs that took the same path compare equal.
pub fn normalized_context(state: &Value) -> Value {
    let mut ids = Vec::<String>::new();
    let mut context = state["context"].clone();
    normalize(&mut context, &mut ids);
    context
}

fn normalize(value: &mut Value, ids: &mut Vec<String>) {
    match value {
        Value::String(s) if s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) => {
            let n = ids.iter().position(|i| i == s).unwrap_or_else(|| {
                ids.push(s.clone());
                ids.len() - 1
            });
            *s = format!("id#{n}");
        }
        Value::String(s) if s.len() >= 19 && s.as_bytes()[4] == b'-' && s.as_bytes()[10] == b'T' => *s = "time".into(),
        Value::Array(items) => items.iter_mut().for_each(|v| normalize(v, ids)),
        Value::Object(map) => map.values_mut().for_each(|v| normalize(v, ids)),
        _ => {}
    }
}

// ---- the endpoint's side ----

/// The model of every scenario: answers by how many tool results the conversation holds, so a
/// new process answers a replayed reply's next call as the first process would have.
#[derive(Debug)]
struct CountingModel {
    key: String,
    /// The call (1-based, counted over every process) that never answers.
    hang_on: Option<usize>,
    slow: bool,
    script: Vec<Answer>,
    /// The calls (1-based, over every process) up to this one fail; retryable or not.
    fail_until: usize,
    retryable: bool,
}

#[derive(Debug, Clone)]
enum Answer {
    Call(&'static str, &'static str),
    /// Two calls in one answer.
    Calls([(&'static str, &'static str); 2]),
    Text(&'static str),
}

impl ChatModel for CountingModel {
    fn model_name(&self) -> &str {
        "counting"
    }

    fn call(&self, request: ModelCallRequest) -> ModelFuture {
        append(&self.key, "model_calls", "call");
        let calls = count(&self.key, "model_calls");
        let results = request
            .messages
            .iter()
            .flat_map(|m| m.content.iter())
            .filter(|b| matches!(b, ContentBlock::ToolResult(_)))
            .count();
        let hang = self.hang_on == Some(calls);
        if calls <= self.fail_until {
            let err = if self.retryable {
                AgentError::model_retryable(format!("overloaded (call {calls})"))
            } else {
                AgentError::model(format!("bad request (call {calls})"))
            };
            return Box::pin(async move { Err(err) });
        }
        let slow = self.slow;
        let key = self.key.clone();
        let answer = self.script.get(results).cloned().unwrap_or(Answer::Text("done"));
        Box::pin(async move {
            if hang {
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            if slow {
                append(&key, "model_spans", &format!("start {}", micros()));
                tokio::time::sleep(Duration::from_secs(1)).await;
                append(&key, "model_spans", &format!("end {}", micros()));
            }
            let blocks: Vec<ContentBlock> = match answer {
                Answer::Call(name, input) => vec![ToolCallBlock::new(format!("call_{results}"), name, input).into()],
                Answer::Calls(calls) => calls
                    .iter()
                    .enumerate()
                    .map(|(i, (name, input))| ToolCallBlock::new(format!("call_{results}_{i}"), *name, *input).into())
                    .collect(),
                Answer::Text(text) => vec![TextBlock::new(text).into()],
            };
            Ok::<_, AgentError>(ModelOutput::Complete(ChatResponse::new(blocks)))
        })
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Charge {
    cents: u32,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Ship {
    address: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ShipV2 {
    address: String,
    express: bool,
}

fn counted_tool<A: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static>(
    key: &str,
    name: &'static str,
) -> FunctionTool {
    let key = key.to_owned();
    FunctionTool::new(name, move |_: A| {
        let key = key.clone();
        async move {
            append(&key, &format!("tool_{name}"), "ran");
            format!("{name} done")
        }
    })
}

/// A tool the caller runs (`REQUIRE_EXTERNAL_EXECUTION`); the agent never calls it.
struct ExternalLookup(Value);

impl Tool for ExternalLookup {
    fn name(&self) -> &str {
        "lookup"
    }

    fn description(&self) -> &str {
        "Look up the stock of a product."
    }

    fn input_schema(&self) -> &Value {
        &self.0
    }

    fn external(&self) -> bool {
        true
    }

    fn concurrency_safe(&self) -> bool {
        true
    }

    fn call(&self, _input: Value) -> ToolChunkStream {
        panic!("an external tool is never called by the agent")
    }
}

fn build(ctx: &DurableContext) -> Result<Agent, AgentError> {
    let key = ctx.session().to_owned();
    let version2 = std::env::var("TOWERSCOPE_TEST_AGENT_VERSION").as_deref() == Ok("2");
    let hang_on = std::env::var("TOWERSCOPE_TEST_HANG_ON")
        .ok()
        .and_then(|n| n.parse().ok());
    let model = |script: Vec<Answer>, slow: bool| CountingModel {
        key: key.clone(),
        hang_on,
        slow,
        script,
        fail_until: 0,
        retryable: true,
    };
    let failing = |fail_until: usize, retryable: bool| CountingModel {
        fail_until,
        retryable,
        ..model(vec![Answer::Text("recovered")], false)
    };
    // Hints off: their time would differ between two sessions compared in the tests.
    let builder = ctx.agent_builder("durable").hints(HintConfig::disabled());
    let prefix = key.split('-').next().unwrap_or_default();
    match prefix {
        "shop" | "changed" if version2 => builder
            .model(model(
                vec![Answer::Call("ship", r#"{"address":"x","express":true}"#)],
                false,
            ))
            .tool(counted_tool::<ShipV2>(&key, "ship"))
            .build(),
        "shop" | "changed" => builder
            .model(model(
                vec![
                    Answer::Call("charge", r#"{"cents":500}"#),
                    Answer::Call("ship", r#"{"address":"1 Main St"}"#),
                    Answer::Text("charged and shipped"),
                ],
                false,
            ))
            .tool(counted_tool::<Charge>(&key, "charge"))
            .tool(counted_tool::<Ship>(&key, "ship"))
            .build(),
        "confirm" => builder
            .model(model(
                vec![Answer::Call("refund", r#"{"cents":700}"#), Answer::Text("refunded")],
                false,
            ))
            .tool(counted_tool::<Charge>(&key, "refund").requires_confirmation(|_| true))
            .build(),
        // One answer calls `refund` (confirmed first) and the external `lookup`, both safe to
        // run together: the round decides both, and sends both requests.
        "both" => builder
            .model(model(
                vec![
                    Answer::Calls([("refund", r#"{"cents":300}"#), ("lookup", r#"{"sku":"mug"}"#)]),
                    Answer::Text("unused"),
                    Answer::Text("refunded and looked up"),
                ],
                false,
            ))
            .tool(
                counted_tool::<Charge>(&key, "refund")
                    .requires_confirmation(|_| true)
                    .concurrency_safe(true),
            )
            .tool(ExternalLookup(
                json!({"type": "object", "properties": {"sku": {"type": "string"}}}),
            ))
            .build(),
        "external" => builder
            .model(model(
                vec![Answer::Call("lookup", r#"{"sku":"mug"}"#), Answer::Text("looked up")],
                false,
            ))
            .tool(ExternalLookup(
                json!({"type": "object", "properties": {"sku": {"type": "string"}}}),
            ))
            .build(),
        // Two failed attempts inside one step, retried by the RetryLayer inside it.
        "retry" => builder
            .on_model_call(
                RetryLayer::new(3).backoff(Backoff::new(Duration::from_millis(10), Duration::from_millis(50))),
            )
            .model(failing(2, true))
            .build(),
        // A call limit inside the step: one model call per reply, and the model calls a tool.
        "limit" => builder
            .on_model_call(towerscope_layers::CallLimitLayer::new().model_calls_per_reply(1))
            .model(model(
                vec![Answer::Call("charge", r#"{"cents":500}"#), Answer::Text("unused")],
                false,
            ))
            .tool(counted_tool::<Charge>(&key, "charge"))
            .build(),
        // One answer calls the slow `pack` twice, both safe to run together.
        "pair" => {
            let key = key.clone();
            let pack = FunctionTool::new("pack", move |_: Charge| {
                let key = key.clone();
                async move {
                    append(&key, "tool_pack", "started");
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    "packed".to_owned()
                }
            })
            .concurrency_safe(true);
            builder
                .model(model(
                    vec![
                        Answer::Calls([("pack", r#"{"cents":1}"#), ("pack", r#"{"cents":2}"#)]),
                        Answer::Text("packed both"),
                    ],
                    false,
                ))
                .tool(pack)
                .build()
        }
        "panicky" => builder.model(PanickyModel(key.clone())).build(),
        // Two failed attempts of the step, retried by Restate.
        "restep" => builder.model(failing(2, true)).build(),
        // A failure no retry fixes: journaled at once.
        "broken" => builder.model(failing(usize::MAX, false)).build(),
        // Retryable failures that go on: Restate's step retries run out.
        "down" => builder.model(failing(usize::MAX, true)).build(),
        _ => builder.model(model(vec![Answer::Text("slow answer")], true)).build(),
    }
}

/// A model whose call panics (a bug in an adapter), counting its calls.
#[derive(Debug)]
pub struct PanickyModel(pub String);

impl ChatModel for PanickyModel {
    fn model_name(&self) -> &str {
        "panicky"
    }

    fn call(&self, _request: ModelCallRequest) -> ModelFuture {
        append(&self.0, "model_calls", "call");
        Box::pin(async move { panic!("a bug in the model adapter") })
    }
}

/// Serves the durable agent of every scenario on `port` until killed.
pub fn serve(port: u16) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let events = Arc::new(std::sync::Mutex::new(()));
        // Three parks per reply, and three bad answers per park (the tests that give up on one).
        let durable = DurableAgent::new(build).max_parks(3).event_sink(
            move |session: &str, invocation: &str, seq, event: &towerscope_core::AgentEvent| {
                // Before the lock: a panic holding it would poison it for every session.
                assert!(
                    !(session.contains("-sinkpanic-") && seq == 1),
                    "the sink panics on its second event"
                );
                let _guard = events.lock().unwrap();
                if session.contains("-dedup-") {
                    static SEEN: std::sync::Mutex<Option<std::collections::HashSet<(String, u64)>>> =
                        std::sync::Mutex::new(None);
                    let mut seen = SEEN.lock().unwrap();
                    if seen
                        .get_or_insert_with(Default::default)
                        .insert((invocation.to_owned(), seq))
                    {
                        // A row id of the sink's own, drawn on the first copy only.
                        let _row = towerscope_core::Id::new();
                    }
                }
                let line = json!({"invocation": invocation, "seq": seq, "event": event, "pid": std::process::id()});
                append(session, "events.jsonl", &line.to_string());
            },
        );
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
        durable.serve(listener).await;
    });
}

/// An HTTP client for the ingress and the admin API. With every workspace feature on, reqwest is
/// built without a crypto provider of its own, so one is installed first (plain HTTP needs none,
/// but reqwest's builder asks for it).
pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}
