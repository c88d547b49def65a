//! MCP tools against a real server (tests/mcp/server.py, started by scripts/test.sh): over
//! stdio and streamable HTTP, tools in a reply, progress as `mcp_progress` events, errors as
//! error results, a tool group per server, refused schemas, and the server's lifetime.
//!
//! Without the server's environment (`TOWERSCOPE_MCP_PYTHON`, `TOWERSCOPE_MCP_SERVER`,
//! `TOWERSCOPE_MCP_HTTP_URL`) the tests are skipped, unless `TOWERSCOPE_REQUIRE_MCP=1`: then
//! they fail.
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used)]

mod common;

use std::alloc::System;
use std::time::Duration;

use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

use common::collect;
use towerscope_agent::mcp::{McpServer, McpTools};
use towerscope_agent::toolkit::Toolkit;
use towerscope_agent::{Agent, HintConfig};
use towerscope_core::{AgentEvent, Msg, PermissionMode, ToolResultState};
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// Counts the bytes the tests allocate (one test checks that an endless answer is not read).
#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

struct Env {
    python: String,
    script: String,
    url: String,
}

fn env() -> Option<Env> {
    let get = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    match (
        get("TOWERSCOPE_MCP_PYTHON"),
        get("TOWERSCOPE_MCP_SERVER"),
        get("TOWERSCOPE_MCP_HTTP_URL"),
    ) {
        (Some(python), Some(script), Some(url)) => Some(Env { python, script, url }),
        _ => {
            assert!(
                std::env::var("TOWERSCOPE_REQUIRE_MCP").as_deref() != Ok("1"),
                "TOWERSCOPE_REQUIRE_MCP=1 but the MCP test server is not set up; run scripts/test.sh \
                 (or eval \"$(scripts/mcp-server.sh start)\")"
            );
            eprintln!("skipped: no MCP test server (run scripts/test.sh)");
            None
        }
    }
}

fn stdio(env: &Env) -> McpServer {
    McpServer::stdio("py", env.python.clone(), [env.script.clone(), "stdio".to_owned()])
}

async fn toolkit(server: McpServer) -> (Toolkit, McpTools) {
    let mut toolkit = Toolkit::new();
    let added = toolkit.add_mcp_server(server).await.unwrap();
    (toolkit, added)
}

fn agent(toolkit: Toolkit, model: &ScriptedModel) -> Agent {
    Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::disabled())
        .toolkit(toolkit)
        .permission_mode(PermissionMode::Bypass)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_stdio_servers_tools_run_in_a_reply() {
    let Some(env) = env() else { return };
    let (toolkit, added) = toolkit(stdio(&env).active(true)).await;
    assert_eq!(added.group, "py");
    assert_eq!(
        added.tools,
        [
            "mcp__py__echo",
            "mcp__py__add",
            "mcp__py__count",
            "mcp__py__fail",
            "mcp__py__headers"
        ]
    );
    assert_eq!(added.refused.len(), 1, "strict's schema cannot be enforced");
    assert!(
        added.refused[0].to_string().contains("unevaluatedProperties"),
        "{}",
        added.refused[0]
    );
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "mcp__py__add", r#"{"a": 2, "b": "3"}"#),
            ScriptedResponse::text("5"),
        ],
    );
    let agent = agent(toolkit, &model);
    agent.reply(Msg::user("user", "2 + 3?")).await.unwrap();
    let offered = model.requests()[0].tool_names().join(",");
    assert!(
        offered.contains("mcp__py__echo") && offered.contains("reset_tools"),
        "{offered}"
    );
    let seen = &model.requests()[1];
    let result = seen
        .messages
        .iter()
        .rfind(|m| m.role == towerscope_core::Role::Assistant)
        .unwrap()
        .tool_results()
        .next()
        .cloned()
        .unwrap();
    assert_eq!(result.state, ToolResultState::Success);
    assert_eq!(
        result.output.text_content().as_deref(),
        Some("5"),
        "the coerced arguments reached the server"
    );
}

