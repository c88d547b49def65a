//! The README's layer stack, as a program: tracing, call limit, fallback, retry and timeout on a
//! weather assistant. The primary model fails with a retryable error; retry tries it again,
//! then the fallback model answers.
//!
//! ```sh
//! cargo run --example layer_stack --features otel
//! ```

use std::sync::Arc;
use std::time::Duration;

use towerscope::console::Console;
use towerscope::layers::{CallLimitLayer, FallbackLayer, RetryLayer, TimeoutLayer};
use towerscope::otel::TracingMiddleware;
use towerscope::prelude::*;

/// Get the current weather of a city.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct GetWeather {
    /// The city, e.g. "Paris".
    city: String,
}

async fn get_weather(args: GetWeather) -> String {
    format!("sunny in {}, 21 °C", args.city)
}

#[tokio::main]
async fn main() -> Result<(), AgentError> {
    let overloaded = || ScriptedResponse::error(AgentError::model_retryable("503: the primary model is overloaded"));
    let model = ScriptedModel::new("primary", [overloaded(), overloaded(), overloaded()]);
    let backup_model: ModelRef = Arc::new(ScriptedModel::new(
        "backup",
        [
            ScriptedResponse::tool_call("call-1", "get_weather", r#"{"city": "Paris"}"#),
            ScriptedResponse::text("It is sunny in Paris, 21 °C."),
        ],
    ));

    let agent = Agent::builder("Friday")
        .system_prompt("You are Friday, a concise weather assistant.")
        .model(model) // any ChatModel
        .tool(FunctionTool::new("get_weather", get_weather)) // schema from a typed struct
        .middleware(TracingMiddleware::new()) // reply, model and tool spans
        .on_model_call(CallLimitLayer::new().model_calls_per_reply(20)) // outermost
        .on_model_call(FallbackLayer::new([backup_model]))
        .on_model_call(RetryLayer::new(3))
        .on_model_call(TimeoutLayer::new(Duration::from_secs(60))) // innermost
        .build()?;

    // The console renders the reply as it streams: the tool call, its result, the answer.
    let question = Msg::user("user", "What's the weather in Paris?");
    Console::stdout().show(Box::pin(agent.reply_stream(question))).await?;
    Ok(())
}
