//! Human in the loop and tools executed outside the agent: park, resume, deny, interrupt, and
//! resume from a saved state with a new agent.
#![allow(clippy::unwrap_used)]

mod common;

use common::{RemoteSearch, assert_consistent, collect};
use towerscope_agent::toolkit::FunctionTool;
use towerscope_agent::{Agent, AgentState};
use towerscope_core::event::{ConfirmResult, ExternalExecutionResultEvent, UserConfirmResultEvent, UserInterruptEvent};
use towerscope_core::{
    AgentEvent, Msg, PermissionDecision, ReplyFinishedReason, ToolCallState, ToolResultBlock, ToolResultState,
};
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// Delete a file.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Delete {
    /// The path.
    path: String,
}

fn delete_tool() -> FunctionTool {
    FunctionTool::new("delete", |a: Delete| async move { format!("deleted {}", a.path) })
}

fn asking_agent(model: &ScriptedModel) -> Agent {
    Agent::builder("a")
        .model(model.clone())
        .tool(delete_tool())
        .default_permission(PermissionDecision::Ask {
            suggested_rules: vec![],
        })
        .build()
        .unwrap()
}

fn parked_call(out: &common::Collected) -> towerscope_core::ToolCallBlock {
    out.events
        .iter()
        .find_map(|e| match e {
            AgentEvent::RequireUserConfirm(e) => Some(e.tool_calls[0].clone()),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn ask_parks_then_confirmation_resumes_with_edited_arguments() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/a"}"#),
            ScriptedResponse::text("done"),
        ],
    );
    let agent = asking_agent(&model);
    let first = collect(agent.reply_stream(Msg::user("user", "clean up"))).await;
    assert!(!first.kinds().contains(&"REPLY_END"), "a parked reply has no REPLY_END");
    assert_eq!(first.kinds().last(), Some(&"REQUIRE_USER_CONFIRM"));
    let call = parked_call(&first);
    assert_eq!(call.state, ToolCallState::Asking);
    assert_eq!(call.suggested_rules[0].tool_name, "delete");
    let parked = first.final_msg.unwrap();
    assert_eq!(
        parked.text_content().as_deref(),
        Some("I'm waiting for your permission or the external execution to finish.")
    );
    assert_eq!(parked.finished_reason, None);

    // A new message while parked is refused, and loses nothing.
    let err = agent.reply(Msg::user("user", "hello?")).await.unwrap_err();
    assert!(err.to_string().contains("waiting for 1 tool calls"), "{err}");

    let mut edited = call.clone();
    edited.input = r#"{"path": "/tmp/b"}"#.into();
    let confirm = UserConfirmResultEvent::new(parked.id.clone(), vec![ConfirmResult::new(true, edited)]);
    let second = collect(agent.reply_stream(confirm)).await;
    assert!(!second.kinds().contains(&"REPLY_START"), "a resume has no REPLY_START");
    assert_eq!(
        &second.kinds()[..3],
        ["TOOL_RESULT_START", "TOOL_RESULT_TEXT_DELTA", "TOOL_RESULT_END"]
    );
    let AgentEvent::ToolResultTextDelta(delta) = &second.events[1] else {
        panic!()
    };
    assert_eq!(delta.delta, "deleted /tmp/b", "the user's edit reached the tool");
    let done = second.final_msg.unwrap();
    assert_eq!(done.text_content().as_deref(), Some("done"));
    assert_eq!(done.id, parked.id, "the resume continues the same reply");
    assert_consistent(&agent.state().context);
}

