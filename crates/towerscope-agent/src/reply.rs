//! The reply loop: the implementation behind `on_reply` (the reference's `_reply_impl` and
//! `_next_action`).

use std::future::Ready;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use futures_util::StreamExt;
use tower::Service;
use tower::ServiceExt;
use towerscope_core::{
    AgentContext, AgentError, AgentEvent, CompressRequest, ContentBlock, EventStream, ExceedMaxItersEvent, HintBlock,
    Msg, Position, ReasoningRequest, ReplyEndEvent, ReplyFinishedReason, ReplyInput, ReplyItem, ReplyRequest,
    ReplyStartEvent, Role, ToolCallBlock, ToolCallState, ToolChoice,
};

use crate::acting;
use crate::agent::Shared;
use crate::generator::{Generator, Yielder};
use crate::reasoning::ReasoningImpl;
use crate::resume;
use crate::state::{ReplyContext, unfinished_refs};
use crate::structured;
use crate::toolkit::ActiveToolGroups;

pub(crate) type Out = Yielder<Result<ReplyItem, AgentError>>;

/// Set by the outermost consumer when a `REPLY_END` escaped every `on_reply` layer.
#[derive(Clone, Default)]
pub(crate) struct ReplyEndSeen(pub(crate) Arc<AtomicBool>);

pub(crate) const WAITING_TEXT: &str = "I'm waiting for your permission or the external execution to finish.";
pub(crate) const STRUCTURED_DONE_TEXT: &str = "The required structured output is generated.";
pub(crate) const EXCEEDED_TEXT: &str = "The maximum reasoning-acting iterations are exceeded.";

/// The innermost `on_reply` service.
#[derive(Clone)]
pub(crate) struct ReplyImpl {
    pub(crate) shared: Arc<Shared>,
    pub(crate) reasoning: Position<ReasoningImpl, ReasoningRequest, EventStream>,
}

impl Service<ReplyRequest> for ReplyImpl {
    type Response = EventStream;
    type Error = AgentError;
    type Future = Ready<Result<EventStream, AgentError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: ReplyRequest) -> Self::Future {
        let shared = Arc::clone(&self.shared);
        let reasoning = self.reasoning.clone();
        let stream = Generator::new(|y| async move {
            let ctx = req.ctx.clone();
            let outcome = {
                // The loop runs until it ends or an interrupt cancels it at its current await
                // point (a model call, a tool, a middleware); then it is dropped here.
                let run = std::pin::pin!(run(&shared, reasoning, req, &y));
                let interrupted = std::pin::pin!(shared.interrupt.requested());
                match futures_util::future::select(run, interrupted).await {
                    futures_util::future::Either::Left((result, _)) => Some(result),
                    futures_util::future::Either::Right(((), _)) => {
                        // Before the work in flight is dropped: layers that see their call
                        // dropped can tell an interruption from an abandoned call.
                        ctx.mark_interrupted();
                        None
                    }
                }
            };
            match outcome {
                Some(Ok(())) => {}
                Some(Err(e @ AgentError::CallLimit { .. })) => end_with_error(&shared, &ctx, &e, &y).await,
                Some(Err(e)) => y.emit(Err(e)).await,
                None => resume::end_interrupted(&shared, &ctx, &y).await,
            }
        });
        std::future::ready(Ok(Box::pin(stream)))
    }
}

enum Action {
    Acting(Vec<ToolCallBlock>),
    Reasoning {
        hint: Option<HintBlock>,
        tool_choice: Option<ToolChoice>,
    },
    Exit {
        events: Option<Vec<AgentEvent>>,
        msg: Msg,
    },
}

async fn event(y: &Out, e: AgentEvent) {
    y.emit(Ok(ReplyItem::Event(e))).await;
}

