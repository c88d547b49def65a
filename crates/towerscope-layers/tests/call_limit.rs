//! Call limits through an agent: a model-call limit ends the reply cleanly, a tool-call limit
//! becomes an error result the model sees.
#![allow(clippy::unwrap_used)]

mod common;

use common::{collect, results};
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{AgentEvent, Msg, ReplyFinishedReason, ToolResultState};
use towerscope_layers::CallLimitLayer;
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// A city.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct City {
    city: String,
}

fn weather() -> FunctionTool {
    FunctionTool::new("weather", |a: City| async move { format!("sunny in {}", a.city) })
}

#[tokio::test]
async fn the_model_call_limit_ends_the_reply_with_an_error() {
    let model = ScriptedModel::new(
        "scripted",
        [
            ScriptedResponse::tool_call("c1", "weather", r#"{"city": "Paris"}"#),
            ScriptedResponse::tool_call("c2", "weather", r#"{"city": "Rome"}"#),
            ScriptedResponse::text("never reached"),
        ],
    );
    let limits = CallLimitLayer::new().model_calls_per_reply(2);
    let agent = Agent::builder("assistant")
        .model(model.clone())
        .tool(weather())
        .on_model_call(limits.clone())
        .on_acting(limits)
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "Weather?"))).await;
    assert!(out.error.is_none(), "the reply ends cleanly: {:?}", out.error);
    assert_eq!(model.calls(), 2);

    let message = "model calls limit of 2 reached for this reply; raise the limit or shorten the task";
    let Some(AgentEvent::ReplyEnd(end)) = out.events.last() else {
        panic!("REPLY_END comes last: {:?}", out.kinds())
    };
    assert_eq!(end.finished_reason, ReplyFinishedReason::Error);
    let error = end.error.as_ref().unwrap();
    assert_eq!((error.kind.as_str(), error.message.as_str()), ("call_limit", message));
    let msg = out.final_msg.as_ref().unwrap();
    assert_eq!(msg.finished_reason, Some(ReplyFinishedReason::Error));
    assert_eq!(msg.error.as_ref().map(|e| e.message.as_str()), Some(message));
    // Both tool rounds ran before the limit.
    assert_eq!(results(&agent).len(), 2);
    // Every model call that started ended, the refused one as interrupted (it had no end).
    let kinds = out.kinds();
    let count = |kind: &str| kinds.iter().filter(|k| **k == kind).count();
    assert_eq!(
        (count("MODEL_CALL_START"), count("MODEL_CALL_END")),
        (3, 3),
        "{kinds:?}"
    );
    let Some(AgentEvent::ModelCallEnd(refused)) = out
        .events
        .iter()
        .rev()
        .find(|e| matches!(e, AgentEvent::ModelCallEnd(_)))
    else {
        panic!("no MODEL_CALL_END: {kinds:?}")
    };
    assert_eq!(
        refused.finished_reason,
        towerscope_core::ModelFinishedReason::Interrupted
    );
}

#[tokio::test]
async fn the_tool_call_limit_becomes_an_error_result_the_model_sees() {
    let model = ScriptedModel::new(
        "scripted",
        [
            ScriptedResponse::tool_call("c1", "weather", r#"{"city": "Paris"}"#).and_tool_call(
                "c2",
                "weather",
                r#"{"city": "Rome"}"#,
            ),
            ScriptedResponse::text("Paris is sunny; Rome I could not check."),
        ],
    );
    let limits = CallLimitLayer::new().tool_calls_per_reply(1);
    let agent = Agent::builder("assistant")
        .model(model.clone())
        .tool(weather())
        .on_acting(limits)
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "Weather in Paris and Rome?"))).await;
    assert_eq!(
        out.final_text().as_deref(),
        Some("Paris is sunny; Rome I could not check.")
    );

    let results = results(&agent);
    let outcome: Vec<(ToolResultState, String)> = results
        .iter()
        .map(|r| (r.state, r.output.text_content().unwrap_or_default()))
        .collect();
    let refused = "tool calls limit of 1 reached for this reply; raise the limit or shorten the task";
    assert_eq!(
        outcome,
        [
            (ToolResultState::Success, "sunny in Paris".to_owned()),
            (ToolResultState::Error, refused.to_owned()),
        ]
    );
    let seen = model.requests()[1].messages.last().cloned().unwrap();
    assert_eq!(seen.tool_results().count(), 2, "the model saw both results");
}

