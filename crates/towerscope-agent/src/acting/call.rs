//! The life of one tool call: availability and input checks, `on_check_permission`, then
//! `on_acting`.
//!
//! Every call that starts ends with exactly one result in the context, whatever the tool or a
//! middleware does:
//!
//! - an unknown tool, an inactive group or arguments that do not parse or validate become an
//!   error result (no permission check, no `on_acting`), as in the reference;
//! - an error of the `on_acting` stack, a stack that ends without a `ToolResponse`, and an error
//!   or a panic in a permission or acting layer become an error result the model sees (the
//!   reference raises, or loops forever); a failed permission check never runs the tool;
//! - the `on_acting` stream is read to its end, so a layer's code after the response runs. The
//!   first `ToolResponse` is the result; items after it are ignored (and logged), and an error
//!   after it turns the result into that error (a layer rejecting a result after seeing it).
//!
//! The arguments are checked once, here, and handed to `on_acting` with the call: parsed
//! ([`ActingRequest::with_input`]), or, for a tool whose permission checks ignore them and a
//! text its schema accepts as it is, as the checked text ([`ActingRequest::with_checked_input`]),
//! which a typed tool reads without a parse into a `Value` and which is parsed only for a layer
//! that asks. A layer that replaces them ([`ActingRequest::set_input`]) has the innermost
//! service parse and validate its text.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use futures_util::{FutureExt, StreamExt};
use serde_json::{Map, Value};
use tower::{Service, ServiceExt};
use towerscope_core::{
    ActingRequest, AgentContext, AgentError, AgentEvent, CustomEvent, MediaBlock, PermissionDecision,
    PermissionRequest, RequireExternalExecutionEvent, RequireUserConfirmEvent, TextBlock, ToolCallBlock, ToolCallState,
    ToolInfo, ToolItem, ToolOutput, ToolResponse, ToolResultBlock, ToolResultDataDeltaEvent, ToolResultEndEvent,
    ToolResultStartEvent, ToolResultState, ToolResultTextDeltaEvent,
};

use crate::compress;
use towerscope_core::EventType;

use crate::emit::{Emitter, TOOL_RESULT_DELTAS};
use crate::permission::AskedRules;
use crate::runtime::Runtime;
use crate::structured;

/// The text a call closed by an interruption gets.
pub(crate) const INTERRUPTED_CALL_TEXT: &str =
    "<system-reminder>The tool call has been interrupted by the user.</system-reminder>";

/// The stored output of a call closed by an interruption: a text block when the tool was
/// running (as the reference's toolkit answers), the raw string when it never ran (waiting for
/// confirmation, submitted, or not started).
pub(crate) fn interrupted_output(was_running: bool) -> ToolOutput {
    if was_running {
        ToolOutput::Blocks(vec![MediaBlock::Text(TextBlock::new(INTERRUPTED_CALL_TEXT))])
    } else {
        ToolOutput::Text(INTERRUPTED_CALL_TEXT.to_owned())
    }
}

