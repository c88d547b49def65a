//! The tool calls of a message that have no result yet, and what a parked reply waits for.
//!
//! # Example
//!
//! ```
//! use towerscope_core::{ContentBlock, Msg, Role, ToolCallBlock, ToolCallState, WaitingCalls};
//!
//! let mut call = ToolCallBlock::new("c1", "delete", r#"{"path": "/tmp/x"}"#);
//! call.state = ToolCallState::Asking;
//! let msg = Msg::new("agent", Role::Assistant, vec![ContentBlock::ToolCall(call)]).unwrap();
//! assert_eq!(msg.unanswered_calls().count(), 1);
//! let waiting = WaitingCalls::of(&msg).unwrap();
//! assert_eq!(waiting.confirm[0].name, "delete");
//! assert!(waiting.external.is_empty());
//! ```

use super::content::ContentBlock;
use super::msg::{Msg, Role};
use super::tool_block::{ToolCallBlock, ToolCallState};
use crate::id::Id;

impl Msg {
    /// The tool calls that have no result in this message, in order, borrowed. One scan of
    /// the message for its results, then one for its calls: linear in the message, with no
    /// allocation unless it holds many results.
    #[inline]
    pub fn unanswered_calls(&self) -> UnansweredCalls<'_> {
        UnansweredCalls {
            answered: Answered::of(self),
            blocks: self.content.iter(),
        }
    }
}

/// The tool calls of a message without a result ([`Msg::unanswered_calls`]).
#[derive(Debug)]
pub struct UnansweredCalls<'a> {
    answered: Answered<'a>,
    blocks: std::slice::Iter<'a, ContentBlock>,
}

impl<'a> Iterator for UnansweredCalls<'a> {
    type Item = &'a ToolCallBlock;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.blocks
            .by_ref()
            .filter_map(ContentBlock::as_tool_call)
            .find(|c| !self.answered.contains(&c.id))
    }
}

/// How many result ids [`Answered`] keeps in place before it hashes them.
const FEW_RESULTS: usize = 16;

/// The ids of a message's tool results: kept in place (one scan of the message) when there
/// are few, hashed when a model made many calls, so a check stays linear in the message.
#[derive(Debug)]
enum Answered<'a> {
    Few([Option<&'a Id>; FEW_RESULTS]),
    Many(std::collections::HashSet<&'a Id>),
}

impl<'a> Answered<'a> {
    #[inline]
    fn of(msg: &'a Msg) -> Self {
        let mut few = [None; FEW_RESULTS];
        for (i, result) in msg.tool_results().enumerate() {
            match few.get_mut(i) {
                Some(slot) => *slot = Some(&result.id),
                None => return Self::Many(msg.tool_results().map(|r| &r.id).collect()),
            }
        }
        Self::Few(few)
    }

    #[inline]
    fn contains(&self, id: &Id) -> bool {
        match self {
            Self::Few(ids) => ids.iter().map_while(|r| *r).any(|r| r == id),
            Self::Many(ids) => ids.contains(id),
        }
    }
}

/// The calls a parked reply waits for, each list in its message's order: what a server tells
/// its client to answer.
///
/// The agent's `waiting_calls` reads them from its state. A reply that parks also leaves them
/// in its context's extensions (`ctx.get::<WaitingCalls>()`) for the `on_reply` layers, whose
/// final message is then a note: a resume that answers one call of a turn and parks again on
/// another sends no request event.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitingCalls {
    /// The parked reply's id (the id of its message, and the one a resume names).
    pub reply_id: Id,
    /// The calls waiting for the user's confirmation.
    pub confirm: Vec<ToolCallBlock>,
    /// The calls waiting for a result from outside the agent.
    pub external: Vec<ToolCallBlock>,
}

impl WaitingCalls {
    /// What the assistant message `msg` waits for: its calls without a result in state
    /// `asking` (confirm) or `submitted` (external), under the message's id; `None` when it
    /// waits for nothing (or is not an assistant message).
    pub fn of(msg: &Msg) -> Option<Self> {
        if msg.role != Role::Assistant {
            return None;
        }
        let mut waiting = Self {
            reply_id: msg.id.clone(),
            confirm: Vec::new(),
            external: Vec::new(),
        };
        for call in msg.unanswered_calls() {
            match call.state {
                ToolCallState::Asking => waiting.confirm.push(call.clone()),
                ToolCallState::Submitted => waiting.external.push(call.clone()),
                _ => {}
            }
        }
        (!waiting.confirm.is_empty() || !waiting.external.is_empty()).then_some(waiting)
    }
}
