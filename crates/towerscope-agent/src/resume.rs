//! Resuming a parked reply (user confirmations, external execution results, interruption) and
//! closing tool calls that a dropped or interrupted reply left open.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Map;
use towerscope_core::event::{ExternalExecutionResultEvent, UserConfirmResultEvent, UserInterruptEvent};
use towerscope_core::{
    AgentContext, AgentError, Id, MediaBlock, Msg, ReplyEndEvent, ReplyFinishedReason, ToolCallState, ToolOutput,
    ToolResultBlock, ToolResultDataDeltaEvent, ToolResultEndEvent, ToolResultStartEvent, ToolResultState,
    ToolResultTextDeltaEvent,
};

use crate::acting::interrupted_output;
use towerscope_core::EventType;

use crate::emit::{Emitter, TOOL_RESULT_DELTAS};
use crate::runtime::Runtime;
use crate::state::AgentState;

/// Closes calls left without a result by a reply whose stream was dropped (or that failed), so
/// the context stays consistent (every call has exactly one result). No events: that reply is
/// over.
pub(crate) fn close_dangling_calls(name: &Arc<str>, state: &mut AgentState) {
    let Some(reply_id) = state.context.last().map(|m| m.id.clone()) else {
        return;
    };
    for call in state.unfinished_calls() {
        let output = interrupted_output(call.state == ToolCallState::Allowed);
        let result = ToolResultBlock::new(&call.id, &call.name, output, ToolResultState::Interrupted);
        state.save_result(name, &reply_id, result);
    }
}

/// `UserInterruptEvent`: close every awaiting call, `REPLY_END(interrupted)`, the interruption
/// message. On an idle agent, or for another reply than the one left open (an interrupt sent
/// again after that reply ended and a later one parked): nothing.
pub(crate) async fn interrupt(
    runtime: &Arc<Runtime>,
    ctx: &AgentContext,
    ev: &UserInterruptEvent,
    emit: &Emitter,
) -> Result<(), AgentError> {
    {
        let state = runtime.lock_state();
        if state.unfinished_calls().is_empty() {
            return Ok(());
        }
        let open = &state.reply_context.reply_id;
        if ev.reply_id != *open {
            tracing::debug!(
                agent = %runtime.name,
                interrupt_of = %ev.reply_id,
                open = %open,
                "an interrupt of a reply that is not the open one changes nothing"
            );
            return Ok(());
        }
    }
    end_interrupted(runtime, ctx, emit).await;
    Ok(())
}

/// The calls a confirmation allowed in this reply that have not started yet (no
/// `TOOL_RESULT_START`): an allowed call is otherwise one that started. Kept in the reply's
/// extensions; a call leaves it as it starts.
#[derive(Debug, Default)]
pub(crate) struct ConfirmedNotStarted(pub(crate) HashSet<Id>);

impl ConfirmedNotStarted {
    /// Notes that the confirmed call `id` starts now.
    pub(crate) fn started(ctx: &AgentContext, id: &Id) {
        if let Some(waiting) = ctx.extensions().get_mut::<Self>() {
            waiting.0.remove(id);
        }
    }
}

