//! The innermost service of each per-round position (what runs when no middleware is installed)
//! and [`Positions`], their one owner.
//!
//! | position              | innermost service  | what it does                                      |
//! |-----------------------|--------------------|---------------------------------------------------|
//! | `on_model_call`       | [`CallModel`]      | calls the request's model                         |
//! | `on_acting`           | [`RunTool`]        | runs a toolkit tool, or takes structured output   |
//! | `on_check_permission` | [`DecidePermission`] | the permission engine (`permission`)            |
//! | `on_compress_context` | [`Compressor`]     | counts, and compresses over the threshold (`compress`) |
//!
//! `on_reply` and `on_reasoning` are owned by the [`Agent`](crate::Agent) and the reply loop:
//! their innermost services need the runtime that holds these.

use std::future::{Future, Ready};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures_core::Stream;
use futures_util::stream;
use serde_json::{Map, Value};
use tower::Service;
use towerscope_core::{
    ActingRequest, AgentError, ChatResponse, ChatStream, CompressRequest, ModelCallRequest, ModelFuture, ModelOutput,
    PermissionDecision, PermissionRequest, Position, ToolChunk, ToolItem, ToolResponse, ToolResultState, ToolStream,
};

use crate::compress::{self, CompressTool, Compressor};
use crate::state::AgentState;
use crate::structured;
use crate::toolkit::{Toolkit, ToolkitService};

/// The built `on_model_call` position.
pub(crate) type ModelCallPosition = Position<CallModel, ModelCallRequest, ModelOutput>;

/// The built `on_compress_context` position.
pub(crate) type CompressPosition = Position<Compressor<ModelCallPosition>, CompressRequest, ()>;

/// The built per-round positions of one agent: each the innermost service itself when nothing
/// is installed, or the erased stack around it.
pub(crate) struct Positions {
    pub(crate) model_call: ModelCallPosition,
    pub(crate) acting: Position<RunTool, ActingRequest, ToolStream>,
    pub(crate) permission: Position<DecidePermission, PermissionRequest, PermissionDecision>,
    pub(crate) compress: CompressPosition,
}

/// Calls the model named in the request. A streamed answer that ends without its final
/// (`is_last`) chunk ends with a [`AgentError::Stream`] inside the stream, where every
/// `on_model_call` layer (retry, fallback, tracing) sees it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CallModel;

impl Service<ModelCallRequest> for CallModel {
    type Response = ModelOutput;
    type Error = AgentError;
    type Future = CallModelFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: ModelCallRequest) -> CallModelFuture {
        let model = Arc::clone(&req.model);
        CallModelFuture(model.call(req))
    }
}

/// The future of [`CallModel`].
pub(crate) struct CallModelFuture(ModelFuture);

impl Future for CallModelFuture {
    type Output = Result<ModelOutput, AgentError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx).map_ok(|output| match output {
            ModelOutput::Stream(inner) => ModelOutput::Stream(Box::pin(RequireFinalChunk {
                inner,
                seen_last: false,
                ended: false,
            })),
            complete => complete,
        })
    }
}

/// The message of a model stream that ended without its final chunk.
pub(crate) const NO_FINAL_CHUNK: &str = "Model returned an empty streaming response: no is_last=True chunk was \
     received. Check that the provider's stream ends with a final chunk.";

/// A model stream that fails at its end when no final chunk came.
struct RequireFinalChunk {
    inner: ChatStream,
    seen_last: bool,
    ended: bool,
}

impl Stream for RequireFinalChunk {
    type Item = Result<ChatResponse, AgentError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match self.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                self.seen_last |= chunk.is_last;
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(None) => {
                self.ended = true;
                if self.seen_last {
                    Poll::Ready(None)
                } else {
                    Poll::Ready(Some(Err(AgentError::Stream(NO_FINAL_CHUNK.to_owned()))))
                }
            }
            other => other,
        }
    }
}

/// Runs a tool: one of the toolkit's, the reply's structured-output tool, whose validated
/// arguments come back in the response's metadata under [`structured::OUTPUT_KEY`], or the
/// `CompressContext` tool when the agent offers it.
///
/// Arguments a layer replaced ([`ActingRequest::set_input`]) are parsed and validated here,
/// against the same schema as the model's (the toolkit does it for its own tools), and the
/// call stored in the context takes them: the conversation shows the call that ran.
#[derive(Clone)]
pub(crate) struct RunTool {
    pub(crate) toolkit: ToolkitService,
    pub(crate) compress: Option<CompressTool<CompressPosition>>,
    /// The agent's state, for the schema of the reply's structured output.
    pub(crate) state: Arc<Mutex<AgentState>>,
}

