//! [`ToolkitService`]: the toolkit as the innermost `on_acting` service.

use std::any::Any;
use std::fmt;
use std::future::{Ready, ready};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;
use serde_json::Map;
use towerscope_core::{
    ActingRequest, AgentError, ChunkFold, ToolCallBlock, ToolChunk, ToolItem, ToolResponse, ToolResultState, ToolStream,
};

use super::group::ActiveToolGroups;
use super::{ToolChunkStream, Toolkit};

/// Runs tool calls: a [`tower::Service`] of `on_acting` over a shared [`Toolkit`].
///
/// For each [`ActingRequest`] it looks the tool up by the call's name, runs it with the
/// call's checked text when the request holds it unparsed and the tool reads text
/// ([`Tool::call_text`](super::Tool::call_text)), or with the request's
/// [`input`](ActingRequest::input) (parsed and validated once, before the permission check),
/// or, when there is none (a layer called [`set_input`](ActingRequest::set_input), or
/// the request was built without it), with the call's `input` text parsed, repaired, coerced
/// and validated here as [`Toolkit::prepare`] does, and answers
/// with a [`ToolStream`] that yields a [`ToolItem::Chunk`] per chunk and then exactly one
/// [`ToolItem::Response`]: the chunks folded by [`ChunkFold`] (the rules of [`ToolResponse::append_chunk`]), with the tool
/// call's id.
///
/// Nothing the tool does fails the stream: an unknown tool, arguments that do not validate, an `Err` from
/// the tool and a panic in the tool (when called or while its stream is polled) each become an
/// error chunk and an error response, whose text is the message. A panic reads
/// `Tool '{name}' panicked: {payload}`.
///
/// `poll_ready` is always ready and the future is ready at once: the work happens as the stream
/// is polled.
#[derive(Clone)]
pub struct ToolkitService {
    toolkit: Arc<Toolkit>,
}

impl ToolkitService {
    /// A service running the tools of `toolkit`.
    pub fn new(toolkit: Arc<Toolkit>) -> Self {
        Self { toolkit }
    }

    /// The toolkit.
    pub fn get_ref(&self) -> &Arc<Toolkit> {
        &self.toolkit
    }

    /// The toolkit, giving up the service.
    pub fn into_inner(self) -> Arc<Toolkit> {
        self.toolkit
    }

    /// The stream of one call (what [`call`](tower::Service::call) resolves to).
    pub fn run(&self, req: ActingRequest) -> ToolStream {
        let toolkit = &*self.toolkit;
        if let Some(stream) = self.run_text(&req) {
            return stream;
        }
        let (ctx, tool_call, _, input) = req.into_parts();
        let name = tool_call.name.as_str();
        let response = ToolResponse {
            content: Vec::new(),
            state: ToolResultState::Success,
            metadata: Map::new(),
            id: tool_call.id.clone(),
        };
        let Some(entry) = toolkit.entry(name) else {
            let message = format!("ToolNotFoundError: The tool named '{name}' doesn't exist.");
            return Box::pin(ToolCallStream::failed(tool_call, response, message));
        };
        let input = match input {
            Some(input) => Arc::unwrap_or_clone(input),
            None => match entry.parse(&tool_call.input, toolkit.input_limits()) {
                Ok(input) => input,
                Err(message) => return Box::pin(ToolCallStream::failed(tool_call, response, message)),
            },
        };
        if let Some(reset) = toolkit.reset_tool(name) {
            let previous = ctx.get::<ActiveToolGroups>();
            let chunk = reset.run(&input, previous.as_ref().map(|p| &*p.0));
            let stream: ToolChunkStream = Box::pin(futures_util::stream::iter([Ok(chunk)]));
            return Box::pin(ToolCallStream::running(tool_call, response, stream));
        }
        match catch_unwind(AssertUnwindSafe(|| entry.tool.call(input))) {
            Ok(stream) => Box::pin(ToolCallStream::running(tool_call, response, stream)),
            Err(payload) => {
                let message = panic_message(name, &*payload);
                Box::pin(ToolCallStream::failed(tool_call, response, message))
            }
        }
    }
}

