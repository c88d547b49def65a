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
            // Whether a compression applied: counted where it applies (the context's length,
            // first message and summary's length could all stay the same when a failed summary
            // kept the old one and only the head of the reply was cut).
            let look = |s: &Mutex<AgentState>| s.lock().unwrap_or_else(PoisonError::into_inner).compressions;
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use towerscope_core::{ContextConfig, Msg};
    use towerscope_models::{ScriptedModel, ScriptedResponse};

    use super::*;
    use crate::compress::{COMPRESS_TOOL, SUMMARY_TOOL};
    use crate::toolkit::FunctionTool;
    use crate::{Agent, HintConfig};

    /// Look a word up.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Lookup {
        /// The word.
        word: String,
    }

    /// A compression that applied is told as such, even when the context's length, its first
    /// message and the summary's length stayed the same (a failed summary kept the old one and
    /// the head of the reply was cut): the model was told nothing changed while its results
    /// were gone.
    #[tokio::test]
    async fn the_tool_says_compressed_when_a_truncation_applied() {
        let model = ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "lookup", r#"{"word": "alpha"}"#),
                ScriptedResponse::tool_call("c2", "lookup", r#"{"word": "beta"}"#),
                ScriptedResponse::tool_call("c3", COMPRESS_TOOL, "{}"),
                ScriptedResponse::text("done"),
            ],
        )
        .context_size(4000)
        .respond_with(|r| {
            (r.tools.len() == 1 && r.tools[0].name == SUMMARY_TOOL)
                .then(|| ScriptedResponse::text("I will not summarise."))
        });
        let lookup = FunctionTool::new("lookup", |a: Lookup| async move {
            format!("{}: {}", a.word, "blah ".repeat(320))
        });
        let mut state = AgentState::new();
        state.summary = "# Task Overview\nlook words up".to_owned();
        let agent = Agent::builder("a")
            .model(model)
            .tool(lookup)
            .hints(HintConfig::disabled())
            .context(
                ContextConfig::new()
                    .trigger_ratio(0.9)
                    .context_buffer_ratio(0.8)
                    .compression_tool(true),
            )
            .state(state)
            .build()
            .unwrap();
        agent.reply(Msg::user("user", "Look up alpha and beta.")).await.unwrap();
        let s = agent.state();
        let said = s
            .context
            .iter()
            .flat_map(|m| m.tool_results())
            .find(|r| r.id == "c3")
            .and_then(|r| r.output.text_content())
            .unwrap();
        let left = s
            .context
            .iter()
            .flat_map(|m| m.tool_results())
            .filter(|r| r.name == "lookup")
            .count();
        assert!(left < 2, "the setup: a lookup result was dropped ({left} left)");
        assert_eq!(said, COMPRESSED_TEXT);
    }
}
