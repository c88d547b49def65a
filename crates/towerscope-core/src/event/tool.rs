//! Events of tool calls (streamed by the model) and tool results (produced by acting).

use serde::Deserialize;
use serde_json::{Map, Value};

use super::block::source_of;
use super::check_one_source;
use crate::AgentError;
use crate::id::{Id, Timestamp, new_id, now_timestamp};
use crate::message::{DataSource, ToolResultState};

event_struct! {
    /// `TOOL_CALL_START`: the model started a tool call.
    pub struct ToolCallStartEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The tool call id.
        pub tool_call_id: Id,
        /// The tool's name.
        pub tool_call_name: String,
    }
}

impl ToolCallStartEvent {
    /// The start of the tool call `tool_call_id`.
    pub fn new(reply_id: impl Into<Id>, tool_call_id: impl Into<Id>, tool_call_name: impl Into<String>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            tool_call_id: tool_call_id.into(),
            tool_call_name: tool_call_name.into(),
        }
    }
}

event_struct! {
    /// `TOOL_CALL_DELTA`: more of a tool call's JSON arguments.
    pub struct ToolCallDeltaEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The tool call id.
        pub tool_call_id: Id,
        /// A JSON fragment of the arguments.
        pub delta: String,
    }
}

impl ToolCallDeltaEvent {
    /// A fragment of the arguments of `tool_call_id`.
    pub fn new(reply_id: impl Into<Id>, tool_call_id: impl Into<Id>, delta: impl Into<String>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            tool_call_id: tool_call_id.into(),
            delta: delta.into(),
        }
    }
}

event_struct! {
    /// `TOOL_CALL_END`: a tool call's arguments are complete.
    pub struct ToolCallEndEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The tool call id.
        pub tool_call_id: Id,
    }
}

impl ToolCallEndEvent {
    /// The end of the tool call `tool_call_id`.
    pub fn new(reply_id: impl Into<Id>, tool_call_id: impl Into<Id>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            tool_call_id: tool_call_id.into(),
        }
    }
}

event_struct! {
    /// `TOOL_RESULT_START`: the result of a tool call started (the call was allowed, or failed
    /// validation).
    pub struct ToolResultStartEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The id of the tool call.
        pub tool_call_id: Id,
        /// The tool's name.
        pub tool_call_name: String,
    }
}

impl ToolResultStartEvent {
    /// The start of the result of `tool_call_id`.
    pub fn new(reply_id: impl Into<Id>, tool_call_id: impl Into<Id>, tool_call_name: impl Into<String>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            tool_call_id: tool_call_id.into(),
            tool_call_name: tool_call_name.into(),
        }
    }
}

event_struct! {
    /// `TOOL_RESULT_TEXT_DELTA`: more text of a tool result.
    pub struct ToolResultTextDeltaEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The id of the tool call.
        pub tool_call_id: Id,
        /// The new text.
        pub delta: String,
        /// The id of the text block of the result the piece belongs to: pieces with the same
        /// id are joined, wherever the block is (the result's blocks as stored). Without one,
        /// the piece joins the result's last block if it is text (events of other senders).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub block_id: Option<Id>,
    }
}

impl ToolResultTextDeltaEvent {
    /// A piece of the text of the result of `tool_call_id`.
    pub fn new(reply_id: impl Into<Id>, tool_call_id: impl Into<Id>, delta: impl Into<String>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            tool_call_id: tool_call_id.into(),
            delta: delta.into(),
            block_id: None,
        }
    }

    /// Sets the id of the text block the piece belongs to.
    #[must_use]
    pub fn with_block_id(mut self, block_id: impl Into<Id>) -> Self {
        self.block_id = Some(block_id.into());
        self
    }
}

event_struct! {
    /// `TOOL_RESULT_DATA_DELTA`: a data block (or a base64 piece of one) of a tool result.
    ///
    /// Exactly one of `data` and `url` is set; deserializing an event with both or neither fails.
    #[serde(try_from = "ToolResultDataDeltaWire")]
    pub struct ToolResultDataDeltaEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The id of the tool call.
        pub tool_call_id: Id,
        /// The id of the data block in the result (pieces with the same id are joined).
        pub block_id: Id,
        /// The IANA media type of the data.
        pub media_type: String,
        /// Base64-encoded bytes.
        pub data: Option<String>,
        /// The URL of the content.
        pub url: Option<String>,
    }
}

impl ToolResultDataDeltaEvent {
    /// A data block of the result of `tool_call_id`, with a new block id.
    pub fn new(reply_id: impl Into<Id>, tool_call_id: impl Into<Id>, source: DataSource) -> Self {
        let (data, url, media_type) = match source {
            DataSource::Base64 { data, media_type } => (Some(data), None, media_type),
            DataSource::Url { url, media_type } => (None, Some(url), media_type),
        };
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            tool_call_id: tool_call_id.into(),
            block_id: new_id(),
            media_type,
            data,
            url,
        }
    }

    /// Sets the id of the data block.
    #[must_use]
    pub fn with_block_id(mut self, block_id: impl Into<Id>) -> Self {
        self.block_id = block_id.into();
        self
    }

    /// The delta as a data source; `None` if neither or both of `data` and `url` are set.
    pub fn source(&self) -> Option<DataSource> {
        source_of(self.data.as_ref(), self.url.as_ref(), &self.media_type)
    }
}

#[derive(Deserialize)]
struct ToolResultDataDeltaWire {
    #[serde(default = "new_id")]
    id: Id,
    #[serde(default = "now_timestamp")]
    created_at: Timestamp,
    #[serde(default)]
    metadata: Map<String, Value>,
    reply_id: Id,
    tool_call_id: Id,
    #[serde(default = "new_id")]
    block_id: Id,
    media_type: String,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    url: Option<String>,
}

impl TryFrom<ToolResultDataDeltaWire> for ToolResultDataDeltaEvent {
    type Error = AgentError;

    fn try_from(wire: ToolResultDataDeltaWire) -> Result<Self, AgentError> {
        check_one_source(wire.data.as_ref(), wire.url.as_ref())?;
        Ok(Self {
            id: wire.id,
            created_at: wire.created_at,
            metadata: wire.metadata,
            reply_id: wire.reply_id,
            tool_call_id: wire.tool_call_id,
            block_id: wire.block_id,
            media_type: wire.media_type,
            data: wire.data,
            url: wire.url,
        })
    }
}

event_struct! {
    /// `TOOL_RESULT_END`: a tool result is complete. Its `metadata` becomes the result block's
    /// metadata.
    pub struct ToolResultEndEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The id of the tool call.
        pub tool_call_id: Id,
        /// How the execution ended.
        pub state: ToolResultState,
    }
}

impl ToolResultEndEvent {
    /// The end of the result of `tool_call_id`, with the result's metadata.
    pub fn new(
        reply_id: impl Into<Id>,
        tool_call_id: impl Into<Id>,
        state: ToolResultState,
        metadata: Map<String, Value>,
    ) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata,
            reply_id: reply_id.into(),
            tool_call_id: tool_call_id.into(),
            state,
        }
    }
}