impl ToolkitService {
    /// The stream of a call whose arguments the request holds as checked text nobody parsed
    /// ([`ActingRequest::unparsed_input`]), run by a tool that reads text
    /// ([`Tool::call_text`](super::Tool::call_text)); `None` sends the call the general way.
    fn run_text(&self, req: &ActingRequest) -> Option<ToolStream> {
        let text = req.unparsed_input()?;
        let tool_call = req.tool_call();
        let entry = self.toolkit.entry(&tool_call.name)?;
        let response = ToolResponse {
            content: Vec::new(),
            state: ToolResultState::Success,
            metadata: Map::new(),
            id: tool_call.id.clone(),
        };
        match catch_unwind(AssertUnwindSafe(|| entry.tool.call_text(text))) {
            Ok(stream) => stream.map(|stream| -> ToolStream {
                Box::pin(ToolCallStream::running(Arc::clone(tool_call), response, stream))
            }),
            Err(payload) => {
                let message = panic_message(&tool_call.name, &*payload);
                Some(Box::pin(ToolCallStream::failed(
                    Arc::clone(tool_call),
                    response,
                    message,
                )))
            }
        }
    }
}

impl From<Arc<Toolkit>> for ToolkitService {
    fn from(toolkit: Arc<Toolkit>) -> Self {
        Self::new(toolkit)
    }
}

impl From<Toolkit> for ToolkitService {
    fn from(toolkit: Toolkit) -> Self {
        Self::new(Arc::new(toolkit))
    }
}

impl fmt::Debug for ToolkitService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolkitService")
            .field("toolkit", &self.toolkit)
            .finish()
    }
}

impl tower::Service<ActingRequest> for ToolkitService {
    type Response = ToolStream;
    type Error = AgentError;
    type Future = Ready<Result<ToolStream, AgentError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: ActingRequest) -> Self::Future {
        ready(Ok(self.run(req)))
    }
}

/// One call's stream: the tool's chunks as they come, then the merged response.
struct ToolCallStream {
    /// The call (its tool's name, for the panic message), shared with the request: no copy.
    call: Arc<ToolCallBlock>,
    /// The tool's stream, until it ends, fails or panics.
    inner: Option<ToolChunkStream>,
    /// A chunk to yield before anything else (the error of a call that could not start).
    queued: Option<ToolChunk>,
    /// The response being accumulated (in time linear in the chunks); taken when it is
    /// yielded.
    response: Option<ChunkFold>,
}

impl ToolCallStream {
    fn running(call: Arc<ToolCallBlock>, response: ToolResponse, inner: ToolChunkStream) -> Self {
        Self {
            call,
            inner: Some(inner),
            queued: None,
            response: Some(ChunkFold::new(response)),
        }
    }

    fn failed(call: Arc<ToolCallBlock>, response: ToolResponse, message: String) -> Self {
        let chunk = error_chunk(message);
        let mut response = ChunkFold::new(response);
        response.push(&chunk);
        Self {
            call,
            inner: None,
            queued: Some(chunk),
            response: Some(response),
        }
    }

    /// Drops the tool's stream; a panic while dropping it is contained too.
    fn stop(&mut self) {
        if let Some(inner) = self.inner.take() {
            let _ = catch_unwind(AssertUnwindSafe(move || drop(inner)));
        }
    }
}

impl Stream for ToolCallStream {
    type Item = Result<ToolItem, AgentError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(chunk) = this.queued.take() {
            return Poll::Ready(Some(Ok(ToolItem::Chunk(chunk))));
        }
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(this.response.take().map(|r| Ok(ToolItem::Response(r.into_response()))));
        };
        let chunk = match catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll_next(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(Some(Ok(chunk)))) => chunk,
            Ok(Poll::Ready(Some(Err(err)))) => {
                this.stop();
                error_chunk(err.into_message())
            }
            Ok(Poll::Ready(None)) => {
                this.stop();
                return Poll::Ready(this.response.take().map(|r| Ok(ToolItem::Response(r.into_response()))));
            }
            Err(payload) => {
                let message = panic_message(&this.call.name, &*payload);
                this.stop();
                error_chunk(message)
            }
        };
        if let Some(response) = this.response.as_mut() {
            response.push(&chunk);
        }
        Poll::Ready(Some(Ok(ToolItem::Chunk(chunk))))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let known = usize::from(self.queued.is_some()) + usize::from(self.response.is_some());
        if self.inner.is_some() {
            (known, None)
        } else {
            (known, Some(known))
        }
    }
}

impl Drop for ToolCallStream {
    fn drop(&mut self) {
        self.stop();
    }
}

fn error_chunk(message: String) -> ToolChunk {
    ToolChunk::text(message).with_state(ToolResultState::Error)
}

fn panic_message(name: &str, payload: &(dyn Any + Send)) -> String {
    let what = match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(text), _) => text,
        (None, Some(text)) => text.as_str(),
        (None, None) => "a non-string panic payload",
    };
    format!("Tool '{name}' panicked: {what}")
}
