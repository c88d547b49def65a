//! [`McpTool`]: one tool of an MCP server, as a toolkit tool.

use std::fmt;

use futures_util::future::{Either, select};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use towerscope_core::tool::MCP_PROGRESS_KEY;
use towerscope_core::{DataBlock, DataSource, MediaBlock, TextBlock, ToolChunk, ToolResultState};

use super::McpClient;
use crate::generator::Generator;
use crate::toolkit::{Tool, ToolChunkStream, ToolError};

/// A tool of an MCP server. See the [module docs](super) for what its calls do.
pub struct McpTool {
    client: McpClient,
    /// The name on the server.
    remote: String,
    /// `mcp__{server}__{tool}`.
    name: String,
    description: String,
    schema: Value,
    read_only: bool,
    destructive: bool,
}

/// The most characters of a tool's description kept (8,000: the longest descriptions of real
/// servers run to a few thousand); a server's description goes with every model request.
pub const MAX_DESCRIPTION: usize = 8_000;

impl McpTool {
    /// The tool `tool` of the server behind `client`.
    pub fn new(client: McpClient, tool: &rmcp::model::Tool) -> Self {
        let annotations = tool.annotations.as_ref();
        let read_only = annotations.and_then(|a| a.read_only_hint).unwrap_or(false);
        let destructive = !read_only && annotations.and_then(|a| a.destructive_hint).unwrap_or(true);
        let mut schema = Value::Object(Map::clone(&tool.input_schema));
        crate::toolkit::strip_titles(&mut schema);
        Self {
            name: super::tool_name(client.server(), &tool.name),
            remote: tool.name.to_string(),
            // Sent with every model request: a server's description is cut as its instructions
            // are.
            description: tool
                .description
                .as_deref()
                .unwrap_or_default()
                .chars()
                .take(MAX_DESCRIPTION)
                .collect(),
            schema,
            read_only,
            destructive,
            client,
        }
    }

    /// The tool's name on the server.
    pub fn remote_name(&self) -> &str {
        &self.remote
    }
}

impl fmt::Debug for McpTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.name)
            .field("server", &self.client.server())
            .finish_non_exhaustive()
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    /// MCP tools run one at a time, as in the reference.
    fn concurrency_safe(&self) -> bool {
        false
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn destructive(&self) -> bool {
        self.destructive
    }

    fn call(&self, input: Value) -> ToolChunkStream {
        let client = self.client.clone();
        let remote = self.remote.clone();
        let arguments = match input {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                let message = format!("MCP tool arguments must be an object, got {other}");
                return Box::pin(futures_util::stream::iter([Err(ToolError::new(message))]));
            }
        };
        Box::pin(Generator::new(move |y| async move {
            let (tx, mut rx) = mpsc::channel(super::progress::PROGRESS_BUFFER);
            let mut call = std::pin::pin!(client.call(&remote, arguments, tx));
            let progress_chunk = |progress: rmcp::model::ProgressNotificationParam| {
                let mut value = Map::new();
                value.insert("progress".into(), progress.progress.into());
                if let Some(total) = progress.total {
                    value.insert("total".into(), total.into());
                }
                if let Some(message) = progress.message {
                    value.insert("message".into(), message.into());
                }
                let mut metadata = Map::new();
                metadata.insert(MCP_PROGRESS_KEY.to_owned(), Value::Object(value));
                Ok(ToolChunk::new(Vec::new()).with_is_last(false).with_metadata(metadata))
            };
            let result = loop {
                match select(call.as_mut(), std::pin::pin!(rx.recv())).await {
                    Either::Left((result, _)) => break result,
                    Either::Right((Some(progress), _)) => y.emit(progress_chunk(progress)).await,
                    Either::Right((None, _)) => break call.as_mut().await,
                }
            };
            // What came in while the call finished, before the result.
            while let Ok(progress) = rx.try_recv() {
                y.emit(progress_chunk(progress)).await;
            }
            match result {
                Ok(result) => {
                    let state = if result.is_error == Some(true) {
                        ToolResultState::Error
                    } else {
                        ToolResultState::Success
                    };
                    let mut blocks: Vec<MediaBlock> = result.content.into_iter().flat_map(content_block).collect();
                    if blocks.is_empty()
                        && let Some(structured) = &result.structured_content
                    {
                        blocks.push(MediaBlock::Text(TextBlock::new(structured.to_string())));
                    }
                    y.emit(Ok(ToolChunk::new(blocks).with_state(state))).await;
                }
                Err(e) => {
                    y.emit(Err(ToolError::new(format!(
                        "Error occurred when calling MCP tool: {e}"
                    ))))
                    .await;
                }
            }
        }))
    }
}

/// One content block of a result (or of a prompt's message): text as text; images, audio and
/// embedded resources as data when a provider takes their type
/// ([`DataSource::providers_take`]), as their text when they are text sent as bytes, as a line
/// naming them otherwise (stored in the conversation, data no provider takes would fail every later
/// model call); an embedded text resource as its text after a line naming it; anything else (a
/// resource link) as its JSON. Before, an embedded resource reached the model as its JSON,
/// base64 and all.
pub(super) fn content_block(content: rmcp::model::ContentBlock) -> Vec<MediaBlock> {
    use rmcp::model::{ContentBlock as Content, ResourceContents};
    let data = |data: String, media: String, what: &str| {
        if !DataSource::providers_take(&media) {
            MediaBlock::Text(TextBlock::new(format!(
                "[{what} of type {media}, {} bytes of base64, which the model cannot read]",
                data.len()
            )))
        } else {
            let len = data.len();
            let block = DataBlock::base64(data, media);
            if block.source.decode_bytes().is_some() {
                MediaBlock::Data(block)
            } else {
                // Providers refuse data that is not base64, and would refuse every later call.
                MediaBlock::Text(TextBlock::new(format!(
                    "[{what} of type {} whose {len} bytes of data are not base64]",
                    block.source.media_type()
                )))
            }
        }
    };
    match content {
        Content::Text(t) => vec![MediaBlock::Text(TextBlock::new(t.text))],
        Content::Image(i) => vec![data(i.data, i.mime_type, "an image")],
        Content::Audio(a) => vec![data(a.data, a.mime_type, "audio")],
        Content::Resource(r) => match r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => vec![
                MediaBlock::Text(TextBlock::new(format!("[resource {uri}]"))),
                MediaBlock::Text(TextBlock::new(text)),
            ],
            ResourceContents::BlobResourceContents {
                uri, mime_type, blob, ..
            } => {
                let media = mime_type.unwrap_or_else(|| "application/octet-stream".to_owned());
                // A text file sent as bytes is read as its text, as another agent's files are.
                let source = || DataSource::Base64 {
                    data: blob.clone(),
                    media_type: media.clone(),
                };
                let text = DataSource::is_text_type(&media)
                    .then(|| source().decode_bytes())
                    .flatten()
                    .and_then(|bytes| String::from_utf8(bytes).ok());
                match text {
                    Some(text) => vec![
                        MediaBlock::Text(TextBlock::new(format!("[resource {uri}]"))),
                        MediaBlock::Text(TextBlock::new(text)),
                    ],
                    None => vec![data(blob, media, &format!("the resource {uri}"))],
                }
            }
            other => vec![MediaBlock::Text(TextBlock::new(
                serde_json::to_string(&other).unwrap_or_default(),
            ))],
        },
        other => vec![MediaBlock::Text(TextBlock::new(
            serde_json::to_string(&other).unwrap_or_default(),
        ))],
    }
}
