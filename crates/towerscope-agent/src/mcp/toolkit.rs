//! [`Toolkit::add_mcp_server`]: a server's tools as one tool group.

use towerscope_core::AgentError;

use super::{McpClient, McpServer, McpTool, McpTools};
use crate::toolkit::{AddToolError, ToolGroup, Toolkit};

impl Toolkit {
    /// Connects to an MCP server (feature `mcp`) and adds its tools to a group named after it
    /// (see the [`mcp`](crate::mcp) module), those of [`McpServer::enable_tools`] only and
    /// without those of [`McpServer::disable_tools`]. Tools whose input schema cannot be
    /// enforced are not added: they are listed in [`McpTools::refused`].
    pub async fn add_mcp_server(&mut self, server: McpServer) -> Result<McpTools, AgentError> {
        server.check_tool_filters()?;
        let client = McpClient::connect(&server).await?;
        self.add_mcp_client(client, &server).await
    }

    /// Adds the tools of a connected server (see [`add_mcp_server`](Self::add_mcp_server)).
    pub async fn add_mcp_client(&mut self, client: McpClient, server: &McpServer) -> Result<McpTools, AgentError> {
        server.check_tool_filters()?;
        let mut listed = client.list_tools().await?;
        for name in server.enable_tools.iter().flatten() {
            if !listed.iter().any(|t| t.name == *name) {
                tracing::warn!(server = %server.name, tool = %name, "an enabled MCP tool is not on the server");
            }
        }
        listed.retain(|t| server.wants_tool(&t.name));
        // The server's instructions are cut: the group's description goes with every call.
        let description = server
            .description
            .clone()
            .or_else(|| {
                client
                    .instructions()
                    .map(|text| text.chars().take(MAX_INSTRUCTIONS).collect())
            })
            .unwrap_or_else(|| format!("Tools of the MCP server '{}'.", server.name));
        self.add_group(ToolGroup::new(server.name.clone(), description).with_active(server.active));
        let mut out = McpTools {
            group: server.name.clone(),
            tools: Vec::new(),
            refused: Vec::new(),
            clashing: Vec::new(),
            client: client.clone(),
        };
        let mut added_now = std::collections::HashSet::new();
        for listed_tool in &listed {
            let tool = McpTool::new(client.clone(), listed_tool);
            let name = crate::toolkit::Tool::name(&tool).to_owned();
            // Another server's tool, a local one, or this server's `a.b` beside `a_b`: the name
            // is taken, and replacing it would drop a tool the model may be using. The same
            // server added again (a new connection) replaces its own tools.
            let elsewhere = self.group_of(&name).is_some_and(|g| g.name != server.name);
            if elsewhere || !added_now.insert(name.clone()) {
                tracing::warn!(
                    server = %server.name,
                    tool = %name,
                    "an MCP tool was not added: its name is taken"
                );
                out.clashing.push(listed_tool.name.to_string());
                continue;
            }
            match self.add_to_group(&server.name, tool) {
                Ok(_) => out.tools.push(name),
                Err(AddToolError::Schema(e)) => {
                    tracing::warn!(error = %e, "an MCP tool was not added: its schema cannot be enforced");
                    out.refused.push(e);
                }
                Err(AddToolError::UnknownGroup(e)) => return Err(AgentError::State(e.to_string())),
            }
        }
        Ok(out)
    }
}

/// The most characters of a server's instructions kept as its group's description.
const MAX_INSTRUCTIONS: usize = 2_000;