/// Closes every call without a result (`TOOL_RESULT_START` only for calls that had none yet),
/// marks the reply's stored message interrupted (its `finished_reason`), then
/// `REPLY_END(interrupted)` and the interruption message. Used for an interrupted parked reply
/// and for a running reply stopped by [`Agent::interrupt`](crate::Agent::interrupt).
pub(crate) async fn end_interrupted(runtime: &Arc<Runtime>, ctx: &AgentContext, emit: &Emitter) {
    let reply_id = ctx.reply_id();
    let calls = runtime.lock_state().unfinished_calls();
    let not_started = ctx
        .extensions()
        .get::<ConfirmedNotStarted>()
        .map(|c| c.0.clone())
        .unwrap_or_default();
    for call in calls {
        let started =
            matches!(call.state, ToolCallState::Allowed | ToolCallState::Submitted) && !not_started.contains(&call.id);
        if !started {
            emit.event(EventType::ToolResultStart, || {
                ToolResultStartEvent::new(reply_id, &call.id, &call.name).into()
            })
            .await;
        }
        emit.event(EventType::ToolResultTextDelta, || {
            ToolResultTextDeltaEvent::new(reply_id, &call.id, crate::acting::INTERRUPTED_CALL_TEXT).into()
        })
        .await;
        let output = interrupted_output(started && call.state == ToolCallState::Allowed);
        let result = ToolResultBlock::new(&call.id, &call.name, output, ToolResultState::Interrupted);
        runtime.lock_state().save_result(&runtime.name, reply_id, result);
        emit.event(EventType::ToolResultEnd, || {
            ToolResultEndEvent::new(reply_id, &call.id, ToolResultState::Interrupted, Map::new()).into()
        })
        .await;
    }
    let (session_id, usage) = {
        let mut state = runtime.lock_state();
        crate::state::mark_ending(&mut state, &runtime.name, reply_id, ReplyFinishedReason::Interrupted);
        (state.session_id.clone(), state.reply_context.usage)
    };
    emit.event(EventType::ReplyEnd, || {
        ReplyEndEvent::new(session_id, reply_id, ReplyFinishedReason::Interrupted).into()
    })
    .await;
    let mut msg = Msg::assistant(Arc::clone(&runtime.name), &*runtime.config.interruption_message).with_id(reply_id);
    msg.usage = Some(usage);
    msg.finished_reason = Some(ReplyFinishedReason::Interrupted);
    emit.final_msg(msg).await;
    if runtime.config.error_after_interrupt {
        emit.error(AgentError::Interrupted).await;
    }
}

