//! The task list (the reference's `tasks_context` and its tools): a plan the model keeps for
//! itself with `TaskCreate`, `TaskGet`, `TaskList` and `TaskUpdate`.
//!
//! [`AgentBuilder::task_tools`](crate::AgentBuilder::task_tools) offers the four tools, with the
//! reference's names, schemas, descriptions and answers. The list lives in
//! [`AgentState::tasks`](crate::AgentState::tasks), so it is saved and resumed with the rest of
//! the state, and a caller can read or seed it. The tools are always allowed (they touch only
//! the agent's own list) and may run concurrently.
//!
//! The runtime-state hints tell the model about open tasks it has lost sight of: while tasks are
//! pending or in progress and the context holds neither a call of a task tool nor an earlier
//! `<tasks>` line (a compression removed them, or the list was seeded), the next hint says
//! `<tasks>You have {n} in-progress tasks and {m} pending tasks. Use `TaskList` to view them if
//! you don't know.</tasks>` (see [`hints`](crate::hints)).
//!
//! One deliberate difference: `TaskGet` shows a task's metadata as JSON, where the reference
//! prints a Python dict.
//!
//! # Example
//!
//! ```
//! use towerscope_agent::Agent;
//! use towerscope_agent::tasks::TaskState;
//! use towerscope_core::Msg;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let model = ScriptedModel::new("m", [
//!     ScriptedResponse::tool_call("c1", "TaskCreate", r#"{"subject": "Write the tests", "description": "all of them"}"#),
//!     ScriptedResponse::tool_call("c2", "TaskUpdate", r#"{"task_id": "1", "status": "in_progress"}"#),
//!     ScriptedResponse::text("On it."),
//! ]);
//! let agent = Agent::builder("a").model(model.clone()).task_tools(true).build()?;
//! agent.reply(Msg::user("user", "Plan the work.")).await?;
//! let tasks = agent.state().tasks;
//! assert_eq!(tasks[0].subject, "Write the tests");
//! assert_eq!(tasks[0].state, TaskState::InProgress);
//! assert!(model.requests()[0].tool_names().contains(&"TaskList"));
//! # Ok(()) }
//! ```

mod descriptions;
mod run;
mod task;

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use futures_util::stream;
use serde_json::{Value, json};
use towerscope_core::{PermissionDecision, ToolChunk, ToolResultState};

use crate::state::AgentState;
use crate::toolkit::{Tool, ToolChunkStream, Toolkit};

pub use run::MAX_TASKS;
pub use task::{Task, TaskState};

/// The names of the task tools, as the reference names them.
pub const TASK_TOOLS: [&str; 4] = ["TaskCreate", "TaskGet", "TaskList", "TaskUpdate"];

#[derive(Debug, Clone, Copy)]
enum Kind {
    Create,
    Get,
    List,
    Update,
}

impl Kind {
    const ALL: [Self; 4] = [Self::Create, Self::Get, Self::List, Self::Update];

    fn index(self) -> usize {
        self as usize
    }

    fn description(self) -> &'static str {
        match self {
            Self::Create => descriptions::CREATE,
            Self::Get => descriptions::GET,
            Self::List => descriptions::LIST,
            Self::Update => descriptions::UPDATE,
        }
    }
}

/// The reference's schemas (pydantic's, titles removed), built once per process.
fn schemas() -> &'static [Arc<Value>; 4] {
    static SCHEMAS: OnceLock<[Arc<Value>; 4]> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let or_null = |schema: Value, description: &str| {
            json!({"anyOf": [schema, {"type": "null"}], "default": null, "description": description})
        };
        let object = json!({"additionalProperties": true, "type": "object"});
        let strings = json!({"items": {"type": "string"}, "type": "array"});
        let string = json!({"type": "string"});
        let statuses = json!({"enum": ["pending", "in_progress", "completed", "deleted"], "type": "string"});
        [
            Arc::new(json!({
                "properties": {
                    "subject": {"description": "A brief title for the task", "type": "string"},
                    "description": {"description": "What needs to be done", "type": "string"},
                    "metadata": or_null(object.clone(), "Arbitrary metadata to attach to the task"),
                },
                "required": ["subject", "description"],
                "type": "object",
            })),
            Arc::new(json!({
                "properties": {"task_id": {"description": "The ID of the task to retrieve", "type": "string"}},
                "required": ["task_id"],
                "type": "object",
            })),
            Arc::new(json!({"properties": {}, "type": "object"})),
            Arc::new(json!({
                "properties": {
                    "task_id": {"description": "The task id.", "type": "string"},
                    "subject": or_null(string.clone(), "New subject for the task"),
                    "description": or_null(string.clone(), "New description for the task"),
                    "add_blocks": or_null(strings.clone(), "Task IDs that this task blocks"),
                    "status": or_null(statuses, "New status for the task"),
                    "add_blocked_by": or_null(strings, "Task IDs that block this task"),
                    "owner": or_null(string, "New owner for the task"),
                    "metadata": or_null(object, "Metadata keys to merge into the task. Set a key to null to delete it."),
                },
                "required": ["task_id"],
                "type": "object",
            })),
        ]
    })
}

/// One task tool over one agent's state.
struct TaskTool {
    kind: Kind,
    state: Arc<Mutex<AgentState>>,
}

impl Tool for TaskTool {
    fn name(&self) -> &str {
        TASK_TOOLS[self.kind.index()]
    }

    fn description(&self) -> &str {
        self.kind.description()
    }

    fn input_schema(&self) -> &Value {
        &schemas()[self.kind.index()]
    }

    fn shared_input_schema(&self) -> Arc<Value> {
        Arc::clone(&schemas()[self.kind.index()])
    }

    fn check_permission(&self, _input: &Value) -> Option<PermissionDecision> {
        // Only the agent's own list changes: always allowed, as in the reference.
        Some(PermissionDecision::Allow)
    }

    fn call(&self, input: Value) -> ToolChunkStream {
        let answer = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let tasks = &mut state.tasks;
            match self.kind {
                Kind::Create => run::create(tasks, &input),
                Kind::Get => run::get(tasks, &input),
                Kind::List => run::list(tasks),
                Kind::Update => run::update(tasks, &input),
            }
        };
        let chunk = match answer {
            Ok(text) => ToolChunk::text(text),
            Err(text) => ToolChunk::text(text).with_state(ToolResultState::Error),
        };
        Box::pin(stream::iter([Ok(chunk)]))
    }
}

/// Adds the four tools, over `state`'s list, to `toolkit` (replacing tools of the same names).
pub(crate) fn add_tools(toolkit: &mut Toolkit, state: &Arc<Mutex<AgentState>>) {
    for kind in Kind::ALL {
        let tool = TaskTool {
            kind,
            state: Arc::clone(state),
        };
        if let Err(e) = toolkit.try_add(tool) {
            // The schemas above are plain objects the validator enforces; refusing one is a bug.
            tracing::error!(error = %e, "a task tool could not be added");
        }
    }
}

/// How many open tasks are in progress and pending.
pub(crate) fn open_counts(tasks: &[Task]) -> (usize, usize) {
    tasks.iter().fold((0, 0), |(in_progress, pending), t| match t.state {
        TaskState::InProgress => (in_progress + 1, pending),
        TaskState::Pending => (in_progress, pending + 1),
        TaskState::Completed => (in_progress, pending),
    })
}
