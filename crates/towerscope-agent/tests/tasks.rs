//! The task list and its runtime-state hints, as the reference offers them: the four task tools
//! with the reference's schemas and answers, the list kept in the saved state, the `tasks` line
//! when the model lost sight of open tasks, and the `tool-error` line when the same call keeps
//! failing. What is checked is what the model receives.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, UNIX_EPOCH};

use common::results;
use towerscope_agent::clock::Clock;
use towerscope_agent::tasks::{TASK_TOOLS, Task, TaskState};
use towerscope_agent::toolkit::FunctionTool;
use towerscope_agent::{Agent, AgentState, DEFAULT_HINT_SOURCE, HintConfig};
use towerscope_core::{ContentBlock, Msg, ToolResultState};
use towerscope_models::{RecordedRequest, ScriptedModel, ScriptedResponse};

const NOW: u64 = 1_795_248_355; // 2026-11-21T08:05:55 UTC

fn hints() -> HintConfig {
    HintConfig::new().clock(Clock::fixed(UNIX_EPOCH + Duration::from_secs(NOW)))
}

/// The runtime-state hints the model received in one call, oldest first.
fn hints_seen(req: &RecordedRequest) -> Vec<String> {
    req.messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::Hint(h) if h.source.as_deref() == Some(DEFAULT_HINT_SOURCE) => h.text(),
            _ => None,
        })
        .collect()
}

fn wrapped(lines: &str) -> String {
    format!(
        "<system-reminder>Treat the following as the ground truth at this point of the conversation. Anything \
         stated earlier is outdated, and a later reminder, if any, supersedes this one:\n{lines}\n</system-reminder>"
    )
}

const TIME: &str = "<current-time>2026-11-21T08:05:55</current-time>\n<timezone>UTC</timezone>";

#[tokio::test]
async fn the_task_tools_keep_the_list_in_the_state_with_the_references_schemas_and_answers() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "TaskCreate", r#"{"subject": "Design", "description": "the API"}"#)
                .and_tool_call(
                    "c2",
                    "TaskCreate",
                    r#"{"subject": "Build", "description": "it", "metadata": {"size": "L"}}"#,
                ),
            ScriptedResponse::tool_call("c3", "TaskUpdate", r#"{"task_id": "2", "add_blocked_by": ["1"]}"#)
                .and_tool_call(
                    "c4",
                    "TaskUpdate",
                    r#"{"task_id": "1", "status": "in_progress", "owner": "me"}"#,
                ),
            ScriptedResponse::tool_call("c5", "TaskList", "{}").and_tool_call("c6", "TaskGet", r#"{"task_id": "2"}"#),
            ScriptedResponse::tool_call("c7", "TaskUpdate", r#"{"task_id": "9", "status": "completed"}"#),
            ScriptedResponse::text("Planned."),
        ],
    );
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model.clone())
        .task_tools(true)
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "Plan it.")).await.unwrap();

    let offered = &model.requests()[0];
    assert_eq!(offered.tool_names(), TASK_TOOLS);
    let get = &offered.tools[1];
    assert_eq!(
        *get.parameters,
        serde_json::json!({"properties": {"task_id": {"description": "The ID of the task to retrieve", "type": "string"}},
                           "required": ["task_id"], "type": "object"})
    );
    assert!(
        get.description
            .starts_with("Use this tool to retrieve a task by its ID from the task list.")
    );

    let state = agent.state();
    let answers: Vec<(String, ToolResultState)> = results(&state.context[1])
        .iter()
        .map(|r| (r.output.text_content().unwrap(), r.state))
        .collect();
    let ok = ToolResultState::Success;
    assert_eq!(
        answers,
        [
            ("Task (id=1) created successfully: Design".to_owned(), ok),
            ("Task (id=2) created successfully: Build".to_owned(), ok),
            ("Update task (id=2) add_blocked_by.".to_owned(), ok),
            ("Update task (id=1) status, owner.".to_owned(), ok),
            (
                "1 [in_progress] Design(me)\n2 [pending] Build[blocked by 1]".to_owned(),
                ok
            ),
            (
                "Task (id=2): Build\nStatus: pending\nDescription: it\nBlocked by: #1\nMetadata: {\"size\":\"L\"}"
                    .to_owned(),
                ok
            ),
            (
                "TaskNotFoundError: The task (id=9) does not exist.".to_owned(),
                ToolResultState::Error
            ),
        ]
    );
    // The list is part of the saved state: a new agent built from it has the same tasks.
    let saved = serde_json::to_string(&state).unwrap();
    let restored: AgentState = serde_json::from_str(&saved).unwrap();
    assert_eq!(restored.tasks, state.tasks);
    assert_eq!(restored.tasks[0].state, TaskState::InProgress);
    assert_eq!(restored.tasks[1].blocked_by, ["1"]);
}

