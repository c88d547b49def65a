//! A weather assistant with one tool, on the scripted model: no network, no setup.
//!
//! ```sh
//! cargo run --example quickstart
//! ```
//!
//! It prints the reply as it streams: thinking and text as they arrive, tool calls and their
//! results marked. A `from_fn` layer on `on_model_call` times each model call.

use std::io::Write;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use towerscope::prelude::*;

/// Get the current weather of a city.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct GetWeather {
    /// The city, e.g. "Paris".
    city: String,
}

async fn get_weather(args: GetWeather) -> String {
    // A real tool would call a weather service here.
    let (sky, celsius) = match args.city.to_lowercase().as_str() {
        "paris" => ("sunny", 21),
        "london" => ("drizzle", 14),
        _ => ("cloudy", 17),
    };
    serde_json::json!({ "city": args.city, "sky": sky, "celsius": celsius }).to_string()
}

/// The scripted conversation: the model first calls the tool, then answers with its result.
fn scripted_model() -> ScriptedModel {
    ScriptedModel::new(
        "scripted-weather",
        [
            ScriptedResponse::thinking("The user wants the weather in Paris; I should look it up.")
                .and_tool_call("call-1", "get_weather", r#"{"city": "Paris"}"#)
                .with_usage(112, 31),
            ScriptedResponse::text("It is sunny in Paris right now, 21 °C. A fine day for a walk along the Seine!")
                .with_usage(168, 24)
                .chunk_delay(Duration::from_millis(30)),
        ],
    )
}

#[tokio::main]
async fn main() -> Result<(), AgentError> {
    let timing = from_fn(
        |req: ModelCallRequest, next: Next<ModelCallRequest, ModelOutput>| async move {
            let model = req.model.model_name().to_owned();
            let start = Instant::now();
            let out = next.run(req).await;
            eprintln!("\n  [timing] {model} answered in {:?}", start.elapsed());
            out
        },
    );

    let agent = Agent::builder("Friday")
        .system_prompt("You are Friday, a concise weather assistant.")
        .model(scripted_model())
        .tool(FunctionTool::new("get_weather", get_weather))
        .on_model_call(timing)
        .build()?;

    println!("user > What's the weather in Paris?");
    let mut stream = agent.reply_stream(Msg::user("user", "What's the weather in Paris?"));
    let mut stdout = std::io::stdout();
    while let Some(item) = stream.next().await {
        match item? {
            ReplyItem::Event(event) => match event {
                AgentEvent::ThinkingBlockStart(_) => print!("\n(thinking) "),
                AgentEvent::ThinkingBlockDelta(e) => print!("{}", e.delta),
                AgentEvent::TextBlockStart(_) => print!("\nFriday > "),
                AgentEvent::TextBlockDelta(e) => print!("{}", e.delta),
                AgentEvent::ToolCallStart(e) => print!("\n[tool call] {}(", e.tool_call_name),
                AgentEvent::ToolCallDelta(e) => print!("{}", e.delta),
                AgentEvent::ToolCallEnd(_) => print!(")"),
                AgentEvent::ToolResultStart(e) => print!("\n[tool result] {} -> ", e.tool_call_name),
                AgentEvent::ToolResultTextDelta(e) => print!("{}", e.delta),
                AgentEvent::ToolResultEnd(e) => print!("  ({})", e.state.as_str()),
                AgentEvent::ReplyEnd(e) => println!("\n[reply end: {}]", e.finished_reason.as_str()),
                _ => {}
            },
            ReplyItem::Final(msg) => {
                let usage = msg.usage.unwrap_or_default();
                println!(
                    "[usage: {} input tokens, {} output tokens]",
                    usage.input_tokens, usage.output_tokens
                );
            }
        }
        stdout.flush().ok();
    }
    Ok(())
}