/// The reference copies the confirmation's tool name into the call; here a confirmation may
/// edit the arguments only. A client answering an ask (over AG-UI, say) cannot turn the call
/// it was asked about into a call of another tool, which the permission rules never saw.
#[tokio::test]
async fn a_confirmation_that_names_another_tool_is_refused_and_runs_nothing() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/a"}"#),
            ScriptedResponse::text("done"),
        ],
    );
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let wipe = {
        let runs = std::sync::Arc::clone(&runs);
        FunctionTool::new("wipe", move |a: Delete| {
            runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move { format!("wiped {}", a.path) }
        })
    };
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(delete_tool())
        .tool(wipe)
        .default_permission(PermissionDecision::Ask {
            suggested_rules: vec![],
        })
        .build()
        .unwrap();
    let first = collect(agent.reply_stream(Msg::user("user", "clean up"))).await;
    let call = parked_call(&first);
    let mut renamed = call.clone();
    renamed.name = "wipe".into();
    let reply_id = first.final_msg.unwrap().id;
    let confirm = UserConfirmResultEvent::new(reply_id.clone(), vec![ConfirmResult::new(true, renamed)]);
    let err = agent.reply(confirm).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid agent state: UserConfirmResultEvent gives tool call 'c1' the tool 'wipe', but it calls 'delete': a \
         confirmation may change a call's arguments, not its tool."
    );
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 0);
    // Nothing was lost: the call still waits, and the confirmation the user meant runs it.
    assert_eq!(
        agent.state().context.last().unwrap().tool_calls().next().unwrap().state,
        ToolCallState::Asking
    );
    let confirm = UserConfirmResultEvent::new(reply_id, vec![ConfirmResult::new(true, call)]);
    let done = collect(agent.reply_stream(confirm)).await;
    let AgentEvent::ToolResultTextDelta(delta) = &done.events[1] else {
        panic!()
    };
    assert_eq!(delta.delta, "deleted /tmp/a");
    assert_eq!(done.final_text().as_deref(), Some("done"));
}

#[tokio::test]
async fn a_denied_call_gets_the_reference_text_and_the_loop_goes_on() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/"}"#),
            ScriptedResponse::text("ok, I won't"),
        ],
    );
    let agent = asking_agent(&model);
    let first = collect(agent.reply_stream(Msg::user("user", "clean up"))).await;
    let call = parked_call(&first);
    let reply_id = first.final_msg.unwrap().id;
    let deny = UserConfirmResultEvent::new(reply_id, vec![ConfirmResult::new(false, call)]);
    let second = collect(agent.reply_stream(deny)).await;
    let AgentEvent::ToolResultTextDelta(delta) = &second.events[1] else {
        panic!()
    };
    assert_eq!(
        delta.delta,
        "<system-reminder>The execution of tool \"delete\" is denied by user!</system-reminder>"
    );
    let AgentEvent::ToolResultEnd(end) = &second.events[2] else {
        panic!()
    };
    assert_eq!(end.state, ToolResultState::Denied);
    assert_eq!(second.final_text().as_deref(), Some("ok, I won't"));
}

#[tokio::test]
async fn an_accepted_rule_allows_later_calls_without_asking() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/a"}"#),
            ScriptedResponse::text("one"),
            ScriptedResponse::tool_call("c2", "delete", r#"{"path": "/b"}"#),
            ScriptedResponse::text("two"),
        ],
    );
    let agent = asking_agent(&model);
    let first = collect(agent.reply_stream(Msg::user("user", "1"))).await;
    let call = parked_call(&first);
    let rules = call.suggested_rules.clone();
    let reply_id = first.final_msg.unwrap().id;
    let confirm = UserConfirmResultEvent::new(reply_id, vec![ConfirmResult::new(true, call).with_rules(rules)]);
    collect(agent.reply_stream(confirm)).await;
    let next = collect(agent.reply_stream(Msg::user("user", "2"))).await;
    assert!(!next.kinds().contains(&"REQUIRE_USER_CONFIRM"));
    assert_eq!(next.final_text().as_deref(), Some("two"));
}

