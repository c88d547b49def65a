//! Interrupting a running reply with `Agent::interrupt`: during a model call and during a tool.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{assert_consistent, collect};
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{AgentEvent, Msg, ReplyFinishedReason, ToolResultState};
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// Wait.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Wait {
    /// Seconds.
    secs: u64,
}

fn end_reason(out: &common::Collected) -> Option<ReplyFinishedReason> {
    out.events.iter().find_map(|e| match e {
        AgentEvent::ReplyEnd(e) => Some(e.finished_reason),
        _ => None,
    })
}

#[tokio::test(start_paused = true)]
async fn interrupt_during_a_model_call() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::text("too late").delay(Duration::from_secs(30)),
            ScriptedResponse::text("again"),
        ],
    );
    let agent = Agent::builder("a").model(model).build().unwrap();
    assert!(!agent.interrupt(), "nothing to interrupt while idle");
    let start = tokio::time::Instant::now();
    let running = tokio::spawn({
        let agent = agent.clone();
        async move { collect(agent.reply_stream(Msg::user("user", "hi"))).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(agent.interrupt());
    let out = running.await.unwrap();
    assert_eq!(out.kinds(), ["REPLY_START", "MODEL_CALL_START", "REPLY_END"]);
    assert_eq!(end_reason(&out), Some(ReplyFinishedReason::Interrupted));
    let msg = out.final_msg.unwrap();
    assert_eq!(msg.finished_reason, Some(ReplyFinishedReason::Interrupted));
    assert_eq!(
        msg.text_content().as_deref(),
        Some("I notice the interruption. How can I help you?")
    );
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "the model call was cancelled, not awaited"
    );
    // The interrupt was for that reply only: the next one runs to the end.
    assert_eq!(
        agent
            .reply(Msg::user("user", "hi"))
            .await
            .unwrap()
            .text_content()
            .as_deref(),
        Some("again")
    );
}

#[tokio::test(start_paused = true)]
async fn interrupt_during_a_tool_closes_the_call() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let tool = {
        let log = Arc::clone(&log);
        FunctionTool::new("wait", move |a: Wait| {
            let log = Arc::clone(&log);
            async move {
                log.lock().unwrap().push("start");
                tokio::time::sleep(Duration::from_secs(a.secs)).await;
                log.lock().unwrap().push("end");
                "waited"
            }
        })
    };
    let model = ScriptedModel::new("m", [ScriptedResponse::tool_call("c1", "wait", r#"{"secs": 60}"#)]);
    let agent = Agent::builder("a").model(model).tool(tool).build().unwrap();
    let running = tokio::spawn({
        let agent = agent.clone();
        async move { collect(agent.reply_stream(Msg::user("user", "wait a minute"))).await }
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(agent.interrupt());
    let out = running.await.unwrap();
    let kinds = out.kinds();
    assert_eq!(
        &kinds[kinds.len() - 4..],
        [
            "TOOL_RESULT_START",
            "TOOL_RESULT_TEXT_DELTA",
            "TOOL_RESULT_END",
            "REPLY_END"
        ],
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "TOOL_RESULT_START").count(),
        1,
        "no second start for the call"
    );
    let AgentEvent::ToolResultEnd(end) = &out.events[out.events.len() - 2] else {
        panic!()
    };
    assert_eq!(end.state, ToolResultState::Interrupted);
    assert_eq!(*log.lock().unwrap(), ["start"], "the tool was cancelled, not awaited");
    assert_eq!(
        out.final_msg.unwrap().finished_reason,
        Some(ReplyFinishedReason::Interrupted)
    );
    assert_consistent(&agent.state().context);
}
