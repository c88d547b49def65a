//! Acting: running the tool calls of one reasoning round, in the reference's batches.
//!
//! Consecutive concurrency-safe calls form a concurrent batch (unknown tools count as safe);
//! the others run one at a time. Events of a concurrent batch interleave in completion order.
//! The life of one call: availability and input validation (failures become an error result,
//! no permission check, no `on_acting`), `on_check_permission`, then `on_acting`. Every call
//! that starts ends with exactly one result in the context, whatever the tool or a middleware
//! does: an error of the `on_acting` stack becomes an error result the model sees.

use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::{self, BoxStream};
use serde_json::{Map, Value};
use tower::ServiceExt;
use towerscope_core::{
    ActingRequest, AgentContext, AgentError, AgentEvent, CustomEvent, MediaBlock, PermissionDecision,
    PermissionRequest, RequireExternalExecutionEvent, RequireUserConfirmEvent, ToolCallBlock, ToolCallState, ToolInfo,
    ToolItem, ToolOutput, ToolResponse, ToolResultBlock, ToolResultDataDeltaEvent, ToolResultEndEvent,
    ToolResultStartEvent, ToolResultState, ToolResultTextDeltaEvent, ToolStream,
};

use crate::agent::Shared;
use crate::generator::{Generator, Yielder};
use crate::structured;

type Events = Yielder<Result<AgentEvent, AgentError>>;

/// Splits calls into batches: `(concurrent, calls)`.
pub(crate) fn batches(shared: &Shared, calls: Vec<ToolCallBlock>) -> Vec<(bool, Vec<ToolCallBlock>)> {
    let mut out: Vec<(bool, Vec<ToolCallBlock>)> = Vec::new();
    for call in calls {
        let safe =
            call.name == structured::TOOL_NAME || shared.toolkit.get(&call.name).is_none_or(|t| t.concurrency_safe());
        match out.last_mut() {
            Some((kind, batch)) if *kind == safe => batch.push(call),
            _ => out.push((safe, vec![call])),
        }
    }
    out
}

/// The events of running one batch; parks (stops later batches) when a call needs the user or
/// an external executor.
pub(crate) fn run_batch(
    shared: &Arc<Shared>,
    ctx: &AgentContext,
    concurrent: bool,
    calls: Vec<ToolCallBlock>,
) -> BoxStream<'static, Result<AgentEvent, AgentError>> {
    if concurrent && calls.len() > 1 {
        let streams = calls
            .into_iter()
            .map(|call| call_events(Arc::clone(shared), ctx.clone(), call).boxed());
        stream::select_all(streams).boxed()
    } else {
        let shared = Arc::clone(shared);
        let ctx = ctx.clone();
        Generator::new(|y: Events| async move {
            for call in calls {
                let mut events = call_events(Arc::clone(&shared), ctx.clone(), call);
                let mut parked = false;
                while let Some(e) = events.next().await {
                    parked |= matches!(
                        e,
                        Ok(AgentEvent::RequireUserConfirm(_) | AgentEvent::RequireExternalExecution(_))
                    );
                    y.emit(e).await;
                }
                if parked {
                    return;
                }
            }
        })
        .boxed()
    }
}

/// The events of one tool call.
fn call_events(
    shared: Arc<Shared>,
    ctx: AgentContext,
    call: ToolCallBlock,
) -> Generator<Result<AgentEvent, AgentError>> {
    Generator::new(|y: Events| async move {
        if let Err(e) = execute(&shared, &ctx, call, &y).await {
            y.emit(Err(e)).await;
        }
    })
}

