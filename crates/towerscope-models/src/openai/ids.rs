//! Every place the OpenAI provider reads or builds an id: tool call ids to and from the wire,
//! block ids, response ids.

use std::fmt::Display;

use towerscope_core::Id;
use towerscope_core::id::new_id;

/// A tool call id read from the wire, as the message model holds it.
pub(super) fn call_id(wire: &str) -> Id {
    Id::from(wire)
}

/// A tool call id for a call the server sent without one (some compatible servers do).
pub(super) fn generated_call_id(index: u32) -> Id {
    new_id().with_str(|id| Id::from(format!("call_{index}_{}", id.get(..12).unwrap_or(id))))
}

/// An id of the message model (tool call or block id) going onto the wire.
pub(super) fn wire_id(id: &impl Display) -> String {
    id.to_string()
}

/// A new block id, shared by the chunks of one streamed block and the block of the complete
/// response.
pub(super) fn block_id() -> Id {
    new_id()
}
