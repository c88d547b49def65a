//! The reasoning step: the implementation behind `on_reasoning`.
//!
//! It emits `MODEL_CALL_START`, builds the model input (the system prompt through the
//! `on_system_prompt` fold, the summary, the context), calls the `on_model_call` position,
//! converts the answer to block events, emits `MODEL_CALL_END`, saves the answer to the reply's
//! assistant message, and, when the answer is final (no tool call, not thinking only), yields the
//! candidate final message.
//!
//! # The model stream is read to its end
//!
//! A layer's code after the last chunk (timing, tracing, a guardrail's verdict) runs only if
//! the stream is read to its end, so the step keeps reading after the final (`is_last`) chunk.
//! The first final chunk is the answer; chunks after it are ignored (and logged); an error
//! after it fails the call, and the answer is not saved: a layer may reject an answer after
//! seeing all of it.
//!
//! # Interrupts and dropped streams keep what was streamed
//!
//! An interrupt while the model is called or streams stops the call, closes the open blocks,
//! stores what was streamed so far as the reply's message, emits `MODEL_CALL_END` with finished
//! reason `interrupted`, and fails the step with [`AgentError::Interrupted`] (the reply then ends
//! as interrupted). A consumer that drops the reply stream in the middle of an answer loses no
//! text either: the streamed part is stored when the step is dropped.

mod convert;

use std::future::Ready;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::StreamExt;
use tower::Service;
use tower::ServiceExt;
use towerscope_core::{
    AgentContext, AgentError, AgentEvent, ChatResponse, ChatStream, ContentBlock, EventStream, Id, ModelCallEndEvent,
    ModelCallRequest, ModelCallStartEvent, ModelFinishedReason, ModelOutput, Msg, ReasoningRequest,
    ReplyFinishedReason, ReplyItem, ToolSchema, Usage,
};

use towerscope_core::{EventKinds, EventType};

use crate::emit::{ANSWER_KINDS, Emitter, EventsRead};
use crate::generator::Generator;
use crate::interrupt::unless_interrupted;
use crate::runtime::Runtime;

pub(crate) use convert::{CallIds, ChunkConverter};

/// The innermost `on_reasoning` service: one model call and what follows from it.
#[derive(Clone)]
pub(crate) struct ReasoningStep {
    pub(crate) runtime: Arc<Runtime>,
}

impl Service<ReasoningRequest> for ReasoningStep {
    type Response = EventStream;
    type Error = AgentError;
    type Future = Ready<Result<EventStream, AgentError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: ReasoningRequest) -> Self::Future {
        let plan = EventsRead::of(&req.ctx);
        let reads = plan.as_ref().map_or(EventKinds::ALL, EventsRead::reasoning);
        let mut step = Box::pin(LazyStep {
            runtime: Arc::clone(&self.runtime),
            reads,
            own: None,
            plan: None,
            stream: None,
            started: false,
        });
        // Held by the reply's plan until the stream is first polled: the reply loop takes it
        // to run the step inline when no layer wrapped this stream (`EventsRead`).
        let at = step.address();
        let held = match &plan {
            Some(plan) => plan.hold_step(at, req),
            None => Err(req),
        };
        match held {
            Ok(()) => step.plan = plan,
            Err(req) => step.own = Some(req),
        }
        let stream: EventStream = step;
        std::future::ready(Ok(stream))
    }
}

/// The stream of a reasoning step behind `on_reasoning` layers. The step (a generator around
/// [`reason`], a large future) is made when the stream is first polled, so a stream the reply
/// loop never polls (it ran the step inline) costs one small allocation.
struct LazyStep {
    runtime: Arc<Runtime>,
    reads: EventKinds,
    /// The request, when no plan holds it.
    own: Option<ReasoningRequest>,
    /// The plan holding the request until the first poll.
    plan: Option<EventsRead>,
    stream: Option<EventStream>,
    started: bool,
}

