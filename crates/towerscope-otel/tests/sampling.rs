//! Content capture costs nothing in the traces the sampler drops: messages, tool arguments and
//! tool definitions are serialised and redacted only for spans that record. Measured in bytes
//! allocated by a reply (counted by an instrumented allocator, so the figures do not depend on
//! the machine's load); the allocator counts every thread, hence this binary of its own with a
//! single test.
#![allow(clippy::unwrap_used)]

mod support;

use std::alloc::System;

use opentelemetry_sdk::trace::{InMemorySpanExporter, Sampler, SdkTracerProvider};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use support::spans;
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::Msg;
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_otel::TracingMiddleware;

#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Measure a text.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Measure {
    /// The text.
    text: String,
}

/// A megabyte of text.
fn long_text() -> String {
    "word ".repeat(200_000)
}

/// An agent that calls a tool with a megabyte of arguments, then answers; traced with `capture`
/// under a sampler that drops every trace.
fn agent(provider: &SdkTracerProvider, capture: bool) -> Agent {
    let arguments = serde_json::json!({ "text": long_text() }).to_string();
    let model = ScriptedModel::cycle(
        "m",
        [
            ScriptedResponse::tool_call("c1", "measure", arguments).whole(),
            ScriptedResponse::text("Measured.").whole(),
        ],
    );
    let measure = FunctionTool::new("measure", |args: Measure| async move { args.text.len().to_string() });
    Agent::builder("a")
        .model(model)
        .tool(measure)
        .middleware(
            TracingMiddleware::builder()
                .tracer_provider(provider)
                .capture_content(capture)
                .build(),
        )
        .build()
        .unwrap()
}

/// The bytes allocated by a reply to a megabyte-long message (the second reply: the first warms
/// caches up).
fn bytes_of_a_reply(capture: bool, rt: &tokio::runtime::Runtime) -> usize {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_sampler(Sampler::AlwaysOff)
        .with_simple_exporter(exporter.clone())
        .build();
    let agent = agent(&provider, capture);
    rt.block_on(agent.reply(Msg::user("user", "warm up"))).unwrap();
    let message = Msg::user("user", long_text());
    let region = Region::new(ALLOCATOR);
    rt.block_on(agent.reply(message)).unwrap();
    let bytes = region.change().bytes_allocated;
    assert!(spans(&exporter).is_empty(), "the sampler drops every span");
    bytes
}

#[test]
fn content_is_not_serialised_for_spans_the_sampler_drops() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let without_capture = bytes_of_a_reply(false, &rt);
    let with_capture = bytes_of_a_reply(true, &rt);
    println!("one reply under AlwaysOff: {without_capture} B without content capture, {with_capture} B with it");
    assert!(
        with_capture <= without_capture + 256 * 1024,
        "content was serialised for dropped spans: {without_capture} B without capture, {with_capture} B with it"
    );
}
