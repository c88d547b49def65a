//! The reasoning step: the implementation behind `on_reasoning`.
//!
//! It emits `MODEL_CALL_START`, builds the model input (the system prompt through the
//! `on_system_prompt` fold, the summary, the context), calls the `on_model_call` position,
//! converts the answer to block events, emits `MODEL_CALL_END`, saves the answer to the reply's
//! assistant message, and, when the answer is final (no tool call, not thinking only), yields the
//! candidate final message.

use std::future::Ready;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::StreamExt;
use tower::Service;
use tower::ServiceExt;
use towerscope_core::{
    AgentContext, AgentError, AgentEvent, ChatResponse, ContentBlock, EventStream, ModelCallEndEvent, ModelCallRequest,
    ModelCallStartEvent, ModelFinishedReason, ModelOutput, Msg, ReasoningRequest, ReplyFinishedReason, ReplyItem,
    ToolSchema, Usage,
};

use crate::agent::Shared;
use crate::convert::ChunkConverter;
use crate::generator::{Generator, Yielder};

type Out = Yielder<Result<ReplyItem, AgentError>>;

/// The innermost `on_reasoning` service.
#[derive(Clone)]
pub(crate) struct ReasoningImpl {
    pub(crate) shared: Arc<Shared>,
}

impl Service<ReasoningRequest> for ReasoningImpl {
    type Response = EventStream;
    type Error = AgentError;
    type Future = Ready<Result<EventStream, AgentError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: ReasoningRequest) -> Self::Future {
        let shared = Arc::clone(&self.shared);
        let stream = Generator::new(|y| async move {
            if let Err(e) = reason(&shared, req, &y).await {
                y.emit(Err(e)).await;
            }
        });
        std::future::ready(Ok(Box::pin(stream)))
    }
}

async fn emit_events(y: &Out, events: &mut Vec<AgentEvent>) {
    for e in events.drain(..) {
        y.emit(Ok(ReplyItem::Event(e))).await;
    }
}

async fn reason(shared: &Arc<Shared>, req: ReasoningRequest, y: &Out) -> Result<(), AgentError> {
    let ctx = req.ctx;
    let reply_id = ctx.reply_id();
    y.emit(Ok(ReplyItem::Event(AgentEvent::ModelCallStart(
        ModelCallStartEvent::new(reply_id, shared.model.model_name()),
    ))))
    .await;

    let messages = shared.model_input(&ctx).await?;
    let tools = tool_schemas(shared, &ctx);
    let request = ModelCallRequest {
        ctx: ctx.clone(),
        model: Arc::clone(&shared.model),
        messages,
        tools,
        tool_choice: req.tool_choice,
    };
    let output = shared.model_call.clone().oneshot(request).await?;

    let mut converter = ChunkConverter::new(reply_id);
    let mut events = Vec::new();
    let completed = match output {
        ModelOutput::Complete(response) => {
            converter.convert(&response, &mut events);
            emit_events(y, &mut events).await;
            Some(response)
        }
        ModelOutput::Stream(mut stream) => {
            let mut completed = None;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk?;
                if chunk.is_last {
                    completed = Some(chunk);
                    break;
                }
                if let Some(reason) = chunk.restart_reason() {
                    events.push(restart_event(reply_id, reason, converter.restart()));
                    emit_events(y, &mut events).await;
                    continue;
                }
                converter.convert(&chunk, &mut events);
                emit_events(y, &mut events).await;
            }
            completed
        }
    };
    converter.close(&mut events);
    emit_events(y, &mut events).await;
    let completed = completed.ok_or_else(|| {
        AgentError::Stream(
            "Model returned an empty streaming response: no is_last=True chunk was received. \
             Check that the provider's stream ends with a final chunk."
                .to_owned(),
        )
    })?;

    let usage = completed.usage.as_ref().map(|u| u.to_usage()).unwrap_or_default();
    // Saved before MODEL_CALL_END goes out: a consumer that stops reading at that event (drops
    // the stream) must not lose the answer, and its tool calls get closed by the next reply.
    let finished_reason = completed.finished_reason;
    let candidate = save(shared, &ctx, completed, &usage);
    y.emit(Ok(ReplyItem::Event(AgentEvent::ModelCallEnd(
        ModelCallEndEvent::new(reply_id, &usage).with_finished_reason(finished_reason),
    ))))
    .await;
    if let Some(msg) = candidate {
        y.emit(Ok(ReplyItem::Final(msg))).await;
    }
    Ok(())
}

/// Saves the answer to the reply's message; returns the candidate final message, if final.
fn save(shared: &Shared, ctx: &AgentContext, completed: ChatResponse, usage: &Usage) -> Option<Msg> {
    let reply_id = ctx.reply_id();
    let mut state = shared.lock_state();
    state.reply_context.usage.add(usage);
    let has_tool_call = completed.content.iter().any(|b| matches!(b, ContentBlock::ToolCall(_)));
    let thinking_only =
        !completed.content.is_empty() && completed.content.iter().all(|b| matches!(b, ContentBlock::Thinking(_)));
    let is_final = completed.finished_reason != ModelFinishedReason::Interrupted && !has_tool_call && !thinking_only;
    if !is_final {
        // Not a final answer: the context is the only place the blocks go, so they move there.
        state.append_to_reply(
            &shared.name,
            reply_id,
            completed.content.into_iter().filter(|b| !is_audio(b)),
        );
        return None;
    }
    state.append_to_reply(
        &shared.name,
        reply_id,
        completed.content.iter().filter(|b| !is_audio(b)).cloned(),
    );
    let mut msg = Msg::assistant_blocks(&*shared.name, completed.content);
    msg.id = reply_id.to_owned();
    msg.usage = Some(state.reply_context.usage);
    msg.finished_reason = Some(ReplyFinishedReason::Completed);
    Some(msg)
}

fn is_audio(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::Data(d) if d.source.media_type().starts_with("audio/"))
}

/// The tool schemas offered this round: the toolkit's for the active groups, plus the
/// structured-output tool when the reply requires it.
fn tool_schemas(shared: &Shared, ctx: &AgentContext) -> Arc<[ToolSchema]> {
    let state = shared.lock_state();
    let schemas = shared.toolkit.schemas(&state.activated_groups);
    match crate::structured::mounted(ctx) {
        None => schemas,
        Some(schema) => {
            let mut all: Vec<ToolSchema> = schemas.iter().cloned().collect();
            all.push(crate::structured::tool_schema(&schema));
            Arc::from(all)
        }
    }
}

/// The `CUSTOM` event telling consumers to discard the blocks of a restarted model call.
fn restart_event(reply_id: &str, reason: &str, discarded: Vec<String>) -> AgentEvent {
    let mut value = serde_json::Map::new();
    value.insert("reply_id".into(), reply_id.into());
    value.insert("reason".into(), reason.into());
    value.insert("discarded_block_ids".into(), discarded.into());
    AgentEvent::Custom(towerscope_core::CustomEvent::new(towerscope_core::RESTART_EVENT, value))
}
