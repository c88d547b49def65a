//! [`Middleware`]: one object that hooks any subset of the seven positions.
//!
//! As in AgentScope, one middleware may hook several places (a tracer hooks `on_reply`,
//! `on_model_call` and `on_acting`). Each hook returns a layer for its position, or `None` for a
//! position it leaves alone; a position nobody hooks costs nothing. [`PositionStacks`] collects
//! the layers of many middlewares in installation order, first installed = outermost.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use towerscope_core::{
//!     ErasedLayer, from_fn, Middleware, ModelCallLayer, ModelCallNext, ModelCallRequest,
//!     PositionStacks,
//! };
//!
//! /// Counts model calls.
//! #[derive(Default)]
//! struct CountCalls(Arc<AtomicUsize>);
//!
//! impl Middleware for CountCalls {
//!     fn on_model_call(&self) -> Option<ModelCallLayer> {
//!         let count = self.0.clone();
//!         Some(ErasedLayer::new(from_fn(move |req: ModelCallRequest, next: ModelCallNext| {
//!             count.fetch_add(1, Ordering::Relaxed);
//!             next.run(req)
//!         })))
//!     }
//! }
//!
//! let mut stacks = PositionStacks::new();
//! stacks.add(&CountCalls::default());
//! assert_eq!(stacks.model_call.len(), 1);
//! assert!(stacks.reply.is_empty()); // not hooked: nothing installed, nothing paid
//! ```

use std::sync::Arc;

use crate::position::{
    ActingLayer, CompressLayer, EventStream, LayerStack, ModelCallLayer, PermissionLayer, ReasoningLayer, ReplyLayer,
    ToolStream,
};
use crate::system_prompt::{SystemPromptFold, SystemPromptTransformer};
use crate::{
    ActingRequest, AgentError, CompressRequest, EventKinds, ModelCallRequest, ModelOutput, Msg, PermissionDecision,
    PermissionRequest, ReasoningRequest, ReplyRequest,
};

/// A bundle of hooks on any subset of the seven positions. See the [module docs](self).
///
/// Every method has a default that hooks nothing. The agent asks each method once, when it is
/// built.
pub trait Middleware: Send + Sync + 'static {
    /// The middleware's name (for debugging and per-middleware state).
    fn name(&self) -> &str {
        std::any::type_name::<Self>()
    }

    /// A layer around the whole reply.
    fn on_reply(&self) -> Option<ReplyLayer> {
        None
    }

    /// A layer around each reasoning step.
    fn on_reasoning(&self) -> Option<ReasoningLayer> {
        None
    }

    /// A layer around each model call.
    fn on_model_call(&self) -> Option<ModelCallLayer> {
        None
    }

    /// A layer around each tool execution.
    fn on_acting(&self) -> Option<ActingLayer> {
        None
    }

    /// A layer around each permission check.
    fn on_check_permission(&self) -> Option<PermissionLayer> {
        None
    }

    /// A layer around each context compression.
    fn on_compress_context(&self) -> Option<CompressLayer> {
        None
    }

    /// A step of the system-prompt fold.
    fn on_system_prompt(&self) -> Option<Arc<dyn SystemPromptTransformer>> {
        None
    }

    /// Hooks around `observe` (which adds messages without replying, so it has no position).
    fn on_observe(&self) -> Option<Arc<dyn ObserveHook>> {
        None
    }

    /// The kinds of events this middleware's `on_reply` and `on_reasoning` layers read (default:
    /// all).
    ///
    /// When nobody else reads the events (the caller uses `Agent::reply`, and every other layer
    /// on those positions says the same), the agent builds only these kinds, and the layers'
    /// streams carry only these events, the final message and errors. Say
    /// [`EventKinds::NONE`] for layers that never look at an event (a timeout, a concurrency
    /// limit, a layer that only changes the request): installing them then costs no events.
    ///
    /// A layer that hands back the stream of the service below it unchanged needs no
    /// declaration: the agent sees that the stream it got back is the one its innermost service
    /// made, so no layer can read its events, and builds none for them. The declaration matters
    /// for a layer that wraps the stream (to watch the reply end, say) and reads few kinds.
    fn reads_events(&self) -> EventKinds {
        EventKinds::ALL
    }
}

