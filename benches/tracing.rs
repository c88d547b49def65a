//! What `TracingMiddleware` costs on one whole agent reply: 4 streamed model calls and 3 `add`
//! tool calls on a `ScriptedModel::cycle`, so the script never runs out.
//!
//! - `reply/no_middleware`: the agent alone;
//! - `reply/tracing_no_provider`: `TracingMiddleware::new()` installed, no provider installed
//!   anywhere (the pass-through: each position calls its inner service directly);
//! - `reply/tracing_in_memory/capture_off`: spans to the SDK's `InMemorySpanExporter` through a
//!   simple (synchronous) span processor: 8 spans per reply with all their attributes;
//! - `reply/tracing_in_memory/capture_on`: the same with message content captured (and
//!   redacted).
//!
//! Each iteration builds a fresh agent outside the timed region (so the context does not grow
//! from one reply to the next), times one `agent.reply(..)`, then clears the exporter outside
//! the timed region. The futures run on a current-thread tokio runtime.
//!
//! And redaction alone, on what capture redacts: `redact/prose_clean` (an answer with no
//! credential: borrowed), `redact/prose_with_a_key` (the same with a key in it) and
//! `redact/json_arguments` (a tool call's JSON arguments).
//!
//! ```text
//! cargo bench --bench tracing --features otel
//! ```

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tokio::runtime::Runtime;
use towerscope::otel::TracingMiddleware;
use towerscope::otel::redact::{redact_json_text, redact_text};
use towerscope::prelude::*;

/// Add two numbers.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

fn model() -> ScriptedModel {
    ScriptedModel::cycle(
        "bench-model",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#).with_usage(120, 20),
            ScriptedResponse::tool_call("c2", "add", r#"{"a": 3, "b": 4}"#).with_usage(150, 20),
            ScriptedResponse::tool_call("c3", "add", r#"{"a": 5, "b": 6}"#).with_usage(180, 20),
            ScriptedResponse::text("1 + 2 = 3, 3 + 4 = 7 and 5 + 6 = 11.").with_usage(210, 18),
        ],
    )
}

fn agent(tracing: Option<TracingMiddleware>) -> Agent {
    let mut builder = Agent::builder("bench")
        .system_prompt("You add numbers.")
        .model(model())
        .tool(FunctionTool::new("add", |args: Add| async move {
            (args.a + args.b).to_string()
        }));
    if let Some(tracing) = tracing {
        builder = builder.middleware(tracing);
    }
    match builder.build() {
        Ok(agent) => agent,
        Err(e) => panic!("the bench agent does not build: {e}"),
    }
}

type MakeAgent = Arc<dyn Fn() -> Agent + Send + Sync>;

fn bench_reply(c: &mut Criterion, rt: &Runtime, name: &str, make: MakeAgent, exporter: Option<InMemorySpanExporter>) {
    c.bench_function(name, |b| {
        b.to_async(rt).iter_custom(|iters| {
            let make = Arc::clone(&make);
            let exporter = exporter.clone();
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let agent = make();
                    let start = Instant::now();
                    let answer = agent.reply(Msg::user("user", "Add 1 + 2, 3 + 4 and 5 + 6.")).await;
                    total += start.elapsed();
                    match answer {
                        Ok(msg) => {
                            black_box(msg);
                        }
                        Err(e) => panic!("the bench reply failed: {e}"),
                    }
                    if let Some(exporter) = &exporter {
                        exporter.reset();
                    }
                }
                total
            }
        });
    });
}

fn tracing(c: &mut Criterion) {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => panic!("no tokio runtime: {e}"),
    };
    assert!(
        !towerscope::otel::tracing_installed(),
        "this bench installs no process-wide provider"
    );

    bench_reply(c, &rt, "reply/no_middleware", Arc::new(|| agent(None)), None);

    let no_provider = TracingMiddleware::builder().capture_content(false).build();
    bench_reply(
        c,
        &rt,
        "reply/tracing_no_provider",
        Arc::new(move || agent(Some(no_provider.clone()))),
        None,
    );

    for capture in [false, true] {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let middleware = TracingMiddleware::builder()
            .tracer_provider(&provider)
            .capture_content(capture)
            .build();
        let name = format!("reply/tracing_in_memory/capture_{}", if capture { "on" } else { "off" });
        bench_reply(
            c,
            &rt,
            &name,
            Arc::new(move || agent(Some(middleware.clone()))),
            Some(exporter),
        );
    }
}

/// About 400 bytes of an assistant's answer.
const PROSE: &str = "Here is the plan. First, I will look up the weather in Paris, Berlin and \
    Madrid for the next three days; then I will compare the temperatures, the chance of rain and \
    the wind, and tell you which city is best for a walking tour. Tokens used so far: 412. If you \
    prefer, I can also check the museums' opening hours (most close on Mondays) and suggest an \
    itinerary with the distances between the sights, the tram lines and a lunch break near the river.";

fn redaction(c: &mut Criterion) {
    c.bench_function("redact/prose_clean", |b| {
        b.iter(|| black_box(redact_text(black_box(PROSE))));
    });
    let with_key = format!("{PROSE} My key is sk-proj-abcdefghijklmnop1234, use it.");
    c.bench_function("redact/prose_with_a_key", |b| {
        b.iter(|| black_box(redact_text(black_box(&with_key))));
    });
    c.bench_function("redact/json_arguments", |b| {
        b.iter(|| {
            black_box(redact_json_text(black_box(
                r#"{"city": "Paris", "days": 3, "units": "metric"}"#,
            )))
        });
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = tracing, redaction
}
criterion_main!(benches);
