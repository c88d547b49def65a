//! The events that resume a parked reply are checked whole before anything is stored: each
//! waiting call gets at most one answer, under its own tool's name, and a refused event leaves
//! the reply parked for a correct one.
#![allow(clippy::unwrap_used)]

mod common;

use common::{RemoteSearch, assert_consistent, collect};
use towerscope_agent::compress::TRUNCATED_REMINDER;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_agent::{Agent, AgentBuilder};
use towerscope_core::event::{ConfirmResult, ExternalExecutionResultEvent, UserConfirmResultEvent};
use towerscope_core::{
    AgentError, AgentEvent, ContextConfig, Msg, PermissionDecision, ToolCallBlock, ToolCallState, ToolResultBlock,
    ToolResultState,
};
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// An agent with the external `search` tool, parked on call `c1`; returns the reply id.
async fn parked_on_search(model: &ScriptedModel) -> (Agent, towerscope_core::Id) {
    parked(Agent::builder("a").model(model.clone())).await
}

/// The agent `builder` makes with the external `search` tool, parked on call `c1`; returns the
/// reply id.
async fn parked(builder: AgentBuilder) -> (Agent, towerscope_core::Id) {
    let agent = builder.tool(RemoteSearch).build().unwrap();
    let first = collect(agent.reply_stream(Msg::user("user", "holidays?"))).await;
    assert_eq!(first.kinds().last(), Some(&"REQUIRE_EXTERNAL_EXECUTION"));
    (agent, first.final_msg.unwrap().id)
}

fn search_model() -> ScriptedModel {
    ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "search", r#"{"q": "holidays"}"#),
            ScriptedResponse::text("You have 12 days left."),
        ],
    )
}

fn search_result(text: &str) -> ToolResultBlock {
    ToolResultBlock::new("c1", "search", text, ToolResultState::Success)
}

/// Asserts the refused resume produced no event and an `AgentError::State` saying `says`.
fn assert_refused(out: &common::Collected, says: &str) {
    assert!(
        out.events.is_empty(),
        "a refused resume emits nothing: {:?}",
        out.kinds()
    );
    match &out.error {
        Some(AgentError::State(message)) => assert!(message.contains(says), "{message}"),
        other => panic!("expected a state error, got {other:?}"),
    }
}

#[tokio::test]
async fn an_external_result_given_twice_for_one_call_is_refused_and_the_reply_stays_parked() {
    let model = search_model();
    let (agent, reply_id) = parked_on_search(&model).await;
    let before = agent.state();

    let twice = ExternalExecutionResultEvent::new(reply_id.clone(), vec![search_result("12"), search_result("13")]);
    let out = collect(agent.reply_stream(twice)).await;
    assert_refused(&out, "gives tool call 'c1' more than one result");
    assert_eq!(agent.state(), before, "nothing was stored");
    assert_eq!(model.requests().len(), 1, "the model was not called again");

    // The reply still waits, and the event the caller meant resumes it.
    let once = ExternalExecutionResultEvent::new(reply_id, vec![search_result("12 days of holidays left")]);
    let out = collect(agent.reply_stream(once)).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(&out.kinds()[..2], ["TOOL_RESULT_TEXT_DELTA", "TOOL_RESULT_END"]);
    assert_eq!(out.final_text().as_deref(), Some("You have 12 days left."));
    let seen = model.requests()[1].messages.last().unwrap().clone();
    let results = common::results(&seen);
    assert_eq!(results.len(), 1, "the model received one result for the call");
    assert_eq!(
        results[0].output.text_content().as_deref(),
        Some("12 days of holidays left")
    );
    assert_consistent(&agent.state().context);
}

#[tokio::test]
async fn an_external_result_naming_another_tool_is_refused() {
    let model = search_model();
    let (agent, reply_id) = parked_on_search(&model).await;
    let before = agent.state();

    let renamed = ToolResultBlock::new("c1", "delete", "12", ToolResultState::Success);
    let out = collect(agent.reply_stream(ExternalExecutionResultEvent::new(reply_id.clone(), vec![renamed]))).await;
    assert_refused(&out, "a result of the tool 'delete', but it calls 'search'");
    assert_eq!(agent.state(), before);

    let out = collect(agent.reply_stream(ExternalExecutionResultEvent::new(reply_id, vec![search_result("12")]))).await;
    assert_eq!(out.final_text().as_deref(), Some("You have 12 days left."));
    assert_consistent(&agent.state().context);
}

/// Delete a file.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Delete {
    /// The path.
    path: String,
}

