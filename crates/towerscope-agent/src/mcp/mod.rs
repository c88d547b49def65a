//! Tools of Model Context Protocol servers (feature `mcp`), through the official Rust SDK
//! (`rmcp`).
//!
//! [`McpServer`] says how to reach a server: a child process speaking over stdio, or a
//! streamable-HTTP endpoint. [`Toolkit::add_mcp_server`](crate::toolkit::Toolkit::add_mcp_server)
//! connects, lists the server's tools and adds them to a tool group named after the server, so
//! the model activates a server's tools together with `reset_tools` (or the group starts
//! active, with [`McpServer::active`]). Each tool is named `mcp__{server}__{tool}` as in the
//! reference (characters other than letters, digits, `_` and `-` become `_`).
//!
//! - **Calls**: arguments are validated against the server's schema like any tool's; the
//!   result's text becomes text blocks, images and audio data blocks, other content its JSON.
//!   A result the server marks as an error, and a failed call
//!   (`Error occurred when calling MCP tool: …`), become error results.
//! - **Progress**: each call carries a progress token; the server's progress notifications
//!   arrive as tool chunks whose metadata has `mcp_progress`, which the agent turns into the
//!   `mcp_progress` custom event.
//! - **Permissions and batching**: MCP tools are concurrency-unsafe, as in the reference; the
//!   server's annotations make a tool read-only (`readOnlyHint`) or destructive
//!   (`destructiveHint`, true by default for a tool that is not read-only, as the MCP
//!   specification says).
//! - **Schemas the validator cannot enforce**: such a tool is not added (the toolkit never
//!   validates less than a schema says); [`McpTools::refused`] names it and why, and the
//!   server's other tools are added.
//! - **Lifetime**: the connection lives as long as the toolkit holds one of the server's
//!   tools; dropping the toolkit closes it (a stdio server's process is ended).
//! - **HTTP without TLS**: the streamable-HTTP client is built without a TLS stack (no
//!   `rustls`, `ring` or OpenSSL in the build); reach remote `https://` servers through a local
//!   proxy, or run them over stdio.
//!
//! # Example
//!
//! ```no_run
//! use towerscope_agent::mcp::McpServer;
//! use towerscope_agent::toolkit::Toolkit;
//!
//! # async fn run() -> Result<(), towerscope_core::AgentError> {
//! let mut toolkit = Toolkit::new();
//! let server = McpServer::stdio("everything", "npx", ["-y", "@modelcontextprotocol/server-everything"]);
//! let added = toolkit.add_mcp_server(server.active(true)).await?;
//! println!("{:?}", added.tools);
//! # Ok(()) }
//! ```

mod client;
mod tool;
mod toolkit;

use std::collections::BTreeMap;
use std::time::Duration;

pub use client::McpClient;
pub use tool::McpTool;

use crate::toolkit::ToolSchemaError;

/// How to reach an MCP server, and how its tools join a toolkit.
#[derive(Debug, Clone)]
pub struct McpServer {
    /// The server's name: the tools' prefix and the name of their group.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// The group's description, for `reset_tools` (default: the server's instructions, or
    /// "Tools of the MCP server '{name}'.").
    pub description: Option<String>,
    /// Whether the server's group is active from the start (default `false`).
    pub active: bool,
    /// How long a call may take before it fails (default: no limit).
    pub timeout: Option<Duration>,
}

/// How to reach an MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process speaking JSON-RPC over its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
    },
    /// A streamable-HTTP endpoint (`http://127.0.0.1:8000/mcp`).
    Http {
        /// The endpoint's URL.
        url: String,
    },
}

impl McpServer {
    /// A server started as a child process.
    pub fn stdio(
        name: impl Into<String>,
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self::new(
            name,
            McpTransport::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
            },
        )
    }

    /// A server reached over streamable HTTP.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(name, McpTransport::Http { url: url.into() })
    }

    fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        Self {
            name: name.into(),
            transport,
            description: None,
            active: false,
            timeout: None,
        }
    }

    /// Adds an environment variable of a stdio server.
    #[must_use]
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// Sets the group's description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets whether the group is active from the start.
    #[must_use]
    pub fn active(mut self, active: bool) -> Self {
        self.active = active;
        self
    }

    /// Sets how long a call may take.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// What [`Toolkit::add_mcp_server`](crate::toolkit::Toolkit::add_mcp_server) did.
#[derive(Debug)]
#[non_exhaustive]
pub struct McpTools {
    /// The group the tools were added to (the server's name).
    pub group: String,
    /// The names of the tools added.
    pub tools: Vec<String>,
    /// Tools not added, because the validator cannot enforce their input schema.
    pub refused: Vec<ToolSchemaError>,
}

/// The reference's tool name: `mcp__{server}__{tool}`, with every character other than an
/// ASCII letter, digit, `_` or `-` replaced by `_`.
///
/// ```
/// use towerscope_agent::mcp::{McpServer, McpTransport, tool_name};
///
/// assert_eq!(tool_name("files", "read.file"), "mcp__files__read_file");
/// let server = McpServer::http("files", "http://127.0.0.1:8000/mcp").active(true);
/// assert!(matches!(server.transport, McpTransport::Http { .. }));
/// ```
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("mcp__{}__{}", clean(server), clean(tool))
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_follow_the_reference() {
        assert_eq!(
            super::tool_name("my server", "get.weather"),
            "mcp__my_server__get_weather"
        );
    }
}
