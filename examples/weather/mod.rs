//! The weather assistant the examples share: its tool, its scripted model, and the question it
//! is asked, rendered by the console.

use std::time::Duration;

use towerscope::console::Console;
use towerscope::prelude::*;

/// Get the current weather of a city.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct GetWeather {
    /// The city, e.g. "Paris".
    city: String,
}

/// The tool: its input schema comes from [`GetWeather`], descriptions from its doc comments.
pub(crate) async fn get_weather(args: GetWeather) -> String {
    // A real tool would call a weather service here.
    let (sky, celsius) = match args.city.to_lowercase().as_str() {
        "paris" => ("sunny", 21),
        "london" => ("drizzle", 14),
        _ => ("cloudy", 17),
    };
    serde_json::json!({ "city": args.city, "sky": sky, "celsius": celsius }).to_string()
}

/// The scripted conversation: the model first calls the tool, then answers with its result.
pub(crate) fn scripted_model() -> ScriptedModel {
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

/// Asks the weather in Paris and renders the reply with the console as it streams: thinking and
/// text as they arrive, tool calls and their results marked.
pub(crate) async fn ask(agent: &Agent) -> Result<(), AgentError> {
    let question = "What's the weather in Paris?";
    println!("user: {question}");
    let mut console = Console::stdout();
    let answer = console
        .show(Box::pin(agent.reply_stream(Msg::user("user", question))))
        .await?;
    let usage = answer.usage.unwrap_or_default();
    console.note(&format!(
        "usage: {} input tokens, {} output tokens",
        usage.input_tokens, usage.output_tokens
    ));
    Ok(())
}
