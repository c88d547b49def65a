//! The leader's assignment tool, and how assignments and members' replies are read.

use serde_json::{Value, json};
use towerscope_agent::toolkit::{Tool, ToolChunkStream, ToolError};
use towerscope_core::{Msg, PermissionDecision, ReplyFinishedReason, ToolCallBlock, ToolResultBlock, ToolResultState};

use super::TeamMember;
use crate::share::shared_copy;

/// The name of the tool the leader assigns tasks with.
pub const ASSIGN_TOOL: &str = "TeamAssign";

/// The member and prompt of an assignment, or the error text for the leader.
pub(super) fn parse_assignment(call: &ToolCallBlock, members: &[TeamMember]) -> Result<(usize, String), String> {
    let input: Value = serde_json::from_str(&call.input).map_err(|e| {
        format!("The assignment's arguments are not JSON ({e}); pass {{\"member\": .., \"prompt\": ..}}.")
    })?;
    let name = input.get("member").and_then(Value::as_str).unwrap_or_default();
    let prompt = input.get("prompt").and_then(Value::as_str).unwrap_or_default();
    let member = members
        .iter()
        .position(|m| m.participant.name() == name)
        .ok_or_else(|| {
            let names: Vec<&str> = members.iter().map(|m| m.participant.name()).collect();
            format!(
                "There is no member named '{name}'; the members are: {}.",
                names.join(", ")
            )
        })?;
    Ok((member, prompt.to_owned()))
}

/// The text of an assignment whose member was interrupted (or cut off with its run).
const INTERRUPTED: &str = "The member was interrupted.";

/// The result of an assignment `call_id` whose member was interrupted, or never ran because
/// its run was stopped or dropped.
pub(super) fn interrupted(call_id: &towerscope_core::Id) -> ToolResultBlock {
    ToolResultBlock::new(call_id, ASSIGN_TOOL, INTERRUPTED, ToolResultState::Interrupted)
}

/// A member's final reply as the result of the leader's call.
pub(super) fn result_of(call: &ToolCallBlock, reply: &Msg) -> ToolResultBlock {
    let (state, fallback) = match reply.finished_reason {
        Some(ReplyFinishedReason::Completed | ReplyFinishedReason::ExceedMaxIters) => {
            (ToolResultState::Success, "The member finished without saying anything.")
        }
        Some(ReplyFinishedReason::Interrupted) => (ToolResultState::Interrupted, INTERRUPTED),
        Some(ReplyFinishedReason::Error) => (ToolResultState::Error, "The member's reply failed."),
        None => (ToolResultState::Error, "The member is waiting for the user."),
    };
    let mut text = reply
        .finished_reason
        .and(shared_copy(reply))
        .and_then(|m| m.text_content())
        .unwrap_or_else(|| fallback.to_owned());
    // A failed reply whose text is not its error's (a fan-out whose member failed: the others'
    // answers) tells the leader why, too.
    if let Some(error) = reply.error.as_ref().filter(|e| !text.contains(&e.message)) {
        text = format!("{text}\nThe member's reply failed: {}", error.message);
    }
    ToolResultBlock::new(&call.id, ASSIGN_TOOL, text, state)
}

/// The leader's assignment tool: external, so the leader parks on it and the pipeline runs it.
pub(super) struct AssignTool {
    description: String,
    schema: Value,
}

impl AssignTool {
    pub(super) fn new(members: &[TeamMember]) -> Self {
        let names: Vec<&str> = members.iter().map(|m| m.participant.name()).collect();
        let listing: Vec<String> = members
            .iter()
            .map(|m| format!("- {}: {}", m.participant.name(), m.description))
            .collect();
        Self {
            description: format!(
                "Give a task to one member of your team; its answer comes back as this call's result. \
                 Members:\n{}",
                listing.join("\n")
            ),
            schema: json!({
                "type": "object",
                "properties": {
                    "member": {"type": "string", "enum": names, "description": "Who does the task."},
                    "prompt": {
                        "type": "string",
                        "description": "The whole task. The member knows nothing of this conversation: say everything it needs."
                    }
                },
                "required": ["member", "prompt"]
            }),
        }
    }
}

impl Tool for AssignTool {
    fn name(&self) -> &str {
        ASSIGN_TOOL
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn external(&self) -> bool {
        true
    }

    /// Giving a task is always allowed; the member's own tools ask for themselves.
    fn check_permission(&self, _input: &Value) -> Option<PermissionDecision> {
        Some(PermissionDecision::Allow)
    }

    fn call(&self, _input: Value) -> ToolChunkStream {
        Box::pin(futures_util::stream::iter([Err(ToolError::new(
            "TeamAssign runs outside the leader, in its team pipeline",
        ))]))
    }
}
