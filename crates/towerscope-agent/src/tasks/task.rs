//! [`Task`]: one entry of the agent's task list, as the reference stores it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use towerscope_core::Timestamp;

/// Where a task stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Not started (every task starts here).
    #[default]
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

impl TaskState {
    /// The state as the model reads and writes it: `pending`, `in_progress`, `completed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
        }
    }

    /// Whether the task still has work left (pending or in progress).
    pub fn is_open(self) -> bool {
        self != Self::Completed
    }
}

/// One task of the agent's list (the reference's `Task`), kept in
/// [`AgentState::tasks`](crate::AgentState::tasks), so it is saved and resumed with the state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// The task's id: `1`, `2`, … in creation order (one more than the largest numeric id).
    pub id: String,
    /// A brief title.
    pub subject: String,
    /// What needs to be done.
    pub description: String,
    /// Anything attached to the task.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// When the task was created.
    #[serde(default = "towerscope_core::id::now_timestamp")]
    pub created_at: Timestamp,
    /// Where the task stands.
    #[serde(default)]
    pub state: TaskState,
    /// Who works on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The ids of the tasks waiting for this one.
    #[serde(default)]
    pub blocks: Vec<String>,
    /// The ids of the tasks this one waits for.
    #[serde(default)]
    pub blocked_by: Vec<String>,
}

impl Task {
    /// A pending task.
    pub fn new(id: impl Into<String>, subject: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            subject: subject.into(),
            description: description.into(),
            metadata: Map::new(),
            created_at: Timestamp::now(),
            state: TaskState::Pending,
            owner: None,
            blocks: Vec::new(),
            blocked_by: Vec::new(),
        }
    }

    /// The same task in `state`.
    #[must_use]
    pub fn with_state(mut self, state: TaskState) -> Self {
        self.state = state;
        self
    }
}

/// The id of the next task: one more than the largest numeric id (ids that are not numbers are
/// ignored, as in the reference).
pub(crate) fn next_id(tasks: &[Task]) -> String {
    let max = tasks.iter().filter_map(|t| t.id.parse::<u64>().ok()).max().unwrap_or(0);
    max.saturating_add(1).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_count_from_the_largest_number() {
        assert_eq!(next_id(&[]), "1");
        let tasks = [
            Task::new("3", "a", ""),
            Task::new("legacy-uuid", "b", ""),
            Task::new("1", "c", ""),
        ];
        assert_eq!(next_id(&tasks), "4");
    }

    #[test]
    fn states_read_as_the_model_writes_them() {
        let task = Task::new("1", "Ship", "ship it").with_state(TaskState::InProgress);
        let json = serde_json::to_value(&task).unwrap_or_default();
        assert_eq!(json["state"], "in_progress");
        assert_eq!(TaskState::InProgress.as_str(), "in_progress");
    }
}
