//! [`Message`], [`Part`] and [`Role`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use towerscope_core::{ContentBlock, DataBlock, DataSource, TextBlock};

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Role {
    /// Not set.
    #[default]
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    /// The client (a person or the calling agent).
    #[serde(rename = "ROLE_USER", alias = "user")]
    User,
    /// The serving agent.
    #[serde(rename = "ROLE_AGENT", alias = "agent")]
    Agent,
}

/// One piece of a message or an artifact: exactly one of `text`, `raw` (base64), `url` or
/// `data` is set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Text content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Bytes, base64-encoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// A URL pointing at the content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Structured JSON content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Metadata of the part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// A file name, for `raw` and `url` parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// The content's media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

impl Part {
    /// Whether this is text and nothing else (what [`Part::text`] makes).
    pub fn is_plain_text(&self) -> bool {
        self.text.is_some()
            && self.raw.is_none()
            && self.url.is_none()
            && self.data.is_none()
            && self.metadata.is_none()
            && self.filename.is_none()
            && self.media_type.is_none()
    }

    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// A structured-data part.
    pub fn data(data: Value) -> Self {
        Self {
            data: Some(data),
            ..Self::default()
        }
    }

    /// Whether this is a file part: `raw` bytes or a `url`.
    pub fn is_file(&self) -> bool {
        self.raw.is_some() || self.url.is_some()
    }

    /// A data block as a file part: inline bytes as `raw`, a URL as `url`, with the block's
    /// media type and name; `None` for a URL other than http or https (a local path is not
    /// sent).
    pub(crate) fn file(block: &DataBlock) -> Option<Self> {
        let (raw, url) = match &block.source {
            DataSource::Base64 { data, .. } => (Some(data.clone()), None),
            DataSource::Url { url, .. } => {
                if !web_url(url) {
                    return None;
                }
                (None, Some(url.clone()))
            }
        };
        Some(Self {
            raw,
            url,
            media_type: Some(block.source.media_type().to_owned()),
            filename: block.name.clone(),
            ..Self::default()
        })
    }

    /// A file part as the block an agent's model reads, or why it cannot be one; `None` for a
    /// part that is no file part. Images, PDF, WAV and MP3 are data, text files text (see
    /// `inline_block`); images and PDF are taken by URL too.
    pub(crate) fn file_block(&self) -> Option<Result<ContentBlock, FileError>> {
        let media_type = self
            .media_type
            .as_deref()
            .map(|m| m.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| "application/octet-stream".to_owned());
        let source = match (&self.raw, &self.url) {
            (None, None) => return None,
            (Some(_), Some(_)) => return Some(Err(FileError::Invalid("a file part holds `raw` or `url`, not both"))),
            (Some(raw), None) => match decode(raw) {
                Some(bytes) if bytes.is_empty() => return Some(Err(FileError::Invalid("`raw` holds no bytes"))),
                Some(bytes) => Inline(bytes),
                None => return Some(Err(FileError::Invalid("`raw` is not base64"))),
            },
            (None, Some(url)) if url.get(..5).is_some_and(|s| s.eq_ignore_ascii_case("data:")) => {
                // Inline bytes written as a URL: taken as bytes (Anthropic takes https URLs only).
                match data_url(url) {
                    Some((_, bytes)) if bytes.is_empty() => {
                        return Some(Err(FileError::Invalid("the `data:` URL holds no bytes")));
                    }
                    Some((Some(media), bytes)) if self.media_type.is_none() => {
                        return Some(Self::inline_block(&media, bytes, self.filename.clone()));
                    }
                    Some((_, bytes)) => Inline(bytes),
                    None => {
                        return Some(Err(FileError::Invalid(
                            "a `data:` URL must be base64 (`data:<type>;base64,…`)",
                        )));
                    }
                }
            }
            (None, Some(url)) if web_url(url) => Remote(url.clone()),
            (None, Some(_)) => return Some(Err(FileError::Invalid("`url` must be an http, https or data URL"))),
        };
        Some(match source {
            Inline(bytes) => Self::inline_block(&media_type, bytes, self.filename.clone()),
            // By URL, providers fetch images and PDF only (not audio), of the types they take.
            Remote(url) if DataSource::providers_take(&media_type) && !media_type.starts_with("audio/") => {
                let mut block = DataBlock::new(DataSource::Url { url, media_type });
                block.name = self.filename.clone();
                Ok(ContentBlock::Data(block))
            }
            Remote(_) => Err(FileError::Unsupported(media_type)),
        })
    }

