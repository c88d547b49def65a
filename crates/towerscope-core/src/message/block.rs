//! Text, thinking, data and hint blocks, and the media blocks that tool results and hints hold.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::id::{Id, Timestamp, new_id, now_timestamp};

/// A block of text.
///
/// Serialized inside a [`ContentBlock`](super::ContentBlock) or [`MediaBlock`] as
/// `{"type": "text", "text": ..., "id": ..., "created_at": ..., "finished_at": ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextBlock {
    /// The text.
    pub text: String,
    /// The block's id (generated when missing).
    #[serde(default = "new_id")]
    pub id: Id,
    /// When the block was created.
    #[serde(default = "now_timestamp")]
    pub created_at: Timestamp,
    /// When the block was finished, if it was.
    #[serde(default)]
    pub finished_at: Option<Timestamp>,
}

impl TextBlock {
    /// A text block with a new id, created now.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            id: new_id(),
            created_at: now_timestamp(),
            finished_at: None,
        }
    }

    /// Sets the block's id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<Id>) -> Self {
        self.id = id.into();
        self
    }
}

/// A block of model reasoning.
///
/// Provider-specific fields (Anthropic's `signature`, `redacted_thinking_data`, an OpenAI
/// reasoning item id, ...) are kept in [`extra`](Self::extra) and serialized next to the others.
/// Read thinking blocks through [`ContentBlock`](super::ContentBlock), which consumes the `"type"`
/// tag; a bare `ThinkingBlock` read from tagged JSON keeps `"type"` among its extras.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThinkingBlock {
    /// The reasoning text (empty for redacted thinking).
    pub thinking: String,
    /// The block's id (generated when missing).
    #[serde(default = "new_id")]
    pub id: Id,
    /// When the block was created.
    #[serde(default = "now_timestamp")]
    pub created_at: Timestamp,
    /// When the block was finished, if it was.
    #[serde(default)]
    pub finished_at: Option<Timestamp>,
    /// Provider-specific extra fields, flattened into the block's JSON.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ThinkingBlock {
    /// A thinking block with a new id, created now, without extras.
    pub fn new(thinking: impl Into<String>) -> Self {
        Self {
            thinking: thinking.into(),
            id: new_id(),
            created_at: now_timestamp(),
            finished_at: None,
            extra: Map::new(),
        }
    }

    /// Sets the block's id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<Id>) -> Self {
        self.id = id.into();
        self
    }
}

/// Where the bytes of a [`DataBlock`] are: inline as base64, or behind a URL.
///
/// Serialized as `{"type": "base64", "data": ..., "media_type": ...}` or
/// `{"type": "url", "url": ..., "media_type": ...}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum DataSource {
    /// Inline bytes.
    Base64 {
        /// The bytes, base64-encoded (standard alphabet, padded).
        data: String,
        /// The IANA media type, such as `image/png` or `audio/wav`.
        media_type: String,
    },
    /// Bytes behind a URL.
    Url {
        /// The URL (RFC 3986).
        url: String,
        /// The IANA media type, such as `image/png` or `audio/wav`.
        media_type: String,
    },
}

impl DataSource {
    /// An inline source holding `bytes` (base64-encoded, standard alphabet, padded).
    ///
    /// ```
    /// use towerscope_core::DataSource;
    ///
    /// let source = DataSource::inline(b"hello", "text/plain");
    /// assert_eq!(source, DataSource::Base64 { data: "aGVsbG8=".into(), media_type: "text/plain".into() });
    /// assert_eq!(source.decode_bytes().as_deref(), Some(&b"hello"[..]));
    /// ```
    pub fn inline(bytes: &[u8], media_type: impl Into<String>) -> Self {
        Self::Base64 {
            data: crate::message::base64::encode(bytes),
            media_type: media_type.into(),
        }
    }

    /// The bytes of an inline source (`None` for a URL, or base64 text that does not decode).
    pub fn decode_bytes(&self) -> Option<Vec<u8>> {
        match self {
            Self::Base64 { data, .. } => crate::message::base64::decode(data),
            Self::Url { .. } => None,
        }
    }

    /// The media type of either source.
    pub fn media_type(&self) -> &str {
        match self {
            Self::Base64 { media_type, .. } | Self::Url { media_type, .. } => media_type,
        }
    }

