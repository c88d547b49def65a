//! [`TiktokenCounter`]: exact token counts for OpenAI encodings (feature `tiktoken`).

use std::fmt;
use std::sync::Arc;

use tiktoken_rs::CoreBPE;
use towerscope_core::{ContentBlock, HintContent, MediaBlock, ToolOutput, ToolSchema};

use super::count::{DATA_BLOCK_TOKENS, TokenCounter};

/// Counts text with an OpenAI byte-pair encoding (`o200k_base` for the GPT-4o family,
/// `cl100k_base` for GPT-4 and GPT-3.5); data blocks count the reference's flat 2000 tokens.
///
/// ```
/// use towerscope_agent::compress::{TiktokenCounter, TokenCounter};
/// use towerscope_core::{ContentBlock, TextBlock};
///
/// let counter = TiktokenCounter::for_model("gpt-4o").expect("a known model");
/// let hello = ContentBlock::Text(TextBlock::new("hello world"));
/// assert_eq!(counter.count_blocks(&mut std::iter::once(&hello)), 2);
/// ```
#[derive(Clone)]
pub struct TiktokenCounter {
    bpe: Arc<CoreBPE>,
    name: String,
}

impl TiktokenCounter {
    /// The encoding of an OpenAI model (`gpt-4o`, `gpt-4`, ...); `None` for a model tiktoken
    /// does not know.
    pub fn for_model(model: &str) -> Option<Self> {
        let bpe = tiktoken_rs::get_bpe_from_model(model).ok()?;
        Some(Self {
            bpe: Arc::new(bpe),
            name: model.to_owned(),
        })
    }

    /// The `o200k_base` encoding (GPT-4o, o1, o3, GPT-4.1).
    pub fn o200k_base() -> Result<Self, towerscope_core::AgentError> {
        let bpe = tiktoken_rs::o200k_base().map_err(|e| towerscope_core::AgentError::State(e.to_string()))?;
        Ok(Self {
            bpe: Arc::new(bpe),
            name: "o200k_base".to_owned(),
        })
    }

    fn text(&self, text: &str) -> u64 {
        self.bpe.encode_with_special_tokens(text).len() as u64
    }

    fn media(&self, m: &MediaBlock) -> u64 {
        match m {
            MediaBlock::Text(t) => self.text(&t.text),
            MediaBlock::Data(_) => DATA_BLOCK_TOKENS,
        }
    }
}

impl fmt::Debug for TiktokenCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TiktokenCounter").field("encoding", &self.name).finish()
    }
}

impl TokenCounter for TiktokenCounter {
    fn count_blocks(&self, blocks: &mut dyn Iterator<Item = &ContentBlock>) -> u64 {
        blocks
            .map(|block| match block {
                ContentBlock::Text(t) => self.text(&t.text),
                ContentBlock::Thinking(t) => self.text(&t.thinking),
                ContentBlock::Hint(h) => match &h.hint {
                    HintContent::Text(t) => self.text(t),
                    HintContent::Blocks(bs) => bs.iter().map(|m| self.media(m)).sum(),
                },
                ContentBlock::ToolCall(c) => self.text(&c.name) + self.text(&c.input),
                ContentBlock::ToolResult(r) => match &r.output {
                    ToolOutput::Text(t) => self.text(t),
                    ToolOutput::Blocks(bs) => bs.iter().map(|m| self.media(m)).sum(),
                },
                ContentBlock::Data(_) => DATA_BLOCK_TOKENS,
            })
            .sum()
    }

    fn count_tools(&self, tools: &[ToolSchema]) -> u64 {
        tools
            .iter()
            .map(|t| self.text(&t.name) + self.text(&t.description) + self.text(&t.parameters.to_string()))
            .sum()
    }
}
