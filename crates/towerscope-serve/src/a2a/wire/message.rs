//! [`Message`], [`Part`] and [`Role`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use towerscope_core::{DataBlock, DataSource};

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
    /// media type and name.
    pub fn file(block: &DataBlock) -> Self {
        let (raw, url) = match &block.source {
            DataSource::Base64 { data, .. } => (Some(data.clone()), None),
            DataSource::Url { url, .. } => (None, Some(url.clone())),
        };
        Self {
            raw,
            url,
            media_type: Some(block.source.media_type().to_owned()),
            filename: block.name.clone(),
            ..Self::default()
        }
    }

    /// A file part as a data block, with its media type (`application/octet-stream` when it
    /// names none) and file name; `None` for a part that is no file part.
    ///
    /// `raw` may use the standard or the URL-safe alphabet, padded or not (JSON encoders of
    /// bytes write either); the block holds the standard, padded form the providers take. A
    /// `url` must be an http, https or data URL (a model provider fetches it).
    ///
    /// ```
    /// use towerscope_core::DataSource;
    /// use towerscope_serve::a2a::wire::Part;
    ///
    /// let part = Part { raw: Some("aGk".into()), media_type: Some("text/plain".into()), ..Part::default() };
    /// let block = part.data_block().unwrap().unwrap();
    /// assert_eq!(block.source, DataSource::inline(b"hi", "text/plain"));
    /// assert!(Part::text("hi").data_block().is_none());
    /// ```
    pub fn data_block(&self) -> Option<Result<DataBlock, String>> {
        let media_type = self
            .media_type
            .clone()
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| "application/octet-stream".to_owned());
        let source = match (&self.raw, &self.url) {
            (None, None) => return None,
            (Some(_), Some(_)) => return Some(Err("a file part holds `raw` or `url`, not both".to_owned())),
            (Some(raw), None) => {
                let standard: String = raw
                    .chars()
                    .map(|c| match c {
                        '-' => '+',
                        '_' => '/',
                        c => c,
                    })
                    .collect();
                let bytes = DataSource::Base64 {
                    data: standard,
                    media_type: String::new(),
                }
                .decode_bytes();
                match bytes {
                    Some(bytes) => DataSource::inline(&bytes, media_type),
                    None => return Some(Err("`raw` is not base64".to_owned())),
                }
            }
            (None, Some(url)) => {
                let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
                if !matches!(scheme.as_deref(), Some("http" | "https" | "data")) {
                    return Some(Err("`url` must be an http, https or data URL".to_owned()));
                }
                DataSource::Url {
                    url: url.clone(),
                    media_type,
                }
            }
        };
        let mut block = DataBlock::new(source);
        block.name = self.filename.clone();
        Some(Ok(block))
    }
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