    /// Whether a model provider takes data of `media_type`: PNG, JPEG, GIF and WebP images,
    /// PDF, and WAV or MP3 audio (the OpenAI-compatible and Anthropic formatters refuse any
    /// other data block, the providers any other image type, SVG and TIFF included, and a
    /// refused block stored in a conversation fails every later model call). What reads data
    /// from outside (an MCP result, another agent's files) names other data in a line instead.
    ///
    /// ```
    /// use towerscope_core::DataSource;
    ///
    /// assert!(DataSource::providers_take("image/png") && DataSource::providers_take("audio/mpeg"));
    /// assert!(!DataSource::providers_take("application/zip") && !DataSource::providers_take("image/svg+xml"));
    /// ```
    pub fn providers_take(media_type: &str) -> bool {
        matches!(
            media_type,
            "image/png"
                | "image/jpeg"
                | "image/gif"
                | "image/webp"
                | "application/pdf"
                | "audio/wav"
                | "audio/x-wav"
                | "audio/wave"
                | "audio/mpeg"
                | "audio/mp3"
        )
    }

    /// Whether `media_type` is text a model reads as text (`text/*`, JSON, XML, YAML): a file of
    /// it from outside is given to the model as its text.
    ///
    /// ```
    /// use towerscope_core::DataSource;
    ///
    /// assert!(DataSource::is_text_type("text/csv") && DataSource::is_text_type("application/ld+json"));
    /// assert!(!DataSource::is_text_type("image/png"));
    /// ```
    pub fn is_text_type(media_type: &str) -> bool {
        media_type.starts_with("text/")
            || matches!(
                media_type,
                "application/json" | "application/xml" | "application/yaml" | "application/x-yaml"
            )
            || media_type.ends_with("+json")
            || media_type.ends_with("+xml")
    }
}

/// Binary content (image, audio, video, a file), replacing the 1.x image/audio/video blocks; the
/// kind is given by the source's media type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataBlock {
    /// The block's id (generated when missing).
    #[serde(default = "new_id")]
    pub id: Id,
    /// Where the bytes are.
    pub source: DataSource,
    /// An optional name, such as a file name.
    #[serde(default)]
    pub name: Option<String>,
    /// When the block was created.
    #[serde(default = "now_timestamp")]
    pub created_at: Timestamp,
    /// When the block was finished, if it was.
    #[serde(default)]
    pub finished_at: Option<Timestamp>,
}

impl DataBlock {
    /// A data block with the given source, a new id, created now.
    pub fn new(source: DataSource) -> Self {
        Self {
            id: new_id(),
            source,
            name: None,
            created_at: now_timestamp(),
            finished_at: None,
        }
    }

    /// A data block holding base64-encoded bytes.
    pub fn base64(data: impl Into<String>, media_type: impl Into<String>) -> Self {
        Self::new(DataSource::Base64 {
            data: data.into(),
            media_type: media_type.into(),
        })
    }

    /// A data block pointing at a URL.
    pub fn url(url: impl Into<String>, media_type: impl Into<String>) -> Self {
        Self::new(DataSource::Url {
            url: url.into(),
            media_type: media_type.into(),
        })
    }

    /// Sets the block's id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<Id>) -> Self {
        self.id = id.into();
        self
    }

    /// Sets the block's name.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Appends a streamed base64 piece to an inline source, joining the bytes (only the last
    /// group of the existing text is re-encoded, so a long stream costs what its pieces cost).
    /// A URL source is left as it is.
    pub fn append_base64(&mut self, piece: &str) {
        if let DataSource::Base64 { data, .. } = &mut self.source {
            super::base64::merge(data, piece);
        }
    }
}

/// A block that may appear in a tool result or a hint: text or data.
///
/// Serialized with the same `"type"` tag as [`ContentBlock`](super::ContentBlock).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MediaBlock {
    /// A text block.
    Text(TextBlock),
    /// A data block.
    Data(DataBlock),
}

