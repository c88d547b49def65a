//! A weather assistant with one tool, on the scripted model: no network, no setup.
//!
//! ```sh
//! cargo run --example quickstart
//! ```
//!
//! The console renders the reply as it streams: thinking and text as they arrive, tool calls and
//! their results marked. A `from_fn` layer on `on_model_call` times each model call. The tool,
//! the scripted conversation and the question are in `examples/weather/mod.rs`, shared with the
//! tracing example.

use std::time::Instant;

use towerscope::prelude::*;

#[path = "weather/mod.rs"]
mod weather;

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
        .model(weather::scripted_model())
        .tool(FunctionTool::new("get_weather", weather::get_weather))
        .on_model_call(timing)
        .build()?;

    weather::ask(&agent).await
}
