//! MCP servers written as `sh` one-liners, for tests of what a server does wrong or slowly (goes
//! quiet, takes its time): they need nothing installed. Shared by the `mcp` module's unit tests
//! (through `#[path]`) and the integration tests (`mod mcp_shell;`); the parent module has
//! `McpServer` in scope, as `crate::mcp` and a test that uses `towerscope_agent::mcp::McpServer`
//! both do.
#![allow(dead_code, unreachable_pub)]

use super::McpServer;

/// The answer to the SDK's first request, the initialisation (id 0): a server with tools,
/// prompts and resources.
const INITIALISED: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{"tools":{},"prompts":{},"resources":{}},"serverInfo":{"name":"shell","version":"0"}}}"#;

/// A server that answers the initialisation and then reads nothing more and never answers.
pub fn goes_quiet() -> McpServer {
    let script = format!("read -r _; printf '%s\\n' '{INITIALISED}'; exec sleep 60");
    McpServer::stdio("quiet", "sh", ["-c".to_owned(), script])
}
