//! `RunAgentInput`, the body of an AG-UI run, as `@ag-ui/core` 1.0 defines it.

use serde::Deserialize;
use serde_json::Value;

/// The body of `POST /agui`. Unknown fields are ignored, as AG-UI's objects are open.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    /// The thread: the session the factory builds the agent for.
    pub thread_id: String,
    /// The run, echoed in `RUN_STARTED` and `RUN_FINISHED`.
    pub run_id: String,
    /// The conversation as the client holds it; only what is new to the agent is used (see
    /// the [module docs](super)).
    pub messages: Vec<Message>,
    /// Front-end tools: the browser runs them.
    #[serde(default)]
    pub tools: Vec<Tool>,
    /// Ambient information for this run.
    #[serde(default)]
    pub context: Vec<ContextItem>,
    /// The client's state: read by no one (the agent's state lives in its session), and no
    /// `STATE_SNAPSHOT` is sent.
    #[serde(default)]
    pub state: Option<Value>,
    /// Answers to the interrupts the previous run ended with.
    #[serde(default)]
    pub resume: Vec<ResumeEntry>,
}

/// One message of the conversation.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// The message's id.
    pub id: String,
    /// `user`, `assistant`, `tool`, `system`, `developer`, `reasoning` or `activity`.
    pub role: String,
    /// Text, or (for `user` and `tool`) a list of parts, of which the text parts are used.
    #[serde(default)]
    pub content: Option<Value>,
    /// An assistant message's tool calls.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// A tool message's call.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// A tool message's error, when the tool failed.
    #[serde(default)]
    pub error: Option<String>,
}

impl Message {
    /// The message's text: the string content, or its text parts joined.
    pub fn text(&self) -> String {
        match &self.content {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }

    /// Whether the content is a list of parts of which none is a non-empty text (an image or
    /// a file alone), without joining the texts.
    pub(crate) fn holds_parts_but_no_text(&self) -> bool {
        let Some(Value::Array(parts)) = &self.content else {
            return false;
        };
        !parts.iter().any(|p| {
            p.get("type").and_then(Value::as_str) == Some("text")
                && p.get("text").and_then(Value::as_str).is_some_and(|t| !t.is_empty())
        })
    }
}

/// A tool call of an assistant message.
#[derive(Debug, Clone, Deserialize)]
pub struct ToolCall {
    /// The call's id.
    pub id: String,
    /// The function called.
    pub function: FunctionCall,
}

/// The name and JSON arguments of a call.
#[derive(Debug, Clone, Deserialize)]
pub struct FunctionCall {
    /// The tool's name.
    pub name: String,
    /// The arguments, as a JSON string.
    #[serde(default)]
    pub arguments: String,
}

/// A front-end tool.
#[derive(Debug, Clone, Deserialize)]
pub struct Tool {
    /// The name the model calls it by.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The JSON schema of its arguments.
    #[serde(default)]
    pub parameters: Option<Value>,
}

/// A named piece of ambient information.
#[derive(Debug, Clone, Deserialize)]
pub struct ContextItem {
    /// What it is.
    pub description: String,
    /// Its value.
    pub value: String,
}

/// An answer to one interrupt.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    /// The interrupt answered: the tool call's id.
    pub interrupt_id: String,
    /// `resolved` or `cancelled`.
    pub status: ResumeStatus,
    /// For a confirmation: `{"approved": bool, "arguments": {..}}`, both optional.
    #[serde(default)]
    pub payload: Option<Value>,
}

/// How an interrupt was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResumeStatus {
    /// Answered (approved unless the payload says `"approved": false`).
    Resolved,
    /// Declined.
    Cancelled,
}