async fn run(
    shared: &Arc<Shared>,
    mut reasoning: Position<ReasoningImpl, ReasoningRequest, EventStream>,
    req: ReplyRequest,
    y: &Out,
) -> Result<(), AgentError> {
    let ctx = req.ctx.clone();
    match &req.input {
        ReplyInput::Messages(msgs) => start(shared, &req, msgs, y).await?,
        ReplyInput::Interrupt(_) => return resume::interrupt(shared, &ctx, y).await,
        ReplyInput::Confirm(ev) => resume::confirm(shared, &ctx, ev, y).await?,
        ReplyInput::External(ev) => resume::external(shared, &ctx, ev, y).await?,
    }
    let mounted = {
        let state = shared.lock_state();
        let rc = &state.reply_context;
        rc.structured_schema
            .clone()
            .map(|schema| towerscope_core::StructuredSchema {
                name: rc.structured_schema_name.clone().unwrap_or_default(),
                schema,
            })
    };
    if let Some(schema) = mounted {
        ctx.insert(structured::Mounted(Arc::new(schema)));
    }

    let seen = ctx.get::<ReplyEndSeen>().unwrap_or_default();
    let mut made_progress = true;
    let mut final_msg: Option<Msg> = None;
    loop {
        match next_action(shared, &ctx, final_msg.take()) {
            Action::Exit { events: None, msg } => {
                y.emit(Ok(ReplyItem::Final(msg))).await;
                return Ok(());
            }
            Action::Exit {
                events: Some(events),
                msg,
            } => {
                for e in events {
                    event(y, e).await;
                }
                if seen.0.swap(false, Ordering::AcqRel) {
                    y.emit(Ok(ReplyItem::Final(msg))).await;
                    return Ok(());
                }
                if !made_progress {
                    return Err(AgentError::Middleware(
                        "A middleware swallowed the ReplyEndEvent twice without any reasoning/acting in between. \
                         Let REPLY_END through, or make progress before swallowing it again."
                            .to_owned(),
                    ));
                }
                made_progress = false;
                continue;
            }
            Action::Reasoning { hint, tool_choice } => {
                made_progress = true;
                let iteration = shared.lock_state().reply_context.cur_iter;
                if let Some(hint) = hint {
                    shared
                        .lock_state()
                        .append_to_reply(&shared.name, ctx.reply_id(), [ContentBlock::Hint(hint)]);
                }
                let round = ctx.with_iteration(iteration);
                shared
                    .compress
                    .clone()
                    .oneshot(CompressRequest {
                        ctx: round.clone(),
                        instructions: None,
                    })
                    .await?;
                let request = ReasoningRequest {
                    ctx: round,
                    tool_choice,
                };
                let mut stream = reasoning.ready().await?.call(request).await?;
                while let Some(item) = stream.next().await {
                    match item? {
                        ReplyItem::Event(e) => event(y, e).await,
                        ReplyItem::Final(m) => final_msg = Some(m),
                    }
                }
            }
            Action::Acting(calls) => {
                made_progress = true;
                let (iteration, groups) = {
                    let state = shared.lock_state();
                    (state.reply_context.cur_iter, Arc::from(state.activated_groups.clone()))
                };
                let round = ctx.with_iteration(iteration);
                round.insert(ActiveToolGroups(groups));
                for (concurrent, batch) in acting::batches(shared, calls) {
                    let mut events = acting::run_batch(shared, &round, concurrent, batch);
                    let mut parked = false;
                    while let Some(e) = events.next().await {
                        let e = e?;
                        parked |= matches!(
                            e,
                            AgentEvent::RequireUserConfirm(_) | AgentEvent::RequireExternalExecution(_)
                        );
                        event(y, e).await;
                    }
                    if parked {
                        break;
                    }
                }
            }
        }
        let mut state = shared.lock_state();
        let unfinished = state
            .reply_msg(ctx.reply_id())
            .is_some_and(|m| !unfinished_refs(m).is_empty());
        if !unfinished {
            state.reply_context.cur_iter += 1;
        }
    }
}

/// A new reply: validate and store the input, close calls a dropped reply left open, emit
/// `REPLY_START`.
async fn start(shared: &Arc<Shared>, req: &ReplyRequest, msgs: &[Msg], y: &Out) -> Result<(), AgentError> {
    for m in msgs {
        validate_input(m)?;
    }
    let session_id = {
        let mut state = shared.lock_state();
        let awaiting: Vec<_> = state.unfinished_calls();
        let asking = awaiting.iter().filter(|c| c.state == ToolCallState::Asking).count();
        let submitted = awaiting.iter().filter(|c| c.state == ToolCallState::Submitted).count();
        if asking + submitted > 0 {
            return Err(AgentError::State(format!(
                "Agent is waiting for {asking} tool calls and external execution results for {submitted} tool calls, \
                 but received no event. Resume the reply with a UserConfirmResultEvent or \
                 ExternalExecutionResultEvent, or interrupt it with a UserInterruptEvent."
            )));
        }
        resume::close_dangling_calls(shared, &mut state);
        state.context.extend(msgs.iter().cloned());
        state.reply_context = ReplyContext {
            reply_id: req.ctx.reply_id().to_owned(),
            structured_schema: req.structured_schema.as_ref().map(|s| s.schema.clone()),
            structured_schema_name: req.structured_schema.as_ref().map(|s| s.name.clone()),
            ..ReplyContext::default()
        };
        state.session_id.clone()
    };
    event(
        y,
        AgentEvent::ReplyStart(ReplyStartEvent::new(session_id, req.ctx.reply_id(), &*shared.name)),
    )
    .await;
    Ok(())
}

