//! The chunks a stream decoder delivers: a block keeps the id of the block it belongs to, a
//! chunk carries the provider's response id (as the provider's own chunks do).

use towerscope_core::{AgentError, ChatResponse, ContentBlock, Id, TextBlock, ThinkingBlock};

/// The most tool calls one answer may hold. An OpenAI delta of `{}` per call costs three bytes
/// on the wire, an Anthropic block start about eighty, and each about 260 in memory (the call
/// and its block): without a bound, one answer under the size limit made hundreds of thousands
/// of calls, which the agent would then try to run.
pub(crate) const MAX_TOOL_CALLS: usize = 1024;

/// The error of an answer past [`MAX_TOOL_CALLS`].
pub(crate) fn too_many_calls() -> AgentError {
    AgentError::model(format!(
        "the answer holds more than {MAX_TOOL_CALLS} tool calls; it is refused"
    ))
}

/// A chunk of the response `response_id`.
pub(crate) fn chunk(content: Vec<ContentBlock>, response_id: &Id) -> ChatResponse {
    let mut chunk = ChatResponse::chunk(content);
    chunk.id = response_id.clone();
    chunk
}

/// A text delta of the block `block_id`.
pub(crate) fn text(text: &str, block_id: &Id) -> ContentBlock {
    ContentBlock::Text(TextBlock::new(text).with_id(block_id))
}

/// A reasoning delta of the block `block_id`.
pub(crate) fn thinking(thinking: &str, block_id: &Id) -> ContentBlock {
    ContentBlock::Thinking(ThinkingBlock::new(thinking).with_id(block_id))
}