#[tokio::test]
async fn over_http_progress_streams_and_errors_become_error_results() {
    let Some(env) = env() else { return };
    let (toolkit, added) = toolkit(McpServer::http("web", env.url.clone()).active(true)).await;
    assert!(added.tools.contains(&"mcp__web__count".to_owned()));
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "mcp__web__count", r#"{"n": 3}"#),
            ScriptedResponse::tool_call("c2", "mcp__web__fail", r#"{"reason": "test"}"#),
            ScriptedResponse::text("done"),
        ],
    );
    let agent = agent(toolkit, &model);
    let out = collect(agent.reply_stream(Msg::user("user", "count, then fail"))).await;
    let progress: Vec<serde_json::Value> = out
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Custom(c) if c.name == "mcp_progress" => Some(c.value["progress"].clone()),
            _ => None,
        })
        .collect();
    assert_eq!(progress.len(), 3, "{progress:?}");
    assert_eq!(progress[2]["message"], "step 3");
    assert_eq!(progress[2]["total"], 3.0);
    let state = agent.state();
    let results: Vec<_> = state.context[1].tool_results().cloned().collect();
    assert_eq!(results[0].output.text_content().as_deref(), Some("counted to 3"));
    assert_eq!(results[1].state, ToolResultState::Error);
    let text = results[1].output.text_content().unwrap();
    assert!(text.contains("failed on purpose: test"), "{text}");
    // Progress is never accumulated into the result.
    assert!(!results[0].metadata.contains_key("mcp_progress"));
}

#[tokio::test]
async fn a_servers_tools_form_a_group_the_model_activates() {
    let Some(env) = env() else { return };
    let (toolkit, _) = toolkit(McpServer::http("web", env.url.clone())).await;
    assert!(
        toolkit.schemas(&[]).iter().all(|s| !s.name.starts_with("mcp__")),
        "inactive at the start"
    );
    let active = toolkit.schemas(&["web".to_owned()]);
    assert!(active.iter().any(|s| s.name == "mcp__web__echo"));
    assert_eq!(toolkit.group_of("mcp__web__echo").unwrap().name, "web");
    assert!(
        !toolkit.get("mcp__web__echo").unwrap().concurrency_safe(),
        "MCP tools run one at a time"
    );
    assert!(toolkit.get("mcp__web__echo").unwrap().read_only());
    assert!(
        toolkit.get("mcp__web__add").unwrap().destructive(),
        "no annotation: destructive, as MCP says"
    );

    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "reset_tools", r#"{"web": true}"#),
            ScriptedResponse::tool_call("c2", "mcp__web__echo", r#"{"text": "hello"}"#),
            ScriptedResponse::text("done"),
        ],
    );
    let agent = agent(toolkit, &model);
    agent.reply(Msg::user("user", "echo hello")).await.unwrap();
    let state = agent.state();
    let echoed = state.context[1].tool_results().find(|r| r.id == "c2").cloned().unwrap();
    assert_eq!(echoed.output.text_content().as_deref(), Some("hello"));
}

#[tokio::test]
async fn the_stdio_server_lives_as_long_as_the_toolkit() {
    let Some(env) = env() else { return };
    let pid_file = std::env::temp_dir().join(format!("towerscope-mcp-{}.pid", std::process::id()));
    let server = stdio(&env).env("MCP_PID_FILE", pid_file.display().to_string());
    let (toolkit, _) = toolkit(server).await;
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let alive = || std::path::Path::new(&format!("/proc/{}", pid.trim())).exists();
    assert!(alive());
    drop(toolkit);
    for _ in 0..100 {
        if !alive() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(), "the server's process ended with the toolkit");
    let _ = std::fs::remove_file(pid_file);
}

/// A stdio server is told the session ended (its stdin closes) and given a moment to exit
/// before it is killed: a server that writes something on the way out does.
#[tokio::test]
async fn a_stdio_server_exits_on_its_own_when_the_client_closes() {
    use towerscope_agent::mcp::McpClient;
    let Some(env) = env() else { return };
    const SERVER: &str = r#"
import json, sys, time
for line in sys.stdin:
    m = json.loads(line)
    if m.get("id") is not None and m.get("method") == "initialize":
        result = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {},
                  "serverInfo": {"name": "tidy", "version": "0"}}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": result}) + "\n")
        sys.stdout.flush()
time.sleep(0.5)
open(sys.argv[1], "w").write("saved")
"#;
    let saved = std::env::temp_dir().join(format!("towerscope-mcp-exit-{}", std::process::id()));
    let _ = std::fs::remove_file(&saved);
    let args = ["-c".to_owned(), SERVER.to_owned(), saved.display().to_string()];
    let client = McpClient::connect(&McpServer::stdio("tidy", env.python.clone(), args))
        .await
        .unwrap();
    drop(client);
    for _ in 0..100 {
        if saved.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        std::fs::read_to_string(&saved).ok().as_deref(),
        Some("saved"),
        "the server wrote on its way out"
    );
    let _ = std::fs::remove_file(saved);
}

