//! Resuming a parked reply: user confirmations, external execution results, interruption; and
//! closing tool calls that a dropped reply left open.

use std::sync::Arc;

use serde_json::Map;
use towerscope_core::event::{ExternalExecutionResultEvent, UserConfirmResultEvent};
use towerscope_core::{
    AgentContext, AgentError, AgentEvent, MediaBlock, Msg, ReplyEndEvent, ReplyFinishedReason, ReplyItem,
    ToolCallState, ToolOutput, ToolResultBlock, ToolResultDataDeltaEvent, ToolResultEndEvent, ToolResultStartEvent,
    ToolResultState, ToolResultTextDeltaEvent,
};

use crate::agent::Shared;
use crate::reply::{Out, ReplyEndSeen};
use crate::state::AgentState;

/// The text a call closed by an interruption gets.
pub(crate) const INTERRUPTED_CALL_TEXT: &str =
    "<system-reminder>The tool call has been interrupted by the user.</system-reminder>";

async fn event(y: &Out, e: AgentEvent) {
    y.emit(Ok(ReplyItem::Event(e))).await;
}

/// Closes calls left without a result by a reply whose stream was dropped, so the context stays
/// consistent (every call has exactly one result). No events: that reply is over.
pub(crate) fn close_dangling_calls(shared: &Shared, state: &mut AgentState) {
    let reply_id = state.context.last().map(|m| m.id.clone()).unwrap_or_default();
    for call in state.unfinished_calls() {
        let result = ToolResultBlock::new(
            &call.id,
            &call.name,
            ToolOutput::Text(INTERRUPTED_CALL_TEXT.to_owned()),
            ToolResultState::Interrupted,
        );
        state.save_result(&shared.name, &reply_id, result);
    }
}

/// `UserInterruptEvent`: close every awaiting call, `REPLY_END(interrupted)`, the interruption
/// message. On an idle agent: nothing.
pub(crate) async fn interrupt(shared: &Arc<Shared>, ctx: &AgentContext, y: &Out) -> Result<(), AgentError> {
    if shared.lock_state().unfinished_calls().is_empty() {
        return Ok(());
    }
    end_interrupted(shared, ctx, y).await;
    Ok(())
}

/// Closes every call without a result (`TOOL_RESULT_START` only for calls that had none yet),
/// then `REPLY_END(interrupted)` and the interruption message. Used for an interrupted parked
/// reply and for a running reply cancelled by [`Agent::interrupt`](crate::Agent::interrupt).
pub(crate) async fn end_interrupted(shared: &Arc<Shared>, ctx: &AgentContext, y: &Out) {
    let reply_id = ctx.reply_id();
    let calls = shared.lock_state().unfinished_calls();
    for call in calls {
        if !matches!(call.state, ToolCallState::Allowed | ToolCallState::Submitted) {
            event(
                y,
                AgentEvent::ToolResultStart(ToolResultStartEvent::new(reply_id, &call.id, &call.name)),
            )
            .await;
        }
        event(
            y,
            AgentEvent::ToolResultTextDelta(ToolResultTextDeltaEvent::new(reply_id, &call.id, INTERRUPTED_CALL_TEXT)),
        )
        .await;
        let result = ToolResultBlock::new(
            &call.id,
            &call.name,
            ToolOutput::Text(INTERRUPTED_CALL_TEXT.to_owned()),
            ToolResultState::Interrupted,
        );
        shared.lock_state().save_result(&shared.name, reply_id, result);
        event(
            y,
            AgentEvent::ToolResultEnd(ToolResultEndEvent::new(
                reply_id,
                &call.id,
                ToolResultState::Interrupted,
                Map::new(),
            )),
        )
        .await;
    }
    let (session_id, usage) = {
        let state = shared.lock_state();
        (state.session_id.clone(), state.reply_context.usage)
    };
    let end = ReplyEndEvent::new(session_id, reply_id, ReplyFinishedReason::Interrupted);
    event(y, AgentEvent::ReplyEnd(end)).await;
    if let Some(seen) = ctx.get::<ReplyEndSeen>() {
        seen.0.store(false, std::sync::atomic::Ordering::Release);
    }
    let mut msg = Msg::assistant(&*shared.name, &*shared.config.interruption_message);
    msg.id = reply_id.to_owned();
    msg.usage = Some(usage);
    msg.finished_reason = Some(ReplyFinishedReason::Interrupted);
    y.emit(Ok(ReplyItem::Final(msg))).await;
}