#[tokio::test]
async fn open_tasks_the_context_does_not_show_are_told_once() {
    let mut state = AgentState::new();
    state.tasks = vec![
        Task::new("1", "Design", "the API").with_state(TaskState::InProgress),
        Task::new("2", "Build", "it"),
        Task::new("3", "Old", "done").with_state(TaskState::Completed),
    ];
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "lookup", "{}"),
            ScriptedResponse::text("Going on."),
            ScriptedResponse::text("Still going."),
        ],
    );
    let agent = Agent::builder("a")
        .hints(hints())
        .model(model.clone())
        .tool(FunctionTool::new("lookup", |_: Anything| async { "found".to_owned() }))
        .task_tools(true)
        .state(state)
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "Carry on.")).await.unwrap();
    let tasks = "<tasks>You have 1 in-progress tasks and 1 pending tasks. Use `TaskList` to view them if you don't \
                 know.</tasks>";
    let requests = model.requests();
    assert_eq!(hints_seen(&requests[0]), [wrapped(&format!("{TIME}\n{tasks}"))]);
    // The next round: the earlier `tasks` line is in the context, so it is not repeated.
    assert_eq!(hints_seen(&requests[1]).len(), 1);
    agent.reply(Msg::user("user", "And?")).await.unwrap();
    assert_eq!(hints_seen(&model.requests()[2]).len(), 1, "no new hint");

    // A context that shows a task tool call: nothing to tell.
    let mut state = AgentState::new();
    state.tasks = vec![Task::new("1", "Design", "the API")];
    state.context.push(Msg::user("user", "plan"));
    let mut planned = Msg::assistant("a", "");
    planned
        .content
        .push(ContentBlock::ToolCall(towerscope_core::ToolCallBlock::new(
            "t1", "TaskList", "{}",
        )));
    state.context.push(planned);
    let model = ScriptedModel::new("m", [ScriptedResponse::text("ok")]);
    let agent = Agent::builder("a")
        .hints(hints())
        .model(model.clone())
        .state(state)
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "go")).await.unwrap();
    assert_eq!(hints_seen(&model.requests()[0]), [wrapped(TIME)]);
}

/// Any arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Anything {}

/// A `fetch` tool that always fails.
fn failing_fetch() -> FunctionTool {
    FunctionTool::new("fetch", |_: Anything| async { Err::<String, _>("connection refused") })
}

#[tokio::test]
async fn the_same_call_failing_three_times_in_a_row_brings_the_tool_error_line() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "fetch", r#"{"url": "x", "n": 1}"#),
            // The same arguments in another key order are the same call.
            ScriptedResponse::tool_call("c2", "fetch", r#"{"n": 1, "url": "x"}"#),
            ScriptedResponse::tool_call("c3", "fetch", r#"{"url":"x","n":1}"#),
            ScriptedResponse::tool_call("c4", "fetch", r#"{"url": "y"}"#),
            ScriptedResponse::text("I give up."),
        ],
    );
    let agent = Agent::builder("a")
        .hints(hints())
        .model(model.clone())
        .tool(failing_fetch())
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "Fetch x.")).await.unwrap();
    let requests = model.requests();
    let count = |i: usize| hints_seen(&requests[i]).len();
    assert_eq!([count(0), count(1), count(2)], [1, 1, 1], "two failures: only the time");
    let error = "<tool-error>The last 3 calls to 'fetch' with the same arguments all failed. Stop retrying the same \
                 call as-is, check the error message and try a different approach.</tool-error>";
    assert_eq!(hints_seen(&requests[3]).last().unwrap(), &wrapped(error));
    // Other arguments end the streak.
    assert_eq!(count(4), 2);
}

#[tokio::test]
async fn different_arguments_or_a_success_in_between_bring_no_tool_error_line_and_the_limit_is_at_least_three() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "fetch", r#"{"url": "a"}"#),
            ScriptedResponse::tool_call("c2", "fetch", r#"{"url": "b"}"#),
            ScriptedResponse::tool_call("c3", "fetch", r#"{"url": "c"}"#),
            ScriptedResponse::text("No luck."),
        ],
    );
    let agent = Agent::builder("a")
        .hints(hints().tool_retries_hint("{tool_name} failed {count} times"))
        .model(model.clone())
        .tool(failing_fetch())
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "Fetch.")).await.unwrap();
    assert!(model.requests().iter().all(|r| hints_seen(r).len() == 1));

    let err = Agent::builder("a")
        .hints(hints().tool_retries_limit(2))
        .model(ScriptedModel::new("m", []))
        .build()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("tool_retries_limit must be at least 3, got 2."),
        "{err}"
    );
}

#[tokio::test]
async fn with_a_task_in_progress_the_context_length_line_does_not_invite_a_compression() {
    let mut state = AgentState::new();
    state.tasks = vec![Task::new("1", "Design", "the API").with_state(TaskState::InProgress)];
    let model = ScriptedModel::new("m", [ScriptedResponse::text("ok")]).context_size(1000);
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(hints())
        .context(towerscope_agent::ContextConfig::new().compression_tool(true))
        .state(state)
        .build()
        .unwrap();
    // About 650 tokens with the CompressContext tool's schema: over 60% of 1000, under 80%.
    agent.observe([Msg::user("user", "y".repeat(2000))]).unwrap();
    agent.reply(Msg::user("user", "and now?")).await.unwrap();
    let hint = hints_seen(&model.requests()[0]).pop().unwrap();
    let line = hint.lines().find(|l| l.starts_with("<context-length>")).unwrap();
    assert!(
        line.ends_with(" tokens. When reaching 800 tokens, your context will be compressed.</context-length>"),
        "{line}"
    );
    assert!(hint.contains("<tasks>You have 1 in-progress tasks and 0 pending tasks."));
    let order: Vec<&str> = hint
        .lines()
        .filter_map(|l| l.strip_prefix('<').and_then(|l| l.split('>').next()))
        .collect();
    assert_eq!(
        order,
        [
            "system-reminder",
            "current-time",
            "timezone",
            "tasks",
            "context-length",
            "/system-reminder"
        ]
    );
}
