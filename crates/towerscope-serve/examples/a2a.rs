//! Serves a scripted agent over A2A on `$TOWERSCOPE_ADDR` (default `127.0.0.1:3000`), for
//! trying the protocol with curl or an A2A client (the README's transcripts come from it).
//!
//! The agent echoes what it is told; told to delete something, it calls a `delete` tool that
//! asks for confirmation first (the task waits in `TASK_STATE_INPUT_REQUIRED`).
//!
//! ```text
//! cargo run -p towerscope-serve --example a2a
//! curl -s localhost:3000/.well-known/agent-card.json
//! ```
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{AgentError, ContentBlock, PermissionDecision, Role};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_serve::a2a::A2aConfig;
use towerscope_serve::a2a::wire::AgentSkill;

/// Delete a file.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Delete {
    /// The path.
    path: String,
}

fn agent(_context: &str) -> Result<Agent, AgentError> {
    let model = ScriptedModel::new("scripted", []).respond_with(|req| {
        // The newest of: a tool's result (then the agent sums up), or the user's message.
        for msg in req.messages.iter().rev() {
            if let Some(result) = msg.content.iter().find_map(|b| match b {
                ContentBlock::ToolResult(r) => Some(r),
                _ => None,
            }) {
                return Some(ScriptedResponse::text(format!("Done ({:?}).", result.state)));
            }
            if msg.role == Role::User
                && let Some(text) = msg.text_content()
            {
                return Some(match text.strip_prefix("delete ") {
                    Some(path) => {
                        ScriptedResponse::tool_call("c1", "delete", serde_json::json!({ "path": path }).to_string())
                    }
                    None => ScriptedResponse::text(format!("You said: {text}")),
                });
            }
        }
        None
    });
    Agent::builder("assistant")
        .model(model)
        .tool(FunctionTool::new("delete", |a: Delete| async move {
            format!("deleted {}", a.path)
        }))
        .default_permission(PermissionDecision::Ask {
            suggested_rules: vec![],
        })
        .build()
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::var("TOWERSCOPE_ADDR").unwrap_or_else(|_| "127.0.0.1:3000".to_owned());
    let app = A2aConfig::new("assistant")
        .description("Echoes; deletes files after asking.")
        .skill(AgentSkill::new("echo", "Echo", "Says back what it is told."))
        .routes(Arc::new(agent));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("A2A agent on http://{addr} (card at /.well-known/agent-card.json, JSON-RPC at /a2a)");
    axum::serve(listener, app).await
}