#[tokio::test]
async fn enabled_and_disabled_tools_filter_what_is_added() {
    let Some(env) = env() else { return };
    let (_, only) = toolkit(McpServer::http("web", env.url.clone()).enable_tools(["echo", "add", "nope"])).await;
    assert_eq!(only.tools, ["mcp__web__echo", "mcp__web__add"]);
    let (toolkit, without) = toolkit(McpServer::http("web", env.url.clone()).disable_tools(["fail", "strict"])).await;
    assert_eq!(
        without.tools,
        [
            "mcp__web__echo",
            "mcp__web__add",
            "mcp__web__count",
            "mcp__web__headers"
        ]
    );
    assert!(
        without.refused.is_empty(),
        "strict was left out before its schema was looked at"
    );
    assert!(toolkit.get("mcp__web__fail").is_none());

    let mut toolkit = Toolkit::new();
    let both = McpServer::http("web", env.url.clone())
        .enable_tools(["echo"])
        .disable_tools(["echo"]);
    let err = toolkit.add_mcp_server(both).await.unwrap_err();
    assert!(err.to_string().contains("both enabled and disabled"), "{err}");
}

/// A server that answers every page of a listing with a cursor to another: the listing fails
/// after `MAX_PAGES` pages with an error that says so, instead of going on (and growing) for
/// ever; the same for prompts, resources and templates.
#[tokio::test]
async fn a_server_that_pages_for_ever_fails_the_listing_after_max_pages() {
    use towerscope_agent::mcp::{MAX_PAGES, McpClient};
    let Some(env) = env() else { return };
    let script = std::path::Path::new(&env.script).with_file_name("endless_pages.py");
    let server = McpServer::stdio("endless", env.python.clone(), [script.display().to_string()]);
    let client = McpClient::connect(&server).await.unwrap();
    let failures = [
        client.list_tools().await.err(),
        client.list_prompts().await.err(),
        client.list_resources().await.err(),
        client.list_resource_templates().await.err(),
    ];
    for (what, err) in ["tools", "prompts", "resources", "resource templates"]
        .iter()
        .zip(failures)
    {
        let err = err.unwrap().to_string();
        assert!(
            err.contains(&format!("listing {what} failed"))
                && err.contains(&format!("answered {MAX_PAGES} pages, each with a cursor to another")),
            "{err}"
        );
    }
}

/// A stdio server whose answer to a call is one line that never ends: the call fails once the
/// line passes `max_message_bytes`, with an error that names the limit, instead of the agent
/// reading it into memory; the smaller messages before it (initialising, the listing) pass.
#[tokio::test]
async fn a_stdio_message_past_the_limit_fails_the_call_and_is_not_read_whole() {
    use towerscope_agent::mcp::McpClient;
    let Some(env) = env() else { return };
    let script = std::path::Path::new(&env.script).with_file_name("endless_line.py");
    let limit = 1 << 20;
    let server = McpServer::stdio("flood", env.python.clone(), [script.display().to_string()])
        .max_message_bytes(limit)
        .timeout(Duration::from_secs(20))
        .active(true);
    let client = McpClient::connect(&server).await.unwrap();
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    let mut toolkit = Toolkit::new();
    toolkit.add_mcp_client(client.clone(), &server).await.unwrap();

    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "mcp__flood__flood", "{}"),
            ScriptedResponse::text("done"),
        ],
    );
    let agent = agent(toolkit, &model);
    agent.reply(Msg::user("u", "flood")).await.unwrap();
    let result = model.requests()[1].messages.last().cloned().unwrap();
    let result = result.tool_results().next().cloned().unwrap();
    assert_eq!(result.state, ToolResultState::Error);
    let text = result.output.text_content().unwrap_or_default();
    assert!(
        text.contains(&format!("longer than {limit} bytes")) && text.contains("max_message_bytes"),
        "{text}"
    );
    let err = client.list_tools().await.unwrap_err().to_string();
    assert!(
        err.contains(&format!("longer than {limit} bytes")),
        "the connection is closed: {err}"
    );
}

/// The hostile HTTP server (tests/mcp/endless_http.py) on a free loopback port, with `args`
/// after the port; it ends when the returned child is dropped (killed) or its stdin closes (the
/// test process ended, however). And its URL.
async fn endless_http(env: &Env, args: &[&str]) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt;
    let script = std::path::Path::new(&env.script).with_file_name("endless_http.py");
    let mut child = tokio::process::Command::new(&env.python)
        .arg(script)
        .arg("0")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    let mut stdout = tokio::io::BufReader::new(stdout);
    let read = stdout.read_line(&mut line);
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .expect("the hostile server says its port")
        .unwrap();
    let port = line.trim().strip_prefix("PORT ").unwrap().to_owned();
    (child, format!("http://127.0.0.1:{port}/mcp"))
}

