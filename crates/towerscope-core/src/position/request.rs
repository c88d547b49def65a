//! The owned request types of the positions.

use std::fmt;
use std::sync::Arc;

use crate::event::{ExternalExecutionResultEvent, UserConfirmResultEvent, UserInterruptEvent};
use crate::{AgentContext, HintBlock, Messages, ModelRef, Msg, PermissionRule, ToolCallBlock, ToolChoice, ToolSchema};

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

/// The `on_reply` request.
#[derive(Debug, Clone)]
pub struct ReplyRequest {
    /// The reply's context.
    pub ctx: AgentContext,
    /// What to answer.
    pub input: ReplyInput,
    /// The structured output required of this reply, if any.
    pub structured_schema: Option<Arc<StructuredSchema>>,
}

/// The `on_reasoning` request.
#[derive(Debug, Clone)]
pub struct ReasoningRequest {
    /// The reply's context, at the current iteration.
    pub ctx: AgentContext,
    /// The tool choice for this round (`None`: the model decides).
    pub tool_choice: Option<ToolChoice>,
}

/// The `on_model_call` request: the model to call and what to send it.
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

/// What the agent knows of a tool, for middleware (tracing records the description).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The tool's name.
    pub name: String,
    /// The tool's description.
    pub description: String,
    /// Whether calls of this tool may run concurrently with other safe calls.
    pub concurrency_safe: bool,
    /// Whether the tool only reads (allowed without asking).
    pub read_only: bool,
    /// Whether the tool is executed outside the agent.
    pub external: bool,
}

/// The `on_acting` request: one validated, permitted tool call.
#[derive(Debug, Clone)]
pub struct ActingRequest {
    /// The reply's context.
    pub ctx: AgentContext,
    /// The tool call as the model made it (its `input` is the raw JSON text). Shared with the
    /// permission check; a layer changes it copy-on-write (`Arc::make_mut`).
    pub tool_call: Arc<ToolCallBlock>,
    /// The tool being called.
    pub tool: Arc<ToolInfo>,
    /// The arguments, parsed once (repaired and coerced to the tool's schema) and validated.
    /// This is what the tool receives: a layer that changes the arguments replaces this value
    /// (and answers for its validity; the tool still rejects arguments it cannot read, as an
    /// error result).
    pub input: Arc<serde_json::Value>,
}

/// The `on_check_permission` request.
#[derive(Debug, Clone)]
pub struct PermissionRequest {
    /// The reply's context.
    pub ctx: AgentContext,
    /// The tool call (shared; changing it does not change the call that runs).
    pub tool_call: Arc<ToolCallBlock>,
    /// The tool being called.
    pub tool: Arc<ToolInfo>,
    /// A copy of the parsed, validated input. Changing it does not change what the tool receives.
    pub input: Arc<serde_json::Value>,
}

/// The answer of `on_check_permission`.
#[derive(Debug, Clone, PartialEq)]
pub enum PermissionDecision {
    /// Run the tool.
    Allow,
    /// Do not run it; the message goes back to the model as a denied result.
    Deny {
        /// Why, for the model.
        message: String,
    },
    /// Ask the user first (the reply parks with `REQUIRE_USER_CONFIRM`).
    Ask {
        /// Rules the user may accept to allow similar calls from now on.
        suggested_rules: Vec<PermissionRule>,
    },
}

/// The `on_compress_context` request.
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
