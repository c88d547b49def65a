//! The chunks a stream decoder delivers, built without generating ids nobody reads: a block
//! keeps the id of the block it belongs to, a chunk carries the provider's response id (as the
//! provider's own chunks do).

use serde_json::Map;
use towerscope_core::id::now_timestamp;
use towerscope_core::{ChatResponse, ContentBlock, Id, ModelFinishedReason, TextBlock, ThinkingBlock};

/// A chunk of the response `response_id` (empty while unknown).
pub(crate) fn chunk(content: Vec<ContentBlock>, response_id: &Id) -> ChatResponse {
    ChatResponse {
        content,
        is_last: false,
        id: response_id.clone(),
        created_at: now_timestamp(),
        usage: None,
        finished_reason: ModelFinishedReason::Completed,
        metadata: Map::new(),
    }
}

/// A text delta of the block `block_id`.
pub(crate) fn text(text: &str, block_id: &Id) -> ContentBlock {
    ContentBlock::Text(TextBlock {
        text: text.to_owned(),
        id: block_id.clone(),
        created_at: now_timestamp(),
        finished_at: None,
    })
}

/// A reasoning delta of the block `block_id`.
pub(crate) fn thinking(thinking: &str, block_id: &Id) -> ContentBlock {
    ContentBlock::Thinking(ThinkingBlock {
        thinking: thinking.to_owned(),
        id: block_id.clone(),
        created_at: now_timestamp(),
        finished_at: None,
        extra: Map::new(),
    })
}
