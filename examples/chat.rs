//! An interactive terminal chat: you and an assistant whose weather tool asks your permission.
//!
//! ```sh
//! cargo run --example chat
//! ```
//!
//! Ask about the weather in a city: the assistant wants to call `get_weather`, and the chat
//! asks `Allow get_weather? [y/N/a/e]` (`a`: always, from now on; `e`: edit the arguments).
//! Ask for a story and press Ctrl-C in the middle: the reply stops and the prompt comes back.
//! Ctrl-C at the prompt, `exit` or Ctrl-D quit.
//!
//! It runs on a scripted demo model (`examples/chat_demo/mod.rs`): no network, no setup, the
//! same answers every time. `choose_model` below is the one place a real provider would be
//! picked from the environment.

use std::sync::Arc;

use towerscope::console::{Chat, ctrl_c};
use towerscope::prelude::*;
use towerscope::user::UserAgent;

#[path = "chat_demo/mod.rs"]
mod chat_demo;

/// THE place the chat's model is chosen. To chat with a real model, build one here (the
/// OpenAI-compatible and Anthropic providers are the `openai` and `anthropic` features of
/// `towerscope-models`: see `examples/real_model.rs`) and return it; as shipped, the scripted
/// demo model, which needs no network.
fn choose_model() -> ModelRef {
    Arc::new(chat_demo::DemoModel::new())
}

#[tokio::main]
async fn main() -> Result<(), AgentError> {
    let assistant = Agent::builder("assistant")
        .system_prompt("You are a concise assistant. You can look up the weather.")
        .model_ref(choose_model())
        .tool(FunctionTool::new("get_weather", chat_demo::get_weather))
        // Every tool call asks you first; answering `a` accepts the suggested rule.
        .default_permission(PermissionDecision::Ask {
            suggested_rules: vec![],
        })
        .build()?;

    Chat::new(UserAgent::new("you"), assistant)
        .interrupts(ctrl_c()?)
        .run()
        .await?;
    Ok(())
}