#[tokio::test]
async fn interrupting_a_parked_reply_closes_its_calls() {
    let model = ScriptedModel::new("m", [ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/"}"#)]);
    let agent = asking_agent(&model);
    let first = collect(agent.reply_stream(Msg::user("user", "clean up"))).await;
    let reply_id = first.final_msg.unwrap().id;
    let out = collect(agent.reply_stream(UserInterruptEvent::new(reply_id))).await;
    assert_eq!(
        out.kinds(),
        [
            "TOOL_RESULT_START",
            "TOOL_RESULT_TEXT_DELTA",
            "TOOL_RESULT_END",
            "REPLY_END"
        ]
    );
    let msg = out.final_msg.unwrap();
    assert_eq!(msg.finished_reason, Some(ReplyFinishedReason::Interrupted));
    assert_eq!(
        msg.text_content().as_deref(),
        Some("I notice the interruption. How can I help you?")
    );
    let context = agent.state().context;
    assert_consistent(&context);
    // A call that never ran (it waited for confirmation) keeps the reference's raw string,
    // where a call interrupted while running gets a text block (tests/interrupt.rs).
    let stored = context.iter().flat_map(common::results).next().unwrap().clone();
    assert_eq!(stored.state, ToolResultState::Interrupted);
    assert_eq!(
        stored.output,
        towerscope_core::ToolOutput::Text(
            "<system-reminder>The tool call has been interrupted by the user.</system-reminder>".into()
        )
    );
    // An idle agent: no events, and no final message.
    let idle = collect(agent.reply_stream(UserInterruptEvent::new("whatever"))).await;
    assert!(idle.events.is_empty() && idle.final_msg.is_none());
}

#[tokio::test]
async fn external_execution_parks_and_resumes_from_a_saved_state_in_a_new_agent() {
    let script = || {
        ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "search", r#"{"q": "holidays"}"#),
                ScriptedResponse::text("You have 12 days left."),
            ],
        )
    };
    let model = script();
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(RemoteSearch)
        .build()
        .unwrap();
    let first = collect(agent.reply_stream(Msg::user("user", "holidays?"))).await;
    assert_eq!(
        &first.kinds()[first.kinds().len() - 2..],
        ["TOOL_RESULT_START", "REQUIRE_EXTERNAL_EXECUTION"]
    );
    let reply_id = first.final_msg.unwrap().id;

    // Save, then resume with a new agent built from the saved state (as after a restart).
    let saved = serde_json::to_string(&agent.state()).unwrap();
    let restored: AgentState = serde_json::from_str(&saved).unwrap();
    let resumed = ScriptedModel::new("m", [ScriptedResponse::text("You have 12 days left.")]);
    let agent2 = Agent::builder("a")
        .model(resumed.clone())
        .tool(RemoteSearch)
        .state(restored)
        .build()
        .unwrap();
    let result = ToolResultBlock::new("c1", "search", "12 days of holidays left", ToolResultState::Success);
    let out = collect(agent2.reply_stream(ExternalExecutionResultEvent::new(reply_id.clone(), vec![result]))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(
        &out.kinds()[..2],
        ["TOOL_RESULT_TEXT_DELTA", "TOOL_RESULT_END"],
        "no second TOOL_RESULT_START"
    );
    let msg = out.final_msg.unwrap();
    assert_eq!(msg.text_content().as_deref(), Some("You have 12 days left."));
    assert_eq!(msg.id, reply_id);
    // The model saw the external result.
    let seen = resumed.requests()[0].messages.last().unwrap().clone();
    assert_eq!(
        common::results(&seen)[0].output.text_content().as_deref(),
        Some("12 days of holidays left")
    );
    assert_consistent(&agent2.state().context);
}

#[tokio::test]
async fn a_dropped_reply_leaves_no_call_without_result() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/a"}"#),
            ScriptedResponse::text("next"),
        ],
    );
    let agent = Agent::builder("a").model(model).tool(delete_tool()).build().unwrap();
    let mut stream = agent.reply_stream(Msg::user("user", "go"));
    // Read up to the end of the model call, then drop the stream before the tool runs.
    use futures_util::StreamExt;
    while let Some(item) = stream.next().await {
        if let Ok(towerscope_core::ReplyItem::Event(AgentEvent::ModelCallEnd(_))) = item {
            break;
        }
    }
    drop(stream);
    let msg = agent.reply(Msg::user("user", "still there?")).await.unwrap();
    assert_eq!(msg.text_content().as_deref(), Some("next"));
    let context = agent.state().context;
    assert_consistent(&context);
    let closed = context.iter().flat_map(|m| m.tool_results()).next().unwrap();
    assert_eq!(closed.state, ToolResultState::Interrupted);
}

/// Append a line to the log.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Line {
    /// The line.
    n: u32,
}

type Lines = std::sync::Arc<std::sync::Mutex<Vec<u32>>>;

/// A tool `name` writing its line to `log`, that may run beside others when `safe`.
fn logging_tool(log: &Lines, name: &str, safe: bool) -> FunctionTool {
    let written = std::sync::Arc::clone(log);
    FunctionTool::new(name, move |a: Line| {
        written.lock().unwrap().push(a.n);
        async move { "ok".to_owned() }
    })
    .concurrency_safe(safe)
}

/// An agent with `tools`, asking before any call but those of the tools `allowed` by a rule.
fn agent_asking_but_for(model: ScriptedModel, tools: Vec<FunctionTool>, allowed: &[&str]) -> Agent {
    use towerscope_core::{PermissionBehavior, PermissionRule};
    let mut builder = Agent::builder("a").model(model);
    for tool in tools {
        builder = builder.tool(tool);
    }
    let agent = builder
        .default_permission(PermissionDecision::Ask {
            suggested_rules: vec![],
        })
        .build()
        .unwrap();
    let mut state = AgentState::new();
    for tool in allowed {
        state
            .permission_rules
            .push(PermissionRule::new(*tool, PermissionBehavior::Allow, "user"));
    }
    agent.load_state(state).unwrap();
    agent
}

