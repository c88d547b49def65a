//! Every place the Anthropic provider reads or builds an id: tool use ids to and from the wire,
//! block ids.

use std::fmt::Display;

use towerscope_core::Id;
use towerscope_core::id::new_id;

/// A tool use id read from the wire, as the message model holds it.
pub(super) fn call_id(wire: &str) -> Id {
    Id::from(wire)
}

/// A tool use id for a block the server sent without one.
pub(super) fn generated_call_id(index: u32) -> Id {
    new_id().with_str(|id| Id::from(format!("toolu_{index}_{}", id.get(..12).unwrap_or(id))))
}

/// An id of the message model (tool call id) going onto the wire.
pub(super) fn wire_id(id: &impl Display) -> String {
    id.to_string()
}

/// A new block id, shared by the chunks of one streamed block and the block of the complete
/// response.
pub(super) fn block_id() -> Id {
    new_id()
}