impl LazyStep {
    /// The address the plan knows this step by: its place in its box.
    fn address(&self) -> usize {
        crate::emit::address_of(self)
    }
}

impl futures_core::Stream for LazyStep {
    type Item = Result<ReplyItem, AgentError>;

    fn poll_next(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if !self.started {
            self.started = true;
            let at = self.address();
            let req = match self.own.take() {
                Some(req) => Some(req),
                // None: the reply loop took it and runs the step itself.
                None => self.plan.take().and_then(|plan| plan.take_step(at)),
            };
            let runtime = Arc::clone(&self.runtime);
            let reads = self.reads;
            self.stream = req.map(|req| -> EventStream {
                Box::pin(Generator::new(move |y| async move {
                    let emit = Emitter::new(y, reads);
                    match reason(&runtime, req, &emit).await {
                        Ok(Some(candidate)) => emit.final_msg(*candidate).await,
                        Ok(None) => {}
                        Err(e) => emit.error(e).await,
                    }
                }))
            });
        }
        match self.stream.as_mut() {
            Some(stream) => stream.as_mut().poll_next(cx),
            None => Poll::Ready(None),
        }
    }
}

impl Drop for LazyStep {
    fn drop(&mut self) {
        // A step dropped unpolled gives its request back, so its address (which a new
        // allocation may reuse) is no longer known to the plan.
        if let Some(plan) = self.plan.take() {
            plan.take_step(self.address());
        }
    }
}

/// The answer being received: converts chunks, and stores what was streamed if the step ends
/// early (interrupted, or dropped with the reply stream).
struct Answer<'a> {
    runtime: &'a Arc<Runtime>,
    reply_id: Id,
    converter: ChunkConverter,
    /// Whether the answer's fate is settled (saved, stored as interrupted, or discarded).
    settled: bool,
}

impl<'a> Answer<'a> {
    fn new(runtime: &'a Arc<Runtime>, ctx: &AgentContext, events: bool) -> Self {
        let reply_id = ctx.reply_id().clone();
        let ids = {
            let state = runtime.lock_state();
            CallIds::new(
                state
                    .reply_msg(&reply_id)
                    .into_iter()
                    .flat_map(|m| m.tool_calls().map(|c| c.id.clone())),
            )
        };
        Self {
            runtime,
            converter: ChunkConverter::new(&reply_id, ids, events),
            reply_id,
            settled: false,
        }
    }

    /// Stores what was streamed so far as part of the reply's message.
    fn store_partial(&mut self) {
        self.settled = true;
        let partial = self.converter.take_partial();
        if partial.is_empty() {
            return;
        }
        self.runtime
            .lock_state()
            .append_to_reply(&self.runtime.name, &self.reply_id, partial);
    }

    /// The step was interrupted: close the open blocks, keep what was streamed, and end the
    /// model call as interrupted.
    async fn interrupted(self, emit: &Emitter) -> Result<Option<Box<Msg>>, AgentError> {
        self.cut(emit, AgentError::Interrupted).await
    }

    /// The step ends with `error`, its model call cut short: close the open blocks, keep what
    /// was streamed, and end the model call as interrupted, so that every `MODEL_CALL_START`
    /// has its end (an interrupt, or a call limit, which ends the reply cleanly).
    async fn cut(mut self, emit: &Emitter, error: AgentError) -> Result<Option<Box<Msg>>, AgentError> {
        let mut events = Vec::new();
        self.converter.close(&mut events);
        for event in events {
            emit.forward(event).await;
        }
        self.store_partial();
        let reply_id = &self.reply_id;
        emit.event(EventType::ModelCallEnd, || {
            ModelCallEndEvent::new(reply_id, &Usage::default())
                .with_finished_reason(ModelFinishedReason::Interrupted)
                .into()
        })
        .await;
        Err(error)
    }
}

impl Drop for Answer<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.store_partial();
        }
    }
}

