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

use towerscope::otel::opentelemetry::trace::{FutureExt, TraceContextExt, Tracer};
use towerscope::otel::opentelemetry::{Context, global};
use towerscope::otel::{OtlpConfig, TracingMiddleware, init_otlp};
use towerscope::prelude::*;

#[path = "weather/mod.rs"]
mod weather;

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
        .model(weather::scripted_model())
        .tool(FunctionTool::new("get_weather", weather::get_weather))
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
    weather::ask(&agent).with_context(cx.clone()).await?;
    cx.span().end();

    // Exports what is left and shuts the exporters down (dropping the guard would too).
    guard.shutdown()?;
    println!("\ntrace {trace_id} exported to {endpoint}");
    Ok(())
}
