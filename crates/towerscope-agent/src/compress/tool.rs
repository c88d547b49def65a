//! The `CompressContext` tool (the reference's `_compress_context_tool`): offered when
//! [`ContextConfig::compression_tool`] is on, it runs the `on_compress_context` position with
//! the trigger lowered by `context_buffer_ratio`, so the model can compress between tasks before
//! the hard threshold. It is concurrency-unsafe and allowed without asking (it only touches the
//! agent's own context).

use std::sync::{Arc, Mutex, PoisonError};

use futures_util::StreamExt;
use serde_json::json;
use tower::{Service, ServiceExt};
use towerscope_core::{
    ActingRequest, AgentError, CompressRequest, ContextConfig, ToolChunk, ToolItem, ToolResponse, ToolResultState,
    ToolSchema, ToolStream,
};

use crate::state::AgentState;

/// The tool's name.
pub const COMPRESS_TOOL: &str = "CompressContext";

/// The result when the context was compressed.
pub const COMPRESSED_TEXT: &str = "Context compressed successfully.";

/// The result when the context was below the lowered threshold.
pub const NOT_COMPRESSED_TEXT: &str = "The context is not long enough to compress, so it remains unchanged.";

const DESCRIPTION: &str = "Compress the older context into a continuation summary, while preserving the recent context \
needed for the upcoming work.\n\nCall it between tasks, where the completed work can be preserved accurately in a \
summary, rather than in the middle of a task. Keep the current context when the exact earlier details are still \
needed. The context is replaced only after the summary is generated successfully, and is left as-is when it's not \
long enough to be worth compressing.";

/// The schema offered to the model.
pub(crate) fn tool_schema() -> ToolSchema {
    ToolSchema::new(COMPRESS_TOOL, DESCRIPTION, json!({"type": "object", "properties": {}}))
}

/// What the tool needs: the built `on_compress_context` position and the agent's state.
#[derive(Clone)]
pub(crate) struct CompressTool<S> {
    pub(crate) compress: S,
    pub(crate) state: Arc<Mutex<AgentState>>,
    pub(crate) config: Arc<ContextConfig>,
}

impl<S> CompressTool<S>
where
    S: Service<CompressRequest, Response = (), Error = AgentError> + Clone + Send + 'static,
    S::Future: Send,
{
    /// Runs one call of the tool.
    pub(crate) fn run(&self, req: ActingRequest) -> ToolStream {
        let compress = self.compress.clone();
        let state = Arc::clone(&self.state);
        let mut config = ContextConfig::clone(&self.config);
        config.trigger_ratio = (config.trigger_ratio - config.context_buffer_ratio).max(f64::MIN_POSITIVE);
        let id = req.tool_call().id.clone();
        let ctx = req.ctx;
        let run = async move {
            // Compression replaces the summary or the context's first message (and usually both).
            let look = |s: &Mutex<AgentState>| {
                let s = s.lock().unwrap_or_else(PoisonError::into_inner);
                (
                    s.context.len(),
                    s.context.first().map(|m| Arc::as_ptr(m) as usize),
                    s.summary.len(),
                )
            };
            let before = look(&state);
            let request = CompressRequest {
                ctx,
                instructions: None,
                config: Some(Arc::new(config)),
            };
            let (text, result_state) = match compress.oneshot(request).await {
                Ok(()) if look(&state) == before => (NOT_COMPRESSED_TEXT.to_owned(), ToolResultState::Success),
                Ok(()) => (COMPRESSED_TEXT.to_owned(), ToolResultState::Success),
                Err(AgentError::Interrupted) => return vec![Err(AgentError::Interrupted)],
                Err(e) => (format!("Context compression failed: {e}"), ToolResultState::Error),
            };
            let chunk = ToolChunk::text(text).with_state(result_state);
            let mut response = ToolResponse::new(Vec::new()).with_id(id);
            response.append_chunk(&chunk);
            vec![Ok(ToolItem::Chunk(chunk)), Ok(ToolItem::Response(response))]
        };
        Box::pin(futures_util::stream::once(run).flat_map(futures_util::stream::iter))
    }
}
