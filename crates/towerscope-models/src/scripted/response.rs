//! [`ScriptedResponse`]: one scripted answer of a [`ScriptedModel`](super::ScriptedModel), and how
//! it is cut into streamed chunks.

use std::time::Duration;

use towerscope_core::{
    AgentError, ChatResponse, ChatUsage, ContentBlock, DataBlock, TextBlock, ThinkingBlock, ToolCallBlock,
};

/// How a response is delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Delivery {
    /// As the model is configured (streaming by default).
    Model,
    /// As one complete response.
    Whole,
    /// As a stream of chunks.
    Streamed,
}

/// One scripted answer of a [`ScriptedModel`](super::ScriptedModel). See the [module docs](super).
#[derive(Debug, Clone)]
pub struct ScriptedResponse {
    pub(super) content: Vec<ContentBlock>,
    pub(super) usage: Option<ChatUsage>,
    // The rare failures are boxed: a model holds its whole script, and a response is kept
    // small for the agents that each own one (a service holding many conversations).
    pub(super) error: Option<Box<AgentError>>,
    pub(super) fail_after: Option<Box<(usize, AgentError)>>,
    pub(super) delay: Option<Duration>,
    pub(super) chunk_delay: Option<Duration>,
    pub(super) delivery: Delivery,
    pub(super) final_chunk: bool,
}

impl ScriptedResponse {
    /// The response with no spare capacity, as a model keeps it.
    pub(super) fn compact(mut self) -> Self {
        self.content.shrink_to_fit();
        self
    }

    fn with_blocks(content: Vec<ContentBlock>) -> Self {
        Self {
            content,
            usage: None,
            error: None,
            fail_after: None,
            delay: None,
            chunk_delay: None,
            delivery: Delivery::Model,
            final_chunk: true,
        }
    }

    /// An empty response (no blocks).
    pub fn empty() -> Self {
        Self::with_blocks(Vec::new())
    }

    /// A text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self::empty().and_text(text)
    }

    /// A thinking-only answer.
    pub fn thinking(thinking: impl Into<String>) -> Self {
        Self::empty().and_thinking(thinking)
    }

    /// An answer calling one tool; `input` is the raw JSON the model "typed".
    pub fn tool_call(id: impl Into<towerscope_core::Id>, name: impl Into<String>, input: impl Into<String>) -> Self {
        Self::empty().and_tool_call(id, name, input)
    }

    /// A call that fails with `error` before anything is returned.
    pub fn error(error: AgentError) -> Self {
        let mut r = Self::empty();
        r.error = Some(Box::new(error));
        r
    }

    /// Adds a text block.
    pub fn and_text(mut self, text: impl Into<String>) -> Self {
        self.content.push(ContentBlock::Text(TextBlock::new(text)));
        self
    }

    /// Adds a thinking block.
    pub fn and_thinking(mut self, thinking: impl Into<String>) -> Self {
        self.content.push(ContentBlock::Thinking(ThinkingBlock::new(thinking)));
        self
    }

    /// Adds a tool call.
    pub fn and_tool_call(
        mut self,
        id: impl Into<towerscope_core::Id>,
        name: impl Into<String>,
        input: impl Into<String>,
    ) -> Self {
        self.content
            .push(ContentBlock::ToolCall(ToolCallBlock::new(id, name, input)));
        self
    }

    /// Adds a base64 data block.
    pub fn and_data(mut self, data: impl Into<String>, media_type: impl Into<String>) -> Self {
        self.content
            .push(ContentBlock::Data(DataBlock::base64(data, media_type)));
        self
    }

    /// Reports this token usage on the response.
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Some(ChatUsage::new(input_tokens, output_tokens));
        self
    }

    /// Reports this usage (with cache counters) on the response.
    pub fn with_chat_usage(mut self, usage: ChatUsage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Waits `delay` before answering (use paused tokio time in tests).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Waits `delay` before each streamed chunk.
    pub fn chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = Some(delay);
        self
    }

    /// Breaks the stream with `error` after `chunks` chunks were delivered.
    pub fn fail_mid_stream(mut self, chunks: usize, error: AgentError) -> Self {
        self.fail_after = Some(Box::new((chunks, error)));
        self.delivery = Delivery::Streamed;
        self
    }

    /// Delivers this response whole, whatever the model's setting.
    pub fn whole(mut self) -> Self {
        self.delivery = Delivery::Whole;
        self
    }

    /// Delivers this response as a stream, whatever the model's setting.
    pub fn streamed(mut self) -> Self {
        self.delivery = Delivery::Streamed;
        self
    }

    /// Ends the stream without its final (`is_last`) chunk, as a broken provider would.
    pub fn without_final_chunk(mut self) -> Self {
        self.final_chunk = false;
        self.delivery = Delivery::Streamed;
        self
    }

    /// The complete response this script entry stands for.
    pub(super) fn complete(self) -> ChatResponse {
        let mut r = ChatResponse::new(self.content);
        r.usage = self.usage;
        r
    }

    /// The delta chunks: thinking, then text, then each tool call in two pieces, then data.
    pub(super) fn chunks(&self) -> Vec<ChatResponse> {
        let mut out = Vec::new();
        for block in &self.content {
            match block {
                ContentBlock::Thinking(t) => {
                    for piece in split_words(&t.thinking) {
                        let mut b = t.clone();
                        b.thinking = piece;
                        out.push(ChatResponse::chunk(vec![ContentBlock::Thinking(b)]));
                    }
                }
                ContentBlock::Text(t) => {
                    for piece in split_words(&t.text) {
                        let mut b = t.clone();
                        b.text = piece;
                        out.push(ChatResponse::chunk(vec![ContentBlock::Text(b)]));
                    }
                }
                ContentBlock::ToolCall(c) => {
                    let mid = c
                        .input
                        .char_indices()
                        .nth(c.input.chars().count() / 2)
                        .map_or(0, |(i, _)| i);
                    let (head, tail) = c.input.split_at(mid);
                    for piece in [head, tail] {
                        let mut b = c.clone();
                        b.input = piece.to_owned();
                        out.push(ChatResponse::chunk(vec![ContentBlock::ToolCall(b)]));
                    }
                }
                other => out.push(ChatResponse::chunk(vec![other.clone()])),
            }
        }
        out
    }
}

/// Splits text into word pieces, each keeping its trailing whitespace.
pub(super) fn split_words(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    for (i, ch) in text.char_indices() {
        if ch.is_whitespace() {
            in_space = true;
        } else if in_space {
            pieces.push(text[start..i].to_owned());
            start = i;
            in_space = false;
        }
    }
    if start < text.len() || pieces.is_empty() {
        pieces.push(text[start..].to_owned());
    }
    pieces
}
