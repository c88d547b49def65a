//! The AG-UI events this server sends, as `@ag-ui/core` 1.0 names them.

use serde::Serialize;
use serde_json::{Map, Value};

/// The AG-UI version this server speaks, announced in `RUN_STARTED`.
pub const PROTOCOL_VERSION: &str = "1.0";

/// One AG-UI event, serialized as the JSON `data` of a server-sent event, tagged by `"type"`.
///
/// Only the events this server sends; field names are AG-UI's (camelCase).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE", rename_all_fields = "camelCase")]
#[non_exhaustive]
pub enum AguiEvent {
    /// The run started.
    RunStarted {
        /// The thread (our session).
        thread_id: String,
        /// The run.
        run_id: String,
        /// The AG-UI version this server speaks ([`PROTOCOL_VERSION`]).
        protocol_version: &'static str,
    },
    /// The run ended without failing: completed, parked for the client, or cancelled.
    RunFinished {
        /// The thread.
        thread_id: String,
        /// The run.
        run_id: String,
        /// Why it ended.
        outcome: RunOutcome,
        /// Token usage of the run's model calls, one entry per model.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        usage: Vec<TokenUsage>,
    },
    /// The run failed.
    RunError {
        /// What went wrong (no secrets, no stack trace).
        message: String,
        /// A stable code (`AgentError::kind`).
        code: String,
    },
    /// An assistant text message opens.
    TextMessageStart {
        /// The message (our text block's id).
        message_id: String,
        /// Always `assistant`.
        role: &'static str,
    },
    /// More text of a message.
    TextMessageContent {
        /// The message.
        message_id: String,
        /// The text.
        delta: String,
    },
    /// A text message closes.
    TextMessageEnd {
        /// The message.
        message_id: String,
    },
    /// A span of reasoning opens (our thinking block).
    ReasoningStart {
        /// The span (the thinking block's id).
        message_id: String,
    },
    /// A reasoning message opens inside the span.
    ReasoningMessageStart {
        /// The message (the thinking block's id).
        message_id: String,
        /// Always `reasoning`.
        role: &'static str,
    },
    /// More reasoning text.
    ReasoningMessageContent {
        /// The message.
        message_id: String,
        /// The text.
        delta: String,
    },
    /// A reasoning message closes.
    ReasoningMessageEnd {
        /// The message.
        message_id: String,
    },
    /// A span of reasoning closes.
    ReasoningEnd {
        /// The span.
        message_id: String,
    },
    /// A tool call opens.
    ToolCallStart {
        /// The call.
        tool_call_id: String,
        /// The tool's name.
        tool_call_name: String,
    },
    /// More of a call's JSON arguments.
    ToolCallArgs {
        /// The call.
        tool_call_id: String,
        /// A piece of the arguments.
        delta: String,
    },
    /// A call's arguments are complete.
    ToolCallEnd {
        /// The call.
        tool_call_id: String,
    },
    /// What a tool returned, as a tool message.
    ToolCallResult {
        /// The tool message's id.
        message_id: String,
        /// The call it answers.
        tool_call_id: String,
        /// The result's text.
        content: String,
        /// Always `tool`.
        role: &'static str,
    },
    /// The state the client should hold, replaced whole.
    StateSnapshot {
        /// The state.
        snapshot: Value,
    },
    /// An application's own event (our `CUSTOM`).
    Custom {
        /// Its name.
        name: String,
        /// Its value.
        value: Value,
    },
}

impl AguiEvent {
    /// The event's `"type"` string (`"RUN_STARTED"`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::RunStarted { .. } => "RUN_STARTED",
            Self::RunFinished { .. } => "RUN_FINISHED",
            Self::RunError { .. } => "RUN_ERROR",
            Self::TextMessageStart { .. } => "TEXT_MESSAGE_START",
            Self::TextMessageContent { .. } => "TEXT_MESSAGE_CONTENT",
            Self::TextMessageEnd { .. } => "TEXT_MESSAGE_END",
            Self::ReasoningStart { .. } => "REASONING_START",
            Self::ReasoningMessageStart { .. } => "REASONING_MESSAGE_START",
            Self::ReasoningMessageContent { .. } => "REASONING_MESSAGE_CONTENT",
            Self::ReasoningMessageEnd { .. } => "REASONING_MESSAGE_END",
            Self::ReasoningEnd { .. } => "REASONING_END",
            Self::ToolCallStart { .. } => "TOOL_CALL_START",
            Self::ToolCallArgs { .. } => "TOOL_CALL_ARGS",
            Self::ToolCallEnd { .. } => "TOOL_CALL_END",
            Self::ToolCallResult { .. } => "TOOL_CALL_RESULT",
            Self::StateSnapshot { .. } => "STATE_SNAPSHOT",
            Self::Custom { .. } => "CUSTOM",
        }
    }
}

/// Why a run ended (`RUN_FINISHED.outcome`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase", rename_all_fields = "camelCase")]
pub enum RunOutcome {
    /// Completed; front-end tool calls left for the client to run, if any.
    Success {
        /// Front-end tool calls waiting for their results (the next run carries them).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pending_tool_call_ids: Vec<String>,
    },
    /// Parked: tool calls wait for the user's confirmation (the next run's `resume` answers).
    Interrupt {
        /// One per call.
        interrupts: Vec<Interrupt>,
    },
    /// Stopped by the client before it completed.
    Cancelled,
}

/// A tool call that needs the user's confirmation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Interrupt {
    /// The interrupt's id: the tool call's id.
    pub id: String,
    /// Always `tool_confirmation`.
    pub reason: &'static str,
    /// What to show the user.
    pub message: String,
    /// The call.
    pub tool_call_id: String,
    /// What a `resume` entry's payload may hold.
    pub response_schema: Map<String, Value>,
}

/// Tokens of one model over a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// The model's name.
    pub model: String,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Both.
    pub total_tokens: u64,
}
