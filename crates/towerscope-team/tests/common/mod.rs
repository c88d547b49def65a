//! Shared helpers of the team crate's tests.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::time::Duration;

use towerscope_agent::Agent;
use towerscope_core::{ContentBlock, Msg};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_team::hub::Broadcaster;

/// An agent in hubs-ready shape: a scripted model and a broadcaster installed first.
pub fn member(name: &str, responses: impl IntoIterator<Item = ScriptedResponse>) -> Agent {
    Agent::builder(name)
        .model(ScriptedModel::new("scripted", responses))
        .middleware(Broadcaster::new())
        .build()
        .unwrap()
}

/// An agent that says `text` after `ms` milliseconds.
pub fn slow_member(name: &str, text: &str, ms: u64) -> Agent {
    member(name, [ScriptedResponse::text(text).delay(Duration::from_millis(ms))])
}

/// The agent's context as `name: text` lines, leaving out a reply in progress that holds
/// nothing but its runtime-state hint (hints are on by default; they are not these tests'
/// subject, and `tests/hints.rs` of the agent crate covers them).
pub fn context(agent: &Agent) -> Vec<String> {
    agent
        .state()
        .context
        .iter()
        .filter(|m| !hint_only(m))
        .map(line)
        .collect()
}

/// Whether a message holds only hint blocks.
pub fn hint_only(m: &Msg) -> bool {
    !m.content.is_empty() && m.content.iter().all(|b| matches!(b, ContentBlock::Hint(_)))
}

/// A message as `name: text`.
pub fn line(m: &Msg) -> String {
    format!("{}: {}", m.name, m.text_content().unwrap_or_default())
}

/// The kinds of the blocks of a message.
pub fn kinds(m: &Msg) -> Vec<&'static str> {
    m.content.iter().map(|b: &ContentBlock| b.kind().as_str()).collect()
}

/// Delete a file.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Delete {
    /// The path.
    pub path: String,
}

/// An agent named `name` on `model` with a `delete` tool that asks the user before every call.
pub fn asking_agent(name: &str, model: ScriptedModel) -> Agent {
    Agent::builder(name)
        .model(model)
        .tool(towerscope_agent::toolkit::FunctionTool::new(
            "delete",
            |a: Delete| async move { format!("deleted {}", a.path) },
        ))
        .default_permission(towerscope_core::PermissionDecision::Ask {
            suggested_rules: vec![],
        })
        .build()
        .unwrap()
}

/// An agent whose first reply ends with an error: it calls a tool, and its limit is one model
/// call a reply.
pub fn limited(name: &str) -> Agent {
    Agent::builder(name)
        .model(ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "missing", "{}"),
                ScriptedResponse::text("never"),
            ],
        ))
        .on_model_call(towerscope_layers::CallLimitLayer::new().model_calls_per_reply(1))
        .build()
        .unwrap()
}