/// The hostile HTTP server (no extra arguments) as the server `flood`, set up by `settings`
/// (active), and a client connected to it; the server's process ends with the returned child.
async fn flood_client(
    env: &Env,
    settings: impl FnOnce(McpServer) -> McpServer,
) -> (tokio::process::Child, McpServer, towerscope_agent::mcp::McpClient) {
    let (child, url) = endless_http(env, &[]).await;
    let server = settings(McpServer::http("flood", url)).active(true);
    let client = towerscope_agent::mcp::McpClient::connect(&server).await.unwrap();
    (child, server, client)
}

/// The results of a reply that called `calls` of the server `flood` in turn: state and text.
async fn call_in_turn(toolkit: Toolkit, calls: &[&str]) -> Vec<(ToolResultState, String)> {
    let mut script: Vec<_> = calls
        .iter()
        .enumerate()
        .map(|(i, name)| ScriptedResponse::tool_call(format!("c{i}"), format!("mcp__flood__{name}"), "{}"))
        .collect();
    script.push(ScriptedResponse::text("done"));
    let model = ScriptedModel::new("m", script);
    let agent = agent(toolkit, &model);
    agent.reply(Msg::user("u", "flood")).await.unwrap();
    model
        .requests()
        .last()
        .unwrap()
        .messages
        .last()
        .unwrap()
        .tool_results()
        .map(|r| (r.state, r.output.text_content().unwrap_or_default()))
        .collect()
}

/// An HTTP server whose answers never end (as JSON, with or without their length, as one event
/// of a stream, as an error page, on its own event stream): each call fails once the answer
/// passes `max_message_bytes`, at once, with an error that names the limit (an error page with
/// its status), and the agent reads no more than that. The connection stays usable: an answer
/// that comes whole before an endless event is taken, a later call is answered, and the
/// server's own stream is not opened again and again.
#[tokio::test]
async fn an_http_answer_past_the_limit_fails_its_call_and_is_not_read_whole() {
    let Some(env) = env() else { return };
    let limit = 1 << 20;
    let (_process, server, client) =
        flood_client(&env, |s| s.max_message_bytes(limit).timeout(Duration::from_secs(20))).await;
    assert_eq!(client.list_tools().await.unwrap().len(), 12);
    let mut toolkit = Toolkit::new();
    toolkit.add_mcp_client(client.clone(), &server).await.unwrap();
    // Time for the server's own stream (opened after connecting) to pass the limit, and, were
    // it opened again at once, to be opened many times.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let calls = [
        "flood_json",
        "flood_len",
        "flood_sse",
        "answer_then_flood",
        "err500",
        "echo",
        "gets",
        "not_the_answer",
        "server_error",
        "other_answer",
    ];
    let started = std::time::Instant::now();
    let region = stats_alloc::Region::new(ALLOCATOR);
    let results = call_in_turn(toolkit, &calls).await;
    let allocated = region.change().bytes_allocated;
    assert_eq!(results.len(), calls.len());
    for (state, text) in &results[..3] {
        assert_eq!(*state, ToolResultState::Error, "{text}");
        assert!(
            text.contains(&format!("longer than {limit} bytes")) && text.contains("max_message_bytes"),
            "{text}"
        );
    }
    assert_eq!(results[3], (ToolResultState::Success, "the answer".to_owned()));
    assert_eq!(results[4].0, ToolResultState::Error);
    assert!(results[4].1.contains("HTTP 500"), "{}", results[4].1);
    assert_eq!(results[5], (ToolResultState::Success, "echoed".to_owned()));
    let gets: usize = results[6].1.parse().unwrap();
    assert!(gets <= 2, "the server's own stream was opened {gets} times");
    // An answer that is no answer, or an error under another id, fails the call at once.
    assert_eq!(results[7].0, ToolResultState::Error);
    assert!(
        results[7].1.contains("answered the request with another message"),
        "{}",
        results[7].1
    );
    assert_eq!(results[8].0, ToolResultState::Error);
    assert!(results[8].1.contains("the server broke"), "{}", results[8].1);
    assert_eq!(results[9].0, ToolResultState::Error);
    assert!(results[9].1.contains("answer to another request"), "{}", results[9].1);
    // Failed as soon as the limit was passed, not at the call's timeout; and the three floods
    // (200 MiB each) were not read: this test's process allocated a few times the limit.
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    assert!(allocated < 64 << 20, "{allocated} bytes allocated");
}

