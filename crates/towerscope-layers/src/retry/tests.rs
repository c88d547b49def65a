#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use tokio::time::Instant;
use tower::retry::budget::Budget;
use tower::{ServiceBuilder, ServiceExt};
use towerscope_core::AgentError;
use towerscope_models::{ScriptedModel, ScriptedResponse};

use super::*;
use crate::testing::{capture_logs, describe, model_request, model_service};

fn no_jitter(max_attempts: u32) -> RetryLayer {
    RetryLayer::new(max_attempts)
        .backoff(Backoff::new(Duration::from_millis(100), Duration::from_secs(10)).jitter(0.0))
        .no_budget()
}

fn flaky() -> AgentError {
    AgentError::model_retryable("connection reset")
}

#[tokio::test(start_paused = true)]
async fn retries_with_exponential_backoff() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::error(flaky()),
            ScriptedResponse::error(flaky()),
            ScriptedResponse::text("ok").whole(),
        ],
    );
    let svc = ServiceBuilder::new().layer(no_jitter(3)).service(model_service());
    let start = Instant::now();
    let out = describe(svc.oneshot(model_request(&model)).await).await;
    assert_eq!(out, ["last:ok"]);
    assert_eq!(model.calls(), 3);
    assert_eq!(start.elapsed(), Duration::from_millis(300), "100 ms, then 200 ms");
}

#[tokio::test(start_paused = true)]
async fn gives_up_after_max_attempts_and_on_non_retryable_errors() {
    let model = ScriptedModel::cycle("m", [ScriptedResponse::error(flaky())]);
    let svc = ServiceBuilder::new().layer(no_jitter(4)).service(model_service());
    let out = describe(svc.oneshot(model_request(&model)).await).await;
    assert_eq!(out, ["err:model error: connection reset"]);
    assert_eq!(model.calls(), 4);

    let model = ScriptedModel::new("m", [ScriptedResponse::error(AgentError::validation("bad schema"))]);
    let svc = ServiceBuilder::new().layer(no_jitter(4)).service(model_service());
    let out = describe(svc.oneshot(model_request(&model)).await).await;
    assert_eq!(out, ["err:validation failed: bad schema"]);
    assert_eq!(model.calls(), 1);
}

/// A layer below rejected the answer after its final chunk, with an error retry would take:
/// the answer went out, so it is not attempted again, and the error reaches the consumer (the
/// agent reads the stream to its end, and fails the call).
#[tokio::test(start_paused = true)]
async fn an_error_after_the_final_chunk_reaches_the_consumer() {
    let tail = || futures_util::stream::iter([Err(AgentError::model_retryable("rejected"))]);
    let svc = ServiceBuilder::new()
        .layer(no_jitter(3))
        .service(crate::testing::answer_then(tail));
    let model = ScriptedModel::new("m", [ScriptedResponse::text("unused")]);
    let out = describe(svc.oneshot(model_request(&model)).await).await;
    assert_eq!(out, ["text:a", "last:a", "err:model error: rejected"]);
}

