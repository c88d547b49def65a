//! Every place the Anthropic provider reads or builds an id: tool use ids to and from the wire,
//! block ids.

use std::fmt::{Display, Write};

use towerscope_core::Id;
use towerscope_core::id::{fnv1a, new_id};

/// A tool use id read from the wire, as the message model holds it.
pub(super) fn call_id(wire: &str) -> Id {
    Id::from(wire)
}

/// A tool use id for a block the server sent without one.
pub(super) fn generated_call_id(index: u32) -> Id {
    new_id().with_str(|id| Id::from(format!("toolu_{index}_{}", id.get(..12).unwrap_or(id))))
}

/// An id of the message model (tool call id) going onto the wire, in a tool use and in its
/// result.
///
/// The API accepts tool use ids of ASCII letters, digits, `_` and `-` only
/// (`^[a-zA-Z0-9_-]+$`). An id from another provider (Kimi K2's `functions.get_weather:0`, after
/// a fallback or a session moved here) goes with each other character as `_`, then `_` and a
/// hash of the whole id (`functions_get_weather_0_…`), so two ids stay two. The same id goes
/// the same way every time, in every process and build (a session stored and loaded again);
/// Anthropic answers with ids of its own, so none comes back to be mapped.
pub(super) fn wire_id(id: &impl Display) -> String {
    let id = id.to_string();
    if !id.is_empty() && id.bytes().all(accepted) {
        return id;
    }
    let mut out: String = id
        .chars()
        .map(|c| if u8::try_from(c).is_ok_and(accepted) { c } else { '_' })
        .collect();
    // Writing to a `String` does not fail.
    let _ = write!(out, "_{:016x}", fnv1a(id.as_bytes()));
    out
}

/// Whether the API accepts `byte` in a tool use id.
fn accepted(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

/// A new block id, shared by the chunks of one streamed block and the block of the complete
/// response.
pub(super) fn block_id() -> Id {
    new_id()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mapped id is fixed for good: a stored conversation sends its calls and results
    /// under the ids it was first sent with, whichever build sends it.
    #[test]
    fn an_id_the_api_refuses_maps_the_same_way_in_every_build() {
        assert_eq!(wire_id(&"functions.get_weather:0"), wire_id(&"functions.get_weather:0"));
        assert_eq!(wire_id(&"a.b"), "a_b_e61d99190466522c");
        assert_eq!(wire_id(&"call_01-Ab"), "call_01-Ab");
    }
}
