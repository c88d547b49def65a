//! A middleware that hooks every position with a layer forwarding everything: the cheapest
//! possible middleware, as `FullPassThrough` in `benches/react.rs`.

use std::sync::Arc;
use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;
use towerscope::{
    ActingLayer, CompressLayer, ErasedLayer, Middleware, ModelCallLayer, PermissionLayer, ReasoningLayer, ReplyLayer,
    SystemPromptTransformer, prompt_map,
};

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PassThroughLayer;

impl<S> Layer<S> for PassThroughLayer {
    type Service = PassThrough<S>;

    fn layer(&self, inner: S) -> PassThrough<S> {
        PassThrough(inner)
    }
}

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

/// Hooks all six onion positions and the system-prompt fold with pass-throughs.
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

/// One pass-through on one position only (`--layer-on P`): the position's name as in
/// [`POSITIONS`].
pub(crate) struct OnePosition(pub(crate) String);

/// The positions `--layer-on` may name.
pub(crate) const POSITIONS: &[&str] = &[
    "reply",
    "reasoning",
    "model_call",
    "acting",
    "check_permission",
    "compress_context",
    "system_prompt",
];

impl OnePosition {
    /// `layer` (from [`FullPassThrough`]) if `position` is the one chosen.
    fn only<T>(&self, position: &str, layer: Option<T>) -> Option<T> {
        layer.filter(|_| self.0 == position)
    }
}

impl Middleware for OnePosition {
    fn on_reply(&self) -> Option<ReplyLayer> {
        self.only("reply", FullPassThrough.on_reply())
    }
    fn on_reasoning(&self) -> Option<ReasoningLayer> {
        self.only("reasoning", FullPassThrough.on_reasoning())
    }
    fn on_model_call(&self) -> Option<ModelCallLayer> {
        self.only("model_call", FullPassThrough.on_model_call())
    }
    fn on_acting(&self) -> Option<ActingLayer> {
        self.only("acting", FullPassThrough.on_acting())
    }
    fn on_check_permission(&self) -> Option<PermissionLayer> {
        self.only("check_permission", FullPassThrough.on_check_permission())
    }
    fn on_compress_context(&self) -> Option<CompressLayer> {
        self.only("compress_context", FullPassThrough.on_compress_context())
    }
    fn on_system_prompt(&self) -> Option<Arc<dyn SystemPromptTransformer>> {
        self.only("system_prompt", FullPassThrough.on_system_prompt())
    }
}
