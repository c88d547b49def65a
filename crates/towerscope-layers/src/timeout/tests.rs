#![allow(clippy::unwrap_used)]

use std::time::Duration;

use futures_util::StreamExt;
use tower::{ServiceBuilder, ServiceExt};
use towerscope_core::{AgentError, ChatResponse, ModelOutput, TimeoutKind};
use towerscope_models::{ScriptedModel, ScriptedResponse};

use super::*;
use crate::testing::{model_request, model_service};

async fn run(layer: TimeoutLayer, response: ScriptedResponse) -> (Vec<Result<ChatResponse, AgentError>>, Duration) {
    let model = ScriptedModel::new("m", [response]);
    let svc = ServiceBuilder::new().layer(layer).service(model_service());
    let start = tokio::time::Instant::now();
    let items = match svc.oneshot(model_request(&model)).await {
        Err(e) => vec![Err(e)],
        Ok(ModelOutput::Complete(r)) => vec![Ok(r)],
        Ok(ModelOutput::Stream(s)) => s.collect().await,
    };
    (items, start.elapsed())
}

fn timeout_kind(items: &[Result<ChatResponse, AgentError>]) -> Option<(TimeoutKind, Duration)> {
    match items.last()? {
        Err(AgentError::Timeout { kind, after, .. }) => Some((*kind, (*after)?)),
        _ => None,
    }
}

#[tokio::test(start_paused = true)]
async fn call_deadline_fails_a_slow_opening() {
    let slow = ScriptedResponse::text("late").whole().delay(Duration::from_secs(5));
    let (items, elapsed) = run(TimeoutLayer::new(Duration::from_secs(2)), slow).await;
    assert_eq!(timeout_kind(&items), Some((TimeoutKind::Call, Duration::from_secs(2))));
    assert_eq!(
        elapsed,
        Duration::from_secs(2),
        "fails at the deadline, not when the model answers"
    );
    let Err(e) = &items[0] else { panic!() };
    assert!(
        e.to_string()
            .starts_with("model call m timed out: did not finish within 2s"),
        "{e}"
    );
}

#[tokio::test(start_paused = true)]
async fn answers_in_time_pass_unchanged() {
    let fast = ScriptedResponse::text("a b c")
        .delay(Duration::from_millis(500))
        .chunk_delay(Duration::from_millis(100));
    let layer = TimeoutLayer::new(Duration::from_secs(2))
        .first_chunk(Duration::from_secs(1))
        .idle(Duration::from_millis(200));
    let (items, elapsed) = run(layer, fast).await;
    assert_eq!(items.len(), 4);
    assert!(items.iter().all(Result::is_ok));
    assert!(items[3].as_ref().unwrap().is_last);
    assert_eq!(elapsed, Duration::from_millis(900));
}

/// The stream stays open after its final chunk (a layer below still judging the answer): the
/// agent reads it to its end, so the call deadline still holds.
#[tokio::test(start_paused = true)]
async fn the_call_deadline_holds_after_the_final_chunk() {
    let svc = ServiceBuilder::new()
        .layer(TimeoutLayer::new(Duration::from_secs(1)))
        .service(crate::testing::answer_then(futures_util::stream::pending));
    let model = ScriptedModel::new("m", [ScriptedResponse::text("unused")]);
    let start = tokio::time::Instant::now();
    let Ok(ModelOutput::Stream(stream)) = svc.oneshot(model_request(&model)).await else {
        panic!("expected a stream")
    };
    let items = tokio::time::timeout(Duration::from_secs(10), stream.collect::<Vec<_>>())
        .await
        .expect("the deadline ends the stream");
    assert_eq!(items.len(), 3, "{items:?}");
    assert_eq!(timeout_kind(&items), Some((TimeoutKind::Call, Duration::from_secs(1))));
    assert_eq!(start.elapsed(), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn the_call_deadline_covers_the_whole_stream() {
    // Every chunk comes in time for the idle deadline, but the stream as a whole is too slow.
    let slow = ScriptedResponse::text("a b c d e f").chunk_delay(Duration::from_millis(300));
    let layer = TimeoutLayer::new(Duration::from_secs(1)).idle(Duration::from_millis(500));
    let (items, elapsed) = run(layer, slow).await;
    assert_eq!(timeout_kind(&items), Some((TimeoutKind::Call, Duration::from_secs(1))));
    assert_eq!(items.len(), 4, "three chunks, then the error: {items:?}");
    assert_eq!(elapsed, Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn first_chunk_deadline() {
    let slow = ScriptedResponse::text("a b").chunk_delay(Duration::from_secs(3));
    let layer = TimeoutLayer::none().first_chunk(Duration::from_secs(2));
    let (items, elapsed) = run(layer, slow).await;
    assert_eq!(items.len(), 1);
    assert_eq!(
        timeout_kind(&items),
        Some((TimeoutKind::FirstChunk, Duration::from_secs(2)))
    );
    assert_eq!(elapsed, Duration::from_secs(2));

    // Once the first chunk came, the first-chunk deadline no longer applies.
    let ok = ScriptedResponse::text("a b c").chunk_delay(Duration::from_millis(1500));
    let (items, _) = run(TimeoutLayer::none().first_chunk(Duration::from_secs(2)), ok).await;
    assert!(items.iter().all(Result::is_ok));
}

#[tokio::test(start_paused = true)]
async fn idle_deadline_between_chunks() {
    let stalls = ScriptedResponse::text("a b").chunk_delay(Duration::from_secs(1));
    let layer = TimeoutLayer::none().idle(Duration::from_millis(900));
    let (items, elapsed) = run(layer, stalls).await;
    // The idle deadline starts after the first chunk; the first chunk itself may take long.
    assert!(items[0].is_ok());
    assert_eq!(
        timeout_kind(&items),
        Some((TimeoutKind::Idle, Duration::from_millis(900)))
    );
    assert_eq!(items.len(), 2);
    assert_eq!(elapsed, Duration::from_millis(1900));
}

#[tokio::test(start_paused = true)]
async fn inner_errors_pass_through() {
    let failing = ScriptedResponse::error(AgentError::model("bad request"));
    let (items, _) = run(TimeoutLayer::new(Duration::from_secs(1)), failing).await;
    assert!(matches!(&items[0], Err(AgentError::Model { .. })));
}

#[tokio::test(start_paused = true)]
async fn a_deadline_of_duration_max_is_no_deadline() {
    let slow = ScriptedResponse::text("a b")
        .delay(Duration::from_secs(3600))
        .chunk_delay(Duration::from_secs(3600));
    let never = TimeoutLayer::new(Duration::MAX)
        .first_chunk(Duration::MAX)
        .idle(Duration::MAX);
    let (items, elapsed) = run(never, slow).await;
    assert_eq!(items.len(), 3, "{items:?}");
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    assert_eq!(
        elapsed,
        Duration::from_secs(4 * 3600),
        "an hour to open, an hour per chunk"
    );

    // The other deadlines still apply.
    let stalls = ScriptedResponse::text("a b").chunk_delay(Duration::from_secs(1));
    let layer = TimeoutLayer::new(Duration::MAX).idle(Duration::from_millis(900));
    let (items, _) = run(layer, stalls).await;
    assert_eq!(
        timeout_kind(&items),
        Some((TimeoutKind::Idle, Duration::from_millis(900)))
    );
}