/// Runs one tool call to its result.
///
/// Not an `async fn`: that would keep `call` twice in the future (as the argument and as its
/// local copy), in every tool call in flight.
#[allow(clippy::manual_async_fn)] // an `async fn` keeps `call` twice (see above)
pub(crate) fn execute<'a>(
    runtime: &'a Arc<Runtime>,
    ctx: &'a AgentContext,
    call: ToolCallBlock,
    asked: Option<&'a AskedRules>,
    emit: &'a Emitter,
) -> impl Future<Output = Result<(), AgentError>> + Send + 'a {
    async move {
        let reply_id = ctx.reply_id();
        // Allowed before it starts: a confirmation allowed it (see `ConfirmedNotStarted`).
        let confirmed = call.state == ToolCallState::Allowed;
        let is_compress = call.name == compress::COMPRESS_TOOL && compress_tool_offered(runtime);
        // The agent's own tools (structured output, compression) are allowed without asking.
        let is_builtin = call.name == structured::TOOL_NAME || is_compress;
        let prepared = if is_compress {
            prepare_compress(&call)
        } else if call.name == structured::TOOL_NAME {
            prepare_structured(runtime, &call)
        } else {
            let groups = if runtime.toolkit.has_groups() {
                runtime.lock_state().activated_groups.clone()
            } else {
                Vec::new()
            };
            runtime.toolkit.check(&call, &groups)
        };
        let (info, input) = match prepared {
            Ok((info, input)) => (info, input.map(Arc::new)),
            Err(message) => {
                return answer_with_text(runtime, ctx, &call, message, ToolResultState::Error, false, emit).await;
            }
        };

        let call = Arc::new(call);
        let decision = if is_builtin {
            PermissionDecision::Allow
        } else {
            let request = match &input {
                Some(input) => {
                    PermissionRequest::new(ctx.clone(), Arc::clone(&call), Arc::clone(&info), Arc::clone(input))
                }
                None => PermissionRequest::with_checked_input(ctx.clone(), Arc::clone(&call), Arc::clone(&info)),
            };
            let decided = AssertUnwindSafe(runtime.positions.permission.clone().oneshot(request))
                .catch_unwind()
                .await;
            match decided {
                Ok(Ok(decision)) => decision,
                Ok(Err(AgentError::Interrupted)) => return Err(AgentError::Interrupted),
                // Fail closed: the tool does not run, and the call gets its one result. The
                // result (which the model, the session and a web client see) names the error's
                // kind; its text, which may be a policy service's, goes to the log.
                Ok(Err(err)) => {
                    tracing::warn!(tool = %call.name, kind = err.kind(), error = %err, "the permission check of a tool call failed; the call is denied");
                    let message = format!(
                        "the permission check of this call failed ({}); the call was not run",
                        err.kind()
                    );
                    return answer_with_text(runtime, ctx, &call, message, ToolResultState::Error, false, emit).await;
                }
                Err(payload) => {
                    let message = panic_text("on_check_permission", &*payload);
                    return answer_with_text(runtime, ctx, &call, message, ToolResultState::Error, false, emit).await;
                }
            }
        };
        match decision {
            PermissionDecision::Ask { suggested_rules } => {
                // A tool whose checks read the arguments had them parsed (`Toolkit::check`).
                let safety = || {
                    runtime.toolkit.get(&call.name).is_some_and(|t| {
                        t.decides_on_input() && input.as_ref().is_some_and(|input| t.requires_confirmation(input))
                    })
                };
                if asked.is_some_and(|a| a.repeats(&call, &suggested_rules, safety())) {
                    // An earlier call of the batch asks the same: this one waits, undecided.
                    return Ok(());
                }
                let parked = {
                    let mut state = runtime.lock_state();
                    state.park_call(&call.id, ToolCallState::Asking).map(|c| {
                        c.suggested_rules = suggested_rules;
                        c.clone()
                    })
                };
                let parked = parked.unwrap_or_else(|| Arc::unwrap_or_clone(call));
                emit.event(EventType::RequireUserConfirm, || {
                    RequireUserConfirmEvent::new(reply_id, vec![parked]).into()
                })
                .await;
                Ok(())
            }
            PermissionDecision::Deny { message } => {
                answer_with_text(runtime, ctx, &call, message, ToolResultState::Denied, false, emit).await
            }
            PermissionDecision::Allow => {
                runtime.lock_state().set_call_state(&call.id, ToolCallState::Allowed);
                if confirmed {
                    crate::resume::ConfirmedNotStarted::started(ctx, &call.id);
                }
                emit.event(EventType::ToolResultStart, || start_event(reply_id, &call))
                    .await;
                if info.external {
                    let submitted = {
                        let mut state = runtime.lock_state();
                        state.park_call(&call.id, ToolCallState::Submitted).map(|c| c.clone())
                    };
                    let submitted = submitted.unwrap_or_else(|| Arc::unwrap_or_clone(call));
                    emit.event(EventType::RequireExternalExecution, || {
                        RequireExternalExecutionEvent::new(reply_id, vec![submitted]).into()
                    })
                    .await;
                    return Ok(());
                }
                // Boxed: the tool call's future (and the reply's tool batch around it) stays
                // within the allocator's small sizes, freed and reused at once, while the
                // tool runs in a box of its own of about 1 KB.
                Box::pin(run_tool(runtime, ctx, call, info, input, emit)).await
            }
        }
    }
}

