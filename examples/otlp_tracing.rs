//! The quickstart's weather assistant with OpenTelemetry tracing, exported over OTLP/HTTP to a
//! collector on `127.0.0.1:4318` (or `OTEL_EXPORTER_OTLP_ENDPOINT`).
//!
//! ```sh
//! OTLP_HTTP_PORT=4318 OTLP_GRPC_PORT=4317 scripts/otlp-collector.sh start   # a local collector
//! cargo run --example otlp_tracing --features otel
//! scripts/otlp-collector.sh tree                                             # the spans it received
//! scripts/otlp-collector.sh stop
//! ```
//!
//! The reply runs under an application span, `weather request`, so the agent's `invoke_agent`
//! span is its child; the model calls and the tool call are children of `invoke_agent`. Set
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` to record the messages too.

use std::io::Write;
use std::time::Duration;

use futures_util::StreamExt;
use towerscope::otel::opentelemetry::trace::{FutureExt, TraceContextExt, Tracer};
use towerscope::otel::opentelemetry::{Context, global};
use towerscope::otel::{OtlpConfig, TracingMiddleware, init_otlp};
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
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let endpoint = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").unwrap_or_else(|_| "http://127.0.0.1:4318".into());
    // Installs OTLP export of traces and metrics for the whole process; the guard flushes them.
    let guard = init_otlp(
        OtlpConfig::default()
            .service_name("towerscope-weather")
            .endpoint(&endpoint),
    )?;

    let agent = Agent::builder("Friday")
        .system_prompt("You are Friday, a concise weather assistant.")
        .model(scripted_model())
        .tool(FunctionTool::new("get_weather", get_weather))
        .middleware(
            TracingMiddleware::builder()
                .agent_description("A concise weather assistant")
                .build(),
        )
        .build()?;

    // An application span around the reply: the agent's spans become its children.
    let request = global::tracer("otlp_tracing example").start("weather request");
    let cx = Context::current_with_span(request);
    let trace_id = cx.span().span_context().trace_id();
    ask(&agent).with_context(cx.clone()).await?;
    cx.span().end();

    // Exports what is left and shuts the exporters down (dropping the guard would too).
    guard.shutdown()?;
    println!("\ntrace {trace_id} exported to {endpoint}");
    Ok(())
}

async fn ask(agent: &Agent) -> Result<(), AgentError> {
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
