//! Events of streamed text, data and thinking blocks, and of hint blocks.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::check_one_source;
use crate::AgentError;
use crate::id::{Id, Timestamp, new_id, now_timestamp};
use crate::message::{DataSource, HintContent};

/// Declares the start and delta events of a streamed text-like block (the end events differ).
macro_rules! text_like_events {
    ($kind:literal, $start:ident = $start_tag:literal, $delta:ident = $delta_tag:literal) => {
        event_struct! {
            #[doc = concat!("`", $start_tag, "`: a ", $kind, " block started.")]
            pub struct $start {
                /// The id of the reply.
                pub reply_id: Id,
                /// The id of the block in the stream.
                pub block_id: Id,
            }
        }

        impl $start {
            #[doc = concat!("The start of the ", $kind, " block `block_id`.")]
            pub fn new(reply_id: impl Into<Id>, block_id: impl Into<Id>) -> Self {
                Self {
                    id: new_id(),
                    created_at: now_timestamp(),
                    metadata: Map::new(),
                    reply_id: reply_id.into(),
                    block_id: block_id.into(),
                }
            }
        }

        event_struct! {
            #[doc = concat!("`", $delta_tag, "`: more ", $kind, " of a block.")]
            pub struct $delta {
                /// The id of the reply.
                pub reply_id: Id,
                /// The id of the block in the stream.
                pub block_id: Id,
                /// The new piece.
                pub delta: String,
            }
        }

        impl $delta {
            #[doc = concat!("A piece of the ", $kind, " block `block_id`.")]
            pub fn new(reply_id: impl Into<Id>, block_id: impl Into<Id>, delta: impl Into<String>) -> Self {
                Self {
                    id: new_id(),
                    created_at: now_timestamp(),
                    metadata: Map::new(),
                    reply_id: reply_id.into(),
                    block_id: block_id.into(),
                    delta: delta.into(),
                }
            }
        }
    };
}

text_like_events!(
    "text",
    TextBlockStartEvent = "TEXT_BLOCK_START",
    TextBlockDeltaEvent = "TEXT_BLOCK_DELTA"
);
text_like_events!(
    "thinking",
    ThinkingBlockStartEvent = "THINKING_BLOCK_START",
    ThinkingBlockDeltaEvent = "THINKING_BLOCK_DELTA"
);

event_struct! {
    /// `TEXT_BLOCK_END`: a text block ended.
    pub struct TextBlockEndEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The id of the block in the stream.
        pub block_id: Id,
        /// The block's final text when it is not the concatenation of the deltas (a voice reply
        /// cut short keeps what the user heard); it replaces the accumulated text.
        #[serde(default)]
        pub text: Option<String>,
    }
}

impl TextBlockEndEvent {
    /// The end of the text block `block_id`, keeping the accumulated text.
    pub fn new(reply_id: impl Into<Id>, block_id: impl Into<Id>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            block_id: block_id.into(),
            text: None,
        }
    }

    /// Sets the final text, replacing the accumulated one.
    #[must_use]
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }
}

event_struct! {
    /// `THINKING_BLOCK_END`: a thinking block ended.
    pub struct ThinkingBlockEndEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The id of the block in the stream.
        pub block_id: Id,
    }
}

impl ThinkingBlockEndEvent {
    /// The end of the thinking block `block_id`.
    pub fn new(reply_id: impl Into<Id>, block_id: impl Into<Id>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            block_id: block_id.into(),
        }
    }
}

event_struct! {
    /// `DATA_BLOCK_START`: a data block started.
    pub struct DataBlockStartEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The id of the block in the stream.
        pub block_id: Id,
        /// The IANA media type of the data.
        pub media_type: String,
        /// The data's name, such as a file name.
        #[serde(default)]
        pub name: Option<String>,
    }
}

impl DataBlockStartEvent {
    /// The start of the data block `block_id`, without a name.
    pub fn new(reply_id: impl Into<Id>, block_id: impl Into<Id>, media_type: impl Into<String>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            block_id: block_id.into(),
            media_type: media_type.into(),
            name: None,
        }
    }
}

