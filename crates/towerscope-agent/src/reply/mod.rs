//! The reply loop: the implementation behind `on_reply` (the reference's `_reply_impl`), with
//! its decision table in [`next_action`].
//!
//! # Ending a reply, or asking for another round
//!
//! The loop ends the reply after its closing events (`REPLY_END`, then the final message) unless
//! an `on_reply` layer asked for another round with
//! [`AgentContext::request_another_round`](towerscope_core::AgentContext::request_another_round).
//! The reference infers that request from a layer swallowing `REPLY_END`, by whether the event
//! reached the consumer before the loop resumes; that inference breaks with any layer that
//! reads ahead (buffers, or bridges the stream through a channel), which would then cause an
//! extra round and events after `REPLY_END`. Here the request is explicit, so a read-ahead layer
//! changes nothing. Asking twice without any reasoning or acting in between fails the reply, as
//! the reference's "swallowed twice" check does.
//!
//! # Bounded whatever the model does
//!
//! Every round either finishes the calls it runs, parks, or counts an iteration, and the loop
//! also stops after [`ReactConfig::max_actions`](crate::ReactConfig) actions, so no model answer
//! and no middleware can keep a reply alive forever.

mod next_action;

use std::future::{Future, Ready};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::StreamExt;
use tower::util::Either;
use tower::{Service, ServiceExt};
use towerscope_core::{
    AgentContext, AgentError, CompressRequest, ContentBlock, ErasedFuture, ErasedService, EventStream, Messages,
    Position, ReasoningRequest, ReplyEndEvent, ReplyFinishedReason, ReplyInput, ReplyItem, ReplyRequest,
    ReplyStartEvent,
};

use crate::acting;
use towerscope_core::{EventKinds, EventType};

use crate::emit::{Emitter, EventsRead, assistant_msg};
use crate::generator::Generator;
use crate::reasoning::{self, ReasoningStep};
use crate::resume;
use crate::runtime::{Runtime, validate_input};
use crate::state::ReplyContext;
use crate::toolkit::ActiveToolGroups;

use next_action::{Action, next_action};

/// The innermost `on_reply` service: the ReAct loop of one reply.
#[derive(Clone)]
pub(crate) struct ReactLoop {
    pub(crate) runtime: Arc<Runtime>,
    pub(crate) reasoning: Position<ReasoningStep, ReasoningRequest, EventStream>,
}

impl Service<ReplyRequest> for ReactLoop {
    type Response = EventStream;
    type Error = AgentError;
    type Future = Ready<Result<EventStream, AgentError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: ReplyRequest) -> Self::Future {
        let runtime = Arc::clone(&self.runtime);
        let reasoning = self.reasoning.clone();
        let plan = EventsRead::of(&req.ctx);
        let read_plan = plan.clone();
        let stream: EventStream = Box::pin(Generator::new(move |y| async move {
            // Read when the stream is first polled: by then the `on_reply` stack has answered,
            // and the plan knows whether a layer wrapped this stream.
            let reads = read_plan.as_ref().map_or(EventKinds::ALL, EventsRead::reply);
            let emit = Emitter::new(y, reads);
            let ctx = req.ctx.clone();
            // A resume of a reply that is not parked is refused before it starts: its failure
            // is no ending of the reply it names (that one ended before).
            let marks = !req.input.is_resume() || runtime.lock_state().is_parked();
            let outcome = {
                // The loop runs until it ends or an interrupt cancels it at its current await
                // point (a tool, a middleware; the reasoning step handles one itself); then it
                // is dropped here.
                // Pinned here (not moved into `Unless`): the loop's future is a few kilobytes.
                let run = std::pin::pin!(run(&runtime, reasoning, req, &emit, read_plan.as_ref()));
                let interrupted = runtime.interrupt.requested_unshielded();
                match crate::interrupt::Unless::new(&runtime.interrupt, run, interrupted).await {
                    futures_util::future::Either::Left(result) => Some(result),
                    futures_util::future::Either::Right(()) => {
                        // Before the work in flight is dropped: layers that see their call
                        // dropped can tell an interruption from an abandoned call.
                        ctx.mark_interrupted();
                        None
                    }
                }
            };
            // The rare endings (and below, the resumed starts) are boxed: held inline, each
            // would add its size to every reply in flight (the reply's future is a union of
            // all its steps; these made it 7.2 KB instead of 4.5 KB).
            match outcome {
                Some(Ok(())) => {}
                Some(Err(AgentError::Interrupted)) | None => {
                    Box::pin(resume::end_interrupted(&runtime, &ctx, &emit)).await
                }
                Some(Err(e @ AgentError::CallLimit { .. })) => {
                    Box::pin(end_with_error(&runtime, &ctx, &e, &emit)).await
                }
                Some(Err(e)) => {
                    if marks {
                        mark_failed(&runtime, &ctx);
                    }
                    emit.error(e).await
                }
            }
        }));
        if let Some(plan) = plan {
            plan.made_reply_stream(&stream);
        }
        std::future::ready(Ok(stream))
    }
}