#[tokio::test]
async fn the_session_limit_spans_replies() {
    let model = ScriptedModel::new(
        "scripted",
        [
            ScriptedResponse::text("one"),
            ScriptedResponse::text("two"),
            ScriptedResponse::text("three"),
        ],
    );
    let limits = CallLimitLayer::new().model_calls_per_session(2);
    let agent = Agent::builder("assistant")
        .model(model.clone())
        .on_model_call(limits.clone())
        .build()
        .unwrap();
    for expected in ["one", "two"] {
        let out = collect(agent.reply_stream(Msg::user("user", "next"))).await;
        assert_eq!(out.final_text().as_deref(), Some(expected));
    }
    let out = collect(agent.reply_stream(Msg::user("user", "next"))).await;
    let msg = out.final_msg.unwrap();
    assert_eq!(msg.finished_reason, Some(ReplyFinishedReason::Error));
    assert!(
        msg.text_content()
            .unwrap()
            .contains("model calls limit of 2 reached for this session")
    );
    assert_eq!(limits.session_counts().get(agent.session_id()).model_calls, 2);
    assert_eq!(model.calls(), 2);
}

#[tokio::test]
async fn per_session_counts_saved_with_the_session_hold_in_another_process() {
    use towerscope_agent::session::JsonFileStore;
    let dir = std::env::temp_dir().join(format!("towerscope-call-limit-{}", std::process::id()));
    let store = JsonFileStore::new(&dir);
    let model = ScriptedModel::new("m", (0..3).map(|i| ScriptedResponse::text(format!("answer {i}"))));
    // Each reply in its own "process": a new layer (counts from zero) and a new agent.
    let reply = |text: &'static str| {
        let layer = CallLimitLayer::new().model_calls_per_session(2);
        let agent = Agent::builder("a")
            .model(model.clone())
            .on_model_call(layer.clone())
            .session(store.clone(), "alice", "s")
            .session_state("call_limits", layer.session_counts().clone())
            .build()
            .unwrap();
        async move { agent.reply(Msg::user("user", text)).await.unwrap() }
    };
    assert_eq!(reply("one").await.text_content().as_deref(), Some("answer 0"));
    assert_eq!(reply("two").await.text_content().as_deref(), Some("answer 1"));
    let third = reply("three").await;
    assert_eq!(third.finished_reason, Some(ReplyFinishedReason::Error));
    assert!(
        third
            .text_content()
            .unwrap()
            .contains("model calls limit of 2 reached for this session")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One layer shared by the agents of two users whose sessions have the same id (a server
/// building an agent per request): each user's session has its own count, live and saved (the
/// counts were kept under the session id alone, so bob's first call was refused for alice's).
#[tokio::test]
async fn two_users_sessions_of_the_same_id_are_counted_apart() {
    use towerscope_agent::session::JsonFileStore;
    let dir = std::env::temp_dir().join(format!("towerscope-call-limit-users-{}", std::process::id()));
    let store = JsonFileStore::new(&dir);
    let layer = CallLimitLayer::new().model_calls_per_session(2);
    let agent_of = |user: &str| {
        Agent::builder("a")
            .model(ScriptedModel::cycle("m", [ScriptedResponse::text("hi")]))
            .on_model_call(layer.clone())
            .session(store.clone(), user, "conv-1")
            .session_state("call_limits", layer.session_counts().clone())
            .build()
            .unwrap()
    };
    for _ in 0..2 {
        let answer = agent_of("alice").reply(Msg::user("user", "hi")).await.unwrap();
        assert_eq!(answer.finished_reason, Some(ReplyFinishedReason::Completed));
    }
    let bob = agent_of("bob").reply(Msg::user("user", "hi")).await.unwrap();
    assert_eq!(
        bob.finished_reason,
        Some(ReplyFinishedReason::Completed),
        "bob's own session: {:?}",
        bob.text_content()
    );
    let alice = agent_of("alice").reply(Msg::user("user", "hi")).await.unwrap();
    assert_eq!(alice.finished_reason, Some(ReplyFinishedReason::Error), "alice's third");
    let counts = layer.session_counts();
    assert_eq!(counts.get("alice/conv-1").model_calls, 2);
    assert_eq!(counts.get("bob/conv-1").model_calls, 1);
    std::fs::remove_dir_all(&dir).unwrap();
}
