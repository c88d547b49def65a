//! The GenAI client metrics of model calls, read back from the SDK's in-memory metric exporter.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use support::*;
use towerscope_agent::Agent;
use towerscope_core::{AgentError, Msg};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_otel::TracingMiddleware;

fn meter() -> (SdkMeterProvider, InMemoryMetricExporter) {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    (provider, exporter)
}

/// One histogram data point: its attributes, count and sum.
#[derive(Debug)]
struct Point {
    attributes: BTreeMap<String, String>,
    count: u64,
    sum: f64,
}

/// The data points of every histogram, by metric name, with the metric's unit.
fn histograms(
    provider: &SdkMeterProvider,
    exporter: &InMemoryMetricExporter,
) -> BTreeMap<String, (String, Vec<Point>)> {
    provider.force_flush().unwrap();
    let mut out = BTreeMap::new();
    let all = exporter.get_finished_metrics().unwrap();
    let last = all.last().unwrap();
    for scope in last.scope_metrics() {
        assert_eq!(scope.scope().name(), "towerscope");
        for metric in scope.metrics() {
            let attributes = |kvs: &mut dyn Iterator<Item = &opentelemetry::KeyValue>| {
                kvs.map(|kv| (kv.key.to_string(), kv.value.as_str().into_owned()))
                    .collect()
            };
            let points = match metric.data() {
                AggregatedMetrics::F64(MetricData::Histogram(h)) => h
                    .data_points()
                    .map(|p| Point {
                        attributes: attributes(&mut p.attributes()),
                        count: p.count(),
                        sum: p.sum(),
                    })
                    .collect(),
                AggregatedMetrics::U64(MetricData::Histogram(h)) => h
                    .data_points()
                    .map(|p| Point {
                        attributes: attributes(&mut p.attributes()),
                        count: p.count(),
                        sum: p.sum() as f64,
                    })
                    .collect(),
                other => panic!("{} is not a histogram: {other:?}", metric.name()),
            };
            out.insert(metric.name().to_owned(), (metric.unit().to_owned(), points));
        }
    }
    out
}

#[tokio::test]
async fn token_usage_duration_and_time_to_first_chunk() {
    let (meter_provider, metric_exporter) = meter();
    let (tracer_provider, span_exporter) = in_memory();
    let model = ScriptedModel::new(
        "gpt-test",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#).with_usage(100, 20),
            ScriptedResponse::text("3").with_usage(130, 8).whole(),
        ],
    )
    .provider_name("openai");
    let agent = Agent::builder("a")
        .model(model)
        .tool(add_tool())
        .middleware(
            TracingMiddleware::builder()
                .tracer_provider(&tracer_provider)
                .meter_provider(&meter_provider)
                .build(),
        )
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "1 + 2?")).await.unwrap();
    assert_eq!(
        spans(&span_exporter).len(),
        4,
        "spans and metrics are recorded together"
    );

    let metrics = histograms(&meter_provider, &metric_exporter);
    let base = |extra: &[(&str, &str)]| -> BTreeMap<String, String> {
        let mut map: BTreeMap<String, String> = [
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.provider.name", "openai"),
            ("gen_ai.request.model", "gpt-test"),
        ]
        .iter()
        .chain(extra)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        map.retain(|_, v| !v.is_empty());
        map
    };

    let (unit, duration) = &metrics["gen_ai.client.operation.duration"];
    assert_eq!(unit, "s");
    assert_eq!(duration.len(), 1);
    assert_eq!(duration[0].attributes, base(&[]));
    assert_eq!(duration[0].count, 2);

    let (unit, tokens) = &metrics["gen_ai.client.token.usage"];
    assert_eq!(unit, "{token}");
    let by_type: BTreeMap<&str, &Point> = tokens
        .iter()
        .map(|p| (p.attributes["gen_ai.token.type"].as_str(), p))
        .collect();
    assert_eq!(by_type["input"].attributes, base(&[("gen_ai.token.type", "input")]));
    assert_eq!((by_type["input"].count, by_type["input"].sum), (2, 230.0));
    assert_eq!((by_type["output"].count, by_type["output"].sum), (2, 28.0));

    let (unit, first_chunk) = &metrics["gen_ai.client.operation.time_to_first_chunk"];
    assert_eq!(unit, "s");
    assert_eq!(first_chunk[0].count, 1, "only the streamed call has a first chunk");
}

#[tokio::test]
async fn failed_calls_carry_their_error_type_and_metrics_need_no_tracer() {
    let (meter_provider, metric_exporter) = meter();
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::error(AgentError::rate_limited("slow down", None))],
    );
    let agent = Agent::builder("a")
        .model(model)
        .middleware(TracingMiddleware::builder().meter_provider(&meter_provider).build())
        .build()
        .unwrap();
    assert!(agent.reply(Msg::user("user", "hi")).await.is_err());

    let metrics = histograms(&meter_provider, &metric_exporter);
    let (_, duration) = &metrics["gen_ai.client.operation.duration"];
    assert_eq!(duration[0].attributes["error.type"], "rate_limited");
    assert!(!metrics.contains_key("gen_ai.client.token.usage"));
}

#[tokio::test(start_paused = true)]
async fn an_interrupted_stream_records_its_duration() {
    let (meter_provider, metric_exporter) = meter();
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::text("a long answer that is never read to its end").chunk_delay(Duration::from_secs(1))],
    );
    let agent = Agent::builder("a")
        .model(model)
        .middleware(TracingMiddleware::builder().meter_provider(&meter_provider).build())
        .build()
        .unwrap();
    let running = tokio::spawn({
        let agent = agent.clone();
        async move { collect(agent.reply_stream(Msg::user("user", "hi"))).await }
    });
    // Two chunks have arrived; the stream is running.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(agent.interrupt());
    let reply = running.await.unwrap();
    assert!(
        reply
            .events
            .iter()
            .any(|e| matches!(e, towerscope_core::AgentEvent::TextBlockDelta(_))),
        "the stream was running"
    );

    let metrics = histograms(&meter_provider, &metric_exporter);
    let (_, duration) = &metrics["gen_ai.client.operation.duration"];
    assert_eq!(duration.len(), 1, "{duration:?}");
    assert_eq!(duration[0].count, 1);
    assert!(
        !duration[0].attributes.contains_key("error.type"),
        "an interruption is not a failure: {duration:?}"
    );
    let (_, first_chunk) = &metrics["gen_ai.client.operation.time_to_first_chunk"];
    assert_eq!(first_chunk[0].count, 1);
}