/// The `on_reply` stack with layers, telling the reply's [`EventsRead`] plan whether it answered
/// with the innermost stream unwrapped (then no `on_reply` layer reads the events).
#[derive(Clone)]
pub(crate) struct NoteUnwrapped(pub(crate) ErasedService<ReplyRequest, EventStream>);

impl Service<ReplyRequest> for NoteUnwrapped {
    type Response = EventStream;
    type Error = AgentError;
    type Future = NoteUnwrappedFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: ReplyRequest) -> NoteUnwrappedFuture {
        NoteUnwrappedFuture {
            plan: EventsRead::of(&req.ctx),
            inner: self.0.call(req),
        }
    }
}

/// The future of [`NoteUnwrapped`].
pub(crate) struct NoteUnwrappedFuture {
    plan: Option<EventsRead>,
    inner: ErasedFuture<EventStream>,
}

impl Future for NoteUnwrappedFuture {
    type Output = Result<EventStream, AgentError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let answer = std::task::ready!(Pin::new(&mut self.inner).poll(cx));
        if let (Ok(stream), Some(plan)) = (&answer, &self.plan) {
            plan.answered_reply_stream(stream);
        }
        Poll::Ready(answer)
    }
}

/// The reply's loop. Not an `async fn`: that would keep its arguments twice in the future (as
/// arguments and as their local copies), in every reply in flight.
#[allow(clippy::manual_async_fn)]
fn run<'a>(
    runtime: &'a Arc<Runtime>,
    mut reasoning: Position<ReasoningStep, ReasoningRequest, EventStream>,
    req: ReplyRequest,
    emit: &'a Emitter,
    plan: Option<&'a EventsRead>,
) -> impl Future<Output = Result<(), AgentError>> + Send + 'a {
    async move {
        let ctx = req.ctx.clone();
        if req.input.is_resume() && req.structured_schema.is_some() {
            tracing::warn!(
                "a resumed reply keeps the structured output schema it was parked with; the new one is ignored"
            );
        }
        // Whether the next decision first counts the round just finished towards `max_iters`
        // (see `next_action`): once every call of the reply has its result, after each step as
        // the reference does, and also after a resume whose results (denials, results from
        // outside) complete the round that parked. The reference never counts such a round, so
        // a model that calls an external tool every round, answered by an automatic resumer (a
        // team's leader, a front end running its tools), was never stopped.
        let mut count_round = false;
        match &req.input {
            ReplyInput::Messages(msgs) => start(runtime, &req, msgs, emit).await?,
            ReplyInput::Interrupt(ev) => {
                // Closing a parked reply is an ending: an interrupt meanwhile cancels nothing
                // (cancelled, the closing would run again and close its calls twice).
                let _closing = runtime.interrupt.shield();
                return Box::pin(resume::interrupt(runtime, &ctx, ev, emit)).await;
            }
            ReplyInput::Confirm(ev) => {
                Box::pin(resume::confirm(runtime, &ctx, ev, emit)).await?;
                count_round = true;
            }
            ReplyInput::External(ev) => {
                Box::pin(resume::external(runtime, &ctx, ev, emit)).await?;
                count_round = true;
            }
        }

        let mut made_progress = true;
        let mut final_msg = None;
        let mut actions = 0u64;
        loop {
            actions += 1;
            if actions > runtime.config.max_actions() {
                // The last step's round is still counted, as at the step's end; nothing more is
                // decided (a decision makes messages and events, drawing ids for nothing).
                if count_round {
                    next_action::count_round(runtime, &ctx);
                }
                return Err(AgentError::State(format!(
                    "the reply took {} reasoning and acting steps without ending (max_iters {}); a middleware or the \
                 model keeps it going",
                    actions - 1,
                    runtime.config.max_iters
                )));
            }
            // Decided with the last step's round counted first, under one lock (see
            // `next_action`).
            match next_action(
                runtime,
                &ctx,
                final_msg.take(),
                emit.wants_events(),
                std::mem::take(&mut count_round),
            ) {
                // An interrupt asked for before the loop decided to end or park stops the reply
                // (the loop is not at an await here, so it is checked); one asked for after the
                // decision (its consumer saw the end coming) cancels nothing, and no second end
                // follows. The final message needs no shield: `Unless` polls the loop before the
                // interrupt, so the loop ends as soon as its last item is taken.
                Action::Exit { .. } if runtime.interrupt.is_requested() => return Err(AgentError::Interrupted),
                Action::Exit { events: None, msg } => {
                    // Parked. For the `on_reply` layers: the final message is a note, and a
                    // resume that parks again on a call asked about earlier sends no request.
                    let waiting = runtime.lock_state().waiting_calls();
                    if let Some(waiting) = waiting {
                        ctx.insert(waiting);
                    }
                    emit.final_msg(*msg).await;
                    return Ok(());
                }
                Action::Exit {
                    events: Some(events),
                    msg,
                } => {
                    // The end events are shielded, unless a layer asks for another round after
                    // seeing them.
                    let ending = runtime.interrupt.shield();
                    let mut events = events;
                    reasoning::forward(emit, &mut events).await;
                    if !ctx.take_another_round_request() {
                        emit.final_msg(*msg).await;
                        return Ok(());
                    }
                    drop(ending);
                    if !made_progress {
                        return Err(AgentError::Middleware(
                            "A middleware asked for another round twice without any reasoning/acting in between. \
                         Let the reply end, or make progress before asking again."
                                .to_owned(),
                        ));
                    }
                    made_progress = false;
                    continue;
                }
                Action::Reasoning { hint, tool_choice } => {
                    made_progress = true;
                    let iteration = {
                        let mut state = runtime.lock_state();
                        if let Some(hint) = hint {
                            state.append_to_reply(&runtime.name, ctx.reply_id(), [ContentBlock::Hint(*hint)]);
                        }
                        state.reply_context.cur_iter
                    };
                    let round = ctx.with_iteration(iteration);
                    // Nothing installed and no `ContextConfig`: the position would do nothing.
                    let position = &runtime.positions.compress;
                    if matches!(position, Either::Right(_)) || runtime.context.is_some() {
                        let request = CompressRequest {
                            ctx: round.clone(),
                            instructions: None,
                            config: None,
                        };
                        position.clone().oneshot(request).await?;
                    }
                    // Not `if let`: its scrutinee (an event) would stay in the loop's future.
                    let hint = crate::hints::inject(runtime, &round, emit.wants(EventType::HintBlock));
                    emit.forward_some(hint).await;
                    let request = ReasoningRequest {
                        ctx: round,
                        tool_choice,
                    };
                    match &mut reasoning {
                        // Nothing installed on `on_reasoning`: the step runs here, on this emitter.
                        Either::Left(_) => final_msg = reasoning::reason(runtime, request, emit).await?,
                        Either::Right(stack) => {
                            let mut stream = stack.ready().await?.call(request).await?;
                            // No layer wrapped the step's stream, so none reads its events: the
                            // step runs here, on this emitter, with the request the stack passed in.
                            if let Some(request) = plan.and_then(|p| p.unwrapped_step(&stream)) {
                                drop(stream);
                                final_msg = reasoning::reason(runtime, request, emit).await?;
                            } else {
                                // No item held across an await: each is taken by a plain
                                // function, and only its event (if any) is awaited.
                                loop {
                                    let event = match stream.next().await {
                                        None => break,
                                        Some(item) => take_item(item, &mut final_msg)?,
                                    };
                                    emit.forward_some(event).await;
                                }
                            }
                        }
                    }
                }
                Action::Acting(calls) => {
                    made_progress = true;
                    let (iteration, groups) = {
                        let state = runtime.lock_state();
                        let groups = runtime
                            .toolkit
                            .has_groups()
                            .then(|| Arc::from(state.activated_groups.clone()));
                        (state.reply_context.cur_iter, groups)
                    };
                    let round = ctx.with_iteration(iteration);
                    if let Some(groups) = groups {
                        // What `reset_tools` reports as the groups active before the call.
                        round.insert(ActiveToolGroups(groups));
                    }
                    let parks = runtime.lock_state().parks;
                    for (concurrent, batch) in acting::batches(runtime, calls) {
                        // Boxed inside (see `run_batch`).
                        acting::run_batch(runtime, &round, concurrent, batch, emit).await?;
                        // A scan of the message only after a batch that parked a call: a
                        // scan after each batch made a round of many alternating batches
                        // quadratic.
                        let state = runtime.lock_state();
                        if state.parks != parks && state.is_parked() {
                            break;
                        }
                    }
                }
            }
            count_round = true;
        }
    }
}

