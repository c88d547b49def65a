//! A tool that takes too long becomes an error result the model sees.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{collect, results};
use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{AgentEvent, Msg, ToolResultState};
use towerscope_layers::TimeoutLayer;
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// No arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

fn model() -> ScriptedModel {
    ScriptedModel::new(
        "scripted",
        [
            ScriptedResponse::tool_call("call_1", "slow", "{}"),
            ScriptedResponse::text("The tool timed out, sorry."),
        ],
    )
}

#[tokio::test(start_paused = true)]
async fn a_delayed_tool_times_out_into_an_error_result() {
    let model = model();
    let tool = FunctionTool::new("slow", |_: NoArgs| async {
        tokio::time::sleep(Duration::from_secs(60)).await;
        "finally"
    });
    let agent = Agent::builder("assistant")
        .model(model.clone())
        .tool(tool)
        .on_acting(TimeoutLayer::new(Duration::from_secs(2)))
        .build()
        .unwrap();
    let start = tokio::time::Instant::now();
    let out = collect(agent.reply_stream(Msg::user("user", "Run the slow tool"))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(start.elapsed(), Duration::from_secs(2));
    assert_eq!(out.final_text().as_deref(), Some("The tool timed out, sorry."));

    let expected = "tool slow timed out: did not finish within 2s; raise the timeout or check the provider";
    let result = results(&agent).remove(0);
    assert_eq!(result.state, ToolResultState::Error);
    assert_eq!(result.output.text_content().as_deref(), Some(expected));
    // The model saw the error result on its next call.
    let seen = model.requests()[1].messages.last().cloned().unwrap();
    assert!(
        seen.tool_results()
            .any(|r| r.output.text_content().as_deref() == Some(expected))
    );
    assert!(out.events.iter().any(|e| matches!(
        e,
        AgentEvent::ToolResultEnd(end) if end.state == ToolResultState::Error
    )));
}

#[tokio::test(start_paused = true)]
async fn a_streaming_tool_that_goes_quiet_times_out_between_chunks() {
    let model = model();
    let tool = FunctionTool::streaming("slow", |_: NoArgs| {
        futures_util::stream::iter([100u64, 200, 5000]).then(|ms| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            format!("after {ms} ms; ")
        })
    });
    let agent = Agent::builder("assistant")
        .model(model)
        .tool(tool)
        .on_acting(TimeoutLayer::none().idle(Duration::from_secs(1)))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "Run it"))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    let deltas: Vec<String> = out
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResultTextDelta(d) => Some(d.delta.clone()),
            _ => None,
        })
        .collect();
    let expected = "tool slow timed out: no chunk for 1s; raise the timeout or check the provider";
    assert_eq!(deltas, ["after 100 ms; ", "after 200 ms; ", expected]);
    let result = results(&agent).remove(0);
    assert_eq!(result.state, ToolResultState::Error);
    assert_eq!(result.output.text_content().as_deref(), Some(expected));
    assert_eq!(out.final_text().as_deref(), Some("The tool timed out, sorry."));
}

#[tokio::test(start_paused = true)]
async fn a_tool_in_time_is_not_affected() {
    let model = ScriptedModel::new(
        "scripted",
        [
            ScriptedResponse::tool_call("call_1", "quick", "{}"),
            ScriptedResponse::text("Done."),
        ],
    );
    let tool = FunctionTool::new("quick", |_: NoArgs| async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        "ok"
    });
    let agent = Agent::builder("assistant")
        .model(model)
        .tool(tool)
        .on_acting(TimeoutLayer::new(Duration::from_secs(1)).first_chunk(Duration::from_secs(1)))
        .build()
        .unwrap();
    collect(agent.reply_stream(Msg::user("user", "Go"))).await;
    let result = results(&agent).remove(0);
    assert_eq!(result.state, ToolResultState::Success);
    assert_eq!(result.output.text_content().as_deref(), Some("ok"));
}