/// One reasoning step, sending its events to `emit`; returns the candidate final message.
///
/// With no `on_reasoning` layer installed, the reply loop calls this directly with its own
/// emitter (no stream, no generator in between); with layers, [`ReasoningStep`] runs it behind
/// the position's stream.
///
/// Not an `async fn`, which would keep the request twice in every step's future; the candidate
/// comes boxed, so that it takes no room in the step across its last await.
#[allow(clippy::manual_async_fn)]
pub(crate) fn reason<'a>(
    runtime: &'a Arc<Runtime>,
    req: ReasoningRequest,
    emit: &'a Emitter,
) -> impl Future<Output = Result<Option<Box<Msg>>, AgentError>> + Send + 'a {
    async move {
        let ctx = req.ctx;
        let reply_id = ctx.reply_id();
        emit.event(EventType::ModelCallStart, || {
            ModelCallStartEvent::new(reply_id, Arc::clone(&runtime.model_name)).into()
        })
        .await;

        // From here on the step handles an interrupt itself (see the module docs).
        let interrupt = &runtime.interrupt;
        let _shield = interrupt.shield();
        let mut answer = Answer::new(runtime, &ctx, emit.reads().intersects(ANSWER_KINDS));
        let Some(messages) = unless_interrupted(interrupt, &ctx, runtime.model_input(&ctx)).await else {
            return Box::pin(answer.interrupted(emit)).await;
        };
        let request = ModelCallRequest {
            ctx: ctx.clone(),
            model: Arc::clone(&runtime.model),
            messages: settle_on_error(&mut answer, messages)?,
            tools: tool_schemas(runtime),
            tool_choice: req.tool_choice,
        };
        let call = runtime.positions.model_call.clone().oneshot(request);
        let Some(output) = unless_interrupted(interrupt, &ctx, call).await else {
            return Box::pin(answer.interrupted(emit)).await;
        };
        // A call limit refused the call: the reply ends cleanly, its model call ended too.
        let output = match output {
            Err(limit @ AgentError::CallLimit { .. }) => return Box::pin(answer.cut(emit, limit)).await,
            output => output,
        };
        let mut events = Vec::new();
        // No await inside this match: the temporaries of its scrutinee, and a value matched in
        // parts, would otherwise stay in every step's future.
        let (whole, stream) = match settle_on_error(&mut answer, output)? {
            ModelOutput::Complete(response) => {
                // A whole answer is stored as it is (nothing partial to keep): the converter only
                // builds its events, when they are read; they go out with the closing ones below.
                if emit.reads().intersects(ANSWER_KINDS) {
                    answer.converter.convert(&response, &mut events);
                }
                (Some(response), None)
            }
            ModelOutput::Stream(stream) => (None, Some(stream)),
        };
        // Neither answer is borrowed, and the whole one is dropped before the stream is read:
        // a value held across an await takes room in every step's future.
        let completed = match stream {
            None => whole,
            Some(stream) => {
                drop(whole);
                let received = receive(runtime, &ctx, stream, &mut answer, emit, &mut events).await?;
                let interrupted = received.is_none();
                let completed = received.flatten();
                if interrupted {
                    return Box::pin(answer.interrupted(emit)).await;
                }
                completed
            }
        };
        answer.converter.close(&mut events);
        // Saved before the closing events and MODEL_CALL_END go out: a consumer that stops
        // reading at one of them (drops the stream) must not lose the answer, and its tool
        // calls get closed by the next reply. The answer itself is not held across the awaits.
        let saved = finish(runtime, &ctx, &mut answer, completed);
        forward(emit, &mut events).await;
        let (candidate, usage, finished_reason) = saved?;
        emit.event(EventType::ModelCallEnd, || {
            ModelCallEndEvent::new(reply_id, &usage)
                .with_finished_reason(finished_reason)
                .into()
        })
        .await;
        Ok(candidate)
    }
}