/// An item of a reasoning step's stream: its event, or `None` when it was the candidate final
/// message (kept in `final_msg`).
fn take_item(
    item: Result<ReplyItem, AgentError>,
    final_msg: &mut Option<Box<towerscope_core::Msg>>,
) -> Result<Option<towerscope_core::AgentEvent>, AgentError> {
    match item? {
        ReplyItem::Event(event) => Ok(Some(event)),
        ReplyItem::Final(msg) => {
            *final_msg = Some(Box::new(msg));
            Ok(None)
        }
    }
}

/// A new reply: validate and store the input, close calls a dropped reply left open, emit
/// `REPLY_START`.
async fn start(runtime: &Arc<Runtime>, req: &ReplyRequest, msgs: &Messages, emit: &Emitter) -> Result<(), AgentError> {
    for m in msgs.iter() {
        validate_input(m)?;
    }
    let session_id = {
        let mut state = runtime.lock_state();
        crate::state::check_not_parked(&state)?;
        resume::close_dangling_calls(&runtime.name, &mut state);
        state.store_input(msgs.arcs().cloned());
        state.reply_context = ReplyContext {
            reply_id: req.ctx.reply_id().clone(),
            structured_schema: req.structured_schema.as_ref().map(|s| s.schema.clone()),
            structured_schema_name: req.structured_schema.as_ref().map(|s| s.name.clone()),
            ..ReplyContext::default()
        };
        state.session_id.clone()
    };
    emit.event(EventType::ReplyStart, || {
        ReplyStartEvent::new(session_id, req.ctx.reply_id(), Arc::clone(&runtime.name)).into()
    })
    .await;
    Ok(())
}