#[tokio::test]
async fn a_confirmation_answering_one_call_twice_is_refused_and_adds_no_rule() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/"}"#),
            ScriptedResponse::text("ok, I won't"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(FunctionTool::new("delete", |a: Delete| async move {
            format!("deleted {}", a.path)
        }))
        .default_permission(PermissionDecision::Ask {
            suggested_rules: vec![],
        })
        .build()
        .unwrap();
    let first = collect(agent.reply_stream(Msg::user("user", "clean up"))).await;
    let call: ToolCallBlock = first
        .events
        .iter()
        .find_map(|e| match e {
            AgentEvent::RequireUserConfirm(e) => Some(e.tool_calls[0].clone()),
            _ => None,
        })
        .unwrap();
    let reply_id = first.final_msg.unwrap().id;
    let before = agent.state();
    let always = vec![towerscope_core::PermissionRule::new(
        "delete",
        towerscope_core::PermissionBehavior::Allow,
        "user",
    )];

    let deny_twice = UserConfirmResultEvent::new(
        reply_id.clone(),
        vec![
            ConfirmResult::new(false, call.clone()),
            ConfirmResult::new(false, call.clone()),
        ],
    );
    let out = collect(agent.reply_stream(deny_twice)).await;
    assert_refused(&out, "answers tool call 'c1' more than once");
    assert_eq!(agent.state(), before, "no second denied result");

    // A denial then a confirmation would finish the call, then allow it again with a rule.
    let deny_then_confirm = UserConfirmResultEvent::new(
        reply_id.clone(),
        vec![
            ConfirmResult::new(false, call.clone()),
            ConfirmResult::new(true, call.clone()).with_rules(always),
        ],
    );
    let out = collect(agent.reply_stream(deny_then_confirm)).await;
    assert_refused(&out, "answers tool call 'c1' more than once");
    let after = agent.state();
    assert_eq!(after, before);
    assert!(after.permission_rules.is_empty(), "no rule from a refused event");
    assert_eq!(
        after.context.last().unwrap().tool_calls().next().unwrap().state,
        ToolCallState::Asking
    );

    let deny = UserConfirmResultEvent::new(reply_id, vec![ConfirmResult::new(false, call)]);
    let out = collect(agent.reply_stream(deny)).await;
    assert_eq!(
        out.kinds()[..3],
        ["TOOL_RESULT_START", "TOOL_RESULT_TEXT_DELTA", "TOOL_RESULT_END"]
    );
    assert_eq!(out.final_text().as_deref(), Some("ok, I won't"));
    let context = agent.state().context;
    assert_consistent(&context);
    let stored = context.iter().flat_map(common::results).next().unwrap();
    assert_eq!(stored.state, ToolResultState::Denied);
}

/// Search locally (the external tool's twin).
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Query {
    /// The query.
    #[allow(dead_code)]
    q: String,
}

#[tokio::test]
async fn a_long_external_result_is_cut_to_the_tool_result_limit_as_a_local_one() {
    let long: String = (0..100_000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let config = ContextConfig::new().tool_result_limit(100);
    let model = search_model();
    let (agent, reply_id) = parked(Agent::builder("a").model(model.clone()).context(config.clone())).await;
    let out =
        collect(agent.reply_stream(ExternalExecutionResultEvent::new(reply_id, vec![search_result(&long)]))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    let state = agent.state();
    let stored = state.context.iter().flat_map(common::results).next().unwrap();
    let text = stored.output.text_content().unwrap();
    assert!(text.ends_with(TRUNCATED_REMINDER), "the local path's reminder");
    let kept = text.strip_suffix(TRUNCATED_REMINDER).unwrap();
    assert!(kept.len() <= 400 && long.starts_with(kept), "{} bytes kept", kept.len());
    // The model received the cut result.
    let seen = model.requests()[1].messages.last().unwrap().clone();
    assert_eq!(common::results(&seen)[0].output.text_content().as_deref(), Some(&*text));

    // A local tool answering the same text is stored with the same cut.
    let text_of_local = {
        let answer = long.clone();
        let local = Agent::builder("a")
            .model(search_model())
            .context(config)
            .tool(FunctionTool::new("search", move |_: Query| {
                let answer = answer.clone();
                async move { answer }
            }))
            .build()
            .unwrap();
        local.reply(Msg::user("user", "holidays?")).await.unwrap();
        let state = local.state();
        let stored = state.context.iter().flat_map(common::results).next().unwrap();
        stored.output.text_content().unwrap()
    };
    assert_eq!(text, text_of_local);
}