#[tokio::test(start_paused = true)]
async fn honours_the_retry_after_hint() {
    let limited = AgentError::rate_limited("429", Some(Duration::from_secs(7)));
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::error(limited), ScriptedResponse::text("ok").whole()],
    );
    let svc = ServiceBuilder::new().layer(no_jitter(2)).service(model_service());
    let start = Instant::now();
    assert_eq!(describe(svc.oneshot(model_request(&model)).await).await, ["last:ok"]);
    assert_eq!(start.elapsed(), Duration::from_secs(7));

    // A hint of zero (or a date already past) waits the backoff, not nothing.
    let now = AgentError::rate_limited("429", Some(Duration::ZERO));
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::error(now.clone()),
            ScriptedResponse::error(now),
            ScriptedResponse::text("ok").whole(),
        ],
    );
    let svc = ServiceBuilder::new().layer(no_jitter(3)).service(model_service());
    let start = Instant::now();
    assert_eq!(describe(svc.oneshot(model_request(&model)).await).await, ["last:ok"]);
    assert_eq!(start.elapsed(), Duration::from_millis(300), "100 ms, then 200 ms");

    // A hint longer than max_retry_after is not waited for.
    let limited = AgentError::rate_limited("429", Some(Duration::from_secs(60)));
    let model = ScriptedModel::new("m", [ScriptedResponse::error(limited)]);
    let layer = no_jitter(5).max_retry_after(Duration::from_secs(10));
    let svc = ServiceBuilder::new().layer(layer).service(model_service());
    let start = Instant::now();
    let out = describe(svc.oneshot(model_request(&model)).await).await;
    assert_eq!(out, ["err:rate limited: 429 (retry after 60s)"]);
    assert_eq!(start.elapsed(), Duration::ZERO);

    // By default a minute is waited for, an hour is not; `Duration::MAX` waits for anything.
    for (hint, max, waited) in [
        (60, None, Some(60)),
        (3600, None, None),
        (3600, Some(Duration::MAX), Some(3600)),
    ] {
        let limited = AgentError::rate_limited("429", Some(Duration::from_secs(hint)));
        let model = ScriptedModel::new(
            "m",
            [ScriptedResponse::error(limited), ScriptedResponse::text("ok").whole()],
        );
        let layer = max.map_or_else(|| no_jitter(2), |max| no_jitter(2).max_retry_after(max));
        let svc = ServiceBuilder::new().layer(layer).service(model_service());
        let start = Instant::now();
        let out = describe(svc.oneshot(model_request(&model)).await).await;
        match waited {
            Some(secs) => {
                assert_eq!(out, ["last:ok"], "hint {hint}s");
                assert_eq!(start.elapsed(), Duration::from_secs(secs));
            }
            None => {
                assert_eq!(
                    out,
                    [format!("err:rate limited: 429 (retry after {hint}s)")],
                    "hint {hint}s"
                );
                assert_eq!(start.elapsed(), Duration::ZERO);
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn the_predicate_replaces_is_retryable() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::error(AgentError::model("quirky")),
            ScriptedResponse::text("ok").whole(),
        ],
    );
    let layer = no_jitter(2).when(|e| e.to_string().contains("quirky"));
    let svc = ServiceBuilder::new().layer(layer).service(model_service());
    assert_eq!(describe(svc.oneshot(model_request(&model)).await).await, ["last:ok"]);
}

