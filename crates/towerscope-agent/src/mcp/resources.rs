//! Resources of an MCP server: [`McpClient::list_resources`],
//! [`McpClient::list_resource_templates`], [`McpClient::read_resource`].

use rmcp::model::{
    ClientRequest, ListResourceTemplatesRequest, ListResourcesRequest, ReadResourceRequest, ReadResourceRequestParams,
    ResourceContents, ServerResult,
};
use towerscope_core::{AgentError, DataBlock, MediaBlock, TextBlock};

use super::McpClient;

/// A resource a server lists: something the application can read by its URI (a file, a
/// database row, a page of documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpResource {
    /// The URI to read it by.
    pub uri: String,
    /// Its programmatic name.
    pub name: String,
    /// Its display title, if any.
    pub title: Option<String>,
    /// What it holds, if the server says.
    pub description: Option<String>,
    /// Its MIME type, if known.
    pub mime_type: Option<String>,
    /// Its size in bytes, if known.
    pub size: Option<u64>,
}

/// A family of resources whose URIs follow an RFC 6570 template (`file:///{path}`): fill the
/// template in and [`read`](McpClient::read_resource) the URI.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// Its programmatic name.
    pub name: String,
    /// Its display title, if any.
    pub title: Option<String>,
    /// What the resources hold, if the server says.
    pub description: Option<String>,
    /// The MIME type of every resource of the template, if uniform.
    pub mime_type: Option<String>,
}

/// One part of a resource that was read: text as a text block, binary content as a base64
/// data block (`application/octet-stream` when the server names no type).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpResourceContent {
    /// The URI of this part (a read may return several, as a directory does).
    pub uri: String,
    /// Its MIME type, if the server says.
    pub mime_type: Option<String>,
    /// The content, ready to go into a message or a tool result.
    pub block: MediaBlock,
}

impl McpClient {
    /// The server's resources (every page). A server without resources answers with an error
    /// (it does not offer the capability), returned as [`AgentError::State`].
    pub async fn list_resources(&self) -> Result<Vec<McpResource>, AgentError> {
        let listed = self
            .list(
                "listing resources",
                |page| ClientRequest::ListResourcesRequest(ListResourcesRequest::with_param(page)),
                |listed| match listed {
                    ServerResult::ListResourcesResult(listed) => Some((listed.resources, listed.next_cursor)),
                    _ => None,
                },
            )
            .await?;
        Ok(listed
            .into_iter()
            .map(|r| McpResource {
                uri: r.uri,
                name: r.name,
                title: r.title,
                description: r.description,
                mime_type: r.mime_type,
                size: r.size,
            })
            .collect())
    }

    /// The server's resource templates (every page).
    pub async fn list_resource_templates(&self) -> Result<Vec<McpResourceTemplate>, AgentError> {
        let listed = self
            .list(
                "listing resource templates",
                |page| ClientRequest::ListResourceTemplatesRequest(ListResourceTemplatesRequest::with_param(page)),
                |listed| match listed {
                    ServerResult::ListResourceTemplatesResult(listed) => {
                        Some((listed.resource_templates, listed.next_cursor))
                    }
                    _ => None,
                },
            )
            .await?;
        Ok(listed
            .into_iter()
            .map(|t| McpResourceTemplate {
                uri_template: t.uri_template,
                name: t.name,
                title: t.title,
                description: t.description,
                mime_type: t.mime_type,
            })
            .collect())
    }

    /// Reads the resource at `uri` (listed, or a filled-in template). An unknown URI is the
    /// server's error, returned as [`AgentError::State`] with the server's message.
    pub async fn read_resource(&self, uri: &str) -> Result<Vec<McpResourceContent>, AgentError> {
        let what = format!("reading the resource '{uri}'");
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(ReadResourceRequestParams::new(uri)));
        let read = match self.request(&what, request).await? {
            ServerResult::ReadResourceResult(read) => read,
            _ => return Err(self.unexpected(&what)),
        };
        Ok(read.contents.into_iter().map(resource_content).collect())
    }
}

/// One part of a read (or of a resource embedded in a prompt) as a block.
pub(super) fn resource_content(contents: ResourceContents) -> McpResourceContent {
    match contents {
        ResourceContents::TextResourceContents {
            uri, mime_type, text, ..
        } => McpResourceContent {
            uri,
            mime_type,
            block: MediaBlock::Text(TextBlock::new(text)),
        },
        ResourceContents::BlobResourceContents {
            uri, mime_type, blob, ..
        } => {
            let media_type = mime_type
                .clone()
                .unwrap_or_else(|| "application/octet-stream".to_owned());
            McpResourceContent {
                uri,
                mime_type,
                block: MediaBlock::Data(DataBlock::base64(blob, media_type)),
            }
        }
        // A kind of content newer than this SDK: its JSON, as text.
        other => {
            let json = serde_json::to_value(&other).unwrap_or_default();
            let field = |k: &str| json.get(k).and_then(serde_json::Value::as_str).map(str::to_owned);
            McpResourceContent {
                uri: field("uri").unwrap_or_default(),
                mime_type: field("mimeType"),
                block: MediaBlock::Text(TextBlock::new(json.to_string())),
            }
        }
    }
}
