//! Tools, resources and prompts of Model Context Protocol servers (feature `mcp`), through the
//! official Rust SDK (`rmcp`).
//!
//! [`McpServer`] says how to reach a server: a child process speaking over stdio, or a
//! streamable-HTTP endpoint. [`Toolkit::add_mcp_server`](crate::toolkit::Toolkit::add_mcp_server)
//! connects, lists the server's tools and adds them to a tool group named after the server, so
//! the model activates a server's tools together with `reset_tools` (or the group starts
//! active, with [`McpServer::active`]). Each tool is named `mcp__{server}__{tool}` as in the
//! reference (characters other than letters, digits, `_` and `-` become `_`).
//!
//! - **Timeouts**: a request fails with
//!   [`AgentError::Timeout`](towerscope_core::AgentError::Timeout), naming the server and the
//!   request, once the server has said nothing about it for [`McpServer::timeout()`]
//!   ([`DEFAULT_TIMEOUT`], a minute, unless set): each progress notification starts the wait
//!   again, so a long tool call that reports progress runs to its end while a server that went
//!   silent fails it. [`McpServer::total_timeout()`] caps a request's whole time, progress or
//!   not. Connecting has [`DEFAULT_CONNECT_TIMEOUT`] (five minutes: a first `npx` or `uvx` run
//!   downloads the server), or the timeout the server was given. A timed-out tool call becomes
//!   an error result.
//! - **Calls**: arguments are validated against the server's schema like any tool's; the
//!   result's text becomes text blocks, images and audio data blocks, other content its JSON.
//!   A result the server marks as an error, and a failed call
//!   (`Error occurred when calling MCP tool: …`), become error results. A request given up
//!   before its answer (a reply interrupted, a tool's stream dropped, a timeout) is cancelled
//!   on the server with `notifications/cancelled`, and what the server still reports about it
//!   is discarded.
//! - **Progress**: each call carries a progress token; the server's progress notifications
//!   arrive as tool chunks whose metadata has `mcp_progress`, which the agent turns into the
//!   `mcp_progress` custom event.
//! - **Permissions and batching**: MCP tools are concurrency-unsafe, as in the reference; the
//!   server's annotations make a tool read-only (`readOnlyHint`) or destructive
//!   (`destructiveHint`, true by default for a tool that is not read-only, as the MCP
//!   specification says).
//! - **Which tools**: all of them, or those of [`McpServer::enable_tools`], without those of
//!   [`McpServer::disable_tools`] (the reference's `enable_tools` and `disable_tools`).
//! - **Schemas the validator cannot enforce**: such a tool is not added (the toolkit never
//!   validates less than a schema says); [`McpTools::refused`] names it and why, and the
//!   server's other tools are added.
//! - **Lifetime**: the connection lives as long as the toolkit holds one of the server's
//!   tools; dropping the toolkit closes it (a stdio server's process is ended).
//! - **HTTPS**: `https://` servers are reached through rustls with the `ring` provider, the
//!   model providers' stack, trusting the system's roots and any
//!   [`root_certificate`](McpServer::root_certificate); [`header`](McpServer::header) and
//!   [`bearer`](McpServer::bearer) go with every request (never into logs or `Debug`).
//! - **Resources and prompts** are for the application, on the [`McpClient`] (also
//!   [`McpTools::client`], the toolkit's connection): [`list_resources`](McpClient::list_resources),
//!   [`list_resource_templates`](McpClient::list_resource_templates) and
//!   [`read_resource`](McpClient::read_resource) give text and data blocks;
//!   [`list_prompts`](McpClient::list_prompts) and [`get_prompt`](McpClient::get_prompt) render a
//!   prompt with its arguments into messages an agent takes. They are not offered to the model
//!   as tools (nor are they in the reference, whose client has tools only).
//!
//! # Example
//!
//! ```no_run
//! use towerscope_agent::mcp::McpServer;
//! use towerscope_agent::toolkit::Toolkit;
//!
//! # async fn run() -> Result<(), towerscope_core::AgentError> {
//! let mut toolkit = Toolkit::new();
//! let server = McpServer::http("docs", "https://mcp.example.com/mcp").bearer("my-token").header("X-Tenant", "acme");
//! let added = toolkit.add_mcp_server(server.active(true)).await?;
//! println!("{:?}", added.tools);
//! // The same connection reads the server's resources and renders its prompts.
//! for resource in added.client.list_resources().await? {
//!     let parts = added.client.read_resource(&resource.uri).await?;
//!     println!("{}: {} parts", resource.uri, parts.len());
//! }
//! let review = added.client.get_prompt("review", [("code", "fn main() {}")]).await?;
//! println!("{:?}", review.messages);
//! # Ok(()) }
//! ```

mod client;
mod http;
#[cfg(test)]
#[path = "../../tests/mcp_shell/mod.rs"]
mod mcp_shell;
mod progress;
mod prompts;
mod resources;
mod server;
mod stdio;
mod tool;
mod toolkit;

pub use client::{MAX_PAGES, McpClient};
pub use prompts::{McpPrompt, McpPromptArgument, McpRenderedPrompt};
pub use resources::{McpResource, McpResourceContent, McpResourceTemplate};
pub use server::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_TIMEOUT, INHERITED_ENV, McpServer, McpTransport,
};
pub use tool::{MAX_DESCRIPTION, McpTool};

use crate::toolkit::ToolSchemaError;

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
    /// Tools not added because their name is taken (by a tool already in the toolkit, or an
    /// earlier tool of this server whose name reads the same once cleaned and cut): the
    /// server's own names.
    pub clashing: Vec<String>,
    /// The connection the tools use, for the server's resources and prompts
    /// ([`McpClient::read_resource`], [`McpClient::get_prompt`]).
    pub client: McpClient,
}

/// The reference's tool name: `mcp__{server}__{tool}`, with every character other than an
/// ASCII letter, digit, `_` or `-` replaced by `_`, cut to [`MAX_TOOL_NAME`] characters (the
/// providers refuse longer names, and with them every request).
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
    let mut name = format!("mcp__{}__{}", clean(server), clean(tool));
    // Every character is ASCII here: cutting at a byte is cutting at a character.
    name.truncate(MAX_TOOL_NAME);
    name
}

/// The longest tool name an MCP tool gets (the providers' limit).
pub const MAX_TOOL_NAME: usize = 64;

#[cfg(test)]
mod tests {
    #[test]
    fn long_names_are_cut_to_what_providers_take() {
        let name = super::tool_name("server", &"x".repeat(100));
        assert_eq!(name.len(), super::MAX_TOOL_NAME);
        assert!(name.starts_with("mcp__server__xxx"));
        assert_eq!(super::tool_name("s", "读取"), "mcp__s____", "non-ASCII reads `_`");
    }

    #[test]
    fn names_follow_the_reference() {
        assert_eq!(
            super::tool_name("my server", "get.weather"),
            "mcp__my_server__get_weather"
        );
    }
}
