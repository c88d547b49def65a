//! [`Task`], its [`TaskState`]s, and what a stream carries.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::message::{Message, Part};

/// Where a task is in its life.
///
/// ```text
/// submitted ─▶ working ─┬─▶ completed | failed | canceled     (terminal)
///                       └─▶ input-required ─(next message)─▶ working
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum TaskState {
    /// Not set.
    #[default]
    #[serde(rename = "TASK_STATE_UNSPECIFIED")]
    Unspecified,
    /// Received, not started.
    #[serde(rename = "TASK_STATE_SUBMITTED", alias = "submitted")]
    Submitted,
    /// The agent is replying.
    #[serde(rename = "TASK_STATE_WORKING", alias = "working")]
    Working,
    /// The reply finished.
    #[serde(rename = "TASK_STATE_COMPLETED", alias = "completed")]
    Completed,
    /// The reply failed.
    #[serde(rename = "TASK_STATE_FAILED", alias = "failed")]
    Failed,
    /// The task was canceled (`CancelTask`).
    #[serde(rename = "TASK_STATE_CANCELED", alias = "canceled")]
    Canceled,
    /// The reply is parked until the client answers (a tool call waiting for confirmation).
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED", alias = "input-required")]
    InputRequired,
    /// The agent refused the task.
    #[serde(rename = "TASK_STATE_REJECTED", alias = "rejected")]
    Rejected,
    /// The agent needs the client to authenticate.
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED", alias = "auth-required")]
    AuthRequired,
}

impl TaskState {
    /// Whether the task can no longer change.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled | Self::Rejected)
    }

    /// Whether the task stopped, for now or for good: terminal or waiting for the client.
    pub fn is_stopped(self) -> bool {
        self.is_terminal() || matches!(self, Self::InputRequired | Self::AuthRequired)
    }
}

/// A task's state, with the agent's message about it and when it was set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    /// The agent's message (the question of an input-required task, the reason of a failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When the state was set (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// An output of a task (here: the agent's answer).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// The artifact's id, stable across the updates that build it.
    pub artifact_id: String,
    /// A name for it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The content.
    #[serde(default)]
    pub parts: Vec<Part>,
}

impl Artifact {
    /// The artifact's text parts, concatenated.
    pub fn text(&self) -> String {
        self.parts.iter().filter_map(|p| p.text.as_deref()).collect()
    }
}

/// A unit of work: one reply of the agent, or several when it waits for input.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task's id.
    pub id: String,
    /// The conversation (session) it belongs to.
    pub context_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// Its outputs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// The messages exchanged (the client's, and the agent's status messages).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// Metadata of the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl Task {
    /// The answer: the artifacts' text, else the status message's.
    pub fn answer_text(&self) -> String {
        let artifacts: String = self.artifacts.iter().map(Artifact::text).collect();
        if !artifacts.is_empty() {
            return artifacts;
        }
        self.status.message.as_ref().map(Message::text).unwrap_or_default()
    }

    /// The answer's file parts, as [`answer_text`](Self::answer_text) reads its text: the
    /// artifacts', else the status message's.
    pub(crate) fn file_parts(&self) -> Vec<&Part> {
        let artifacts: Vec<&Part> = self
            .artifacts
            .iter()
            .flat_map(|a| &a.parts)
            .filter(|p| p.is_file())
            .collect();
        if !artifacts.is_empty() {
            return artifacts;
        }
        self.status
            .message
            .iter()
            .flat_map(|m| &m.parts)
            .filter(|p| p.is_file())
            .collect()
    }
}

/// A task's status changed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    pub task_id: String,
    /// Its context.
    pub context_id: String,
    /// The new status.
    pub status: TaskStatus,
}

/// An artifact grew or was replaced.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    pub task_id: String,
    /// Its context.
    pub context_id: String,
    /// The artifact (with only the new parts when `append`).
    pub artifact: Artifact,
    /// Whether the parts extend the artifact of the same id.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub append: bool,
    /// Whether this is the artifact's last update.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub last_chunk: bool,
}

/// One item of `SendStreamingMessage`: exactly one of its fields in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// The whole task (first, and after a client fell behind).
    Task(Task),
    /// A direct message (no task).
    Message(Message),
    /// A status change.
    StatusUpdate(TaskStatusUpdateEvent),
    /// An artifact update.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

/// The answer of `SendMessage`: a task, or a direct message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    /// The task the message started or continued.
    Task(Task),
    /// A direct message.
    Message(Message),
}

impl SendMessageResponse {
    /// The answer's text: the task's (artifacts, else status message) or the message's.
    pub fn answer_text(&self) -> String {
        match self {
            Self::Task(task) => task.answer_text(),
            Self::Message(message) => message.text(),
        }
    }

    /// The task, if the agent answered with one.
    pub fn task(&self) -> Option<&Task> {
        match self {
            Self::Task(task) => Some(task),
            Self::Message(_) => None,
        }
    }
}
