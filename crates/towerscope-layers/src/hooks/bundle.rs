//! [`Hooks`]: the instance registry of one agent, the optional class registry, and the
//! [`Middleware`] that installs them.

use std::sync::Arc;

use towerscope_core::{ActingLayer, AgentError, ErasedLayer, Middleware, Msg, ObserveHook, ReasoningLayer, ReplyLayer};

use super::{Hook, HookRegistry, HookType, HooksLayer, PrintChunk, UnknownHook};

/// Pre/post hooks of one agent: its own (instance) hooks, then the hooks of a registry shared by
/// many agents (class hooks). Install it with `AgentBuilder::middleware`. See the
/// [module docs](super).
///
/// Clones share both registries: keep a clone to register, remove and clear hooks after the
/// agent is built.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    instance: HookRegistry,
    class: Option<HookRegistry>,
}

impl Hooks {
    /// Instance hooks only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Instance hooks, then the hooks of `class` (shared by every agent built with it).
    pub fn with_class(class: &HookRegistry) -> Self {
        Self {
            instance: HookRegistry::new(),
            class: Some(class.clone()),
        }
    }

    /// The hooks of this agent only.
    pub fn instance(&self) -> &HookRegistry {
        &self.instance
    }

    /// The shared (class) hooks, if any.
    pub fn class(&self) -> Option<&HookRegistry> {
        self.class.as_ref()
    }

    /// Registers an instance hook (see [`HookRegistry::register`]).
    pub fn register(&self, name: impl Into<String>, hook: Hook) -> &Self {
        self.instance.register(name, hook);
        self
    }

    /// Removes an instance hook (see [`HookRegistry::remove`]).
    pub fn remove(&self, hook_type: HookType, name: &str) -> Result<Hook, UnknownHook> {
        self.instance.remove(hook_type, name)
    }

    /// Removes the instance hooks of `hook_type`.
    pub fn clear(&self, hook_type: HookType) {
        self.instance.clear(hook_type);
    }

    /// Removes every instance hook.
    pub fn clear_all(&self) {
        self.instance.clear_all();
    }

    /// The layer running these hooks on `on_reply`, `on_reasoning` and `on_acting`.
    pub fn layer(&self) -> HooksLayer {
        HooksLayer::new(self.clone())
    }

    /// Runs the `pre_print` hooks on a piece of a message `agent_name` is about to print:
    /// instance hooks, then class hooks, each seeing what the previous returned. Returns what
    /// to print (a chunk with empty text prints nothing). Consoles call this; see
    /// [`PrintChunk`].
    pub fn pre_print(&self, agent_name: &str, chunk: PrintChunk) -> PrintChunk {
        let mut chunk = chunk;
        for hook in self.collect(HookType::PrePrint, Hook::as_pre_print) {
            if let Some(replaced) = hook(agent_name, &chunk) {
                chunk = replaced;
            }
        }
        chunk
    }

    /// Runs the `post_print` hooks on what `agent_name`'s console printed.
    pub fn post_print(&self, agent_name: &str, chunk: &PrintChunk) {
        for hook in self.collect(HookType::PostPrint, Hook::as_post_print) {
            hook(agent_name, chunk);
        }
    }

    /// Whether any print hook is registered (a console skips building chunks for hooks when
    /// none is).
    pub fn has_print_hooks(&self) -> bool {
        let registered =
            |r: &HookRegistry| !r.names(HookType::PrePrint).is_empty() || !r.names(HookType::PostPrint).is_empty();
        registered(&self.instance) || self.class.as_ref().is_some_and(registered)
    }

    /// The hooks of `hook_type` that will run now: instance hooks, then class hooks.
    pub(crate) fn collect<T>(&self, hook_type: HookType, pick: fn(&Hook) -> Option<T>) -> Vec<T> {
        let mut out = Vec::new();
        self.instance.collect(hook_type, pick, &mut out);
        if let Some(class) = &self.class {
            class.collect(hook_type, pick, &mut out);
        }
        out
    }
}

impl Middleware for Hooks {
    fn name(&self) -> &str {
        "Hooks"
    }

    fn on_reply(&self) -> Option<ReplyLayer> {
        Some(ErasedLayer::new(self.layer()))
    }

    fn on_reasoning(&self) -> Option<ReasoningLayer> {
        Some(ErasedLayer::new(self.layer()))
    }

    fn on_acting(&self) -> Option<ActingLayer> {
        Some(ErasedLayer::new(self.layer()))
    }

    fn on_observe(&self) -> Option<Arc<dyn ObserveHook>> {
        Some(Arc::new(self.clone()))
    }
}

impl ObserveHook for Hooks {
    fn pre_observe(&self, agent_name: &str, msgs: Vec<Msg>) -> Result<Vec<Msg>, AgentError> {
        let mut msgs = msgs;
        for hook in self.collect(HookType::PreObserve, Hook::as_pre_observe) {
            if let Some(replaced) = hook(agent_name, &msgs) {
                msgs = replaced;
            }
        }
        Ok(msgs)
    }

    fn post_observe(&self, agent_name: &str, msgs: &[Msg]) -> Result<(), AgentError> {
        for hook in self.collect(HookType::PostObserve, Hook::as_post_observe) {
            hook(agent_name, msgs);
        }
        Ok(())
    }
}
