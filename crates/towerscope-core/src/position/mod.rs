//! The seven positions: the request and response types of each, and their erased services.
//!
//! One reply of a ReAct agent passes these positions, outermost first:
//!
//! ```text
//! on_reply                      onion   Service<ReplyRequest,      Response = EventStream>
//!  └─ each ReAct round:
//!      on_compress_context      onion   Service<CompressRequest,   Response = ()>
//!      on_reasoning             onion   Service<ReasoningRequest,  Response = EventStream>
//!       ├─ on_system_prompt     fold    SystemPromptTransformer, left to right
//!       └─ on_model_call        onion   Service<ModelCallRequest,  Response = ModelOutput>
//!      per tool call:
//!       on_check_permission     onion   Service<PermissionRequest, Response = PermissionDecision>
//!       on_acting               onion   Service<ActingRequest,     Response = ToolStream>
//! ```
//!
//! Every request is an owned struct that is cheap to clone (the large parts sit behind `Arc`), so
//! a layer can override one field and pass the rest on, or call its inner service twice.
//!
//! # Onion order
//!
//! The first layer installed is the outermost:
//!
//! ```text
//!            request ──▶ ┌ layer 1 ┐ ──▶ ┌ layer 2 ┐ ──▶ implementation
//!   pre-code runs 1, 2   │         │     │         │
//!   each streamed item   │         │ ◀── │         │ ◀── item
//!   reaches 2 first      └─────────┘     └─────────┘
//! ```
//!
//! # Example
//!
//! A layer that overrides the tool choice of every model call, leaving the rest of the request
//! as it is:
//!
//! ```
//! use towerscope_core::{LayerStack, ModelCallRequest, ModelOutput, ToolChoice};
//!
//! fn no_tools(mut req: ModelCallRequest) -> ModelCallRequest {
//!     req.tool_choice = Some(ToolChoice::none());
//!     req
//! }
//!
//! let mut stack = LayerStack::<ModelCallRequest, ModelOutput>::new();
//! stack.push(tower::util::MapRequestLayer::new(no_tools));
//! assert_eq!(stack.len(), 1);
//! ```

mod erased;
mod request;
mod stack;
mod tool_call;

pub use erased::{ErasedFuture, ErasedLayer, ErasedService};
pub use request::{CompressRequest, ModelCallRequest, ReasoningRequest, ReplyInput, ReplyRequest, StructuredSchema};
pub use stack::{LayerStack, Position};
pub use tool_call::{ActingRequest, PermissionDecision, PermissionRequest, ToolInfo};

use std::fmt;
use std::pin::Pin;

use futures_core::Stream;

use crate::{AgentError, AgentEvent, ModelOutput, Msg, ToolChunk, ToolResponse};

/// One item of a reply or reasoning stream: an event, or the final message (always last).
#[derive(Debug, Clone)]
pub enum ReplyItem {
    /// An event of the reply.
    Event(AgentEvent),
    /// The final message of the reply (or the candidate final message of a reasoning step).
    Final(Msg),
}

impl ReplyItem {
    /// The event, if this item is one.
    pub fn as_event(&self) -> Option<&AgentEvent> {
        match self {
            Self::Event(e) => Some(e),
            Self::Final(_) => None,
        }
    }

    /// The message, if this item is the final one.
    pub fn as_final(&self) -> Option<&Msg> {
        match self {
            Self::Final(m) => Some(m),
            Self::Event(_) => None,
        }
    }
}

impl From<AgentEvent> for ReplyItem {
    fn from(e: AgentEvent) -> Self {
        Self::Event(e)
    }
}

/// The stream `on_reply` and `on_reasoning` answer with: events, then the final [`Msg`].
pub type EventStream = Pin<Box<dyn Stream<Item = Result<ReplyItem, AgentError>> + Send>>;

/// One item of a tool's stream: chunks, then exactly one final response.
#[derive(Debug, Clone)]
pub enum ToolItem {
    /// A streamed chunk.
    Chunk(ToolChunk),
    /// The final, merged response (always last).
    Response(ToolResponse),
}

/// The stream `on_acting` answers with.
pub type ToolStream = Pin<Box<dyn Stream<Item = Result<ToolItem, AgentError>> + Send>>;

/// Wraps a stream as an [`EventStream`].
pub fn event_stream<S>(s: S) -> EventStream
where
    S: Stream<Item = Result<ReplyItem, AgentError>> + Send + 'static,
{
    Box::pin(s)
}

/// The erased `on_reply` service.
pub type ReplyService = ErasedService<ReplyRequest, EventStream>;
/// The erased `on_reasoning` service.
pub type ReasoningService = ErasedService<ReasoningRequest, EventStream>;
/// The erased `on_model_call` service.
pub type ModelCallService = ErasedService<ModelCallRequest, ModelOutput>;
/// The erased `on_acting` service.
pub type ActingService = ErasedService<ActingRequest, ToolStream>;
/// The erased `on_check_permission` service.
pub type PermissionService = ErasedService<PermissionRequest, PermissionDecision>;
/// The erased `on_compress_context` service.
pub type CompressService = ErasedService<CompressRequest, ()>;

/// A boxed layer over the erased `on_reply` service.
pub type ReplyLayer = ErasedLayer<ReplyRequest, EventStream>;
/// A boxed layer over the erased `on_reasoning` service.
pub type ReasoningLayer = ErasedLayer<ReasoningRequest, EventStream>;
/// A boxed layer over the erased `on_model_call` service.
pub type ModelCallLayer = ErasedLayer<ModelCallRequest, ModelOutput>;
/// A boxed layer over the erased `on_acting` service.
pub type ActingLayer = ErasedLayer<ActingRequest, ToolStream>;
/// A boxed layer over the erased `on_check_permission` service.
pub type PermissionLayer = ErasedLayer<PermissionRequest, PermissionDecision>;
/// A boxed layer over the erased `on_compress_context` service.
pub type CompressLayer = ErasedLayer<CompressRequest, ()>;

/// Names of the seven positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PositionKind {
    /// `on_reply`.
    Reply,
    /// `on_reasoning`.
    Reasoning,
    /// `on_acting`.
    Acting,
    /// `on_model_call`.
    ModelCall,
    /// `on_check_permission`.
    CheckPermission,
    /// `on_compress_context`.
    CompressContext,
    /// `on_system_prompt`.
    SystemPrompt,
}

impl PositionKind {
    /// The position's name, as in `on_model_call`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reply => "on_reply",
            Self::Reasoning => "on_reasoning",
            Self::Acting => "on_acting",
            Self::ModelCall => "on_model_call",
            Self::CheckPermission => "on_check_permission",
            Self::CompressContext => "on_compress_context",
            Self::SystemPrompt => "on_system_prompt",
        }
    }
}

impl fmt::Display for PositionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
