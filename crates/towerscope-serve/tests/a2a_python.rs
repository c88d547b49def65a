//! Against the official Python `a2a-sdk` 1.3 (installed by scripts/a2a-sdk.sh): its client
//! drives our server (send, stream, answer an input-required task, cancel; over protocol 1.0,
//! and over 0.3 through its compatibility transport), and our client and
//! `RemoteAgent` drive an agent written with its server, so that neither side is only tested
//! against itself.
//!
//! Needs `TOWERSCOPE_A2A_PYTHON` (the venv's python). Without it the tests are skipped, unless
//! `TOWERSCOPE_REQUIRE_A2A=1` (scripts/test.sh sets both): then they fail.
#![allow(clippy::unwrap_used)]

#[path = "a2a_support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use support::{CHAT_ANSWER, serve};
use tokio::process::{Child, Command};
use towerscope_agent::Agent;
use towerscope_core::{AgentEvent, ContentBlock, DataBlock, DataSource, Msg, ReplyFinishedReason, ReplyItem};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_serve::a2a::wire::TaskState;
use towerscope_serve::a2a::{A2aClient, A2aConfig, RemoteAgent, RemoteAgentTool};
use towerscope_team::Participant;

fn python() -> Option<PathBuf> {
    match std::env::var_os("TOWERSCOPE_A2A_PYTHON") {
        Some(p) if Path::new(&p).exists() => Some(PathBuf::from(p)),
        _ => {
            assert!(
                std::env::var("TOWERSCOPE_REQUIRE_A2A").as_deref() != Ok("1"),
                "TOWERSCOPE_REQUIRE_A2A=1 but the a2a-sdk venv is not set up; run scripts/test.sh \
                 (or `eval \"$(scripts/a2a-sdk.sh)\"`)"
            );
            eprintln!("skipped: TOWERSCOPE_A2A_PYTHON is not set (scripts/a2a-sdk.sh installs the a2a-sdk)");
            None
        }
    }
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/a2a").join(name)
}

/// Runs the SDK script `name` with `args` (a minute at most); what it printed, once it
/// succeeded: one `KEY value` line per observation.
async fn run_script(python: &Path, name: &str, args: &[&str]) -> String {
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new(python)
            .arg(script(name))
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the SDK client finishes within a minute")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{name} failed:\n{stdout}\n{stderr}");
    eprintln!("{name} printed:\n{stdout}");
    stdout
}