async fn execute(shared: &Arc<Shared>, ctx: &AgentContext, call: ToolCallBlock, y: &Events) -> Result<(), AgentError> {
    let reply_id = ctx.reply_id();
    let prepared = if call.name == structured::TOOL_NAME {
        prepare_structured(ctx, &call)
    } else {
        let groups = shared.lock_state().activated_groups.clone();
        shared.toolkit.prepare(&call, &groups).map(|p| (p.info, p.input))
    };
    let (info, input) = match prepared {
        Ok(p) => p,
        Err(message) => {
            y.emit(Ok(start_event(reply_id, &call))).await;
            return finish_with_text(shared, ctx, &call, message, ToolResultState::Error, y).await;
        }
    };

    let decision = if call.name == structured::TOOL_NAME {
        PermissionDecision::Allow
    } else {
        let request = PermissionRequest {
            ctx: ctx.clone(),
            tool_call: call.clone(),
            tool: Arc::clone(&info),
            input: Arc::new(input),
        };
        shared.permission.clone().oneshot(request).await?
    };
    match decision {
        PermissionDecision::Ask { suggested_rules } => {
            let parked = {
                let mut state = shared.lock_state();
                state.tail_call_mut(&call.id).map(|c| {
                    c.state = ToolCallState::Asking;
                    c.suggested_rules = suggested_rules;
                    c.clone()
                })
            };
            let parked = parked.unwrap_or(call);
            y.emit(Ok(AgentEvent::RequireUserConfirm(RequireUserConfirmEvent::new(
                reply_id,
                vec![parked],
            ))))
            .await;
            Ok(())
        }
        PermissionDecision::Deny { message } => {
            y.emit(Ok(start_event(reply_id, &call))).await;
            finish_with_text(shared, ctx, &call, message, ToolResultState::Denied, y).await
        }
        PermissionDecision::Allow => {
            shared.lock_state().set_call_state(&call.id, ToolCallState::Allowed);
            y.emit(Ok(start_event(reply_id, &call))).await;
            if info.external {
                let submitted = {
                    let mut state = shared.lock_state();
                    state.tail_call_mut(&call.id).map(|c| {
                        c.state = ToolCallState::Submitted;
                        c.clone()
                    })
                };
                let submitted = submitted.unwrap_or(call);
                y.emit(Ok(AgentEvent::RequireExternalExecution(
                    RequireExternalExecutionEvent::new(reply_id, vec![submitted]),
                )))
                .await;
                return Ok(());
            }
            run_tool(shared, ctx, call, info, y).await
        }
    }
}

fn prepare_structured(ctx: &AgentContext, call: &ToolCallBlock) -> Result<(Arc<ToolInfo>, Value), String> {
    let Some(schema) = structured::mounted(ctx) else {
        return Err(format!(
            "ToolNotFoundError: The tool named '{}' doesn't exist.",
            call.name
        ));
    };
    let input = crate::toolkit::parse_input(&call.name, &call.input, &schema.schema)?;
    let info = ToolInfo {
        name: structured::TOOL_NAME.to_owned(),
        description: structured::tool_schema(&schema).description,
        concurrency_safe: true,
        read_only: true,
        external: false,
    };
    Ok((Arc::new(info), input))
}

fn start_event(reply_id: &str, call: &ToolCallBlock) -> AgentEvent {
    AgentEvent::ToolResultStart(ToolResultStartEvent::new(reply_id, &call.id, &call.name))
}

/// Ends a call with a plain-text result (validation errors, denials, middleware errors).
async fn finish_with_text(
    shared: &Shared,
    ctx: &AgentContext,
    call: &ToolCallBlock,
    message: String,
    state: ToolResultState,
    y: &Events,
) -> Result<(), AgentError> {
    let reply_id = ctx.reply_id();
    y.emit(Ok(AgentEvent::ToolResultTextDelta(ToolResultTextDeltaEvent::new(
        reply_id, &call.id, &message,
    ))))
    .await;
    let result = ToolResultBlock::new(&call.id, &call.name, ToolOutput::Text(message), state);
    shared.lock_state().save_result(&shared.name, reply_id, result);
    y.emit(Ok(AgentEvent::ToolResultEnd(ToolResultEndEvent::new(
        reply_id,
        &call.id,
        state,
        Map::new(),
    ))))
    .await;
    Ok(())
}

