//! MCP over `https://` against a real server on loopback (tests/mcp/server.py under uvicorn
//! with TLS, started by scripts/test.sh with a self-signed certificate and a bearer token it
//! makes): the certificate is trusted only when given, the bearer token and a custom header
//! reach the server, and a server that refuses the token fails the connection.
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used)]

mod mcp_env;

use towerscope_agent::mcp::{McpClient, McpServer};
use towerscope_agent::toolkit::Toolkit;
use towerscope_agent::{Agent, HintConfig};
use towerscope_core::{AgentError, Msg, PermissionMode, Role, ToolResultState};
use towerscope_models::{ScriptedModel, ScriptedResponse};

struct Tls {
    url: String,
    cert: String,
    bearer: String,
}

fn tls() -> Option<Tls> {
    let [url, cert_path, bearer] = mcp_env::vars([
        "TOWERSCOPE_MCP_HTTPS_URL",
        "TOWERSCOPE_MCP_TLS_CERT",
        "TOWERSCOPE_MCP_BEARER",
    ])?;
    let cert = std::fs::read_to_string(cert_path).unwrap();
    Some(Tls { url, cert, bearer })
}

#[tokio::test]
async fn the_bearer_token_and_headers_reach_a_tls_server_the_client_trusts() {
    let Some(tls) = tls() else { return };
    assert!(tls.url.starts_with("https://127.0.0.1:"));
    let server = McpServer::http("secure", &tls.url)
        .root_certificate(tls.cert.clone())
        .bearer(tls.bearer.clone())
        .header("X-Towerscope-Tenant", "acme")
        .active(true);
    let mut toolkit = Toolkit::new();
    let added = toolkit.add_mcp_server(server).await.unwrap();
    assert!(
        added.tools.contains(&"mcp__secure__headers".to_owned()),
        "{:?}",
        added.tools
    );

    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "mcp__secure__headers", "{}"),
            ScriptedResponse::text("done"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::disabled())
        .toolkit(toolkit)
        .permission_mode(PermissionMode::Bypass)
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "who am I?")).await.unwrap();
    let state = agent.state();
    let result = state
        .context
        .iter()
        .rfind(|m| m.role == Role::Assistant)
        .unwrap()
        .tool_results()
        .next()
        .cloned()
        .unwrap();
    assert_eq!(result.state, ToolResultState::Success);
    let seen: serde_json::Value = serde_json::from_str(&result.output.text_content().unwrap()).unwrap();
    assert_eq!(seen["authorization"], format!("Bearer {}", tls.bearer));
    assert_eq!(seen["x-towerscope-tenant"], "acme");

    // Resources and prompts go over the same TLS session.
    let read = added.client.read_resource("towerscope://notes/tls").await.unwrap();
    assert_eq!(read[0].uri, "towerscope://notes/tls");
}

#[tokio::test]
async fn an_untrusted_certificate_fails_the_connection() {
    let Some(tls) = tls() else { return };
    let server = McpServer::http("secure", &tls.url).bearer(tls.bearer);
    let err = McpClient::connect(&server).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, AgentError::State(_)), "{err:?}");
    assert!(text.contains("could not connect to the MCP server 'secure'"), "{text}");
}

#[tokio::test]
async fn a_missing_or_wrong_token_is_refused_by_the_server() {
    let Some(tls) = tls() else { return };
    for server in [
        McpServer::http("secure", &tls.url).root_certificate(tls.cert.clone()),
        McpServer::http("secure", &tls.url)
            .root_certificate(tls.cert.clone())
            .bearer("wrong"),
    ] {
        let err = McpClient::connect(&server).await.unwrap_err();
        assert!(
            err.to_string().contains("could not connect to the MCP server 'secure'"),
            "{err}"
        );
    }
}

#[tokio::test]
async fn bad_headers_and_certificates_are_validation_errors_that_quote_no_secret() {
    // No server needed: these fail before any request.
    let bad_name = McpServer::http("s", "https://127.0.0.1:1/mcp").header("bad header", "v");
    let err = McpClient::connect(&bad_name).await.unwrap_err();
    assert!(
        matches!(&err, AgentError::Validation(m) if m.contains("'bad header'")),
        "{err}"
    );

    let bad_value = McpServer::http("s", "https://127.0.0.1:1/mcp").header("X-Key", "secret\nvalue");
    let err = McpClient::connect(&bad_value).await.unwrap_err();
    assert!(
        matches!(&err, AgentError::Validation(m) if m.contains("'X-Key'") && !m.contains("secret")),
        "{err}"
    );

    let reserved = McpServer::http("s", "https://127.0.0.1:1/mcp").header("Mcp-Session-Id", "x");
    let err = McpClient::connect(&reserved).await.unwrap_err();
    assert!(
        matches!(&err, AgentError::Validation(m) if m.contains("set by the MCP transport")),
        "{err}"
    );

    let bad_pem = McpServer::http("s", "https://127.0.0.1:1/mcp").root_certificate("not a certificate");
    let err = McpClient::connect(&bad_pem).await.unwrap_err();
    assert!(
        matches!(&err, AgentError::Validation(m) if m.contains("root certificate")),
        "{err}"
    );

    let bad_scheme = McpServer::http("s", "ftp://127.0.0.1/mcp");
    let err = McpClient::connect(&bad_scheme).await.unwrap_err();
    assert!(
        matches!(&err, AgentError::Validation(m) if m.contains("neither http:// nor https://")),
        "{err}"
    );

    // A setting the transport has no use for is an error, not ignored.
    let stdio_with_token = McpServer::stdio("s", "p", ["a"]).bearer("t").header("X-Key", "v");
    let err = McpClient::connect(&stdio_with_token).await.unwrap_err();
    assert!(
        matches!(&err, AgentError::Validation(m) if m.contains("a stdio server, which has no use for bearer(), header()")),
        "{err}"
    );
    let http_with_env = McpServer::http("s", "https://127.0.0.1:1/mcp").env("K", "v");
    let err = McpClient::connect(&http_with_env).await.unwrap_err();
    assert!(
        matches!(&err, AgentError::Validation(m) if m.contains("no use for env()")),
        "{err}"
    );

    let shown = format!(
        "{:?}",
        McpServer::http("s", "https://h/mcp")
            .bearer("token-123")
            .header("X-Key", "key-456")
    );
    assert!(
        shown.contains("X-Key") && !shown.contains("key-456") && !shown.contains("token-123"),
        "{shown}"
    );
    let shown = format!("{:?}", McpServer::stdio("s", "p", ["a"]).env("API_KEY", "key-789"));
    assert!(shown.contains("API_KEY") && !shown.contains("key-789"), "{shown}");
}