    /// A file of another agent's answer (`sender`'s) as the block our model reads: the file,
    /// or a line saying it is not shown when no provider takes its type (stored in a
    /// conversation, it would fail every later model call); `None` for a part that is no file
    /// part, or a malformed one (with a warning).
    pub(crate) fn answer_block(&self, sender: &str) -> Option<ContentBlock> {
        match self.file_block()? {
            Ok(block) => Some(block),
            Err(FileError::Unsupported(media)) => Some(ContentBlock::Text(TextBlock::new(format!(
                "[{sender} sent the file '{}' ({media}), which no model provider takes: it is not shown]",
                self.filename.as_deref().unwrap_or("unnamed")
            )))),
            Err(why) => {
                tracing::warn!(agent = %sender, "a file part of a remote agent's answer is skipped: {why}");
                None
            }
        }
    }

    /// Inline bytes of `media_type` as a block: text files as text, images, PDF, WAV and MP3 as
    /// data.
    fn inline_block(media_type: &str, bytes: Vec<u8>, name: Option<String>) -> Result<ContentBlock, FileError> {
        if DataSource::is_text_type(media_type) {
            let text = String::from_utf8(bytes).map_err(|_| FileError::Invalid("a text file that is not UTF-8"))?;
            let text = match &name {
                Some(name) => format!("{name}:\n{text}"),
                None => text,
            };
            return Ok(ContentBlock::Text(TextBlock::new(text)));
        }
        if !DataSource::providers_take(media_type) {
            return Err(FileError::Unsupported(media_type.to_owned()));
        }
        let mut block = DataBlock::new(DataSource::inline(&bytes, media_type));
        block.name = name;
        Ok(ContentBlock::Data(block))
    }
}

/// Why a file part cannot reach a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileError {
    /// Malformed: bad base64, no bytes, a URL of another scheme.
    Invalid(&'static str),
    /// Well formed, of a media type no provider takes (the type).
    Unsupported(String),
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Invalid(why) => f.write_str(why),
            Self::Unsupported(media) => write!(
                f,
                "a file of type `{media}` is not taken: PNG, JPEG, GIF and WebP images, PDF, WAV and MP3 audio \
                 and text files are (images and PDF by URL)"
            ),
        }
    }
}

/// Where a file part's bytes are.
enum FileSource {
    Inline(Vec<u8>),
    Remote(String),
}
use FileSource::{Inline, Remote};

/// Whether `url` is an http or https URL.
fn web_url(url: &str) -> bool {
    let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
    matches!(scheme.as_deref(), Some("http" | "https"))
}

/// Base64 in the standard or URL-safe alphabet, padded or not (JSON encoders of bytes write
/// either).
fn decode(raw: &str) -> Option<Vec<u8>> {
    let standard: String = raw
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    DataSource::Base64 {
        data: standard,
        media_type: String::new(),
    }
    .decode_bytes()
}

/// A `data:[<type>][;…];base64,<data>` URL's media type and bytes; `None` when it is not one
/// in base64.
fn data_url(url: &str) -> Option<(Option<String>, Vec<u8>)> {
    let rest = url.get(5..)?;
    let (head, data) = rest.split_once(',')?;
    let mut params = head.split(';');
    let media = params
        .next()
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(str::to_ascii_lowercase);
    if !params.any(|p| p.trim().eq_ignore_ascii_case("base64")) {
        return None;
    }
    Some((media, decode(data)?))
}

/// One message of a conversation between a client and an agent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// The message's id, chosen by its sender.
    #[serde(default)]
    pub message_id: String,
    /// The conversation (session) the message belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task the message belongs to (set to continue a task, for example one that waits
    /// for input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Who sent it.
    #[serde(default)]
    pub role: Role,
    /// The content.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Metadata of the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl Message {
    /// A message of `role` with one text part and a new id.
    pub fn new_text(role: Role, text: impl Into<String>) -> Self {
        Self {
            message_id: towerscope_core::id::new_id().to_string(),
            role,
            parts: vec![Part::text(text)],
            ..Self::default()
        }
    }

    /// The message's text parts joined with newlines (empty when it has none).
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self.parts.iter().filter_map(|p| p.text.as_deref()).collect();
        texts.join("\n")
    }
}