#[tokio::test(start_paused = true)]
async fn mid_stream_failures_are_retried_with_a_restart_marker() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::text("first try").fail_mid_stream(1, AgentError::Stream("reset".into())),
            ScriptedResponse::text("second").fail_mid_stream(0, AgentError::Stream("reset".into())),
            ScriptedResponse::text("third try"),
        ],
    );
    let svc = ServiceBuilder::new().layer(no_jitter(3)).service(model_service());
    let out = describe(svc.oneshot(model_request(&model)).await).await;
    assert_eq!(
        out,
        [
            "text:first ",
            "restart:attempt 1 of model m failed mid-stream (stream_error); retrying",
            // The second attempt failed before delivering anything: no second marker.
            "text:third ",
            "text:try",
            "last:third try",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn the_restart_reason_and_the_logs_never_carry_the_error_text() {
    let http = AgentError::Http {
        status: 502,
        endpoint: "https://llm-gw.internal/v1".into(),
        message: "echo: SECRET_PROMPT".into(),
        retry_after: None,
    };
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::text("a b").fail_mid_stream(1, http),
            ScriptedResponse::text("c d").fail_mid_stream(1, AgentError::Stream("SECRET_PROMPT".into())),
            ScriptedResponse::text("e f"),
        ],
    );
    let svc = ServiceBuilder::new().layer(no_jitter(3)).service(model_service());
    let (logs, _guard) = capture_logs();
    let out = describe(svc.oneshot(model_request(&model)).await).await;
    assert_eq!(
        out,
        [
            "text:a ",
            "restart:attempt 1 of model m failed mid-stream (http_error 502); retrying",
            "text:c ",
            "restart:attempt 2 of model m failed mid-stream (stream_error); retrying",
            "text:e ",
            "text:f",
            "last:e f",
        ]
    );
    let logs = logs.lines();
    assert_eq!(logs.len(), 2, "one line per retry: {logs:?}");
    assert!(
        logs[0].contains("error.kind=\"http_error\"") && logs[0].contains("http.status=502"),
        "{logs:?}"
    );
    for line in out.iter().chain(&logs) {
        assert!(
            !line.contains("SECRET_PROMPT") && !line.contains("llm-gw.internal"),
            "{line}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn the_logs_of_a_refused_retry_never_carry_the_error_text() {
    let limited = AgentError::Http {
        status: 429,
        endpoint: "https://llm-gw.internal/v1".into(),
        message: "echo: SECRET_PROMPT".into(),
        retry_after: Some(Duration::from_secs(60)),
    };
    let model = ScriptedModel::new("m", [ScriptedResponse::error(limited)]);
    let layer = no_jitter(3).max_retry_after(Duration::from_secs(1));
    let svc = ServiceBuilder::new().layer(layer).service(model_service());
    let (logs, _guard) = capture_logs();
    describe(svc.oneshot(model_request(&model)).await).await;
    let logs = logs.lines();
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert!(logs[0].contains("http.status=429"), "{logs:?}");
    assert!(
        !logs[0].contains("SECRET_PROMPT") && !logs[0].contains("llm-gw.internal"),
        "{logs:?}"
    );
}

/// A budget allowing one retry per token; every success deposits one.
#[derive(Debug)]
struct Tokens(AtomicI32);

impl Budget for Tokens {
    fn deposit(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    fn withdraw(&self) -> bool {
        self.0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n > 0).then(|| n - 1))
            .is_ok()
    }
}

/// An answer a layer below rejects after its final chunk is no success: nothing is deposited
/// into the budget; one read to its end without an error deposits.
#[tokio::test(start_paused = true)]
async fn an_answer_rejected_after_its_final_chunk_deposits_nothing() {
    let budget = Arc::new(Tokens(AtomicI32::new(0)));
    let shared: SharedBudget = Arc::clone(&budget) as SharedBudget;
    let model = ScriptedModel::new("m", [ScriptedResponse::text("unused")]);
    let rejected = ServiceBuilder::new()
        .layer(no_jitter(3).shared_budget(Arc::clone(&shared)))
        .service(crate::testing::answer_then(|| {
            futures_util::stream::iter([Err(AgentError::model("rejected"))])
        }));
    describe(rejected.oneshot(model_request(&model)).await).await;
    assert_eq!(budget.0.load(Ordering::SeqCst), 0);
    let accepted = ServiceBuilder::new()
        .layer(no_jitter(3).shared_budget(shared))
        .service(crate::testing::answer_then(futures_util::stream::empty));
    describe(accepted.oneshot(model_request(&model)).await).await;
    assert_eq!(budget.0.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn the_budget_is_shared_by_clones() {
    let budget: SharedBudget = Arc::new(Tokens(AtomicI32::new(1)));
    let layer = no_jitter(3).shared_budget(Arc::clone(&budget));
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::error(flaky()),       // a: retried with the only token
            ScriptedResponse::error(flaky()),       // a: budget empty, given up
            ScriptedResponse::error(flaky()),       // b (a clone): budget still empty, given up
            ScriptedResponse::text("fine").whole(), // a: a success deposits a token
            ScriptedResponse::error(flaky()),       // b: retried with it
            ScriptedResponse::text("retried").whole(),
        ],
    );
    let a = ServiceBuilder::new().layer(layer.clone()).service(model_service());
    let b = ServiceBuilder::new().layer(layer).service(model_service());
    let err = ["err:model error: connection reset"];
    assert_eq!(describe(a.clone().oneshot(model_request(&model)).await).await, err);
    assert_eq!(model.calls(), 2);
    assert_eq!(describe(b.clone().oneshot(model_request(&model)).await).await, err);
    assert_eq!(model.calls(), 3);
    assert_eq!(describe(a.oneshot(model_request(&model)).await).await, ["last:fine"]);
    assert_eq!(describe(b.oneshot(model_request(&model)).await).await, ["last:retried"]);
    assert_eq!(model.calls(), 6);
}

#[tokio::test(start_paused = true)]
async fn the_policy_works_with_tower_retry_for_openings() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::error(flaky()), ScriptedResponse::text("ok").whole()],
    );
    let svc = ServiceBuilder::new()
        .layer(tower::retry::RetryLayer::new(no_jitter(2).policy()))
        .service(model_service());
    assert_eq!(describe(svc.oneshot(model_request(&model)).await).await, ["last:ok"]);
    assert_eq!(model.calls(), 2);
}
