//! The dynamic context is computed for every model call.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::Msg;
use towerscope_layers::DynamicContext;
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// No arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[tokio::test]
async fn the_model_receives_the_prompt_with_fresh_context() {
    let model = ScriptedModel::new(
        "scripted",
        [
            ScriptedResponse::tool_call("c1", "noop", "{}"),
            ScriptedResponse::text("done"),
        ],
    );
    let ticks = Arc::new(AtomicU32::new(0));
    let clock = Arc::clone(&ticks);
    let agent = Agent::builder("assistant")
        .system_prompt("You are a helpful assistant.")
        .model(model.clone())
        .tool(FunctionTool::new("noop", |_: NoArgs| async { "ok" }))
        .middleware(DynamicContext::new(move |ctx| {
            format!(
                "Tick: {}\nIteration: {}",
                clock.fetch_add(1, Ordering::SeqCst),
                ctx.iteration()
            )
        }))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "Go")).await.unwrap();

    let prompts: Vec<String> = model.requests().iter().map(|r| r.system_prompt().unwrap()).collect();
    assert_eq!(
        prompts,
        [
            "You are a helpful assistant.\n\n## Current Context\nTick: 0\nIteration: 0",
            "You are a helpful assistant.\n\n## Current Context\nTick: 1\nIteration: 1",
        ]
    );
}