/// Whether the agent offers the `CompressContext` tool.
pub(crate) fn compress_tool_offered(runtime: &Runtime) -> bool {
    runtime.context.as_ref().is_some_and(|c| c.compression_tool)
}

fn prepare_compress(call: &ToolCallBlock) -> Result<(Arc<ToolInfo>, Option<Value>), String> {
    let input = crate::toolkit::parse_input(&call.name, &call.input, &serde_json::json!({"type": "object"}))?;
    let schema = compress::tool_schema();
    let info = ToolInfo {
        name: schema.name,
        description: schema.description,
        concurrency_safe: false,
        read_only: false,
        external: false,
    };
    Ok((Arc::new(info), Some(input)))
}

fn prepare_structured(runtime: &Runtime, call: &ToolCallBlock) -> Result<(Arc<ToolInfo>, Option<Value>), String> {
    let schema = structured::mounted(&runtime.lock_state().reply_context);
    let Some(schema) = schema else {
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
    Ok((Arc::new(info), Some(input)))
}

fn start_event(reply_id: &towerscope_core::Id, call: &ToolCallBlock) -> AgentEvent {
    ToolResultStartEvent::new(reply_id, &call.id, &call.name).into()
}

/// Answers a call with a plain-text result (bad arguments, a denial, a failing or panicking
/// layer): its `TOOL_RESULT_START` unless `started` (the call had it already), the text, the
/// stored result and `TOOL_RESULT_END`, shielded from an interrupt as one piece; cancelled in
/// between, the interrupted ending would open or close the result a second time. The
/// interrupt lands after it.
///
/// Boxed: a rare path, kept out of the future of every tool call (and of the reply's tool
/// batch, which it would otherwise grow past the allocator's small sizes).
pub(crate) fn answer_with_text<'a>(
    runtime: &'a Runtime,
    ctx: &'a AgentContext,
    call: &'a ToolCallBlock,
    message: String,
    state: ToolResultState,
    started: bool,
    emit: &'a Emitter,
) -> futures_util::future::BoxFuture<'a, Result<(), AgentError>> {
    Box::pin(async move {
        let _whole = runtime.interrupt.shield();
        if !started {
            emit.event(EventType::ToolResultStart, || start_event(ctx.reply_id(), call))
                .await;
        }
        let reply_id = ctx.reply_id();
        emit.event(EventType::ToolResultTextDelta, || {
            ToolResultTextDeltaEvent::new(reply_id, &call.id, &message).into()
        })
        .await;
        let result = ToolResultBlock::new(&call.id, &call.name, ToolOutput::Text(message), state);
        runtime.lock_state().save_result(&runtime.name, reply_id, result);
        emit.event(EventType::ToolResultEnd, || {
            ToolResultEndEvent::new(reply_id, &call.id, state, Map::new()).into()
        })
        .await;
        Ok(())
    })
}

