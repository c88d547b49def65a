//! The owned request types of the positions.

use std::fmt;
use std::sync::Arc;

use crate::event::{ExternalExecutionResultEvent, UserConfirmResultEvent, UserInterruptEvent};
use crate::{AgentContext, HintBlock, Messages, ModelRef, Msg, ToolChoice, ToolSchema};

/// A JSON schema the reply's structured output must satisfy.
#[derive(Debug, Clone, PartialEq)]
pub struct StructuredSchema {
    /// The schema's name (the Rust type name for a schema taken from a type).
    pub name: String,
    /// The JSON schema, without titles.
    pub schema: serde_json::Value,
}

/// What a reply was asked to do: answer new messages, or resume a parked reply.
#[derive(Debug, Clone)]
pub enum ReplyInput {
    /// New messages (possibly none) to answer.
    Messages(Messages),
    /// The user's answers to a `REQUIRE_USER_CONFIRM`.
    Confirm(Arc<UserConfirmResultEvent>),
    /// Results of tools executed outside the agent.
    External(Arc<ExternalExecutionResultEvent>),
    /// Interrupt a parked reply.
    Interrupt(Arc<UserInterruptEvent>),
}

impl ReplyInput {
    /// The messages, if this input holds messages.
    pub fn messages(&self) -> Option<&Messages> {
        match self {
            Self::Messages(m) => Some(m),
            _ => None,
        }
    }

    /// Whether this input resumes a parked reply.
    pub fn is_resume(&self) -> bool {
        !matches!(self, Self::Messages(_))
    }

    /// The parked reply this input resumes (or interrupts), as its event names it.
    pub fn resumed_reply(&self) -> Option<&crate::Id> {
        match self {
            Self::Messages(_) => None,
            Self::Confirm(e) => Some(&e.reply_id),
            Self::External(e) => Some(&e.reply_id),
            Self::Interrupt(e) => Some(&e.reply_id),
        }
    }
}

impl From<Msg> for ReplyInput {
    fn from(m: Msg) -> Self {
        Self::Messages(Messages::from(m))
    }
}

impl From<Vec<Msg>> for ReplyInput {
    fn from(m: Vec<Msg>) -> Self {
        Self::Messages(Messages::from(m))
    }
}

impl From<Messages> for ReplyInput {
    fn from(m: Messages) -> Self {
        Self::Messages(m)
    }
}

impl From<UserConfirmResultEvent> for ReplyInput {
    fn from(e: UserConfirmResultEvent) -> Self {
        Self::Confirm(Arc::new(e))
    }
}

impl From<ExternalExecutionResultEvent> for ReplyInput {
    fn from(e: ExternalExecutionResultEvent) -> Self {
        Self::External(Arc::new(e))
    }
}

impl From<UserInterruptEvent> for ReplyInput {
    fn from(e: UserInterruptEvent) -> Self {
        Self::Interrupt(Arc::new(e))
    }
}

/// The `on_reply` request. Every field is the reply loop's input: a layer's edit of any of
/// them is what the loop runs with.
#[derive(Debug, Clone)]
pub struct ReplyRequest {
    /// The reply's context: its reply id is the one the events, the stored message and the
    /// final message carry.
    pub ctx: AgentContext,
    /// What to answer.
    pub input: ReplyInput,
    /// The structured output required of this reply, if any. A resumed reply keeps the schema
    /// it was parked with: on a resume this is ignored, with a warning in the log, as in the
    /// reference.
    pub structured_schema: Option<Arc<StructuredSchema>>,
}

/// The `on_reasoning` request. Both fields reach the reasoning step: the context goes on to
/// the model call, the tool choice is the model call's.
#[derive(Debug, Clone)]
pub struct ReasoningRequest {
    /// The reply's context, at the current iteration.
    pub ctx: AgentContext,
    /// The tool choice for this round (`None`: the model decides).
    pub tool_choice: Option<ToolChoice>,
}

/// The `on_model_call` request: the model to call and what to send it. Each field is what the
/// innermost service hands the model; nothing after the call reads the request again.
#[derive(Clone)]
pub struct ModelCallRequest {
    /// The reply's context.
    pub ctx: AgentContext,
    /// The model to call. A fallback layer overrides this.
    pub model: ModelRef,
    /// The messages: the system prompt first, then the conversation. Shared: cloning the
    /// request does not copy them, and a layer edits one with [`Messages::make_mut`].
    pub messages: Messages,
    /// The tools offered to the model.
    pub tools: Arc<[ToolSchema]>,
    /// The tool choice.
    pub tool_choice: Option<ToolChoice>,
}

impl fmt::Debug for ModelCallRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelCallRequest")
            .field("ctx", &self.ctx)
            .field("model", &self.model.model_name())
            .field("messages", &self.messages.len())
            .field("tools", &self.tools.len())
            .field("tool_choice", &self.tool_choice)
            .finish()
    }
}

/// The `on_compress_context` request. Every field is the compressor's input.
#[derive(Debug, Clone)]
pub struct CompressRequest {
    /// The reply's context.
    pub ctx: AgentContext,
    /// Extra instructions for the summary.
    pub instructions: Option<HintBlock>,
    /// The compression settings for this call; `None` uses the agent's own (and an agent
    /// without one does not compress).
    pub config: Option<Arc<crate::ContextConfig>>,
}
