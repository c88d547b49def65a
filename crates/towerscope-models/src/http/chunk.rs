//! The chunks a stream decoder delivers: a block keeps the id of the block it belongs to, a
//! chunk carries the provider's response id (as the provider's own chunks do).

use towerscope_core::{ChatResponse, ContentBlock, Id, TextBlock, ThinkingBlock};

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
