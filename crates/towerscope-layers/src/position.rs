//! How the layers of this crate see the positions they serve.
//!
//! [`TimingLayer`](crate::timing::TimingLayer), [`TimeoutLayer`](crate::timeout::TimeoutLayer)
//! and [`CallLimitLayer`](crate::call_limit::CallLimitLayer) serve more than one position with
//! one layer. They see a request through [`PositionRequest`] (which position, what is called) and
//! a response through [`PositionResponse`] (a complete answer, or a stream to wrap).
//!
//! | Request              | Position        | [`CallTarget`]          | Response       | Streamed item    |
//! |----------------------|-----------------|-------------------------|----------------|------------------|
//! | [`ReplyRequest`]     | `on_reply`      | `Reply` (the agent)     | [`EventStream`](towerscope_core::EventStream) | [`ReplyItem`] |
//! | [`ReasoningRequest`] | `on_reasoning`  | `Reasoning` (the agent) | [`EventStream`](towerscope_core::EventStream) | [`ReplyItem`] |
//! | [`ModelCallRequest`] | `on_model_call` | `Model`                 | [`ModelOutput`]  | [`ChatResponse`] |
//! | [`ActingRequest`]    | `on_acting`     | `Tool`                  | [`ToolStream`](towerscope_core::ToolStream)   | [`ToolItem`] |
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use towerscope_core::{AgentContext, ModelCallRequest, PositionKind};
//! use towerscope_layers::position::PositionRequest;
//! use towerscope_models::ScriptedModel;
//!
//! let request = ModelCallRequest {
//!     ctx: AgentContext::new("assistant", "s", "r"),
//!     model: Arc::new(ScriptedModel::new("gpt-test", [])),
//!     messages: Default::default(),
//!     tools: Arc::from(vec![]),
//!     tool_choice: None,
//! };
//! assert_eq!(ModelCallRequest::POSITION, PositionKind::ModelCall);
//! assert_eq!(request.target().name(), "gpt-test");
//! assert_eq!(request.target().to_string(), "model call gpt-test");
//! ```

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;

use futures_core::Stream;
use towerscope_core::{
    ActingRequest, AgentContext, AgentError, ChatResponse, ModelCallRequest, ModelOutput, ModelRef, PositionKind,
    ReasoningRequest, ReplyItem, ReplyRequest, ToolInfo, ToolItem,
};

/// A boxed stream of one position's items: the shape of every streamed answer.
pub type ItemStream<T> = Pin<Box<dyn Stream<Item = Result<T, AgentError>> + Send>>;

/// What a call of a position calls; cheap to clone (one `Arc`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum CallTarget {
    /// A reply of the agent (`on_reply`).
    Reply(AgentContext),
    /// A reasoning step of the agent (`on_reasoning`).
    Reasoning(AgentContext),
    /// A chat model (`on_model_call`).
    Model(ModelRef),
    /// A tool (`on_acting`).
    Tool(Arc<ToolInfo>),
}

impl CallTarget {
    /// The name of what is called: the agent, the model or the tool.
    pub fn name(&self) -> &str {
        match self {
            Self::Reply(ctx) | Self::Reasoning(ctx) => ctx.agent_name(),
            Self::Model(model) => model.model_name(),
            Self::Tool(tool) => &tool.name,
        }
    }
}

/// `"model call gpt-4o"`, `"tool get_weather"`, `"reply of agent assistant"`: how errors name the
/// call.
impl fmt::Display for CallTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Reply(ctx) => write!(f, "reply of agent {}", ctx.agent_name()),
            Self::Reasoning(ctx) => write!(f, "reasoning of agent {}", ctx.agent_name()),
            Self::Model(model) => write!(f, "model call {}", model.model_name()),
            Self::Tool(tool) => write!(f, "tool {}", tool.name),
        }
    }
}

/// The request of a position, as the multi-position layers see it. See the [module docs](self).
pub trait PositionRequest: Send + 'static {
    /// The position whose request this is.
    const POSITION: PositionKind;

    /// The reply's context.
    fn ctx(&self) -> &AgentContext;

    /// What this call calls.
    fn target(&self) -> CallTarget;
}

impl PositionRequest for ReplyRequest {
    const POSITION: PositionKind = PositionKind::Reply;

    fn ctx(&self) -> &AgentContext {
        &self.ctx
    }

    fn target(&self) -> CallTarget {
        CallTarget::Reply(self.ctx.clone())
    }
}

impl PositionRequest for ReasoningRequest {
    const POSITION: PositionKind = PositionKind::Reasoning;

    fn ctx(&self) -> &AgentContext {
        &self.ctx
    }

    fn target(&self) -> CallTarget {
        CallTarget::Reasoning(self.ctx.clone())
    }
}

impl PositionRequest for ModelCallRequest {
    const POSITION: PositionKind = PositionKind::ModelCall;

    fn ctx(&self) -> &AgentContext {
        &self.ctx
    }

    fn target(&self) -> CallTarget {
        CallTarget::Model(Arc::clone(&self.model))
    }
}

impl PositionRequest for ActingRequest {
    const POSITION: PositionKind = PositionKind::Acting;

    fn ctx(&self) -> &AgentContext {
        &self.ctx
    }

    fn target(&self) -> CallTarget {
        CallTarget::Tool(Arc::clone(self.tool()))
    }
}

/// An item of a position's stream, which knows whether it is the last one.
///
/// The agent reads a model or tool stream to its end, past the last item, so that a layer's
/// code after it runs (an error there rejects the answer): a layer that measures or bounds a
/// stream does so to its end, and treats the last item as the answer.
pub trait PositionItem: Send + 'static {
    /// Whether this is the last item of its stream: the `is_last` chunk of a model stream, the
    /// final [`ToolItem::Response`], the final message of a reply.
    fn is_last(&self) -> bool;
}

impl PositionItem for ChatResponse {
    fn is_last(&self) -> bool {
        self.is_last
    }
}

impl PositionItem for ToolItem {
    fn is_last(&self) -> bool {
        matches!(self, Self::Response(_))
    }
}

/// The final message ends a reply stream; a reasoning stream may end without one (a round that
/// ended in tool calls), at the end of the stream.
impl PositionItem for ReplyItem {
    fn is_last(&self) -> bool {
        matches!(self, Self::Final(_))
    }
}

/// The response of a position: a complete answer, or a stream a layer can wrap. See the
/// [module docs](self).
pub trait PositionResponse: Sized + Send + 'static {
    /// The item of the streamed form.
    type Item: PositionItem;

    /// The stream, or the complete answer back when this response is not a stream.
    fn into_stream(self) -> Result<ItemStream<Self::Item>, Self>;

    /// A response from a (wrapped) stream.
    fn from_stream(stream: ItemStream<Self::Item>) -> Self;
}

impl PositionResponse for ModelOutput {
    type Item = ChatResponse;

    fn into_stream(self) -> Result<ItemStream<ChatResponse>, Self> {
        match self {
            Self::Stream(stream) => Ok(stream),
            complete @ Self::Complete(_) => Err(complete),
        }
    }

    fn from_stream(stream: ItemStream<ChatResponse>) -> Self {
        Self::Stream(stream)
    }
}

impl<T: PositionItem> PositionResponse for ItemStream<T> {
    type Item = T;

    fn into_stream(self) -> Result<ItemStream<T>, Self> {
        Ok(self)
    }

    fn from_stream(stream: ItemStream<T>) -> Self {
        stream
    }
}
