//! MCP servers that do not answer: connecting, listing, reading and rendering fail once the
//! server's timeout passes, with a timeout error that names the server, instead of hanging the
//! agent; and servers that take long but keep reporting progress, whose calls run to their end
//! (or to their total timeout). The servers are shell one-liners (`sh`, `sleep`), so these tests
//! need no MCP setup.
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used)]

mod mcp_shell;

use std::time::Duration;

use futures_util::StreamExt;
use mcp_shell::{
    answers_calls_with, answers_calls_with_a_null_id_error, describes_and_answers, goes_quiet,
    goes_quiet_telling_its_pid, reports_progress, tells_its_environment,
};
use towerscope_agent::mcp::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT, McpClient, McpServer};
use towerscope_agent::toolkit::{ToolError, Toolkit};
use towerscope_core::tool::MCP_PROGRESS_KEY;
use towerscope_core::{AgentError, MediaBlock, ToolChunk, ToolResultState};

/// Longer than any of these tests takes when the timeouts work.
const HANG: Duration = Duration::from_secs(10);

/// Asserts `err` is a timeout after `after` that names the server and what was asked.
fn assert_timed_out(err: &AgentError, server: &str, what: &str, after: Duration) {
    assert!(
        matches!(err, AgentError::Timeout { after: Some(a), .. } if *a == after),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&format!("MCP server '{server}'")) && text.contains(what),
        "{text}"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_fails_the_connection_after_the_timeout() {
    let after = Duration::from_millis(200);
    let server = McpServer::stdio("mute", "sleep", ["60"]).timeout(after);
    let mut toolkit = Toolkit::new();
    let added = tokio::time::timeout(HANG, toolkit.add_mcp_server(server)).await;
    let err = added.expect("connecting gives up by itself").unwrap_err();
    assert_timed_out(&err, "mute", "initialising the session", after);
}

#[tokio::test]
async fn a_server_that_goes_quiet_fails_each_request_after_the_timeout() {
    // Long enough for starting `sh` and the handshake on a loaded machine (the timeout bounds
    // them too), short of HANG, which proves the requests gave up by themselves.
    let after = Duration::from_secs(2);
    let server = goes_quiet().timeout(after);
    let mut toolkit = Toolkit::new();
    let added = tokio::time::timeout(HANG, toolkit.add_mcp_server(server.clone())).await;
    let err = added.expect("listing the tools gives up by itself").unwrap_err();
    assert_timed_out(&err, "quiet", "listing tools", after);

    let requests = async {
        let client = McpClient::connect(&server)
            .await
            .expect("the quiet server answers the initialisation");
        // At once, so that together they take one timeout, not five.
        let (prompts, resources, templates, read, rendered) = tokio::join!(
            client.list_prompts(),
            client.list_resources(),
            client.list_resource_templates(),
            client.read_resource("x://y"),
            client.get_prompt("p", [("k", "v")]),
        );
        [
            ("listing prompts", prompts.err()),
            ("listing resources", resources.err()),
            ("listing resource templates", templates.err()),
            ("reading the resource 'x://y'", read.err()),
            ("rendering the prompt 'p'", rendered.err()),
        ]
    };
    let failures = tokio::time::timeout(HANG, requests)
        .await
        .expect("every request gives up by itself");
    for (what, err) in failures {
        let err = err.unwrap_or_else(|| panic!("{what} succeeded against a quiet server"));
        assert_timed_out(&err, "quiet", what, after);
    }
}

/// What calling the one tool of `server` gave, chunk by chunk (within HANG).
async fn call_the_tool(server: McpServer) -> Vec<Result<ToolChunk, ToolError>> {
    let mut toolkit = Toolkit::new();
    let added = toolkit.add_mcp_server(server).await.unwrap();
    let tool = toolkit.get(&added.tools[0]).unwrap();
    tokio::time::timeout(HANG, tool.call(serde_json::json!({})).collect())
        .await
        .expect("the call ends by itself")
}

/// A stdio server that could not read a call answers with an error of id `null`, as JSON-RPC
/// asks: it answers the one call waiting, whose result carries the server's message, instead of
/// the call waiting for its timeout (for ever, here, with none).
#[tokio::test]
async fn a_null_id_error_answers_the_only_call_waiting_with_the_servers_message() {
    let server = answers_calls_with_a_null_id_error("Invalid request: arguments too large").no_timeout();
    let items = call_the_tool(server).await;
    let Some(Err(error)) = items.last() else {
        panic!("the call fails: {items:?}")
    };
    assert!(
        error.message().contains("Invalid request: arguments too large"),
        "{}",
        error.message()
    );
}

/// The timeout bounds the server's silence, not the call: a tool that works for three seconds,
/// reporting progress every 100 ms, outlives a timeout of two.
#[tokio::test]
async fn a_tool_that_keeps_reporting_progress_outlives_the_timeout() {
    let server = reports_progress(30, Duration::from_millis(100)).timeout(Duration::from_secs(2));
    let chunks = call_the_tool(server).await;
    let (result, progress) = chunks.split_last().unwrap();
    let result = result.as_ref().expect("the call succeeds");
    assert_eq!(result.state, ToolResultState::Success);
    let text: Vec<&str> = result
        .content
        .iter()
        .map(|b| match b {
            MediaBlock::Text(t) => t.text.as_str(),
            other => panic!("not text: {other:?}"),
        })
        .collect();
    assert_eq!(text, ["done"]);
    let steps: Vec<f64> = progress
        .iter()
        .map(|c| {
            c.as_ref().unwrap().metadata[MCP_PROGRESS_KEY]["progress"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(
        steps,
        (1..=30).map(f64::from).collect::<Vec<_>>(),
        "every step, in order"
    );
}

/// A total timeout caps the call however often the server reports progress.
#[tokio::test]
async fn a_total_timeout_caps_a_call_that_keeps_reporting_progress() {
    let server = reports_progress(50, Duration::from_millis(100))
        .timeout(Duration::from_secs(2))
        .total_timeout(Duration::from_secs(3));
    let chunks = call_the_tool(server).await;
    let err = chunks.last().unwrap().as_ref().expect_err("the call is cut short");
    let text = err.to_string();
    assert!(
        text.contains("MCP server 'worker': calling 'work' timed out") && text.contains("within 3s"),
        "{text}"
    );
}

#[test]
fn requests_have_a_finite_timeout_unless_told_otherwise() {
    assert_eq!(DEFAULT_TIMEOUT, Duration::from_secs(60));
    assert_eq!(DEFAULT_CONNECT_TIMEOUT, Duration::from_secs(300));
    let server = McpServer::http("docs", "http://127.0.0.1:1/mcp");
    assert_eq!(server.timeout, Some(DEFAULT_TIMEOUT));
    assert_eq!(server.connect_timeout, Some(DEFAULT_CONNECT_TIMEOUT));
    assert_eq!(server.total_timeout, None);
    let server = McpServer::stdio("local", "server", ["--stdio"]).no_timeout();
    assert_eq!((server.timeout, server.connect_timeout), (None, None));
}

/// A timeout set on the server bounds connecting too; a connect timeout, set before or after
/// it, bounds connecting alone.
#[test]
fn connecting_waits_five_minutes_unless_a_timeout_is_set() {
    let (s, m) = (Duration::from_secs(1), Duration::from_secs(60));
    let server = McpServer::stdio("local", "server", ["--stdio"]);
    assert_eq!(server.clone().timeout(s).connect_timeout, Some(s));
    assert_eq!(server.clone().connect_timeout(m).timeout(s).connect_timeout, Some(m));
    assert_eq!(server.clone().timeout(s).connect_timeout(m).connect_timeout, Some(m));
    let server = server.connect_timeout(m).no_timeout();
    assert_eq!((server.timeout, server.connect_timeout), (None, Some(m)));
}

/// Whether process `pid` is gone (or a zombie: killed, not yet reaped).
#[cfg(target_os = "linux")]
fn gone(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'))
    })
}

/// A server that stops reading its input while a message larger than the pipe is written to
/// it: the request fails after the server's timeout, later requests fail at once, and the
/// process is killed when the client is dropped. Before, the SDK's writer stayed held by the
/// write that never ended: the request never failed, every later one waited behind it, and
/// the process outlived the client.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_server_that_stops_reading_fails_the_requests_and_is_killed_when_dropped() {
    let pid_file = std::env::temp_dir().join(format!("towerscope-mcp-quiet-{}.pid", std::process::id()));
    let server = goes_quiet_telling_its_pid(&pid_file).timeout(Duration::from_secs(1));
    let client = tokio::time::timeout(HANG, McpClient::connect(&server))
        .await
        .expect("connecting ends")
        .expect("the server answers the initialisation");
    let huge = "x".repeat(1 << 20);
    let first = tokio::time::timeout(HANG, client.get_prompt("p", [("k", huge.as_str())]))
        .await
        .expect("the request stuck in its write gives up by itself");
    assert!(first.is_err());
    let second = tokio::time::timeout(HANG, client.list_prompts())
        .await
        .expect("a later request does not wait behind the stuck write");
    assert!(second.is_err());
    let pid = std::fs::read_to_string(&pid_file).unwrap().trim().to_owned();
    assert!(!gone(&pid), "the server runs until the client is dropped");
    drop(client);
    let deadline = std::time::Instant::now() + HANG;
    while !gone(&pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "the server {pid} outlived its client"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = std::fs::remove_file(pid_file);
}

/// A stdio server inherits only the few variables the MCP SDKs pass (`PATH`, `HOME`, ...) and
/// those it is given: not the agent's whole environment, which holds its API keys, unless it
/// asks for it (`inherit_env`). Cargo sets `CARGO_MANIFEST_DIR` for this test process.
#[cfg(unix)]
#[tokio::test]
async fn a_stdio_server_gets_only_the_safe_variables_and_its_own_unless_told_to_inherit() {
    let names = ["PATH", "CARGO_MANIFEST_DIR", "GIVEN"];
    let seen = |path: &std::path::Path| std::fs::read_to_string(path).unwrap();
    let dir = std::env::temp_dir();
    let mine = env!("CARGO_MANIFEST_DIR");
    let path = std::env::var("PATH").unwrap();

    let plain = dir.join(format!("towerscope-mcp-env-{}.txt", std::process::id()));
    let server = tells_its_environment(&plain, &names).env("GIVEN", "yes");
    drop(
        tokio::time::timeout(HANG, McpClient::connect(&server))
            .await
            .unwrap()
            .unwrap(),
    );
    assert_eq!(seen(&plain), format!("PATH={path}\nCARGO_MANIFEST_DIR=\nGIVEN=yes\n"));

    let all = dir.join(format!("towerscope-mcp-env-all-{}.txt", std::process::id()));
    let server = tells_its_environment(&all, &names).inherit_env();
    drop(
        tokio::time::timeout(HANG, McpClient::connect(&server))
            .await
            .unwrap()
            .unwrap(),
    );
    assert_eq!(seen(&all), format!("PATH={path}\nCARGO_MANIFEST_DIR={mine}\nGIVEN=\n"));
    let _ = std::fs::remove_file(plain);
    let _ = std::fs::remove_file(all);
}

/// A tool result holding an embedded resource reaches the model as the resource's data (an
/// image), not as its JSON with the base64 inside; one holding a block of a type the SDK does
/// not know keeps its other blocks, the unknown one as its JSON text, and its error flag. Before,
/// the unknown block lost the whole result ("another kind of result").
#[tokio::test]
async fn a_results_embedded_resource_is_its_data_and_an_unknown_block_loses_nothing() {
    let blocks = |server: McpServer| async {
        let chunks = call_the_tool(server).await;
        let last = chunks
            .last()
            .unwrap()
            .as_ref()
            .expect("the call gives a result")
            .clone();
        (last.state, last.content)
    };
    let embedded = r#"{"content":[{"type":"text","text":"the chart"},{"type":"resource","resource":{"uri":"file:///chart.png","mimeType":"image/png","blob":"iVBORw0KGgo="}}]}"#;
    let (state, content) = blocks(answers_calls_with(embedded)).await;
    assert_eq!(state, ToolResultState::Success);
    assert!(
        matches!(&content[0], MediaBlock::Text(t) if t.text == "the chart"),
        "{content:?}"
    );
    match &content[1] {
        MediaBlock::Data(d) => assert_eq!(d.source.media_type(), "image/png"),
        other => panic!("not data: {other:?}"),
    }

    let unknown = r#"{"content":[{"type":"text","text":"important data"},{"type":"video","data":"AAAA","mimeType":"video/mp4"}],"isError":true}"#;
    let (state, content) = blocks(answers_calls_with(unknown)).await;
    assert_eq!(state, ToolResultState::Error, "the error flag is kept");
    assert!(
        matches!(&content[0], MediaBlock::Text(t) if t.text == "important data"),
        "{content:?}"
    );
    assert!(
        matches!(&content[1], MediaBlock::Text(t) if t.text.contains(r#""type":"video""#)),
        "{content:?}"
    );
    assert!(
        matches!(&content[1], MediaBlock::Text(t) if !t.text.contains("AAAA")),
        "its data as its size"
    );

    // An image of a type providers refuse (SVG), or whose data is not base64, is named: stored
    // as data, it would fail every later model call.
    let refused = r#"{"content":[{"type":"image","data":"PHN2Zz48L3N2Zz4=","mimeType":"image/svg+xml"},{"type":"image","data":"not base64 at all!!","mimeType":"image/png"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}"#;
    let (_, content) = blocks(answers_calls_with(refused)).await;
    assert!(
        matches!(&content[0], MediaBlock::Text(t) if t.text == "[an image of type image/svg+xml, 16 bytes of base64, which the model cannot read]"),
        "{content:?}"
    );
    assert!(
        matches!(&content[1], MediaBlock::Text(t) if t.text == "[an image of type image/png whose 19 bytes of data are not base64]"),
        "{content:?}"
    );
    assert!(matches!(&content[2], MediaBlock::Data(_)), "{content:?}");

    // Data no provider takes is named, not stored as data every later model call would fail on;
    // an embedded text resource comes after a line naming it.
    let other = r#"{"content":[{"type":"resource","resource":{"uri":"file:///a.zip","mimeType":"application/zip","blob":"UEsDBA=="}},{"type":"resource","resource":{"uri":"file:///notes.txt","text":"the notes"}}]}"#;
    let (_, content) = blocks(answers_calls_with(other)).await;
    let texts: Vec<&str> = content
        .iter()
        .map(|b| match b {
            MediaBlock::Text(t) => t.text.as_str(),
            other => panic!("not text: {other:?}"),
        })
        .collect();
    assert_eq!(
        texts,
        [
            "[the resource file:///a.zip of type application/zip, 8 bytes of base64, which the model cannot read]",
            "[resource file:///notes.txt]",
            "the notes"
        ]
    );
}

/// A tool's description goes with every model request: a server's is cut to
/// `MAX_DESCRIPTION` characters (a 20,000-character one was sent whole).
#[tokio::test]
async fn a_servers_long_tool_description_is_cut() {
    let mut toolkit = Toolkit::new();
    let server = describes_and_answers(&"x".repeat(20_000), r#"{"content":[]}"#);
    let added = toolkit.add_mcp_server(server).await.unwrap();
    let tool = toolkit.get(&added.tools[0]).unwrap();
    assert_eq!(tool.description().len(), towerscope_agent::mcp::MAX_DESCRIPTION);
}