/// Checks that the script printed `KEY value` for each pair of `expect`.
fn expect_lines(seen: &HashMap<&str, &str>, expect: &[(&str, &str)], stdout: &str) {
    for (key, value) in expect {
        assert_eq!(seen.get(key), Some(value), "{key}; the script printed:\n{stdout}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_client_sends_streams_answers_input_and_cancels() {
    let Some(python) = python() else { return };
    let base = serve(A2aConfig::new("helper").description("Helps.")).await;
    let stdout = run_script(&python, "sdk_client.py", &[&base]).await;
    let seen: HashMap<&str, &str> = stdout.lines().filter_map(|l| l.split_once(' ')).collect();
    let expect = [
        ("CARD_NAME", "helper"),
        ("CARD_STREAMING", "True"),
        ("CARD_0_3", "valid"),
        ("SEND_TO_ENDED", "UnsupportedOperationError"),
        ("SUBSCRIBE_ENDED", "UnsupportedOperationError"),
        ("SEND_STATE", "TASK_STATE_COMPLETED"),
        ("SEND_CONTEXT_KEPT", "True"),
        ("SEND_ANSWER", CHAT_ANSWER),
        ("GET_STATE", "TASK_STATE_COMPLETED"),
        ("GET_HISTORY_ROLES", "ROLE_USER,ROLE_AGENT"),
        ("STREAM_FIRST", "task"),
        ("STREAM_STATES", "TASK_STATE_WORKING,TASK_STATE_COMPLETED"),
        ("STREAM_TEXT", "Still here, same session."),
        ("STREAM_ASSEMBLED", "Still here, same session."),
        ("CONFIRM_STATE", "TASK_STATE_INPUT_REQUIRED"),
        ("CONFIRM_AFTER", "TASK_STATE_COMPLETED"),
        ("CONFIRM_SAME_TASK", "True"),
        ("CONFIRM_ANSWER", "Deleted /tmp/a."),
        ("CANCEL_STATE", "TASK_STATE_CANCELED"),
        ("CANCEL_AGAIN", "TaskNotCancelableError"),
        ("UNKNOWN_TASK", "TaskNotFoundError"),
        ("LEGACY_TRANSPORT", "CompatJsonRpcTransport"),
        ("LEGACY_STREAM_STATES", "TASK_STATE_WORKING,TASK_STATE_COMPLETED"),
        ("LEGACY_STREAM_TEXT", CHAT_ANSWER),
        ("LEGACY_SEND_STATE", "TASK_STATE_COMPLETED"),
        ("LEGACY_SEND_ANSWER", "Still here, same session."),
        ("LEGACY_GET_ROLES", "ROLE_USER,ROLE_AGENT"),
        ("LEGACY_CANCEL_STATE", "TASK_STATE_CANCELED"),
        ("FILES_STATE", "TASK_STATE_COMPLETED"),
        (
            "FILES_HEARD",
            "text 'What are these?'; data application/pdf notes.pdf 768 bytes; data image/jpeg url https://example.com/cat.jpg",
        ),
        ("FILES_ANSWER", r"image/png 70 bytes b'\x89PNG'"),
        ("FILES_STATUS_PARTS", "text"),
        (
            "LEGACY_FILES_HEARD",
            "text 'What are these?'; data application/pdf notes.pdf 768 bytes; data image/jpeg url https://example.com/cat.jpg",
        ),
        ("LEGACY_FILES_ANSWER", r"image/png 70 bytes b'\x89PNG'"),
        ("DONE", "ok"),
    ];
    expect_lines(&seen, &expect, &stdout);
    assert!(seen["CONFIRM_QUESTION"].contains("delete"), "{stdout}");
    assert!(seen["STREAM_PIECES"].parse::<usize>().unwrap() > 1, "{stdout}");
    assert!(
        matches!(seen["SLOW_STATE"], "TASK_STATE_SUBMITTED" | "TASK_STATE_WORKING"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_reads_our_bearer_scheme_in_both_versions_and_sends_the_token() {
    let Some(python) = python() else { return };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = towerscope_serve::RouterBuilder::new(support::agent)
        .bearer_token("s3cret")
        .a2a(A2aConfig::new("guarded"))
        .build();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let stdout = run_script(&python, "sdk_bearer.py", &[&base, "s3cret"]).await;
    let seen: HashMap<&str, &str> = stdout.lines().filter_map(|l| l.split_once(' ')).collect();
    let expect = [
        ("CARD_SCHEME", "http_auth_security_scheme Bearer"),
        ("CARD_REQUIREMENTS", "bearer"),
        ("CARD_0_3_SCHEME", "HTTPAuthSecurityScheme Bearer"),
        ("CARD_0_3_SECURITY", "bearer"),
        ("SEND_WITH_TOKEN", "TASK_STATE_COMPLETED"),
        ("DONE", "ok"),
    ];
    expect_lines(&seen, &expect, &stdout);
    // Refused: whatever the SDK names an HTTP 401, the task did not run.
    assert!(!seen["SEND_WITHOUT_TOKEN"].starts_with("TASK_STATE"), "{stdout}");
}

/// The SDK's echo agent (tests/a2a/sdk_echo_server.py) on an ephemeral loopback port; killed
/// by its PID when dropped.
struct EchoServer {
    child: Child,
    base: String,
}

impl EchoServer {
    async fn start(python: &Path) -> Self {
        let dir = std::env::temp_dir().join(format!("towerscope-a2a-echo-{}-{}", std::process::id(), fastrand()));
        std::fs::create_dir_all(&dir).unwrap();
        let port_file = dir.join("port");
        let mut child = Command::new(python)
            .arg(script("sdk_echo_server.py"))
            .arg(&port_file)
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        for _ in 0..300 {
            if let Ok(port) = std::fs::read_to_string(&port_file) {
                // The port is written before uvicorn listens: wait for the card to answer.
                let base = format!("http://127.0.0.1:{}", port.trim());
                if A2aClient::connect(&base).await.is_ok() {
                    return Self { child, base };
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the SDK echo server exited at start: {status}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the SDK echo server did not come up within 15 s");
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

fn fastrand() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_and_remote_agent_talk_to_an_sdk_server() {
    let Some(python) = python() else { return };
    let echo = EchoServer::start(&python).await;

    // The client: a blocking send, and the SDK's typed errors as ours.
    let client = A2aClient::connect(&echo.base).await.unwrap();
    assert_eq!(client.card().name, "sdk-echo");
    let answer = client.send_text("hello", None, None).await.unwrap();
    assert_eq!(answer.task().unwrap().status.state, TaskState::Completed);
    assert_eq!(answer.answer_text(), "echo: hello");
    let missing = client.get_task("no-such-task").await.unwrap_err();
    assert!(
        matches!(&missing, towerscope_serve::a2a::ClientError::Rpc(e) if e.code == -32001),
        "{missing:?}"
    );

    // The remote agent streams the SDK agent's pieces as text events, and keeps its context.
    let remote = RemoteAgent::connect(&echo.base).await.unwrap();
    let (items, last) = support::reply_items(&remote, Msg::user("user", "bonjour")).await;
    let deltas: Vec<String> = items
        .iter()
        .filter_map(|i| match i {
            ReplyItem::Event(AgentEvent::TextBlockDelta(d)) => Some(d.delta.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas.concat(), "echo: bonjour");
    assert_eq!(deltas.len(), 2, "the SDK agent's two artifact pieces: {deltas:?}");
    assert_eq!(last.text_content().as_deref(), Some("echo: bonjour"));
    assert_eq!(last.finished_reason, Some(ReplyFinishedReason::Completed));
    let context = remote.context_id().unwrap();

    // A question (input-required) ends the reply; the next reply answers the same task.
    let asked = remote.reply(Msg::user("user", "ask").into()).await.unwrap();
    assert_eq!(asked.text_content().as_deref(), Some("Which city?"));
    let answered = remote.reply(Msg::user("user", "Paris").into()).await.unwrap();
    assert_eq!(answered.text_content().as_deref(), Some("echo city: Paris"));
    assert_eq!(remote.context_id(), Some(context), "one remote context across replies");

    // A failed remote task ends the reply with an error reason, not a panic or a hang.
    let failed = remote.reply(Msg::user("user", "fail").into()).await.unwrap();
    assert_eq!(failed.finished_reason, Some(ReplyFinishedReason::Error));
    drop(echo);
}

/// Files both ways with the SDK's agent: the data blocks of our message go as file parts (bytes
/// and a URL), and the file parts of its answer come back as data blocks of the remote agent's
/// message (with their events) and of the remote agent tool's result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_remote_agent_and_tool_send_and_read_files_with_an_sdk_server() {
    let Some(python) = python() else { return };
    let echo = EchoServer::start(&python).await;

    let remote = RemoteAgent::connect(&echo.base).await.unwrap();
    let pdf = DataBlock::new(DataSource::inline(b"%PDF-", "application/pdf")).with_name("notes.pdf");
    let cat = DataBlock::url("https://example.com/cat.jpg", "image/jpeg");
    let mut msg = Msg::user("user", "Here are two files.");
    msg.content.push(ContentBlock::Data(pdf.clone()));
    msg.content.push(ContentBlock::Data(cat.clone()));
    let (items, last) = support::reply_items(&remote, msg).await;
    assert_eq!(
        last.text_content().as_deref(),
        Some("files: application/pdf notes.pdf 5 bytes; image/jpeg url https://example.com/cat.jpg")
    );
    let files: Vec<(DataSource, Option<String>)> = last
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Data(d) => Some((d.source.clone(), d.name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        files,
        [(pdf.source, Some("notes.pdf".to_owned())), (cat.source, None)],
        "the files came back as they went"
    );
    let data_events = items
        .iter()
        .filter(|i| {
            matches!(
                i,
                ReplyItem::Event(
                    AgentEvent::DataBlockStart(_) | AgentEvent::DataBlockDelta(_) | AgentEvent::DataBlockEnd(_)
                )
            )
        })
        .count();
    assert_eq!(data_events, 6, "start, delta and end for each file");

    // The tool: the remote agent's picture reaches our model as a data block of the result.
    let tool = RemoteAgentTool::connect(&echo.base).await.unwrap();
    let name = towerscope_agent::toolkit::Tool::name(&tool).to_owned();
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", name, r#"{"message": "picture"}"#),
            ScriptedResponse::text("Done."),
        ],
    );
    let seen = model.clone();
    let agent = Agent::builder("boss").model(model).tool(tool).build().unwrap();
    agent.reply(Msg::user("user", "Get a picture.")).await.unwrap();
    let requests = seen.requests();
    let result = requests[1]
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .find_map(|b| match b {
            ContentBlock::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .expect("the tool's result was sent to the model");
    let output = serde_json::to_value(&result.output).unwrap();
    assert_eq!(output[0]["text"], "files: image/png dot.png 70 bytes", "{output}");
    assert_eq!(output[1]["source"]["media_type"], "image/png", "{output}");
    assert_eq!(output[1]["name"], "dot.png", "{output}");
    drop(echo);
}