/// Hooks around an agent's `observe`, run in installation order.
///
/// `observe` adds messages to the context without a reply, so it is not a service position;
/// these hooks are how the pre/post hook API reaches it.
pub trait ObserveHook: Send + Sync + 'static {
    /// Runs before the messages are validated and stored; returns the messages to store.
    fn pre_observe(&self, agent_name: &str, msgs: Vec<Msg>) -> Result<Vec<Msg>, AgentError> {
        let _ = agent_name;
        Ok(msgs)
    }

    /// Runs after the messages were stored.
    fn post_observe(&self, agent_name: &str, msgs: &[Msg]) -> Result<(), AgentError> {
        let _ = (agent_name, msgs);
        Ok(())
    }
}

/// The layers of all seven positions, in installation order.
#[derive(Clone, Default)]
pub struct PositionStacks {
    /// `on_reply`.
    pub reply: LayerStack<ReplyRequest, EventStream>,
    /// `on_reasoning`.
    pub reasoning: LayerStack<ReasoningRequest, EventStream>,
    /// `on_model_call`.
    pub model_call: LayerStack<ModelCallRequest, ModelOutput>,
    /// `on_acting`.
    pub acting: LayerStack<ActingRequest, ToolStream>,
    /// `on_check_permission`.
    pub check_permission: LayerStack<PermissionRequest, PermissionDecision>,
    /// `on_compress_context`.
    pub compress_context: LayerStack<CompressRequest, ()>,
    /// `on_system_prompt`.
    pub system_prompt: SystemPromptFold,
    /// Hooks around `observe`.
    pub observe: Vec<Arc<dyn ObserveHook>>,
    /// How many `on_reply` / `on_reasoning` layers came from [`add`](Self::add), and the union of
    /// the events their middlewares read.
    declared: [(usize, EventKinds); 2],
}

impl PositionStacks {
    /// Nothing installed anywhere.
    pub fn new() -> Self {
        Self::default()
    }

    /// Installs every hook `middleware` implements, inside the ones already installed.
    pub fn add(&mut self, middleware: &dyn Middleware) -> &mut Self {
        let reads = middleware.reads_events();
        if let Some(l) = middleware.on_reply() {
            self.reply.push_erased(l);
            self.declare(0, reads);
        }
        if let Some(l) = middleware.on_reasoning() {
            self.reasoning.push_erased(l);
            self.declare(1, reads);
        }
        if let Some(l) = middleware.on_model_call() {
            self.model_call.push_erased(l);
        }
        if let Some(l) = middleware.on_acting() {
            self.acting.push_erased(l);
        }
        if let Some(l) = middleware.on_check_permission() {
            self.check_permission.push_erased(l);
        }
        if let Some(l) = middleware.on_compress_context() {
            self.compress_context.push_erased(l);
        }
        if let Some(t) = middleware.on_system_prompt() {
            self.system_prompt.push_arc(t);
        }
        if let Some(h) = middleware.on_observe() {
            self.observe.push(h);
        }
        self
    }

    fn declare(&mut self, position: usize, reads: EventKinds) {
        let (count, kinds) = &mut self.declared[position];
        *count += 1;
        *kinds = kinds.union(reads);
    }

    /// The kinds of events the `on_reply` layers read: what their middlewares declared
    /// ([`Middleware::reads_events`]), or all when a layer was pushed on the stack directly.
    pub fn reply_reads(&self) -> EventKinds {
        Self::reads(self.reply.len(), self.declared[0])
    }

    /// The kinds of events the `on_reasoning` layers read, as [`reply_reads`](Self::reply_reads).
    pub fn reasoning_reads(&self) -> EventKinds {
        Self::reads(self.reasoning.len(), self.declared[1])
    }

    fn reads(layers: usize, (declared, kinds): (usize, EventKinds)) -> EventKinds {
        if layers == declared { kinds } else { EventKinds::ALL }
    }
}

impl std::fmt::Debug for PositionStacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PositionStacks")
            .field("reply", &self.reply.len())
            .field("reasoning", &self.reasoning.len())
            .field("model_call", &self.model_call.len())
            .field("acting", &self.acting.len())
            .field("check_permission", &self.check_permission.len())
            .field("compress_context", &self.compress_context.len())
            .field("system_prompt", &self.system_prompt.len())
            .field("observe", &self.observe.len())
            .finish()
    }
}
