//! What a client's message means to the agent: a new message, or the answer to a parked reply.
//!
//! A task waiting for input (`TASK_STATE_INPUT_REQUIRED`) asked either to confirm tool calls or
//! for the results of tools run outside the agent. The client's next message on the task (or
//! its context) answers:
//!
//! - a confirmation: a data part `{"approved": true}` or `{"approved": false}`, or a text
//!   part: `yes`, `y`, `ok`, `approve`, `approved`, `confirm` (any case) approve every call,
//!   anything else denies them;
//! - external results: a data part `{"results": {"<call id>": "<output>", ...}}`, or a text
//!   part that becomes the output of every waiting call.

use serde_json::Value;
use towerscope_core::event::{ConfirmResult, ExternalExecutionResultEvent, UserConfirmResultEvent};
use towerscope_core::{Msg, ReplyInput, ToolResultBlock, ToolResultState};

use super::error::RpcError;
use super::tasks::Parked;
use super::wire::Message;

/// The message as a new user message for the agent: its text parts, and its data parts as JSON.
pub(crate) fn new_message(message: &Message) -> Result<ReplyInput, RpcError> {
    check_parts(message)?;
    let pieces: Vec<String> = message
        .parts
        .iter()
        .filter_map(|part| match (&part.text, &part.data) {
            (Some(text), _) => Some(text.clone()),
            (None, Some(data)) => Some(data.to_string()),
            (None, None) => None,
        })
        .collect();
    Ok(Msg::user("user", pieces.join("\n")).into())
}

/// Refuses a message this agent cannot read, new or the answer to a waiting task: one with
/// no parts, or a raw or URL part.
pub(crate) fn check_parts(message: &Message) -> Result<(), RpcError> {
    if message.parts.is_empty() {
        return Err(RpcError::invalid_params("the message has no parts"));
    }
    if message
        .parts
        .iter()
        .any(|part| part.text.is_none() && part.data.is_none())
    {
        return Err(RpcError::new(
            RpcError::CONTENT_TYPE_NOT_SUPPORTED,
            "this agent takes text and data parts; a raw or url part is not supported",
        ));
    }
    Ok(())
}

/// The message as the answer to `parked`.
pub(crate) fn resume(parked: &Parked, message: &Message) -> ReplyInput {
    let data = message.parts.iter().find_map(|p| p.data.as_ref());
    let text = message.text();
    if !parked.confirm.is_empty() {
        let approved = match data.and_then(|d| d.get("approved")).and_then(Value::as_bool) {
            Some(approved) => approved,
            None => is_yes(&text),
        };
        let results = parked
            .confirm
            .iter()
            .map(|call| ConfirmResult::new(approved, call.clone()))
            .collect();
        return UserConfirmResultEvent::new(parked.reply_id.clone(), results).into();
    }
    let results_map = data.and_then(|d| d.get("results")).and_then(Value::as_object);
    let results = parked
        .external
        .iter()
        .map(|call| {
            let output = match results_map.and_then(|m| m.get(&call.id.to_string())) {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => text.clone(),
            };
            ToolResultBlock::new(call.id.clone(), call.name.clone(), output, ToolResultState::Success)
        })
        .collect();
    ExternalExecutionResultEvent::new(parked.reply_id.clone(), results).into()
}

fn is_yes(text: &str) -> bool {
    let word = text.trim().trim_end_matches(['.', '!']).to_ascii_lowercase();
    matches!(word.as_str(), "yes" | "y" | "ok" | "approve" | "approved" | "confirm")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::wire::{Part, Role};
    use towerscope_core::ToolCallBlock;

    fn parked_confirm() -> Parked {
        Parked {
            reply_id: "r1".into(),
            confirm: vec![ToolCallBlock::new("c1", "delete", r#"{"path":"/a"}"#)],
            external: vec![],
        }
    }

    fn approved(input: ReplyInput) -> bool {
        match input {
            ReplyInput::Confirm(e) => e.confirm_results.iter().all(|r| r.confirmed),
            other => panic!("expected a confirmation, got {other:?}"),
        }
    }

    #[test]
    fn yes_in_text_or_data_approves_anything_else_denies() {
        let p = parked_confirm();
        assert!(approved(resume(&p, &Message::new_text(Role::User, " Yes. "))));
        assert!(!approved(resume(&p, &Message::new_text(Role::User, "no, keep it"))));
        let mut data = Message::new_text(Role::User, "yes");
        data.parts = vec![Part::data(serde_json::json!({"approved": false}))];
        assert!(!approved(resume(&p, &data)));
    }

    #[test]
    fn raw_parts_are_refused_with_a_clear_error() {
        let mut m = Message::new_text(Role::User, "x");
        m.parts = vec![Part {
            raw: Some("AAAA".into()),
            ..Part::default()
        }];
        assert_eq!(
            new_message(&m).err().map(|e| e.code),
            Some(RpcError::CONTENT_TYPE_NOT_SUPPORTED)
        );
    }
}