/// The reference's input rule: no system messages, no tool calls, tool results or thinking.
pub(crate) fn validate_input(m: &Msg) -> Result<(), AgentError> {
    if m.role == Role::System {
        return Err(AgentError::validation(format!(
            "Invalid message in the input: system messages are not accepted (message {}); set the system prompt on the agent instead",
            m.id
        )));
    }
    if let Some(b) = m.content.iter().find(|b| {
        matches!(
            b,
            ContentBlock::ToolCall(_) | ContentBlock::ToolResult(_) | ContentBlock::Thinking(_)
        )
    }) {
        return Err(AgentError::validation(format!(
            "Invalid message in the input: message {} holds a '{}' block; only text, data and hint blocks may be sent to an agent",
            m.id,
            b.kind().as_str()
        )));
    }
    Ok(())
}

fn assistant(shared: &Shared, reply_id: &str, text: &str) -> Msg {
    let mut msg = Msg::assistant(&*shared.name, text);
    msg.id = reply_id.to_owned();
    msg
}

fn system_hint(sublabel: &str, text: String) -> HintBlock {
    HintBlock::new(
        text,
        Some(format!(r#"{{"label": "System", "sublabel": "{sublabel}"}}"#)),
    )
}

fn next_action(shared: &Shared, ctx: &AgentContext, final_msg: Option<Msg>) -> Action {
    let reply_id = ctx.reply_id();
    let state = shared.lock_state();
    let unfinished = state.reply_msg(reply_id).map(unfinished_refs).unwrap_or_default();
    let awaiting = unfinished
        .iter()
        .any(|c| matches!(c.state, ToolCallState::Asking | ToolCallState::Submitted));
    let executable: Vec<ToolCallBlock> = unfinished
        .into_iter()
        .filter(|c| c.state == ToolCallState::Allowed || (c.state == ToolCallState::Pending && !awaiting))
        .cloned()
        .collect();
    if !executable.is_empty() {
        return Action::Acting(executable);
    }
    if awaiting {
        return Action::Exit {
            events: None,
            msg: assistant(shared, reply_id, WAITING_TEXT),
        };
    }
    let rc = &state.reply_context;
    let max = shared.config.max_iters;
    let usage = rc.usage;
    let end = |reason| {
        let session_id = state.session_id.clone();
        let mut events = Vec::new();
        if reason == ReplyFinishedReason::ExceedMaxIters {
            events.push(AgentEvent::ExceedMaxIters(ExceedMaxItersEvent::new(
                reply_id,
                &*shared.name,
            )));
        }
        events.push(AgentEvent::ReplyEnd(ReplyEndEvent::new(session_id, reply_id, reason)));
        events
    };
    let exceeded = |msg: Option<Msg>| {
        let mut msg = msg.unwrap_or_else(|| assistant(shared, reply_id, EXCEEDED_TEXT));
        msg.usage = Some(usage);
        msg.finished_reason = Some(ReplyFinishedReason::ExceedMaxIters);
        Action::Exit {
            events: Some(end(ReplyFinishedReason::ExceedMaxIters)),
            msg,
        }
    };

    if rc.structured_schema.is_some() {
        if let Some(output) = &rc.structured_output {
            let mut msg = assistant(shared, reply_id, STRUCTURED_DONE_TEXT);
            msg.structured_output = Some(output.clone());
            msg.usage = Some(usage);
            msg.finished_reason = Some(ReplyFinishedReason::Completed);
            return Action::Exit {
                events: Some(end(ReplyFinishedReason::Completed)),
                msg,
            };
        }
        if rc.cur_iter >= max + shared.config.structured_output_grace_iters {
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
            hint: Some(system_hint("Structured Output Requirement", text)),
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
            hint: Some(system_hint("Max Iterations Reached", text)),
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

/// A call limit ends the reply cleanly: `REPLY_END` with finished reason `error` and the error,
/// then a final message carrying the same error, so the consumer never sees a half-open stream.
async fn end_with_error(shared: &Shared, ctx: &AgentContext, err: &AgentError, y: &Out) {
    let info = towerscope_core::ErrorInfo::new(err.kind(), err.to_string());
    let (session_id, usage) = {
        let state = shared.lock_state();
        (state.session_id.clone(), state.reply_context.usage)
    };
    let end = ReplyEndEvent::new(session_id, ctx.reply_id(), ReplyFinishedReason::Error).with_error(info.clone());
    event(y, AgentEvent::ReplyEnd(end)).await;
    let mut msg = assistant(shared, ctx.reply_id(), &err.to_string());
    msg.usage = Some(usage);
    msg.finished_reason = Some(ReplyFinishedReason::Error);
    msg.error = Some(info);
    y.emit(Ok(ReplyItem::Final(msg))).await;
}
