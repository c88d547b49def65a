//! Helpers shared by the integration tests: an in-memory tracer, reading spans, running replies.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use futures_util::StreamExt;
use opentelemetry::trace::{SpanId, Status};
use opentelemetry::{Key, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use towerscope_agent::ReplyStream;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{AgentError, AgentEvent, Msg, ReplyItem};

/// A tracer provider exporting to memory, span by span.
pub fn in_memory() -> (SdkTracerProvider, InMemorySpanExporter) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    (provider, exporter)
}

/// Add two numbers.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Add {
    /// The first number.
    pub a: i64,
    /// The second number.
    pub b: i64,
}

/// The `add` tool.
pub fn add_tool() -> FunctionTool {
    FunctionTool::new("add", |args: Add| async move { (args.a + args.b).to_string() })
}

/// Everything a reply produced.
#[derive(Debug, Default)]
pub struct Collected {
    pub events: Vec<AgentEvent>,
    pub final_msg: Option<Msg>,
    pub error: Option<AgentError>,
}

pub async fn collect(mut stream: ReplyStream) -> Collected {
    let mut out = Collected::default();
    while let Some(item) = stream.next().await {
        match item {
            Ok(ReplyItem::Event(e)) => out.events.push(e),
            Ok(ReplyItem::Final(m)) => out.final_msg = Some(m),
            Err(e) => out.error = Some(e),
        }
    }
    out
}

pub fn spans(exporter: &InMemorySpanExporter) -> Vec<SpanData> {
    exporter.get_finished_spans().unwrap()
}

pub fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

pub fn one<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "spans named {name}: {:?}", names(spans));
    found[0]
}

pub fn names(spans: &[SpanData]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_ref()).collect()
}

pub fn attr(span: &SpanData, key: &str) -> Option<Value> {
    let key = Key::from(key.to_owned());
    let found: Vec<&Value> = span
        .attributes
        .iter()
        .filter(|kv| kv.key == key)
        .map(|kv| &kv.value)
        .collect();
    assert!(
        found.len() <= 1,
        "attribute {key} set {} times on {}",
        found.len(),
        span.name
    );
    found.first().map(|v| (*v).clone())
}

pub fn str_attr(span: &SpanData, key: &str) -> Option<String> {
    attr(span, key).map(|v| v.as_str().into_owned())
}

pub fn int_attr(span: &SpanData, key: &str) -> Option<i64> {
    match attr(span, key) {
        Some(Value::I64(v)) => Some(v),
        None => None,
        Some(other) => panic!("{key} is not an int: {other:?}"),
    }
}

pub fn json_attr(span: &SpanData, key: &str) -> serde_json::Value {
    let text = str_attr(span, key).unwrap_or_else(|| panic!("no {key} on {}", span.name));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{key} is not JSON ({e}): {text}"))
}

pub fn string_array(values: &[&str]) -> Value {
    Value::Array(opentelemetry::Array::String(
        values
            .iter()
            .map(|v| opentelemetry::StringValue::from(v.to_string()))
            .collect(),
    ))
}

pub fn is_child_of(child: &SpanData, parent: &SpanData) -> bool {
    child.parent_span_id == parent.span_context.span_id()
        && child.span_context.trace_id() == parent.span_context.trace_id()
}

pub fn is_root(span: &SpanData) -> bool {
    span.parent_span_id == SpanId::INVALID
}

pub fn is_ok(span: &SpanData) -> bool {
    span.status == Status::Ok
}

pub fn error_description(span: &SpanData) -> Option<String> {
    match &span.status {
        Status::Error { description } => Some(description.to_string()),
        _ => None,
    }
}

/// The attributes of the span's `exception` event, as (type, message).
pub fn exception(span: &SpanData) -> Option<(String, String)> {
    let event = span.events.iter().find(|e| e.name == "exception")?;
    let get = |key: &str| {
        event
            .attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.as_str().into_owned())
            .unwrap_or_default()
    };
    Some((get("exception.type"), get("exception.message")))
}
