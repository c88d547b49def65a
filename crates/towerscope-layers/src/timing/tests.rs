#![allow(clippy::unwrap_used)]

use std::time::Duration;

use futures_util::StreamExt;
use tower::{Service, ServiceBuilder, ServiceExt, service_fn};
use towerscope_core::{
    ActingRequest, AgentContext, AgentError, ModelOutput, PositionKind, ToolCallBlock, ToolInfo, ToolItem,
    ToolResponse, ToolStream,
};
use towerscope_models::{ScriptedModel, ScriptedResponse};

use super::*;
use crate::testing::{model_request, model_service};

#[tokio::test(start_paused = true)]
async fn complete_response_records_the_call_duration() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::text("hi").whole().delay(Duration::from_millis(300))],
    );
    let layer = TimingLayer::new();
    let svc = ServiceBuilder::new().layer(layer.clone()).service(model_service());
    let out = svc.oneshot(model_request(&model)).await.unwrap();
    assert!(matches!(out, ModelOutput::Complete(_)));
    let stats = layer.timings().stats(PositionKind::ModelCall);
    assert_eq!(stats.count, 1);
    assert_eq!(stats.total.max, Duration::from_millis(300));
    assert_eq!(stats.recent[0].open, Duration::from_millis(300));
    assert_eq!(stats.recent[0].first_item, None);
    assert_eq!(stats.recent[0].outcome, Outcome::Ok);
}

#[tokio::test(start_paused = true)]
async fn streams_record_first_chunk_and_end() {
    // Opening takes 100ms, then every chunk 50ms: "a ", "b ", "c" and the final chunk.
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::text("a b c")
            .delay(Duration::from_millis(100))
            .chunk_delay(Duration::from_millis(50))],
    );
    let layer = TimingLayer::new();
    let svc = ServiceBuilder::new().layer(layer.clone()).service(model_service());
    let ModelOutput::Stream(mut stream) = svc.oneshot(model_request(&model)).await.unwrap() else {
        panic!("expected a stream")
    };
    // Nothing is recorded until the stream ends.
    assert_eq!(layer.timings().stats(PositionKind::ModelCall).count, 0);
    let mut chunks = 0;
    while let Some(chunk) = stream.next().await {
        chunk.unwrap();
        chunks += 1;
    }
    assert_eq!(chunks, 4);
    let sample = layer.timings().recent(PositionKind::ModelCall).remove(0);
    assert_eq!(sample.open, Duration::from_millis(100));
    assert_eq!(sample.first_item, Some(Duration::from_millis(150)));
    assert_eq!(sample.total, Duration::from_millis(300));
    assert_eq!(sample.outcome, Outcome::Ok);
}

#[tokio::test(start_paused = true)]
async fn a_stream_dropped_after_its_last_chunk_is_complete() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::text("a b").chunk_delay(Duration::from_millis(10))],
    );
    let layer = TimingLayer::new();
    let svc = ServiceBuilder::new().layer(layer.clone()).service(model_service());
    let ModelOutput::Stream(mut stream) = svc.oneshot(model_request(&model)).await.unwrap() else {
        panic!("expected a stream")
    };
    // A consumer that stops at the `is_last` chunk and drops the stream: the call took until
    // that chunk.
    while let Some(chunk) = stream.next().await {
        if chunk.unwrap().is_last {
            break;
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    drop(stream);
    let sample = layer.timings().recent(PositionKind::ModelCall).remove(0);
    assert_eq!(sample.outcome, Outcome::Ok);
    assert_eq!(sample.total, Duration::from_millis(30));
}

/// A layer below rejected the answer after its last chunk (the agent reads the stream to its
/// end, and the error fails the call): the call is an error, timed to the error.
#[tokio::test(start_paused = true)]
async fn an_error_after_the_last_chunk_is_an_error() {
    let layer = TimingLayer::new();
    let inner = crate::testing::answer_then(|| {
        futures_util::stream::once(async {
            tokio::time::sleep(Duration::from_millis(40)).await;
            Err(AgentError::validation("broke a rule"))
        })
    });
    let model = ScriptedModel::new("m", [ScriptedResponse::text("unused")]);
    let svc = ServiceBuilder::new().layer(layer.clone()).service(inner);
    let ModelOutput::Stream(stream) = svc.oneshot(model_request(&model)).await.unwrap() else {
        panic!("expected a stream")
    };
    let items: Vec<_> = stream.collect().await;
    assert!(items.last().unwrap().is_err(), "the error reaches the consumer");
    let stats = layer.timings().stats(PositionKind::ModelCall);
    assert_eq!((stats.count, stats.errors), (1, 1));
    assert_eq!(stats.recent[0].outcome, Outcome::Error);
    assert_eq!(stats.recent[0].total, Duration::from_millis(40), "until the error");
}

#[tokio::test(start_paused = true)]
async fn errors_and_dropped_streams_are_counted() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::error(AgentError::model("boom")),
            ScriptedResponse::text("one two three").chunk_delay(Duration::from_millis(10)),
            ScriptedResponse::text("x y").fail_mid_stream(1, AgentError::Stream("cut".into())),
        ],
    );
    let layer = TimingLayer::new();
    let mut svc = ServiceBuilder::new().layer(layer.clone()).service(model_service());
    assert!(svc.ready().await.unwrap().call(model_request(&model)).await.is_err());
    let ModelOutput::Stream(mut stream) = svc.ready().await.unwrap().call(model_request(&model)).await.unwrap() else {
        panic!("expected a stream")
    };
    stream.next().await.unwrap().unwrap();
    drop(stream);
    let ModelOutput::Stream(stream) = svc.ready().await.unwrap().call(model_request(&model)).await.unwrap() else {
        panic!("expected a stream")
    };
    let items: Vec<_> = stream.collect().await;
    assert!(items.last().unwrap().is_err());

    let stats = layer.timings().stats(PositionKind::ModelCall);
    assert_eq!(stats.count, 3);
    assert_eq!(stats.errors, 2);
    assert_eq!(stats.dropped, 1);
    let outcomes: Vec<_> = stats.recent.iter().map(|s| s.outcome).collect();
    assert_eq!(outcomes, [Outcome::Error, Outcome::Dropped, Outcome::Error]);
    assert_eq!(stats.first_item.count, 2);
}

