//! What the agent benchmarks share: the headline scenario (4 model calls, 3 `add` tool calls,
//! "done") and the pass-through middleware the overhead figures install. Included by `react`
//! and `reply_profile` with `#[path]`, so both measure the same agent.

use std::sync::Arc;
use std::task::{Context, Poll};

use tower::{Layer, Service};
use towerscope::agent::toolkit::FunctionTool;
use towerscope::agent::toolkit::Tool;
use towerscope::models::{ScriptedModel, ScriptedResponse};
use towerscope::{
    ActingLayer, CompressLayer, ErasedLayer, EventKinds, Middleware, ModelCallLayer, PermissionLayer, ReasoningLayer,
    ReplyLayer, SystemPromptTransformer, prompt_map,
};

/// Add two integers.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Add {
    /// First operand.
    pub(crate) a: i64,
    /// Second operand.
    pub(crate) b: i64,
}

/// The scenario's tool.
pub(crate) fn add_tool() -> impl Tool {
    FunctionTool::new("add", |args: Add| async move { (args.a + args.b).to_string() })
}

/// The scenario's model: three `add` calls, then "done" (answers streamed or whole); cycles.
pub(crate) fn script(streamed: bool) -> ScriptedModel {
    let r = |resp: ScriptedResponse| if streamed { resp.streamed() } else { resp.whole() };
    ScriptedModel::cycle(
        "scripted",
        [
            r(ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#).with_usage(50, 10)),
            r(ScriptedResponse::tool_call("c2", "add", r#"{"a": 3, "b": 4}"#).with_usage(60, 10)),
            r(ScriptedResponse::tool_call("c3", "add", r#"{"a": 5, "b": 6}"#).with_usage(70, 10)),
            r(ScriptedResponse::text("done").with_usage(80, 2)),
        ],
    )
}

/// A layer that forwards everything: the cheapest possible middleware.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PassThroughLayer;

impl<S> Layer<S> for PassThroughLayer {
    type Service = PassThrough<S>;

    fn layer(&self, inner: S) -> PassThrough<S> {
        PassThrough(inner)
    }
}

/// The service of [`PassThroughLayer`]: the inner one's future, unchanged.
#[derive(Clone, Debug)]
pub(crate) struct PassThrough<S>(S);

impl<S: Service<R>, R> Service<R> for PassThrough<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> S::Future {
        self.0.call(req)
    }
}

/// A middleware hooking every position with a pass-through, like the reference's
/// `FullObservability` example: the six onion positions and the prompt fold.
pub(crate) struct FullPassThrough;

impl Middleware for FullPassThrough {
    fn on_reply(&self) -> Option<ReplyLayer> {
        Some(ErasedLayer::new(PassThroughLayer))
    }
    fn on_reasoning(&self) -> Option<ReasoningLayer> {
        Some(ErasedLayer::new(PassThroughLayer))
    }
    fn on_model_call(&self) -> Option<ModelCallLayer> {
        Some(ErasedLayer::new(PassThroughLayer))
    }
    fn on_acting(&self) -> Option<ActingLayer> {
        Some(ErasedLayer::new(PassThroughLayer))
    }
    fn on_check_permission(&self) -> Option<PermissionLayer> {
        Some(ErasedLayer::new(PassThroughLayer))
    }
    fn on_compress_context(&self) -> Option<CompressLayer> {
        Some(ErasedLayer::new(PassThroughLayer))
    }
    fn on_system_prompt(&self) -> Option<Arc<dyn SystemPromptTransformer>> {
        Some(Arc::new(prompt_map(|_ctx, prompt| Ok(prompt))))
    }
}

/// [`FullPassThrough`] that says its layers read no events (`Middleware::reads_events`), as a
/// pass-through may: with `Agent::reply`, the agent then builds none.
pub(crate) struct QuietPassThrough;

impl Middleware for QuietPassThrough {
    fn on_reply(&self) -> Option<ReplyLayer> {
        FullPassThrough.on_reply()
    }
    fn on_reasoning(&self) -> Option<ReasoningLayer> {
        FullPassThrough.on_reasoning()
    }
    fn on_model_call(&self) -> Option<ModelCallLayer> {
        FullPassThrough.on_model_call()
    }
    fn on_acting(&self) -> Option<ActingLayer> {
        FullPassThrough.on_acting()
    }
    fn on_check_permission(&self) -> Option<PermissionLayer> {
        FullPassThrough.on_check_permission()
    }
    fn on_compress_context(&self) -> Option<CompressLayer> {
        FullPassThrough.on_compress_context()
    }
    fn on_system_prompt(&self) -> Option<Arc<dyn SystemPromptTransformer>> {
        FullPassThrough.on_system_prompt()
    }
    fn reads_events(&self) -> EventKinds {
        EventKinds::NONE
    }
}

/// One pass-through layer on `on_reply` or `on_reasoning` from a middleware that says it reads
/// no events.
pub(crate) enum QuietLayer {
    /// On `on_reply`.
    Reply,
    /// On `on_reasoning`.
    Reasoning,
}

impl Middleware for QuietLayer {
    fn on_reply(&self) -> Option<ReplyLayer> {
        matches!(self, Self::Reply).then(|| ErasedLayer::new(PassThroughLayer))
    }
    fn on_reasoning(&self) -> Option<ReasoningLayer> {
        matches!(self, Self::Reasoning).then(|| ErasedLayer::new(PassThroughLayer))
    }
    fn reads_events(&self) -> EventKinds {
        EventKinds::NONE
    }
}

/// `builder` with ten pass-through layers on each onion position, composed with
/// `ServiceBuilder` into one layer per position (erased once per position instead of once per
/// middleware), and, with `transformers`, ten pass-through prompt transformers: ten
/// middlewares' worth of layers stacked in code.
pub(crate) fn composed(
    builder: towerscope::agent::AgentBuilder,
    transformers: bool,
) -> towerscope::agent::AgentBuilder {
    macro_rules! ten {
        () => {
            tower::ServiceBuilder::new()
                .layer(PassThroughLayer)
                .layer(PassThroughLayer)
                .layer(PassThroughLayer)
                .layer(PassThroughLayer)
                .layer(PassThroughLayer)
                .layer(PassThroughLayer)
                .layer(PassThroughLayer)
                .layer(PassThroughLayer)
                .layer(PassThroughLayer)
                .layer(PassThroughLayer)
                .into_inner()
        };
    }
    let mut builder = builder
        .on_reply(ten!())
        .on_reasoning(ten!())
        .on_model_call(ten!())
        .on_acting(ten!())
        .on_check_permission(ten!())
        .on_compress_context(ten!());
    if transformers {
        for _ in 0..10 {
            builder = builder.on_system_prompt(prompt_map(|_ctx, prompt| Ok(prompt)));
        }
    }
    builder
}