/// `UserConfirmResultEvent`: confirmed calls become allowed (with the user's edits and rules),
/// denied ones get a denied result.
pub(crate) async fn confirm(
    shared: &Arc<Shared>,
    ctx: &AgentContext,
    ev: &UserConfirmResultEvent,
    y: &Out,
) -> Result<(), AgentError> {
    let reply_id = ctx.reply_id();
    {
        let state = shared.lock_state();
        let asking: Vec<_> = state
            .unfinished_calls()
            .into_iter()
            .filter(|c| c.state == ToolCallState::Asking)
            .map(|c| c.id)
            .collect();
        if asking.is_empty() {
            return Err(AgentError::State(
                "Agent is not waiting for user confirmation, but received UserConfirmResultEvent.".to_owned(),
            ));
        }
        if let Some(bad) = ev.confirm_results.iter().find(|r| !asking.contains(&r.tool_call.id)) {
            return Err(AgentError::State(format!(
                "UserConfirmResultEvent names tool call '{}', which is not waiting for confirmation (waiting: {asking:?}).",
                bad.tool_call.id
            )));
        }
    }
    for result in &ev.confirm_results {
        let call = &result.tool_call;
        if result.confirmed {
            let mut state = shared.lock_state();
            if let Some(c) = state.tail_call_mut(&call.id) {
                c.state = ToolCallState::Allowed;
                c.name.clone_from(&call.name);
                c.input.clone_from(&call.input);
            }
            if let Some(rules) = &result.rules {
                state.permission_rules.extend(rules.iter().cloned());
            }
            continue;
        }
        let text = format!(
            "<system-reminder>The execution of tool \"{}\" is denied by user!</system-reminder>",
            call.name
        );
        event(
            y,
            AgentEvent::ToolResultStart(ToolResultStartEvent::new(reply_id, &call.id, &call.name)),
        )
        .await;
        event(
            y,
            AgentEvent::ToolResultTextDelta(ToolResultTextDeltaEvent::new(reply_id, &call.id, &text)),
        )
        .await;
        let block = ToolResultBlock::new(&call.id, &call.name, ToolOutput::Text(text), ToolResultState::Denied);
        shared.lock_state().save_result(&shared.name, reply_id, block);
        event(
            y,
            AgentEvent::ToolResultEnd(ToolResultEndEvent::new(
                reply_id,
                &call.id,
                ToolResultState::Denied,
                Map::new(),
            )),
        )
        .await;
    }
    Ok(())
}

/// `ExternalExecutionResultEvent`: each result's output as deltas, then its end event.
pub(crate) async fn external(
    shared: &Arc<Shared>,
    ctx: &AgentContext,
    ev: &ExternalExecutionResultEvent,
    y: &Out,
) -> Result<(), AgentError> {
    let reply_id = ctx.reply_id();
    {
        let state = shared.lock_state();
        let submitted: Vec<_> = state
            .unfinished_calls()
            .into_iter()
            .filter(|c| c.state == ToolCallState::Submitted)
            .map(|c| c.id)
            .collect();
        if submitted.is_empty() {
            return Err(AgentError::State(
                "Agent is not waiting for external execution results, but received ExternalExecutionResultEvent."
                    .to_owned(),
            ));
        }
        if let Some(bad) = ev.execution_results.iter().find(|r| !submitted.contains(&r.id)) {
            return Err(AgentError::State(format!(
                "ExternalExecutionResultEvent names tool call '{}', which is not awaiting an external result (awaiting: {submitted:?}).",
                bad.id
            )));
        }
    }
    for result in &ev.execution_results {
        match &result.output {
            ToolOutput::Text(t) => {
                event(
                    y,
                    AgentEvent::ToolResultTextDelta(ToolResultTextDeltaEvent::new(reply_id, &result.id, t)),
                )
                .await;
            }
            ToolOutput::Blocks(blocks) => {
                for b in blocks {
                    let e = match b {
                        MediaBlock::Text(t) => AgentEvent::ToolResultTextDelta(ToolResultTextDeltaEvent::new(
                            reply_id, &result.id, &t.text,
                        )),
                        MediaBlock::Data(d) => AgentEvent::ToolResultDataDelta(
                            ToolResultDataDeltaEvent::new(reply_id, &result.id, d.source.clone()).with_block_id(&d.id),
                        ),
                    };
                    event(y, e).await;
                }
            }
        }
        shared.lock_state().save_result(&shared.name, reply_id, result.clone());
        let end = ToolResultEndEvent::new(reply_id, &result.id, result.state, result.metadata.clone());
        event(y, AgentEvent::ToolResultEnd(end)).await;
    }
    Ok(())
}
