//! Token counting: the [`TokenCounter`] trait, the reference's estimate ([`EstimateCounter`])
//! and the default, [`UsageCounter`]: the model's reported usage of the last call plus an
//! estimate of what came after it.

use std::sync::Arc;

use towerscope_core::{ContentBlock, HintContent, MediaBlock, Msg, ToolOutput, ToolSchema};

pub use crate::state::LastCall;

/// The reference's flat estimate for one data block (an image, audio, a file).
pub const DATA_BLOCK_TOKENS: u64 = 2000;

/// What is counted: the model input of a round.
#[derive(Debug, Clone, Copy)]
pub struct TokenInput<'a> {
    /// The system message and the summary message, if any.
    pub head: &'a [Arc<Msg>],
    /// The conversation.
    pub context: &'a [Arc<Msg>],
    /// The tool schemas offered.
    pub tools: &'a [ToolSchema],
    /// The usage the model reported for its last call, and where that call's answer ends in
    /// `context` (when it is still there).
    pub last_call: Option<&'a LastCall>,
}

/// Counts the tokens of a model input.
///
/// [`count_blocks`](Self::count_blocks) and [`count_tools`](Self::count_tools) are what a
/// counter must say; the compressor uses them to split the context, and
/// [`count`](Self::count) (by default their sum over the whole input) for the round's total.
///
/// ```
/// use std::sync::Arc;
/// use towerscope_agent::compress::{EstimateCounter, TokenCounter, TokenInput};
/// use towerscope_core::Msg;
///
/// let context = vec![Arc::new(Msg::user("user", "12345678"))];
/// let input = TokenInput { head: &[], context: &context, tools: &[], last_call: None };
/// assert_eq!(EstimateCounter.count(&input), 2); // 8 bytes / 4
/// ```
pub trait TokenCounter: Send + Sync + 'static {
    /// The tokens of these blocks (of one message, or of several).
    fn count_blocks(&self, blocks: &mut dyn Iterator<Item = &ContentBlock>) -> u64;

    /// The tokens of the tool schemas.
    fn count_tools(&self, tools: &[ToolSchema]) -> u64;

    /// The tokens of one message.
    fn count_message(&self, msg: &Msg) -> u64 {
        self.count_blocks(&mut msg.content.iter())
    }

    /// The tokens of the whole input.
    fn count(&self, input: &TokenInput<'_>) -> u64 {
        let mut blocks = input.head.iter().chain(input.context).flat_map(|m| m.content.iter());
        self.count_blocks(&mut blocks) + self.count_tools(input.tools)
    }
}

/// The reference's estimate: `int(utf8_bytes_of_all_text / 4 + 0.5) + 2000 * data_blocks`,
/// where the text is that of text, thinking and hint blocks, tool-call arguments, tool-result
/// text and the JSON of the tool schemas.
#[derive(Debug, Clone, Copy, Default)]
pub struct EstimateCounter;

impl EstimateCounter {
    fn tokens(bytes: u64, data: u64) -> u64 {
        (bytes + 2) / 4 + data * DATA_BLOCK_TOKENS
    }
}

impl TokenCounter for EstimateCounter {
    fn count_blocks(&self, blocks: &mut dyn Iterator<Item = &ContentBlock>) -> u64 {
        let (bytes, data) = measure(blocks);
        Self::tokens(bytes, data)
    }

    fn count_tools(&self, tools: &[ToolSchema]) -> u64 {
        Self::tokens(tools_bytes(tools), 0)
    }

    fn count(&self, input: &TokenInput<'_>) -> u64 {
        let mut blocks = input.head.iter().chain(input.context).flat_map(|m| m.content.iter());
        let (bytes, data) = measure(&mut blocks);
        Self::tokens(bytes + tools_bytes(input.tools), data)
    }
}

/// The default counter: the usage the model reported for its last call (input plus output
/// tokens: exactly what it read and wrote), plus `inner`'s count of what the context gained
/// after that answer (tool results, hints, new messages). Without a usable report (no usage,
/// or the context changed under it: compressed, replaced) it is `inner`'s count of everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct UsageCounter<C = EstimateCounter> {
    inner: C,
}

impl<C: TokenCounter> UsageCounter<C> {
    /// Counts what came after the last call with `inner`.
    pub fn new(inner: C) -> Self {
        Self { inner }
    }
}