/// Marks the reply's stored message failed (see `state::mark_ending`).
fn mark_failed(runtime: &Runtime, ctx: &AgentContext) {
    let mut state = runtime.lock_state();
    crate::state::mark_ending(&mut state, &runtime.name, ctx.reply_id(), ReplyFinishedReason::Error);
}

/// A call limit ends the reply cleanly: `REPLY_END` with finished reason `error` and the error,
/// then a final message carrying the same error, so the consumer never sees a half-open stream.
async fn end_with_error(runtime: &Runtime, ctx: &AgentContext, err: &AgentError, emit: &Emitter) {
    let info = towerscope_core::ErrorInfo::new(err.kind(), err.to_string());
    let (session_id, usage) = {
        let mut state = runtime.lock_state();
        crate::state::mark_ending(&mut state, &runtime.name, ctx.reply_id(), ReplyFinishedReason::Error);
        (state.session_id.clone(), state.reply_context.usage)
    };
    emit.event(EventType::ReplyEnd, || {
        ReplyEndEvent::new(session_id, ctx.reply_id(), ReplyFinishedReason::Error)
            .with_error(info.clone())
            .into()
    })
    .await;
    let mut msg = assistant_msg(&runtime.name, ctx.reply_id(), &err.to_string());
    msg.usage = Some(usage);
    msg.finished_reason = Some(ReplyFinishedReason::Error);
    msg.error = Some(info);
    emit.final_msg(msg).await;
}