#[tokio::test(start_paused = true)]
async fn a_stream_dropped_at_its_first_error_is_an_error() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::text("x y")
            .chunk_delay(Duration::from_millis(10))
            .fail_mid_stream(1, AgentError::Stream("cut".into()))],
    );
    let layer = TimingLayer::new();
    let svc = ServiceBuilder::new().layer(layer.clone()).service(model_service());
    let ModelOutput::Stream(mut stream) = svc.oneshot(model_request(&model)).await.unwrap() else {
        panic!("expected a stream")
    };
    // As the agent and the retry and fallback layers do: stop at the first error, drop the stream.
    while let Some(chunk) = stream.next().await {
        if chunk.is_err() {
            break;
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    drop(stream);
    let stats = layer.timings().stats(PositionKind::ModelCall);
    assert_eq!((stats.count, stats.errors, stats.dropped), (1, 1, 0));
    assert_eq!(stats.recent[0].outcome, Outcome::Error);
    assert_eq!(
        stats.recent[0].total,
        Duration::from_millis(20),
        "until the error, not the drop"
    );
}

#[tokio::test(start_paused = true)]
async fn one_layer_serves_several_positions_and_the_ring_is_bounded() {
    let layer = TimingLayer::with_timings(Timings::with_capacity(2));
    let mut acting = ServiceBuilder::new()
        .layer(layer.clone())
        .service(service_fn(|req: ActingRequest| async move {
            // Call `ci` takes i × 5 ms: the samples kept tell which calls they were.
            let i: u64 = req
                .tool_call()
                .id
                .to_string()
                .trim_start_matches('c')
                .parse()
                .unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(5 * i)).await;
            let items = vec![Ok(ToolItem::Response(ToolResponse::text(req.tool_call().name.clone())))];
            Ok::<ToolStream, AgentError>(Box::pin(futures_util::stream::iter(items)))
        }));
    for i in 1..=3u64 {
        let tool = ToolInfo {
            name: "clock".into(),
            description: String::new(),
            concurrency_safe: true,
            read_only: true,
            external: false,
        };
        let call = ToolCallBlock::new(format!("c{i}"), "clock", "{}");
        let req = ActingRequest::new(AgentContext::new("a", "s", "r"), call, tool).with_input(serde_json::json!({}));
        let stream = acting.ready().await.unwrap().call(req).await.unwrap();
        let _: Vec<_> = stream.collect().await;
    }
    let model = ScriptedModel::new("m", [ScriptedResponse::text("hi").whole()]);
    ServiceBuilder::new()
        .layer(layer.clone())
        .service(model_service())
        .oneshot(model_request(&model))
        .await
        .unwrap();

    let stats = layer.timings().stats(PositionKind::Acting);
    assert_eq!(stats.count, 3);
    assert_eq!(stats.recent.len(), 2, "only the last two samples are kept");
    assert_eq!(stats.recent[0].name, "clock");
    let kept: Vec<Duration> = stats.recent.iter().map(|s| s.total).collect();
    assert_eq!(
        kept,
        [Duration::from_millis(10), Duration::from_millis(15)],
        "the newest two, oldest first"
    );
    assert_eq!(stats.total.min, Duration::from_millis(5));
    assert_eq!(layer.timings().stats(PositionKind::ModelCall).count, 1);
    assert_eq!(layer.timings().stats(PositionKind::Reply).count, 0);
    layer.timings().reset();
    assert_eq!(layer.timings().stats(PositionKind::Acting).count, 0);
}

#[test]
fn aggregate_mean() {
    let mut a = Aggregate::default();
    assert_eq!(a.mean(), None);
    a.add(Duration::from_millis(10));
    a.add(Duration::from_millis(30));
    assert_eq!(a.mean(), Some(Duration::from_millis(20)));
    assert_eq!((a.min, a.max), (Duration::from_millis(10), Duration::from_millis(30)));
}