event_struct! {
    /// `DATA_BLOCK_DELTA`: more bytes of a data block, or its URL.
    ///
    /// Exactly one of `data` and `url` is set; deserializing an event with both or neither fails.
    #[serde(try_from = "DataBlockDeltaWire")]
    pub struct DataBlockDeltaEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The id of the block in the stream.
        pub block_id: Id,
        /// The IANA media type of the data.
        pub media_type: String,
        /// A base64-encoded piece of the bytes (each piece is encoded on its own).
        pub data: Option<String>,
        /// The URL of the whole content.
        pub url: Option<String>,
    }
}

impl DataBlockDeltaEvent {
    /// A delta carrying `source`: base64 bytes or a URL, with its media type.
    pub fn new(reply_id: impl Into<Id>, block_id: impl Into<Id>, source: DataSource) -> Self {
        let (data, url, media_type) = match source {
            DataSource::Base64 { data, media_type } => (Some(data), None, media_type),
            DataSource::Url { url, media_type } => (None, Some(url), media_type),
        };
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            block_id: block_id.into(),
            media_type,
            data,
            url,
        }
    }

    /// The delta as a data source; `None` if neither or both of `data` and `url` are set.
    pub fn source(&self) -> Option<DataSource> {
        source_of(self.data.as_ref(), self.url.as_ref(), &self.media_type)
    }
}

/// The data source of a data delta event, if exactly one of `data` and `url` is set.
pub(super) fn source_of(data: Option<&String>, url: Option<&String>, media_type: &str) -> Option<DataSource> {
    match (data, url) {
        (Some(data), None) => Some(DataSource::Base64 {
            data: data.clone(),
            media_type: media_type.to_owned(),
        }),
        (None, Some(url)) => Some(DataSource::Url {
            url: url.clone(),
            media_type: media_type.to_owned(),
        }),
        _ => None,
    }
}

#[derive(Deserialize)]
struct DataBlockDeltaWire {
    #[serde(default = "new_id")]
    id: Id,
    #[serde(default = "now_timestamp")]
    created_at: Timestamp,
    #[serde(default)]
    metadata: Map<String, Value>,
    reply_id: Id,
    block_id: Id,
    media_type: String,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    url: Option<String>,
}

impl TryFrom<DataBlockDeltaWire> for DataBlockDeltaEvent {
    type Error = AgentError;

    fn try_from(wire: DataBlockDeltaWire) -> Result<Self, AgentError> {
        check_one_source(wire.data.as_ref(), wire.url.as_ref())?;
        Ok(Self {
            id: wire.id,
            created_at: wire.created_at,
            metadata: wire.metadata,
            reply_id: wire.reply_id,
            block_id: wire.block_id,
            media_type: wire.media_type,
            data: wire.data,
            url: wire.url,
        })
    }
}

event_struct! {
    /// `DATA_BLOCK_END`: a data block ended.
    pub struct DataBlockEndEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The id of the block in the stream.
        pub block_id: Id,
    }
}

impl DataBlockEndEvent {
    /// The end of the data block `block_id`.
    pub fn new(reply_id: impl Into<Id>, block_id: impl Into<Id>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            block_id: block_id.into(),
        }
    }
}

event_struct! {
    /// `HINT_BLOCK`: a whole hint block (hints are not streamed).
    pub struct HintBlockEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The id of the hint block.
        pub block_id: Id,
        /// Who or what sent the hint, if known.
        #[serde(default)]
        pub source: Option<String>,
        /// What the hint says.
        pub hint: HintContent,
    }
}

impl HintBlockEvent {
    /// A hint block event.
    pub fn new(
        reply_id: impl Into<Id>,
        block_id: impl Into<Id>,
        hint: impl Into<HintContent>,
        source: Option<String>,
    ) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            block_id: block_id.into(),
            source,
            hint: hint.into(),
        }
    }
}
