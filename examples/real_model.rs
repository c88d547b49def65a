//! The quickstart's weather assistant on a real model, chosen by environment:
//!
//! ```sh
//! # Anthropic
//! ANTHROPIC_API_KEY=sk-ant-... cargo run --example real_model --features openai,anthropic
//! # OpenAI
//! OPENAI_API_KEY=sk-... cargo run --example real_model --features openai,anthropic
//! # any OpenAI-compatible server, for instance the local one of the tests:
//! eval "$(scripts/llm-server.sh start)"
//! OPENAI_BASE_URL=$TOWERSCOPE_LLM_BASE_URL/v1 OPENAI_MODEL=$TOWERSCOPE_LLM_MODEL \
//!     cargo run --example real_model --features openai,anthropic
//! scripts/llm-server.sh stop
//! ```
//!
//! `ANTHROPIC_API_KEY` or `ANTHROPIC_BASE_URL` selects Anthropic (`ANTHROPIC_MODEL`, default
//! `claude-sonnet-4-5`); otherwise `OPENAI_API_KEY` or `OPENAI_BASE_URL` selects OpenAI or a
//! compatible server (`OPENAI_MODEL`, default `gpt-4o-mini`). A `RetryLayer` retries rate limits,
//! overload and broken streams. The tool and the renderer are in `examples/weather/mod.rs`,
//! shared with the quickstart, which stays on the scripted model.
//!
//! The tests' local server runs a 135M model that cannot follow `auto` tool choice: the server
//! reports that the answer does not fit its format, which the example shows as a typed,
//! retryable error after three attempts. Hosted models answer.

use std::env;
use std::time::Duration;

use towerscope::layers::RetryLayer;
use towerscope::models::anthropic::AnthropicChatModel;
use towerscope::models::openai::OpenAiChatModel;
use towerscope::prelude::*;

#[path = "weather/mod.rs"]
#[allow(dead_code)] // the scripted model is the quickstart's
mod weather;

/// The model the environment names.
fn model() -> Result<ModelRef, AgentError> {
    let set = |name: &str| env::var(name).is_ok_and(|v| !v.trim().is_empty());
    if set("ANTHROPIC_API_KEY") || set("ANTHROPIC_BASE_URL") {
        let name = env::var("ANTHROPIC_MODEL").unwrap_or_else(|_| "claude-sonnet-4-5".into());
        return Ok(std::sync::Arc::new(
            AnthropicChatModel::builder(name)
                .max_tokens(1024)
                .read_timeout(Some(Duration::from_secs(120)))
                .build()?,
        ));
    }
    if set("OPENAI_API_KEY") || set("OPENAI_BASE_URL") {
        let name = env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into());
        return Ok(std::sync::Arc::new(
            OpenAiChatModel::builder(name)
                .read_timeout(Some(Duration::from_secs(120)))
                .build()?,
        ));
    }
    Err(AgentError::validation(
        "no model configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY, or OPENAI_BASE_URL for a compatible server",
    ))
}

#[tokio::main]
async fn main() -> Result<(), AgentError> {
    let model = model()?;
    eprintln!("model: {} ({})", model.model_name(), model.provider());
    let agent = Agent::builder("Friday")
        .system_prompt("You are Friday, a concise weather assistant. Use the get_weather tool.")
        .model_ref(model)
        .tool(FunctionTool::new("get_weather", weather::get_weather))
        .on_model_call(RetryLayer::new(3))
        .build()?;
    weather::ask(&agent).await
}