/// The calls of the agent's last message that have no result, and their states.
fn unfinished_calls(agent: &Agent) -> Vec<(String, ToolCallState)> {
    let state = agent.state();
    state
        .context
        .last()
        .unwrap()
        .tool_calls()
        .filter(|c| c.state != ToolCallState::Finished)
        .map(|c| (c.id.to_string(), c.state))
        .collect()
}

/// A sequential batch stops at the first call that waits for the user: the calls before it
/// ran once each, in order; the one after it did not run. With a thousand calls before it, the
/// check after each call (is it parked?) finds the call where the last lookup left off.
#[tokio::test]
async fn a_sequential_batch_stops_at_the_call_that_asks_after_a_thousand_that_ran() {
    let log = Lines::default();
    let calls = 1_000u32;
    let mut answer = ScriptedResponse::tool_call("a0", "append", r#"{"n": 0}"#);
    for n in 1..calls {
        answer = answer.and_tool_call(format!("a{n}"), "append", format!(r#"{{"n": {n}}}"#));
    }
    answer = answer
        .and_tool_call("d", "delete", r#"{"path": "/tmp/x"}"#)
        .and_tool_call("after", "append", r#"{"n": 99999}"#);
    let model = ScriptedModel::new("m", [answer, ScriptedResponse::text("done")]);
    let tools = vec![
        logging_tool(&log, "append", false),
        delete_tool().concurrency_safe(false),
    ];
    let agent = agent_asking_but_for(model, tools, &["append"]);

    let out = collect(agent.reply_stream(Msg::user("user", "go"))).await;
    assert_eq!(
        *log.lock().unwrap(),
        (0..calls).collect::<Vec<_>>(),
        "each call before it ran once, in order"
    );
    assert_eq!(out.kinds().last(), Some(&"REQUIRE_USER_CONFIRM"));
    assert_eq!(parked_call(&out).id.to_string(), "d");
    assert_eq!(
        agent.state().context.last().unwrap().tool_results().count(),
        calls as usize
    );
    assert_eq!(
        unfinished_calls(&agent),
        [
            ("d".to_owned(), ToolCallState::Asking),
            ("after".to_owned(), ToolCallState::Pending)
        ]
    );
}

/// A round of many batches (calls that may run together alternating with calls that may not)
/// runs them in order, and stops after the batch whose call waits for the user: here a
/// concurrent batch of two, after two hundred batches that ran; the batch after it does not
/// run.
#[tokio::test]
async fn a_round_of_alternating_batches_stops_after_the_batch_that_parks() {
    let log = Lines::default();
    let batches = 200u32;
    let mut answer = ScriptedResponse::text("");
    for n in 0..batches {
        let tool = if n % 2 == 0 { "append" } else { "note" };
        answer = answer.and_tool_call(format!("c{n}"), tool, format!(r#"{{"n": {n}}}"#));
    }
    // The last batch that ran was a sequential one (`n` = 198 is even, 199 odd: a `note`), so
    // the asking `delete` shares a concurrent batch with one more `note`.
    answer = answer
        .and_tool_call("n", "note", r#"{"n": 1000}"#)
        .and_tool_call("d", "delete", r#"{"path": "/tmp/x"}"#)
        .and_tool_call("after", "append", r#"{"n": 99999}"#);
    let model = ScriptedModel::new("m", [answer, ScriptedResponse::text("done")]);
    // `delete` may run beside others: it asks in a concurrent batch, and the loop, not the
    // batch, must stop before the sequential `after`.
    let tools = vec![
        logging_tool(&log, "append", false),
        logging_tool(&log, "note", true),
        delete_tool(),
    ];
    let agent = agent_asking_but_for(model, tools, &["append", "note"]);

    let out = collect(agent.reply_stream(Msg::user("user", "go"))).await;
    let mut expected: Vec<u32> = (0..batches).collect();
    expected.push(1000);
    assert_eq!(*log.lock().unwrap(), expected, "every batch before it ran, in order");
    assert_eq!(out.kinds().last(), Some(&"REQUIRE_USER_CONFIRM"));
    assert_eq!(parked_call(&out).id.to_string(), "d");
    assert_eq!(
        unfinished_calls(&agent),
        [
            ("d".to_owned(), ToolCallState::Asking),
            ("after".to_owned(), ToolCallState::Pending)
        ]
    );
}

/// Reads `stream` to its end, calling `agent.interrupt()` at the first event of kind `at`.
async fn interrupting_at(agent: &Agent, stream: towerscope_agent::ReplyStream, at: &str) -> common::Collected {
    use futures_util::StreamExt;
    let mut stream = stream;
    let mut out = common::Collected {
        events: Vec::new(),
        final_msg: None,
        error: None,
    };
    let mut interrupted = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(towerscope_core::ReplyItem::Event(e)) => {
                if !interrupted && e.event_type().as_str() == at {
                    interrupted = agent.interrupt();
                }
                out.events.push(e);
            }
            Ok(towerscope_core::ReplyItem::Final(m)) => out.final_msg = Some(m),
            Err(e) => out.error = Some(e),
        }
    }
    assert!(interrupted, "a reply was running at {at}");
    out
}

#[tokio::test]
async fn an_interrupt_while_a_parked_reply_is_closed_closes_it_once() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/"}"#).and_tool_call(
                "c2",
                "delete",
                r#"{"path": "/b"}"#,
            ),
        ],
    );
    let agent = asking_agent(&model);
    let first = collect(agent.reply_stream(Msg::user("user", "clean up"))).await;
    let reply_id = first.final_msg.unwrap().id;
    let out = interrupting_at(
        &agent,
        agent.reply_stream(UserInterruptEvent::new(reply_id)),
        "TOOL_RESULT_START",
    )
    .await;
    assert_eq!(
        out.kinds(),
        [
            "TOOL_RESULT_START",
            "TOOL_RESULT_TEXT_DELTA",
            "TOOL_RESULT_END",
            "TOOL_RESULT_START",
            "TOOL_RESULT_TEXT_DELTA",
            "TOOL_RESULT_END",
            "REPLY_END"
        ],
        "each call closed once, one end"
    );
    assert_eq!(
        out.final_msg.unwrap().finished_reason,
        Some(ReplyFinishedReason::Interrupted)
    );
    assert_consistent(&agent.state().context);
}

#[tokio::test]
async fn an_interrupt_as_a_reply_asks_for_confirmation_ends_it_instead_of_parking() {
    // The consumer interrupts when it sees the question: the reply was running, so it ends
    // interrupted (its call closed) rather than parking with an interrupt nobody will see.
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/"}"#),
            ScriptedResponse::text("next"),
        ],
    );
    let agent = asking_agent(&model);
    let out = interrupting_at(
        &agent,
        agent.reply_stream(Msg::user("user", "clean up")),
        "REQUIRE_USER_CONFIRM",
    )
    .await;
    let kinds = out.kinds();
    assert_eq!(&kinds[kinds.len() - 2..], ["TOOL_RESULT_END", "REPLY_END"], "{kinds:?}");
    assert_eq!(
        out.final_msg.unwrap().finished_reason,
        Some(ReplyFinishedReason::Interrupted)
    );
    assert_consistent(&agent.state().context);
    // Not parked: the next message is taken.
    let next = collect(agent.reply_stream(Msg::user("user", "and now?"))).await;
    assert_eq!(next.final_text().as_deref(), Some("next"));
}

#[tokio::test]
async fn an_interrupt_at_a_denials_start_opens_its_result_once() {
    let model = ScriptedModel::new("m", [ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/"}"#)]);
    let agent = asking_agent(&model);
    let first = collect(agent.reply_stream(Msg::user("user", "clean up"))).await;
    let call = parked_call(&first);
    let denial = UserConfirmResultEvent::new(first.final_msg.unwrap().id, vec![ConfirmResult::new(false, call)]);
    let out = interrupting_at(&agent, agent.reply_stream(denial), "TOOL_RESULT_START").await;
    let starts = out.kinds().iter().filter(|k| **k == "TOOL_RESULT_START").count();
    let ends = out.kinds().iter().filter(|k| **k == "TOOL_RESULT_END").count();
    assert_eq!((starts, ends), (1, 1), "{:?}", out.kinds());
    assert_eq!(
        out.final_msg.unwrap().finished_reason,
        Some(ReplyFinishedReason::Interrupted)
    );
    assert_consistent(&agent.state().context);
}