/// Runs the `on_acting` position and turns its stream into result events.
async fn run_tool(
    runtime: &Arc<Runtime>,
    ctx: &AgentContext,
    call: Arc<ToolCallBlock>,
    info: Arc<ToolInfo>,
    input: Option<Arc<Value>>,
    emit: &Emitter,
) -> Result<(), AgentError> {
    let reply_id = ctx.reply_id();
    let mut call = call;
    // The permission request is gone by now: this changes the one copy in place.
    Arc::make_mut(&mut call).state = ToolCallState::Allowed;
    let request = ActingRequest::new(ctx.clone(), Arc::clone(&call), info);
    let request = match input {
        Some(input) => request.with_input(input),
        None => request.with_checked_input(),
    };
    // The outcome is sorted by a plain function: a value matched in parts here would keep its
    // room in the tool's future across every later await.
    let opened = match open_acting_now(runtime, request) {
        Opening::Done(opened) => opened,
        Opening::Waiting(future) => AssertUnwindSafe(future).catch_unwind().await,
    };
    let stream = match opened_stream(opened) {
        Ok(stream) => stream,
        Err(None) => return Err(AgentError::Interrupted),
        Err(Some(message)) => {
            return answer_with_text(runtime, ctx, &call, message, ToolResultState::Error, true, emit).await;
        }
    };
    let mut stream = AssertUnwindSafe(stream).catch_unwind();
    let mut response: Option<ToolResponse> = None;
    // Whether any of the result's content went out as deltas: a response that came without
    // chunks (the structured-output tool's, an `on_acting` layer answering from a cache) is
    // sent whole before the end, so that the events carry what is stored.
    let mut streamed = false;
    while let Some(item) = stream.next().await {
        let item = match item {
            Ok(item) => item,
            Err(payload) => Err(AgentError::Middleware(panic_text("on_acting", &*payload))),
        };
        match item {
            Ok(ToolItem::Chunk(_) | ToolItem::Response(_)) if response.is_some() => {
                tracing::warn!(tool = %call.name, "an item after the ToolResponse of an on_acting stream was ignored");
            }
            Ok(ToolItem::Chunk(chunk)) => {
                if let Some(progress) = chunk.metadata.get(towerscope_core::tool::MCP_PROGRESS_KEY) {
                    emit.event(EventType::Custom, || {
                        let mut value = Map::new();
                        value.insert("tool_call_id".into(), Value::String(call.id.to_string()));
                        value.insert("progress".into(), progress.clone());
                        CustomEvent::new("mcp_progress", value).into()
                    })
                    .await;
                }
                streamed |= !chunk.content.is_empty();
                for block in &chunk.content {
                    emit.event_of(TOOL_RESULT_DELTAS, || delta_event(reply_id, &call, block))
                        .await;
                }
            }
            Ok(ToolItem::Response(r)) => response = Some(r),
            Err(AgentError::Interrupted) => return Err(AgentError::Interrupted),
            Err(e) => {
                let text = e.to_string();
                emit.event(EventType::ToolResultTextDelta, || {
                    ToolResultTextDeltaEvent::new(reply_id, &call.id, &text).into()
                })
                .await;
                streamed = true;
                response = Some(ToolResponse::error(text));
                break;
            }
        }
    }
    let mut response = response.unwrap_or_else(|| {
        ToolResponse::error(
            "The on_acting stack ended without a final ToolResponse; the tool call is closed as failed.",
        )
    });
    if !streamed {
        for block in &response.content {
            emit.event_of(TOOL_RESULT_DELTAS, || delta_event(reply_id, &call, block))
                .await;
        }
    }
    apply_effects(runtime, &call, &mut response);
    let state = response.state;
    let mut result = ToolResultBlock::new(&call.id, &call.name, ToolOutput::Blocks(response.content), state)
        .with_metadata(response.metadata.clone());
    if let Some(config) = &runtime.context {
        truncate(runtime, config, &mut result).await;
    }
    runtime.lock_state().save_result(&runtime.name, reply_id, result);
    let metadata = response.metadata;
    emit.event(EventType::ToolResultEnd, || {
        ToolResultEndEvent::new(reply_id, &call.id, state, metadata).into()
    })
    .await;
    Ok(())
}

/// Cuts a result over the limit; with an offloader, the cut part is stored first and the
/// reminder names the file (a store that fails leaves the plain reminder, with a warning).
/// Local results and external ones (resumed from an `ExternalExecutionResultEvent`) alike.
///
/// Only a result that is cut waits here (in a boxed future): the check itself is synchronous,
/// so the tool call's future does not hold room for the offloader's.
pub(crate) async fn truncate(runtime: &Runtime, config: &towerscope_core::ContextConfig, result: &mut ToolResultBlock) {
    let Some(split) = compress::split_result(result, &*runtime.counter, config) else {
        return;
    };
    Box::pin(cut(runtime, result, split)).await;
}

/// Keeps the part of `result` that fits, offloading the rest first when an offloader is set.
async fn cut(runtime: &Runtime, result: &mut ToolResultBlock, split: compress::Split) {
    let mut note = String::new();
    if let Some(offloader) = &runtime.offloader {
        let session_id = crate::session::key_session_id(&runtime.user_id, &runtime.lock_state().session_id);
        let scope = crate::compress::OffloadScope::new(&runtime.user_id, &session_id);
        match offloader.offload_tool_result(scope, split.omitted).await {
            Ok(path) => {
                note = format!(" You can refer to the file in '{path}' for the truncated content if needed.");
            }
            Err(e) => tracing::warn!(error = %e, "the cut part of a tool result could not be offloaded"),
        }
    }
    compress::finish_truncated(result, split.kept, &compress::truncated_reminder(&note));
}