impl MediaBlock {
    /// A new text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextBlock::new(text))
    }

    /// The block's id.
    pub fn id(&self) -> &Id {
        match self {
            Self::Text(b) => &b.id,
            Self::Data(b) => &b.id,
        }
    }

    /// The text block inside, if this is one.
    pub fn as_text(&self) -> Option<&TextBlock> {
        match self {
            Self::Text(b) => Some(b),
            Self::Data(_) => None,
        }
    }

    /// The data block inside, if this is one.
    pub fn as_data(&self) -> Option<&DataBlock> {
        match self {
            Self::Data(b) => Some(b),
            Self::Text(_) => None,
        }
    }
}

impl From<TextBlock> for MediaBlock {
    fn from(block: TextBlock) -> Self {
        Self::Text(block)
    }
}

impl From<DataBlock> for MediaBlock {
    fn from(block: DataBlock) -> Self {
        Self::Data(block)
    }
}

/// The text of the text blocks among `blocks`, joined with `"\n"`; `None` when there is none.
pub(crate) fn join_text<'a>(blocks: impl IntoIterator<Item = &'a MediaBlock>) -> Option<String> {
    let mut joined: Option<String> = None;
    for text in blocks.into_iter().filter_map(MediaBlock::as_text) {
        match &mut joined {
            Some(out) => {
                out.push('\n');
                out.push_str(&text.text);
            }
            None => joined = Some(text.text.clone()),
        }
    }
    joined
}

/// What a hint says: plain text, or text and data blocks.
///
/// Serialized as a JSON string or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum HintContent {
    /// Plain text.
    Text(String),
    /// Text and data blocks.
    Blocks(Vec<MediaBlock>),
}

impl From<String> for HintContent {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for HintContent {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<Vec<MediaBlock>> for HintContent {
    fn from(blocks: Vec<MediaBlock>) -> Self {
        Self::Blocks(blocks)
    }
}

impl<'de> Deserialize<'de> for HintContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_text_or_blocks(deserializer)
    }
}

/// Deserializes "a string or a list of text/data blocks" with the errors of the inner blocks
/// (an untagged enum would only say that no variant matched).
pub(crate) fn deserialize_text_or_blocks<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: From<String> + From<Vec<MediaBlock>>,
{
    struct TextOrBlocks<T>(PhantomData<T>);

    impl<'de, T: From<String> + From<Vec<MediaBlock>>> Visitor<'de> for TextOrBlocks<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string or a list of text and data blocks")
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
            Ok(T::from(text.to_owned()))
        }

        fn visit_string<E: de::Error>(self, text: String) -> Result<T, E> {
            Ok(T::from(text))
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
            let mut blocks = Vec::new();
            while let Some(block) = seq.next_element::<MediaBlock>()? {
                blocks.push(block);
            }
            Ok(T::from(blocks))
        }
    }

    deserializer.deserialize_any(TextOrBlocks(PhantomData))
}

/// A hint or instruction for the model inside the reasoning-acting loop (team messages,
/// runtime-state reminders, background results). Formatters send it to the model as a user turn.
///
/// Unlike other blocks, a hint is finished when it is created: [`HintBlock::new`] stamps
/// `finished_at` with `created_at`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HintBlock {
    /// What the hint says.
    pub hint: HintContent,
    /// The block's id (generated when missing).
    #[serde(default = "new_id")]
    pub id: Id,
    /// Who or what sent the hint (`"alice"`, `"system"`), if known.
    #[serde(default)]
    pub source: Option<String>,
    /// When the block was created.
    #[serde(default = "now_timestamp")]
    pub created_at: Timestamp,
    /// When the block was finished (stamped at creation; the reference also stamps a missing one).
    #[serde(default = "stamp_now")]
    pub finished_at: Option<Timestamp>,
}

fn stamp_now() -> Option<Timestamp> {
    Some(now_timestamp())
}

impl HintBlock {
    /// A finished hint block with a new id.
    pub fn new(hint: impl Into<HintContent>, source: Option<String>) -> Self {
        let created_at = now_timestamp();
        Self {
            hint: hint.into(),
            id: new_id(),
            source,
            finished_at: Some(created_at),
            created_at,
        }
    }

    /// Sets the block's id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<Id>) -> Self {
        self.id = id.into();
        self
    }

    /// The hint as text: the string itself, or its text blocks joined with `"\n"`.
    pub fn text(&self) -> Option<String> {
        match &self.hint {
            HintContent::Text(text) => Some(text.clone()),
            HintContent::Blocks(blocks) => join_text(blocks),
        }
    }
}