/// `UserConfirmResultEvent`: confirmed calls become allowed (with the user's edits and rules),
/// denied ones get a denied result. The event is checked whole first (each answer names a
/// waiting call, under its tool, once): a bad one changes nothing and the reply stays parked.
pub(crate) async fn confirm(
    runtime: &Arc<Runtime>,
    ctx: &AgentContext,
    ev: &UserConfirmResultEvent,
    emit: &Emitter,
) -> Result<(), AgentError> {
    {
        let state = runtime.lock_state();
        let asking: Vec<_> = state
            .unfinished_calls()
            .into_iter()
            .filter(|c| c.state == ToolCallState::Asking)
            .map(|c| (c.id, c.name))
            .collect();
        if asking.is_empty() {
            return Err(AgentError::State(
                "Agent is not waiting for user confirmation, but received UserConfirmResultEvent.".to_owned(),
            ));
        }
        check_answers(
            &asking,
            ev.confirm_results
                .iter()
                .map(|r| (&r.tool_call.id, r.tool_call.name.as_str())),
            &Answers {
                event: "UserConfirmResultEvent",
                not_parked: "which is not waiting for confirmation (waiting",
                other_tool: "the tool",
                other_tool_rule: "a confirmation may change a call's arguments, not its tool",
                twice: ("answers", "more than once; send one confirmation or denial per call"),
            },
        )?;
    }
    // Checked whole: the input is taken (the `on_reply` layers may record what it carried).
    ctx.insert(towerscope_core::ResumeApplied);
    let confirmed: HashSet<Id> = ev
        .confirm_results
        .iter()
        .filter(|r| r.confirmed)
        .map(|r| r.tool_call.id.clone())
        .collect();
    if !confirmed.is_empty() {
        ctx.insert(ConfirmedNotStarted(confirmed));
    }
    for result in &ev.confirm_results {
        let call = &result.tool_call;
        if result.confirmed {
            let mut state = runtime.lock_state();
            if let Some(c) = state.tail_call_mut(&call.id) {
                c.state = ToolCallState::Allowed;
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
        crate::acting::answer_with_text(runtime, ctx, call, text, ToolResultState::Denied, false, emit).await?;
    }
    Ok(())
}

/// How an event's errors name what it answers (see [`check_answers`]).
struct Answers {
    event: &'static str,
    /// After "names tool call 'x', ", up to the list of parked ids.
    not_parked: &'static str,
    /// Before the other tool's name.
    other_tool: &'static str,
    other_tool_rule: &'static str,
    /// How the event answers a call twice: the verb before the call, the rest after it.
    twice: (&'static str, &'static str),
}

/// Checks a resume event whole before anything is stored: each of `answers` (call id, tool
/// name) names a call of `parked` (id, tool name), under that call's tool (the permission was
/// asked for it, and a result under another name would run it past that tool's rules), and
/// once (a second answer would store a second result, or undo a denial). Hashed: thousands of
/// calls may wait, each named by an answer.
fn check_answers<'a>(
    parked: &[(Id, String)],
    answers: impl Iterator<Item = (&'a Id, &'a str)>,
    says: &Answers,
) -> Result<(), AgentError> {
    let waiting: HashMap<&Id, &str> = parked.iter().map(|(id, name)| (id, name.as_str())).collect();
    let mut answered: HashSet<&Id> = HashSet::new();
    for (id, name) in answers {
        let event = says.event;
        let Some(&parked_name) = waiting.get(id) else {
            let ids: Vec<&Id> = parked.iter().map(|(id, _)| id).collect();
            return Err(AgentError::State(format!(
                "{event} names tool call '{id}', {}: {ids:?}).",
                says.not_parked
            )));
        };
        if name != parked_name {
            return Err(AgentError::State(format!(
                "{event} gives tool call '{id}' {} '{}', but it calls '{parked_name}': {}.",
                says.other_tool,
                crate::toolkit::truncate_name(name),
                says.other_tool_rule
            )));
        }
        if !answered.insert(id) {
            let (verb, rest) = says.twice;
            return Err(AgentError::State(format!("{event} {verb} tool call '{id}' {rest}.")));
        }
    }
    Ok(())
}

/// `ExternalExecutionResultEvent`: each result's output as deltas, then its end event; the
/// result is stored cut to `tool_result_limit`, as a local tool's is. The event is checked
/// whole first (each result names an awaiting call, under its tool, once): a bad one changes
/// nothing and the reply stays parked.
pub(crate) async fn external(
    runtime: &Arc<Runtime>,
    ctx: &AgentContext,
    ev: &ExternalExecutionResultEvent,
    emit: &Emitter,
) -> Result<(), AgentError> {
    let reply_id = ctx.reply_id();
    {
        let state = runtime.lock_state();
        let submitted: Vec<_> = state
            .unfinished_calls()
            .into_iter()
            .filter(|c| c.state == ToolCallState::Submitted)
            .map(|c| (c.id, c.name))
            .collect();
        if submitted.is_empty() {
            return Err(AgentError::State(
                "Agent is not waiting for external execution results, but received ExternalExecutionResultEvent."
                    .to_owned(),
            ));
        }
        check_answers(
            &submitted,
            ev.execution_results.iter().map(|r| (&r.id, r.name.as_str())),
            &Answers {
                event: "ExternalExecutionResultEvent",
                not_parked: "which is not awaiting an external result (awaiting",
                other_tool: "a result of the tool",
                other_tool_rule: "a result must name its call's tool",
                twice: ("gives", "more than one result; send exactly one result per call"),
            },
        )?;
    }
    // Checked whole: the input is taken (the `on_reply` layers may record what it carried).
    ctx.insert(towerscope_core::ResumeApplied);
    for result in &ev.execution_results {
        match &result.output {
            ToolOutput::Text(t) => {
                emit.event(EventType::ToolResultTextDelta, || {
                    ToolResultTextDeltaEvent::new(reply_id, &result.id, t).into()
                })
                .await;
            }
            ToolOutput::Blocks(blocks) => {
                for b in blocks {
                    emit.event_of(TOOL_RESULT_DELTAS, || match b {
                        MediaBlock::Text(t) => ToolResultTextDeltaEvent::new(reply_id, &result.id, &t.text)
                            .with_block_id(&t.id)
                            .into(),
                        MediaBlock::Data(d) => ToolResultDataDeltaEvent::new(reply_id, &result.id, d.source.clone())
                            .with_block_id(&d.id)
                            .into(),
                    })
                    .await;
                }
            }
        }
        // Stored as a local result is: cut to the limit (the events above carry it whole).
        let mut stored = result.clone();
        if let Some(config) = &runtime.context {
            crate::acting::truncate(runtime, config, &mut stored).await;
        }
        runtime.lock_state().save_result(&runtime.name, reply_id, stored);
        emit.event(EventType::ToolResultEnd, || {
            ToolResultEndEvent::new(reply_id, &result.id, result.state, result.metadata.clone()).into()
        })
        .await;
    }
    Ok(())
}