/// Reads a streamed answer: its final chunk (`None` if the stream ended without one), or `None`
/// when an interrupt came first (the stream is dropped before the caller closes the answer).
///
/// Its own future, awaited at one point of [`reason`]: the chunks it holds then share their
/// space in the step's future with the model call's.
async fn receive(
    runtime: &Runtime,
    ctx: &AgentContext,
    mut stream: ChatStream,
    answer: &mut Answer<'_>,
    emit: &Emitter,
    events: &mut Vec<AgentEvent>,
) -> Result<Option<Option<ChatResponse>>, AgentError> {
    let mut completed: Option<ChatResponse> = None;
    loop {
        // One expression, no named `Option` left partly moved (it would stay in the future).
        let chunk = match unless_interrupted(&runtime.interrupt, ctx, stream.next()).await {
            None => return Ok(None),
            Some(None) => break,
            Some(Some(chunk)) => settle_on_error(answer, chunk)?,
        };
        // The chunk is taken by a plain function: held in this body, it would take room in
        // the future across the awaits below.
        match take_chunk(ctx, chunk, &mut completed, answer, events) {
            Taken::Nothing => {}
            Taken::Events => forward(emit, events).await,
            Taken::Restart { reason, discarded } => {
                emit.event(EventType::Custom, || restart_event(ctx.reply_id(), &reason, discarded))
                    .await;
            }
        }
    }
    Ok(Some(completed))
}

/// What a streamed chunk asks of [`receive`].
enum Taken {
    /// Nothing to send (the final chunk, or one after it).
    Nothing,
    /// Its events are in the buffer.
    Events,
    /// The model restarted its answer: the blocks already streamed are discarded.
    Restart { reason: String, discarded: Vec<Id> },
}

fn take_chunk(
    ctx: &AgentContext,
    chunk: ChatResponse,
    completed: &mut Option<ChatResponse>,
    answer: &mut Answer<'_>,
    events: &mut Vec<AgentEvent>,
) -> Taken {
    if completed.is_some() {
        tracing::warn!(
            reply_id = %ctx.reply_id(),
            "a chunk after the final chunk of a model stream was ignored"
        );
        return Taken::Nothing;
    }
    if chunk.is_last {
        *completed = Some(chunk);
        return Taken::Nothing;
    }
    if let Some(reason) = chunk.restart_reason() {
        return Taken::Restart {
            reason: reason.to_owned(),
            discarded: answer.converter.restart(),
        };
    }
    answer.converter.convert(&chunk, events);
    Taken::Events
}

/// Settles the answer: saves the final chunk (a stream that ended without one is an error);
/// returns the candidate final message, the usage and the finish reason.
fn finish(
    runtime: &Runtime,
    ctx: &AgentContext,
    answer: &mut Answer<'_>,
    completed: Option<ChatResponse>,
) -> Result<(Option<Box<Msg>>, Usage, ModelFinishedReason), AgentError> {
    let completed = settle_on_error(
        answer,
        completed.ok_or_else(|| AgentError::Stream(crate::positions::NO_FINAL_CHUNK.to_owned())),
    )?;
    let usage = completed.usage.as_ref().map(|u| u.to_usage()).unwrap_or_default();
    let finished_reason = completed.finished_reason;
    let ids = answer.converter.take_ids_before();
    answer.settled = true;
    Ok((save(runtime, ctx, completed, &usage, ids), usage, finished_reason))
}

/// A failure of the call discards the answer (nothing of a failed call is stored).
fn settle_on_error<T>(answer: &mut Answer<'_>, result: Result<T, AgentError>) -> Result<T, AgentError> {
    if result.is_err() {
        answer.settled = true;
    }
    result
}

/// Sends `events` in order, leaving the buffer empty.
#[allow(clippy::while_let_loop)] // `while let` keeps its scrutinee across the await
pub(crate) async fn forward(emit: &Emitter, events: &mut Vec<AgentEvent>) {
    let mut events = events.drain(..);
    // Not a `for` loop: its `Option<AgentEvent>` would live across the await, in the future.
    loop {
        let Some(event) = events.next() else { break };
        emit.forward(event).await;
    }
}