impl RunTool {
    /// The arguments of a call to one of the agent's own tools: the parse handed over, or the
    /// call's text parsed against `schema` (`None`: the tool is not offered now).
    fn arguments(req: &ActingRequest, schema: impl FnOnce() -> Option<Value>) -> Result<Arc<Value>, String> {
        if let Some(input) = req.input_arc() {
            return Ok(Arc::clone(input));
        }
        let call = req.tool_call();
        let Some(schema) = schema() else {
            return Err(format!(
                "ToolNotFoundError: The tool named '{}' doesn't exist.",
                call.name
            ));
        };
        crate::toolkit::parse_input(&call.name, &call.input, &schema).map(Arc::new)
    }
}

/// The stream of a call that could not start: an error chunk, then the error response (as
/// the toolkit answers).
fn failed(id: towerscope_core::Id, message: String) -> ToolStream {
    let chunk = ToolChunk::text(message).with_state(ToolResultState::Error);
    let mut response = ToolResponse::new(Vec::new()).with_id(id);
    response.append_chunk(&chunk);
    Box::pin(stream::iter([
        Ok(ToolItem::Chunk(chunk)),
        Ok(ToolItem::Response(response)),
    ]))
}

impl Service<ActingRequest> for RunTool {
    type Response = ToolStream;
    type Error = AgentError;
    type Future = Ready<Result<ToolStream, AgentError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: ActingRequest) -> Self::Future {
        if !req.input_known() {
            // A layer replaced the arguments: the context records the call that runs, as the
            // reference's live tool call does.
            let call = req.tool_call();
            let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(stored) = state.tail_call_mut(&call.id) {
                stored.input.clone_from(&call.input);
            }
        }
        let name = req.tool_call().name.as_str();
        if name != structured::TOOL_NAME {
            if let Some(tool) = self.compress.as_ref().filter(|_| name == compress::COMPRESS_TOOL) {
                if let Err(message) = Self::arguments(&req, || Some(serde_json::json!({"type": "object"}))) {
                    return std::future::ready(Ok(failed(req.tool_call().id.clone(), message)));
                }
                return std::future::ready(Ok(tool.run(req)));
            }
            return self.toolkit.call(req);
        }
        let schema = || {
            let state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            structured::mounted(&state.reply_context).map(|s| s.schema)
        };
        let input = match Self::arguments(&req, schema) {
            Ok(input) => input,
            Err(message) => return std::future::ready(Ok(failed(req.tool_call().id.clone(), message))),
        };
        let response = match &*input {
            Value::Object(output) => {
                let mut metadata = Map::new();
                metadata.insert(structured::OUTPUT_KEY.to_owned(), Value::Object(output.clone()));
                let mut response = ToolResponse::text(structured::SUCCESS_TEXT);
                response.metadata = metadata;
                response
            }
            other => ToolResponse::error(format!(
                "ValidationError: Structured output validation failed with error: expected an object, got {}",
                crate::toolkit::truncate(&other.to_string(), 256)
            )),
        };
        let mut response = response;
        response.id = req.tool_call().id.clone();
        std::future::ready(Ok(Box::pin(stream::iter([Ok(ToolItem::Response(response))]))))
    }
}

/// Decides whether a tool call may run: the permission engine, in the state's mode.
#[derive(Clone)]
pub(crate) struct DecidePermission {
    pub(crate) state: Arc<Mutex<AgentState>>,
    pub(crate) toolkit: Arc<Toolkit>,
    pub(crate) default: PermissionDecision,
}

impl Service<PermissionRequest> for DecidePermission {
    type Response = PermissionDecision;
    type Error = AgentError;
    type Future = Ready<Result<PermissionDecision, AgentError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: PermissionRequest) -> Self::Future {
        std::future::ready(Ok(self.decide(&req)))
    }
}

impl DecidePermission {
    fn decide(&self, req: &PermissionRequest) -> PermissionDecision {
        crate::permission::decide(&self.state, &self.toolkit, &self.default, req)
    }
}
