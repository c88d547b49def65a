//! The reference's `_next_action(final_msg)`: what the loop does next, decided from the state.

use std::sync::Arc;

use towerscope_core::{
    AgentContext, AgentEvent, ExceedMaxItersEvent, HintBlock, Msg, ReplyEndEvent, ReplyFinishedReason, ToolCallBlock,
    ToolChoice,
};

use crate::emit::{assistant_msg, system_hint};
use crate::runtime::Runtime;
use crate::state::open_calls;
use crate::structured;

pub(crate) const WAITING_TEXT: &str = "I'm waiting for your permission or the external execution to finish.";
pub(crate) const STRUCTURED_DONE_TEXT: &str = "The required structured output is generated.";
pub(crate) const EXCEEDED_TEXT: &str = "The maximum reasoning-acting iterations are exceeded.";

pub(crate) enum Action {
    Acting(Vec<ToolCallBlock>),
    Reasoning {
        /// Boxed: rare, and the action is held across the loop's awaits.
        hint: Option<Box<HintBlock>>,
        tool_choice: Option<ToolChoice>,
    },
    Exit {
        /// The closing events (`None`: parked, no `REPLY_END`); built only when `events`.
        events: Option<Vec<AgentEvent>>,
        /// Boxed: the action is held across the loop's awaits, in every reply in flight.
        msg: Box<Msg>,
    },
}

/// Counts the round just finished towards `max_iters` when the reply's message has no call
/// left without a result (what [`next_action`] does first with `count_round`), for a loop that
/// ends without deciding.
pub(crate) fn count_round(runtime: &Runtime, ctx: &AgentContext) {
    let mut state = runtime.lock_state();
    if !state
        .reply_msg(ctx.reply_id())
        .is_some_and(|msg| open_calls(msg).unfinished)
    {
        state.reply_context.cur_iter += 1;
    }
}

/// The decision table of §3.3, evaluated in order.
///
/// With `count_round` (the loop has just finished a reasoning or acting step, or a resume), the
/// round is counted first (`cur_iter` moves on) when the reply's message has no call left
/// without a result: the reference's end-of-round count, which reads the calls this decision
/// reads, under the same lock.
pub(crate) fn next_action(
    runtime: &Runtime,
    ctx: &AgentContext,
    final_msg: Option<Box<Msg>>,
    events: bool,
    count_round: bool,
) -> Action {
    let reply_id = ctx.reply_id();
    let name = &runtime.name;
    let mut state = runtime.lock_state();
    let open = state.reply_msg(reply_id).map(open_calls).unwrap_or_default();
    if count_round && !open.unfinished {
        state.reply_context.cur_iter += 1;
    }
    if !open.runnable.is_empty() {
        return Action::Acting(open.runnable);
    }
    if open.awaiting {
        return Action::Exit {
            events: None,
            msg: Box::new(assistant_msg(name, reply_id, WAITING_TEXT)),
        };
    }
    let rc = &state.reply_context;
    let max = runtime.config.max_iters;
    let usage = rc.usage;
    let end = |reason| {
        let mut out = Vec::new();
        if events {
            if reason == ReplyFinishedReason::ExceedMaxIters {
                out.push(ExceedMaxItersEvent::new(reply_id, Arc::clone(name)).into());
            }
            out.push(ReplyEndEvent::new(state.session_id.clone(), reply_id, reason).into());
        }
        out
    };
    let exceeded = |msg: Option<Box<Msg>>| {
        let mut msg = msg.unwrap_or_else(|| Box::new(assistant_msg(name, reply_id, EXCEEDED_TEXT)));
        msg.usage = Some(usage);
        msg.finished_reason = Some(ReplyFinishedReason::ExceedMaxIters);
        Action::Exit {
            events: Some(end(ReplyFinishedReason::ExceedMaxIters)),
            msg,
        }
    };

    if rc.structured_schema.is_some() {
        if let Some(output) = &rc.structured_output {
            let mut msg = Box::new(assistant_msg(name, reply_id, STRUCTURED_DONE_TEXT));
            msg.structured_output = Some(output.clone());
            msg.usage = Some(usage);
            msg.finished_reason = Some(ReplyFinishedReason::Completed);
            return Action::Exit {
                events: Some(end(ReplyFinishedReason::Completed)),
                msg,
            };
        }
        if rc.cur_iter >= max + runtime.config.structured_output_grace_iters {
            return exceeded(None);
        }
        let (tool_choice, suffix) = if rc.cur_iter < max {
            (
                None,
                "Call it when you are ready to generate the final structured output.",
            )
        } else {
            (
                Some(ToolChoice::tool(structured::TOOL_NAME)),
                "You have reached the maximum reasoning-acting iterations, so call this tool at once to generate the final structured output.",
            )
        };
        let text = format!(
            "<system-reminder>You're required to generate structured output by calling the '{}' tool. {suffix}</system-reminder>",
            structured::TOOL_NAME
        );
        return Action::Reasoning {
            hint: Some(Box::new(system_hint("Structured Output Requirement", text))),
            tool_choice,
        };
    }
    if let Some(mut msg) = final_msg {
        if rc.cur_iter > max {
            return exceeded(Some(msg));
        }
        msg.finished_reason = Some(ReplyFinishedReason::Completed);
        return Action::Exit {
            events: Some(end(ReplyFinishedReason::Completed)),
            msg,
        };
    }
    if rc.cur_iter == max {
        let text = format!(
            "<system-reminder>You have reached the maximum of {max} reasoning-acting iterations. Summarize the work and findings so far and return the final answer as text. Do not call any tools.</system-reminder>"
        );
        return Action::Reasoning {
            hint: Some(Box::new(system_hint("Max Iterations Reached", text))),
            tool_choice: Some(ToolChoice::none()),
        };
    }
    if rc.cur_iter > max {
        return exceeded(None);
    }
    Action::Reasoning {
        hint: None,
        tool_choice: None,
    }
}
