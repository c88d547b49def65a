//! [`UserInput`]: where a user agent's replies come from, and what one reply holds.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value};
use towerscope_core::{AgentError, ContentBlock, StructuredSchema};

/// What a user agent asks its input source for.
#[derive(Debug, Clone)]
pub struct InputRequest {
    /// The prompt to show (a terminal prints it before reading), e.g. `user> `.
    pub prompt: String,
    /// The structured data the reply must carry, if any.
    pub structured: Option<Arc<StructuredSchema>>,
}

impl InputRequest {
    /// A request showing `prompt`.
    pub fn new(prompt: impl Into<String>) -> Self {
        Self {
            prompt: prompt.into(),
            structured: None,
        }
    }
}

/// One reply of a person: its content, and structured data if asked for (or volunteered).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserReply {
    /// Text and data blocks.
    pub content: Vec<ContentBlock>,
    /// Structured data, stored as the message's `structured_output`.
    pub structured: Option<Map<String, Value>>,
}

impl UserReply {
    /// A reply of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![ContentBlock::text(text)],
            structured: None,
        }
    }

    /// Adds a block (text or data).
    #[must_use]
    pub fn with_block(mut self, block: ContentBlock) -> Self {
        self.content.push(block);
        self
    }

    /// Attaches structured data.
    #[must_use]
    pub fn with_structured(mut self, data: Map<String, Value>) -> Self {
        self.structured = Some(data);
        self
    }

    /// The text of the reply, blocks joined by newlines.
    pub fn text_content(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|b| b.as_text().map(|t| t.text.as_str()))
            .collect();
        texts.join("\n")
    }
}

/// The future of [`UserInput::read`]: the reply, or `None` when the input has ended (end of
/// file, a closed channel).
pub type InputFuture = Pin<Box<dyn Future<Output = Result<Option<UserReply>, AgentError>> + Send>>;

/// Where a person's replies come from: the terminal ([`TerminalInput`](super::TerminalInput)),
/// a channel ([`ChannelInput`](super::ChannelInput)), a web socket, a test.
///
/// A read that is dropped before it completes gives up cleanly; what the person types next
/// goes to the next read.
pub trait UserInput: Send + Sync + 'static {
    /// Reads one reply.
    fn read(&self, request: InputRequest) -> InputFuture;
}

impl<T: UserInput + ?Sized> UserInput for Arc<T> {
    fn read(&self, request: InputRequest) -> InputFuture {
        (**self).read(request)
    }
}
