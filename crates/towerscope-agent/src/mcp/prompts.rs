//! Prompts of an MCP server: [`McpClient::list_prompts`] and [`McpClient::get_prompt`], which
//! renders one into towerscope messages.

use rmcp::model::{
    ClientRequest, GetPromptRequest, GetPromptRequestParams, ListPromptsRequest, Role as McpRole, ServerResult,
};
use serde_json::{Map, Value};
use towerscope_core::{AgentError, ContentBlock, Msg, Role};

use super::McpClient;

/// A prompt template a server offers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpPrompt {
    /// Its name, to [render](McpClient::get_prompt) it by.
    pub name: String,
    /// Its display title, if any.
    pub title: Option<String>,
    /// What it is for, if the server says.
    pub description: Option<String>,
    /// The arguments it takes.
    pub arguments: Vec<McpPromptArgument>,
}

/// An argument of a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpPromptArgument {
    /// Its name.
    pub name: String,
    /// What it means, if the server says.
    pub description: Option<String>,
    /// Whether the prompt needs it.
    pub required: bool,
}

/// A prompt the server rendered with its arguments.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpRenderedPrompt {
    /// The server's description of the result, if any.
    pub description: Option<String>,
    /// The messages, in order, each named after the server: text as text blocks, images and
    /// audio as data blocks, an embedded resource as its text or data, a resource link as its
    /// JSON. Ready for [`Agent::reply`](crate::Agent::reply) or [`Agent::observe`](crate::Agent::observe).
    pub messages: Vec<Msg>,
}

impl McpClient {
    /// The server's prompts (every page). A server without prompts answers with an error (it
    /// does not offer the capability), returned as [`AgentError::State`].
    pub async fn list_prompts(&self) -> Result<Vec<McpPrompt>, AgentError> {
        let listed = self
            .list(
                "listing prompts",
                |page| ClientRequest::ListPromptsRequest(ListPromptsRequest::with_param(page)),
                |listed| match listed {
                    ServerResult::ListPromptsResult(listed) => Some((listed.prompts, listed.next_cursor)),
                    _ => None,
                },
            )
            .await?;
        Ok(listed
            .into_iter()
            .map(|p| McpPrompt {
                name: p.name,
                title: p.title,
                description: p.description,
                arguments: p
                    .arguments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| McpPromptArgument {
                        name: a.name,
                        description: a.description,
                        required: a.required.unwrap_or(false),
                    })
                    .collect(),
            })
            .collect())
    }

    /// Renders the prompt `name` with `arguments` (MCP prompt arguments are strings). A missing
    /// required argument or an unknown prompt is the server's error, returned as
    /// [`AgentError::State`] with the server's message.
    pub async fn get_prompt<K, V>(
        &self,
        name: &str,
        arguments: impl IntoIterator<Item = (K, V)>,
    ) -> Result<McpRenderedPrompt, AgentError>
    where
        K: Into<String>,
        V: Into<String>,
    {
        let arguments: Map<String, Value> = arguments
            .into_iter()
            .map(|(k, v)| (k.into(), Value::String(v.into())))
            .collect();
        let mut params = GetPromptRequestParams::new(name);
        if !arguments.is_empty() {
            params = params.with_arguments(arguments);
        }
        let what = format!("rendering the prompt '{name}'");
        let rendered = match self
            .request(&what, ClientRequest::GetPromptRequest(GetPromptRequest::new(params)))
            .await?
        {
            ServerResult::GetPromptResult(rendered) => rendered,
            _ => return Err(self.unexpected(&what)),
        };
        let speaker = self.server();
        let messages = rendered
            .messages
            .into_iter()
            .map(|m| {
                let role = match m.role {
                    McpRole::User => Role::User,
                    McpRole::Assistant => Role::Assistant,
                };
                let content = super::tool::content_block(m.content)
                    .into_iter()
                    .map(ContentBlock::from)
                    .collect();
                Msg::new(speaker, role, content).map_err(|e| {
                    AgentError::State(format!(
                        "MCP server '{speaker}': the prompt '{name}' holds a message towerscope cannot take: {e}"
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(McpRenderedPrompt {
            description: rendered.description,
            messages,
        })
    }
}
