//! Both providers against the hosted APIs, when their keys are in the environment
//! (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`; models from `OPENAI_MODEL`, `ANTHROPIC_MODEL`, base
//! URLs from `OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`). Without a key a test prints why it is
//! skipped. Each makes a tool round: the model calls the tool, then answers in text.
#![allow(clippy::unwrap_used)]

use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{AgentEvent, ChatModel, Msg, ReplyItem};
use towerscope_models::anthropic::AnthropicChatModel;
use towerscope_models::openai::OpenAiChatModel;

/// Get the current weather of a city.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct GetWeather {
    /// The city, e.g. "Paris".
    city: String,
}

async fn get_weather(args: GetWeather) -> String {
    format!("{{\"city\": {:?}, \"sky\": \"sunny\", \"celsius\": 21}}", args.city)
}

fn key_set(name: &str) -> bool {
    let set = std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    if !set {
        eprintln!("skipped: {name} is not set, so the hosted API is not called");
    }
    set
}

async fn tool_round(model: impl ChatModel) {
    let agent = Agent::builder("Friday")
        .system_prompt("You are a weather assistant. Always use the get_weather tool, then answer in one sentence.")
        .model(model)
        .tool(FunctionTool::new("get_weather", get_weather))
        .build()
        .unwrap();
    let mut stream = agent.reply_stream(Msg::user("user", "What is the weather in Paris?"));
    let (mut called, mut answer) = (false, None);
    while let Some(item) = stream.next().await {
        match item.unwrap() {
            ReplyItem::Event(AgentEvent::ToolResultEnd(_)) => called = true,
            ReplyItem::Event(_) => {}
            ReplyItem::Final(msg) => answer = Some(msg),
        }
    }
    assert!(called, "the model called the tool");
    let answer = answer.unwrap();
    assert!(
        answer
            .text_content()
            .is_some_and(|t| t.contains("21") || t.to_lowercase().contains("sunny"))
    );
    assert!(answer.usage.is_some_and(|u| u.input_tokens > 0 && u.output_tokens > 0));
}

#[tokio::test]
async fn openai_hosted_tool_round() {
    if !key_set("OPENAI_API_KEY") {
        return;
    }
    let name = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into());
    tool_round(OpenAiChatModel::builder(name).build().unwrap()).await;
}

#[tokio::test]
async fn anthropic_hosted_tool_round() {
    if !key_set("ANTHROPIC_API_KEY") {
        return;
    }
    let name = std::env::var("ANTHROPIC_MODEL").unwrap_or_else(|_| "claude-haiku-4-5".into());
    tool_round(AnthropicChatModel::builder(name).max_tokens(1024).build().unwrap()).await;
}