/// Saves the answer to the reply's message; returns the candidate final message, if final.
fn save(
    runtime: &Runtime,
    ctx: &AgentContext,
    mut completed: ChatResponse,
    usage: &Usage,
    mut ids: CallIds,
) -> Option<Box<Msg>> {
    let reply_id = ctx.reply_id();
    ids.dedupe(&mut completed.content);
    let mut state = runtime.lock_state();
    state.reply_context.usage.add(usage);
    let has_tool_call = completed.content.iter().any(|b| matches!(b, ContentBlock::ToolCall(_)));
    let thinking_only =
        !completed.content.is_empty() && completed.content.iter().all(|b| matches!(b, ContentBlock::Thinking(_)));
    let is_final = completed.finished_reason != ModelFinishedReason::Interrupted && !has_tool_call && !thinking_only;
    if !is_final {
        // Not a final answer: the context is the only place the blocks go, so they move there.
        state.append_to_reply(
            &runtime.name,
            reply_id,
            completed.content.into_iter().filter(|b| !is_audio(b)),
        );
        mark_last_call(runtime, &mut state, usage);
        return None;
    }
    state.append_to_reply(
        &runtime.name,
        reply_id,
        completed.content.iter().filter(|b| !is_audio(b)).cloned(),
    );
    mark_last_call(runtime, &mut state, usage);
    let mut msg = Msg::assistant_blocks(Arc::clone(&runtime.name), completed.content).with_id(reply_id);
    msg.usage = Some(state.reply_context.usage);
    msg.finished_reason = Some(ReplyFinishedReason::Completed);
    Some(Box::new(msg))
}

/// Remembers the size the model reported for this call, for the default token counter (only
/// when the agent compresses its context: otherwise nothing counts tokens).
fn mark_last_call(runtime: &Runtime, state: &mut crate::state::AgentState, usage: &Usage) {
    if runtime.context.is_none() {
        return;
    }
    let tokens = usage.input_tokens.saturating_add(usage.output_tokens);
    state.last_call = match state.context.len().checked_sub(1) {
        Some(msg_index) if tokens > 0 => Some(crate::state::LastCall {
            tokens,
            msg_index,
            msg_id: state.context[msg_index].id.clone(),
            blocks: state.context[msg_index].content.len(),
        }),
        _ => None,
    };
}

fn is_audio(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::Data(d) if d.source.media_type().starts_with("audio/"))
}

/// The tool schemas offered this round: the toolkit's for the active groups, plus the
/// structured-output tool when the reply requires it.
fn tool_schemas(runtime: &Runtime) -> Arc<[ToolSchema]> {
    let state = runtime.lock_state();
    let schemas = runtime.toolkit.schemas(&state.activated_groups);
    let compress_tool = runtime.context.as_ref().is_some_and(|c| c.compression_tool);
    let structured = crate::structured::mounted(&state.reply_context);
    if structured.is_none() && !compress_tool {
        return schemas;
    }
    let mut all: Vec<ToolSchema> = schemas.iter().cloned().collect();
    if compress_tool {
        all.push(crate::compress::tool_schema());
    }
    if let Some(schema) = structured {
        all.push(crate::structured::tool_schema(&schema));
    }
    Arc::from(all)
}

/// The `CUSTOM` event telling consumers to discard the blocks of a restarted model call.
fn restart_event(reply_id: &Id, reason: &str, discarded: Vec<Id>) -> AgentEvent {
    let mut value = serde_json::Map::new();
    value.insert("reply_id".into(), reply_id.to_string().into());
    value.insert("reason".into(), reason.into());
    let discarded: Vec<serde_json::Value> = discarded.iter().map(|id| id.to_string().into()).collect();
    value.insert("discarded_block_ids".into(), discarded.into());
    AgentEvent::Custom(towerscope_core::CustomEvent::new(towerscope_core::RESTART_EVENT, value))
}
