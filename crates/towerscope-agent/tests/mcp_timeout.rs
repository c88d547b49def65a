//! MCP servers that do not answer: connecting, listing, reading and rendering fail once the
//! server's timeout passes, with a timeout error that names the server, instead of hanging the
//! agent. The servers are shell one-liners (`sh`, `sleep`), so these tests need no MCP setup.
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used)]

mod mcp_shell;

use std::time::Duration;

use mcp_shell::goes_quiet;

use towerscope_agent::mcp::{DEFAULT_TIMEOUT, McpClient, McpServer};
use towerscope_agent::toolkit::Toolkit;
use towerscope_core::AgentError;

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

#[test]
fn requests_have_a_finite_timeout_unless_told_otherwise() {
    assert_eq!(DEFAULT_TIMEOUT, Duration::from_secs(60));
    let server = McpServer::http("docs", "http://127.0.0.1:1/mcp");
    assert_eq!(server.timeout, Some(DEFAULT_TIMEOUT));
    let server = McpServer::stdio("local", "server", ["--stdio"]).no_timeout();
    assert_eq!(server.timeout, None);
}