fn delta_event(reply_id: &towerscope_core::Id, call: &ToolCallBlock, block: &MediaBlock) -> AgentEvent {
    match block {
        MediaBlock::Text(t) => ToolResultTextDeltaEvent::new(reply_id, &call.id, &t.text)
            .with_block_id(&t.id)
            .into(),
        MediaBlock::Data(d) => ToolResultDataDeltaEvent::new(reply_id, &call.id, d.source.clone())
            .with_block_id(&d.id)
            .into(),
    }
}

/// What a finished call changes in the state, carried by its response: activated groups, and
/// the structured output (taken out of the metadata: it is the loop's, not the result's).
fn apply_effects(runtime: &Runtime, call: &ToolCallBlock, response: &mut ToolResponse) {
    if let Some(Value::Array(groups)) = response.metadata.get(crate::toolkit::ACTIVATED_GROUPS_KEY) {
        let groups = groups.iter().filter_map(|g| g.as_str().map(str::to_owned)).collect();
        runtime.lock_state().activated_groups = groups;
    }
    if call.name == structured::TOOL_NAME
        && let Some(Value::Object(output)) = response.metadata.remove(structured::OUTPUT_KEY)
        && response.state == ToolResultState::Success
    {
        runtime.lock_state().reply_context.structured_output = Some(output);
    }
}

/// The opening of the `on_acting` stack: done at once (a panic caught), or a future to await.
enum Opening {
    Done(Result<Result<towerscope_core::ToolStream, AgentError>, Box<dyn Any + Send>>),
    Waiting(futures_util::future::BoxFuture<'static, Result<towerscope_core::ToolStream, AgentError>>),
}

/// Opens the `on_acting` stack, at once when it is ready and answers at its first poll (the
/// toolkit does, and so do layers that act before the call): no future is kept for it. A
/// stack that is not ready, or whose answer is not there yet, is boxed and awaited (inlined
/// into the tool call's future, its `Oneshot` would not be provably `Send`: a higher-ranked
/// lifetime limitation of rustc). The first poll uses a waker that does nothing; the boxed
/// future is polled again with the task's, and a future registers the waker of its latest poll.
fn open_acting_now(runtime: &Runtime, request: ActingRequest) -> Opening {
    let mut position = runtime.positions.acting.clone();
    let mut cx = Context::from_waker(Waker::noop());
    let first = std::panic::catch_unwind(AssertUnwindSafe(|| match position.poll_ready(&mut cx) {
        Poll::Ready(Ok(())) => {
            let mut future = position.call(request);
            match Pin::new(&mut future).poll(&mut cx) {
                Poll::Ready(opened) => Ok(opened),
                Poll::Pending => Err(Box::pin(future) as futures_util::future::BoxFuture<'static, _>),
            }
        }
        Poll::Ready(Err(err)) => Ok(Err(err)),
        Poll::Pending => Err(Box::pin(position.oneshot(request)) as futures_util::future::BoxFuture<'static, _>),
    }));
    match first {
        Ok(Ok(opened)) => Opening::Done(Ok(opened)),
        Ok(Err(waiting)) => Opening::Waiting(waiting),
        Err(payload) => Opening::Done(Err(payload)),
    }
}

/// The stream `on_acting` opened; else `None` for an interruption (the reply ends) or the
/// text of the error result (an error or a panic of the stack).
fn opened_stream(
    opened: Result<Result<towerscope_core::ToolStream, AgentError>, Box<dyn Any + Send>>,
) -> Result<towerscope_core::ToolStream, Option<String>> {
    match opened {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(AgentError::Interrupted)) => Err(None),
        Ok(Err(e)) => Err(Some(e.to_string())),
        Err(payload) => Err(Some(panic_text("on_acting", &*payload))),
    }
}

/// The text of a middleware panic, for the model and the caller.
pub(crate) fn panic_text(position: &str, payload: &(dyn Any + Send)) -> String {
    let what = match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(text), _) => text,
        (None, Some(text)) => text.as_str(),
        (None, None) => "a non-string panic payload",
    };
    format!("a middleware on {position} panicked: {what}")
}
