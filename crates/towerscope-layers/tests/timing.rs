//! One timing layer on the four positions of an agent.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{Msg, PositionKind};
use towerscope_layers::TimingLayer;
use towerscope_layers::timing::Outcome;
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// No arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[tokio::test(start_paused = true)]
async fn every_position_is_timed() {
    let model = ScriptedModel::new(
        "scripted",
        [
            ScriptedResponse::tool_call("c1", "clock", "{}").delay(Duration::from_millis(200)),
            ScriptedResponse::text("It is late.")
                .delay(Duration::from_millis(300))
                .chunk_delay(Duration::from_millis(100)),
        ],
    );
    let tool = FunctionTool::new("clock", |_: NoArgs| async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        "23:59"
    });
    let timing = TimingLayer::new();
    let agent = Agent::builder("assistant")
        .model(model)
        .tool(tool)
        .on_reply(timing.clone())
        .on_reasoning(timing.clone())
        .on_model_call(timing.clone())
        .on_acting(timing.clone())
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "Time?")).await.unwrap();

    let timings = timing.timings();
    let counts: Vec<u64> = [
        PositionKind::Reply,
        PositionKind::Reasoning,
        PositionKind::ModelCall,
        PositionKind::Acting,
    ]
    .into_iter()
    .map(|p| timings.stats(p).count)
    .collect();
    assert_eq!(counts, [1, 2, 2, 1]);

    let model_calls = timings.recent(PositionKind::ModelCall);
    assert!(
        model_calls
            .iter()
            .all(|s| s.name == "scripted" && s.outcome == Outcome::Ok)
    );
    // The answer round: opened after 300 ms, then "It ", "is ", "late." and the final chunk,
    // 100 ms apart.
    let answer = &model_calls[1];
    assert_eq!(answer.open, Duration::from_millis(300));
    assert_eq!(answer.first_item, Some(Duration::from_millis(400)));
    assert_eq!(answer.total, Duration::from_millis(700));

    let tool = &timings.recent(PositionKind::Acting)[0];
    assert_eq!((tool.name.as_str(), tool.total), ("clock", Duration::from_millis(50)));
    let reply = &timings.recent(PositionKind::Reply)[0];
    assert_eq!(reply.name, "assistant");
    assert_eq!(reply.total, Duration::from_millis(200 + 50 + 700));
}
