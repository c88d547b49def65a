//! Core types of towerscope: messages, events, the seven middleware positions, and errors.
//!
//! towerscope builds LLM agents whose every extension point is a [`tower`] middleware. This crate
//! holds what every other crate shares:
//!
//! - the wire-compatible data types: [`Msg`] and its [`ContentBlock`]s, the 28 kinds of
//!   [`AgentEvent`], [`ChatResponse`], [`ToolChunk`] and [`ToolResponse`] (they serialize to the
//!   same JSON as AgentScope 2.x, so streams and messages can be stored and replayed by tools that
//!   speak its format);
//! - the request and response types of the seven positions ([`position`]), the erased services
//!   and the [`LayerStack`] that builds a position once;
//! - three ways to write middleware: a [`Middleware`] bundle hooking several positions, a plain
//!   [`tower::Layer`] for one position, and [`from_fn()`] closures;
//! - the [`ChatModel`] trait and one error type, [`AgentError`].
//!
//! # Example
//!
//! ```
//! use towerscope_core::{AgentEvent, Msg, ReplyStartEvent};
//!
//! let msg = Msg::user("user", "What's the weather in Paris?");
//! let json = serde_json::to_string(&msg)?;
//! let back: Msg = serde_json::from_str(&json)?;
//! assert_eq!(back.text_content().as_deref(), Some("What's the weather in Paris?"));
//!
//! let start = AgentEvent::ReplyStart(ReplyStartEvent::new("session", "reply", "assistant"));
//! assert!(serde_json::to_string(&start)?.contains(r#""type":"REPLY_START""#));
//! # Ok::<(), serde_json::Error>(())
//! ```

pub mod chat;
pub mod context;
pub mod context_config;
pub mod error;
pub mod event;
pub mod from_fn;
pub mod id;
pub mod message;
pub mod middleware;
pub mod model;
pub mod position;
pub mod redact;
pub mod sequence;
pub mod sse;
pub mod state;
pub mod system_prompt;
pub mod tool;

pub use chat::{
    ChatResponse, ChatUsage, JsonScan, ModelFinishedReason, RESTART_EVENT, RESTART_KEY, ToolChoice, ToolChoiceMode,
    ToolSchema,
};
pub use context::{AgentContext, Extensions};
pub use context_config::ContextConfig;
pub use error::{AgentError, BoxError, ErrorSource, LimitKind, TimeoutKind};
pub use event::*;
pub use from_fn::{
    ActingNext, CompressNext, FromFn, FromFnLayer, ModelCallNext, Next, PermissionNext, ReasoningNext, ReplyNext,
    from_fn,
};
pub use id::{Id, Timestamp};
pub use message::{
    AnsweredIds, ContentBlock, DataBlock, DataSource, ErrorInfo, HintBlock, HintContent, MediaBlock, Messages, Msg,
    PermissionBehavior, PermissionMode, PermissionRule, ReplyFinishedReason, ResumeApplied, Role, TextBlock,
    ThinkingBlock, ToolCallBlock, ToolCallState, ToolOutput, ToolResultBlock, ToolResultState, Usage, WaitingCalls,
};
pub use middleware::{Middleware, ObserveHook, PositionStacks};
pub use model::{ChatModel, ChatStream, GenerationParams, ModelFuture, ModelOutput, ModelRef};
pub use position::{
    ActingLayer, ActingRequest, ActingService, CompressLayer, CompressRequest, CompressService, ErasedFuture,
    ErasedLayer, ErasedService, EventStream, LayerStack, ModelCallLayer, ModelCallRequest, ModelCallService,
    PermissionDecision, PermissionLayer, PermissionRequest, PermissionService, Position, PositionKind, ReasoningLayer,
    ReasoningRequest, ReasoningService, ReplyInput, ReplyItem, ReplyLayer, ReplyRequest, ReplyService,
    StructuredSchema, ToolInfo, ToolItem, ToolStream, event_stream,
};
pub use system_prompt::{PromptFuture, SystemPromptFold, SystemPromptTransformer, prompt_fn, prompt_map};
pub use tool::{ChunkFold, ToolChunk, ToolResponse};

/// The types most programs and layer authors need, in one import: messages and events, every
/// position's request and response, the `Next` of each position for [`from_fn()`] closures, and
/// the ways to install middleware.
pub mod prelude {
    pub use crate::{
        ActingNext, ActingRequest, AgentContext, AgentError, AgentEvent, ChatModel, ChatResponse, CompressNext,
        CompressRequest, ContentBlock, ErasedLayer, EventStream, Id, Messages, Middleware, ModelCallNext,
        ModelCallRequest, ModelOutput, Msg, Next, PermissionDecision, PermissionNext, PermissionRequest, ReasoningNext,
        ReasoningRequest, ReplyItem, ReplyNext, ReplyRequest, Role, SystemPromptTransformer, ToolCallBlock, ToolChoice,
        ToolChunk, ToolItem, ToolResponse, ToolStream, from_fn, prompt_fn, prompt_map,
    };
}
