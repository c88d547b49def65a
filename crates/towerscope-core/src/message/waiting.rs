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
//! let answered = msg.answered_ids();
//! assert_eq!(msg.tool_calls().filter(|c| !answered.contains(&c.id)).count(), 1);
//! let waiting = WaitingCalls::of(&msg).unwrap();
//! assert_eq!(waiting.confirm[0].name, "delete");
//! assert!(waiting.external.is_empty());
//! ```

use super::msg::{Msg, Role};
use super::tool_block::{ToolCallBlock, ToolCallState};
use crate::id::Id;

impl Msg {
    /// The ids of this message's tool results, to tell which of its calls have none:
    /// `msg.tool_calls().filter(|c| !answered.contains(&c.id))`. One scan of the message, with
    /// no allocation unless it holds many results (then they are hashed), so that filter stays
    /// linear in the message.
    pub fn answered_ids(&self) -> AnsweredIds<'_> {
        let mut few = [None; FEW_RESULTS];
        for (i, result) in self.tool_results().enumerate() {
            match few.get_mut(i) {
                Some(slot) => *slot = Some(&result.id),
                None => return AnsweredIds(Answered::Many(self.tool_results().map(|r| &r.id).collect())),
            }
        }
        AnsweredIds(Answered::Few(few))
    }
}

/// How many result ids [`AnsweredIds`] keeps in place before it hashes them.
const FEW_RESULTS: usize = 16;

/// The ids of a message's tool results ([`Msg::answered_ids`]).
#[derive(Debug)]
pub struct AnsweredIds<'a>(Answered<'a>);

/// Kept in place when there are few, hashed when a model made many calls.
#[derive(Debug)]
enum Answered<'a> {
    Few([Option<&'a Id>; FEW_RESULTS]),
    Many(std::collections::HashSet<&'a Id>),
}

impl AnsweredIds<'_> {
    /// Whether the message holds a result for the call `id`.
    pub fn contains(&self, id: &Id) -> bool {
        match &self.0 {
            Answered::Few(ids) => ids.iter().map_while(|r| *r).any(|r| r == id),
            Answered::Many(ids) => ids.contains(id),
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
        let answered = msg.answered_ids();
        for call in msg.tool_calls().filter(|c| !answered.contains(&c.id)) {
            match call.state {
                ToolCallState::Asking => waiting.confirm.push(call.clone()),
                ToolCallState::Submitted => waiting.external.push(call.clone()),
                _ => {}
            }
        }
        (!waiting.confirm.is_empty() || !waiting.external.is_empty()).then_some(waiting)
    }
}

/// Left in a resumed reply's context (`ctx.get::<ResumeApplied>()`) once the agent has checked
/// and applied the reply's resuming input, a confirmation or external execution results: an
/// `on_reply` layer that records what the input carried (the tracing layer's spans of external
/// results) does so only for an input the agent took. An input the agent refused (a result for
/// a call the reply does not wait on, a call answered twice) leaves none: nothing changed, the
/// reply still waits, and its stream's first item is the error.
///
/// ```
/// use towerscope_core::{AgentContext, ResumeApplied};
///
/// let ctx = AgentContext::new("agent", "session", "reply");
/// assert!(ctx.get::<ResumeApplied>().is_none(), "nothing applied yet");
/// ctx.insert(ResumeApplied);
/// assert!(ctx.get::<ResumeApplied>().is_some());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResumeApplied;