/// A JSON answer that comes a byte at a time fails its call at the call's timeout, and holds
/// back no other call: the answer is read off the transport's worker, which sends every
/// request in turn; and the cancel sent for the call, which this server answers only after
/// 30 s, is not waited for.
#[tokio::test]
async fn a_slow_http_answer_holds_back_no_other_call() {
    let Some(env) = env() else { return };
    let (_process, server, client) = flood_client(&env, |s| s.timeout(Duration::from_secs(2))).await;
    let mut toolkit = Toolkit::new();
    toolkit.add_mcp_client(client, &server).await.unwrap();
    let started = std::time::Instant::now();
    let results = tokio::time::timeout(Duration::from_secs(30), call_in_turn(toolkit, &["slow_json", "echo"]))
        .await
        .expect("the calls end");
    assert_eq!(results[0].0, ToolResultState::Error, "{}", results[0].1);
    assert_eq!(results[1], (ToolResultState::Success, "echoed".to_owned()));
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
}

/// A call whose answer's headers come late (a server that answers JSON only once its result is
/// ready) holds back no other call: after a moment, the answer is awaited off the transport's
/// worker, which sends every request in turn.
#[tokio::test]
async fn a_late_http_answer_holds_back_no_other_call() {
    let Some(env) = env() else { return };
    let (_process, server, client) = flood_client(&env, |s| s.timeout(Duration::from_secs(3))).await;
    let (mut late, mut echo) = (Toolkit::new(), Toolkit::new());
    late.add_mcp_client(client.clone(), &server).await.unwrap();
    echo.add_mcp_client(client, &server).await.unwrap();
    let started = std::time::Instant::now();
    let late = call_in_turn(late, &["late"]);
    let echo = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let results = call_in_turn(echo, &["echo"]).await;
        (results, started.elapsed())
    };
    let (late, (echo, echoed_after)) =
        tokio::time::timeout(Duration::from_secs(30), futures_util::future::join(late, echo))
            .await
            .expect("both calls end");
    assert_eq!(echo, [(ToolResultState::Success, "echoed".to_owned())]);
    assert!(
        echoed_after < Duration::from_secs(3),
        "the echo waited {echoed_after:?}"
    );
    assert_eq!(late[0].0, ToolResultState::Error, "{}", late[0].1);
}

/// A server whose answer to `initialize` is an endless event: connecting fails, naming the
/// limit.
#[tokio::test]
async fn connecting_to_an_http_server_whose_first_answer_never_ends_names_the_limit() {
    use towerscope_agent::mcp::McpClient;
    let Some(env) = env() else { return };
    let (_server, url) = endless_http(&env, &["flood_init"]).await;
    let limit = 1 << 20;
    let server = McpServer::http("flood", url)
        .max_message_bytes(limit)
        .connect_timeout(Duration::from_secs(20));
    let err = McpClient::connect(&server).await.unwrap_err().to_string();
    assert!(err.contains(&format!("longer than {limit} bytes")), "{err}");
}

/// No argument.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

/// A server tool whose name is taken (here by a local tool) is not added: the local tool stays,
/// and the server's tool is listed as clashing (it replaced the local one, which moved into the
/// server's group).
#[tokio::test]
async fn a_server_tool_whose_name_is_taken_is_not_added() {
    let Some(env) = env() else { return };
    let mut toolkit = Toolkit::new();
    toolkit.add(towerscope_agent::toolkit::FunctionTool::new(
        "mcp__py__echo",
        |_: Nothing| async { "local".to_owned() },
    ));
    let added = toolkit.add_mcp_server(stdio(&env)).await.unwrap();
    assert_eq!(added.clashing, ["echo"]);
    assert!(!added.tools.iter().any(|t| t == "mcp__py__echo"), "{:?}", added.tools);
    assert!(added.tools.iter().any(|t| t == "mcp__py__add"));
    let local = toolkit.get("mcp__py__echo").unwrap();
    let properties = local
        .input_schema()
        .get("properties")
        .and_then(|p| p.as_object())
        .map(|p| p.len());
    assert!(
        properties.unwrap_or(0) == 0,
        "the local tool (no argument) stays: {}",
        local.input_schema()
    );

    // The same server added again (a new connection) replaces its own tools.
    let again = toolkit.add_mcp_server(stdio(&env)).await.unwrap();
    assert_eq!(again.clashing, ["echo"], "the local tool's name is still taken");
    assert_eq!(again.tools, added.tools);
}