impl<C: TokenCounter> TokenCounter for UsageCounter<C> {
    fn count_blocks(&self, blocks: &mut dyn Iterator<Item = &ContentBlock>) -> u64 {
        self.inner.count_blocks(blocks)
    }

    fn count_tools(&self, tools: &[ToolSchema]) -> u64 {
        self.inner.count_tools(tools)
    }

    fn count(&self, input: &TokenInput<'_>) -> u64 {
        let Some(mark) = input.last_call else {
            return self.inner.count(input);
        };
        let Some(msg) = input.context.get(mark.msg_index) else {
            return self.inner.count(input);
        };
        if msg.id != mark.msg_id || msg.content.len() < mark.blocks || mark.tokens == 0 {
            return self.inner.count(input);
        }
        let mut after = msg.content[mark.blocks..].iter().chain(
            input.context[mark.msg_index + 1..]
                .iter()
                .flat_map(|m| m.content.iter()),
        );
        mark.tokens + self.inner.count_blocks(&mut after)
    }
}

/// The UTF-8 bytes of the counted text and the number of data blocks.
pub(crate) fn measure(blocks: &mut dyn Iterator<Item = &ContentBlock>) -> (u64, u64) {
    let (mut bytes, mut data) = (0u64, 0u64);
    let media = |m: &MediaBlock, bytes: &mut u64, data: &mut u64| match m {
        MediaBlock::Text(t) => *bytes += t.text.len() as u64,
        MediaBlock::Data(_) => *data += 1,
    };
    for block in blocks {
        match block {
            ContentBlock::Text(t) => bytes += t.text.len() as u64,
            ContentBlock::Thinking(t) => bytes += t.thinking.len() as u64,
            ContentBlock::Hint(h) => match &h.hint {
                HintContent::Text(t) => bytes += t.len() as u64,
                HintContent::Blocks(bs) => bs.iter().for_each(|m| media(m, &mut bytes, &mut data)),
            },
            ContentBlock::ToolCall(c) => bytes += c.input.len() as u64,
            ContentBlock::ToolResult(r) => match &r.output {
                ToolOutput::Text(t) => bytes += t.len() as u64,
                ToolOutput::Blocks(bs) => bs.iter().for_each(|m| media(m, &mut bytes, &mut data)),
            },
            ContentBlock::Data(_) => data += 1,
        }
    }
    (bytes, data)
}

/// The bytes of the tool schemas in the OpenAI function format the reference counts.
fn tools_bytes(tools: &[ToolSchema]) -> u64 {
    if tools.is_empty() {
        return 0;
    }
    let listed: Vec<serde_json::Value> = tools
        .iter()
        .map(|t| {
            serde_json::json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters}})
        })
        .collect();
    serde_json::to_string(&listed).map_or(0, |s| s.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use towerscope_core::{Id, TextBlock, ToolCallBlock};

    #[test]
    fn the_estimate_is_the_reference_formula() {
        let m = Arc::new(Msg::assistant_blocks(
            "a",
            vec![
                ContentBlock::Text(TextBlock::new("abcdef")),
                ContentBlock::ToolCall(ToolCallBlock::new("c", "t", "{}")),
                ContentBlock::data_base64("AAAA", "image/png"),
            ],
        ));
        let context = [m];
        let input = TokenInput {
            head: &[],
            context: &context,
            tools: &[],
            last_call: None,
        };
        // 8 bytes / 4 + 0.5 = 2.5 -> 2, plus one data block.
        assert_eq!(EstimateCounter.count(&input), 2 + DATA_BLOCK_TOKENS);
    }

    #[test]
    fn usage_counts_the_report_plus_what_came_after() {
        let mut msg = Msg::assistant("a", "answer");
        let mark = LastCall {
            tokens: 1000,
            msg_index: 0,
            msg_id: msg.id.clone(),
            blocks: 1,
        };
        msg.content.push(ContentBlock::Text(TextBlock::new("12345678")));
        let context = [Arc::new(msg), Arc::new(Msg::user("u", "1234"))];
        let input = TokenInput {
            head: &[],
            context: &context,
            tools: &[],
            last_call: Some(&mark),
        };
        assert_eq!(UsageCounter::<EstimateCounter>::default().count(&input), 1000 + 3);
        let stale = LastCall {
            msg_id: Id::from("gone"),
            ..mark
        };
        let input = TokenInput {
            last_call: Some(&stale),
            ..input
        };
        assert_eq!(UsageCounter::<EstimateCounter>::default().count(&input), 5);
    }
}