/// Runs the `on_acting` position and turns its stream into result events.
async fn run_tool(
    shared: &Arc<Shared>,
    ctx: &AgentContext,
    call: ToolCallBlock,
    info: Arc<ToolInfo>,
    y: &Events,
) -> Result<(), AgentError> {
    let reply_id = ctx.reply_id();
    let mut tool_call = call.clone();
    tool_call.state = ToolCallState::Allowed;
    let request = ActingRequest {
        ctx: ctx.clone(),
        tool_call,
        tool: info,
    };
    let opened: Result<ToolStream, AgentError> = open_acting(shared, request).await;
    let mut stream = match opened {
        Ok(s) => s,
        Err(e) => return finish_with_text(shared, ctx, &call, e.to_string(), ToolResultState::Error, y).await,
    };
    let mut response: Option<ToolResponse> = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(ToolItem::Chunk(chunk)) => {
                if let Some(progress) = chunk.metadata.get("mcp_progress") {
                    let mut value = Map::new();
                    value.insert("tool_call_id".into(), Value::String(call.id.clone()));
                    value.insert("progress".into(), progress.clone());
                    y.emit(Ok(AgentEvent::Custom(CustomEvent::new("mcp_progress", value))))
                        .await;
                }
                for block in &chunk.content {
                    y.emit(Ok(delta_event(reply_id, &call.id, block))).await;
                }
            }
            Ok(ToolItem::Response(r)) => {
                response = Some(r);
                break;
            }
            Err(AgentError::Interrupted) => return Err(AgentError::Interrupted),
            Err(e) => {
                let text = e.to_string();
                y.emit(Ok(AgentEvent::ToolResultTextDelta(ToolResultTextDeltaEvent::new(
                    reply_id, &call.id, &text,
                ))))
                .await;
                response = Some(ToolResponse::error(text));
                break;
            }
        }
    }
    let response = response.unwrap_or_else(|| {
        ToolResponse::error(
            "The on_acting stack ended without a final ToolResponse; the tool call is closed as failed.",
        )
    });
    apply_effects(shared, ctx, &call, &response);
    let metadata = response.metadata.clone();
    let state = response.state;
    let result = ToolResultBlock::new(&call.id, &call.name, ToolOutput::Blocks(response.content), state)
        .with_metadata(metadata.clone());
    shared.lock_state().save_result(&shared.name, reply_id, result);
    y.emit(Ok(AgentEvent::ToolResultEnd(ToolResultEndEvent::new(
        reply_id, &call.id, state, metadata,
    ))))
    .await;
    Ok(())
}

fn delta_event(reply_id: &str, call_id: &str, block: &MediaBlock) -> AgentEvent {
    match block {
        MediaBlock::Text(t) => {
            AgentEvent::ToolResultTextDelta(ToolResultTextDeltaEvent::new(reply_id, call_id, &t.text))
        }
        MediaBlock::Data(d) => AgentEvent::ToolResultDataDelta(
            ToolResultDataDeltaEvent::new(reply_id, call_id, d.source.clone()).with_block_id(&d.id),
        ),
    }
}

/// What a finished call changes in the state: activated groups, generated structured output.
fn apply_effects(shared: &Shared, ctx: &AgentContext, call: &ToolCallBlock, response: &ToolResponse) {
    if let Some(Value::Array(groups)) = response.metadata.get("activated_groups") {
        let groups = groups.iter().filter_map(|g| g.as_str().map(str::to_owned)).collect();
        shared.lock_state().activated_groups = groups;
    }
    if call.name == structured::TOOL_NAME && response.state == ToolResultState::Success {
        let generated = ctx.extensions().remove::<structured::Generated>();
        if let Some(generated) = generated {
            shared.lock_state().reply_context.structured_output = Some(generated.0);
        }
    }
}

/// Opens the `on_acting` stack. A separate, boxed future: rustc cannot prove `Send` for the
/// `Oneshot` of the position inlined into the tool call's generator (a higher-ranked lifetime
/// limitation), so this costs one allocation per tool call.
fn open_acting(shared: &Shared, request: ActingRequest) -> BoxFuture<'static, Result<ToolStream, AgentError>> {
    Box::pin(shared.acting.clone().oneshot(request))
}
