#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use tower::{ServiceBuilder, ServiceExt};
use towerscope_core::{AgentError, ModelRef};
use towerscope_models::{ScriptedModel, ScriptedResponse};

use super::*;
use crate::testing::{capture_logs, describe, model_request, model_service};

fn fallback(models: &[&ScriptedModel]) -> FallbackLayer {
    FallbackLayer::new(models.iter().map(|m| Arc::new((*m).clone()) as ModelRef))
}

#[tokio::test]
async fn a_failed_opening_switches_silently() {
    let primary = ScriptedModel::new("primary", [ScriptedResponse::error(AgentError::model("down"))]);
    let backup = ScriptedModel::new("backup", [ScriptedResponse::text("from backup")]);
    let svc = ServiceBuilder::new()
        .layer(fallback(&[&backup]))
        .service(model_service());
    let out = describe(svc.oneshot(model_request(&primary)).await).await;
    assert_eq!(out, ["text:from ", "text:backup", "last:from backup"]);
    assert_eq!(primary.requests()[0].model, "primary");
    let seen = &backup.requests()[0];
    assert_eq!(seen.model, "backup");
    assert_eq!(
        seen.messages,
        primary.requests()[0].messages,
        "the rest of the request is unchanged"
    );
}

/// A layer below rejected the answer after its final chunk: no other model is tried for an
/// answer that went out, and the error reaches the consumer.
#[tokio::test]
async fn an_error_after_the_final_chunk_reaches_the_consumer() {
    let backup = ScriptedModel::new("backup", [ScriptedResponse::text("from backup")]);
    let tail = || futures_util::stream::iter([Err(AgentError::model("rejected"))]);
    // The inner service answers "a" whatever model the request names.
    let svc = ServiceBuilder::new()
        .layer(fallback(&[&backup]))
        .service(crate::testing::answer_then(tail));
    let primary = ScriptedModel::new("primary", [ScriptedResponse::text("unused")]);
    let out = describe(svc.oneshot(model_request(&primary)).await).await;
    // A switch to the backup would show: a restart marker and the backup's answer.
    assert_eq!(out, ["text:a", "last:a", "err:model error: rejected"]);
}

#[tokio::test]
async fn models_are_tried_in_order_and_the_last_error_is_returned() {
    let primary = ScriptedModel::new("primary", [ScriptedResponse::error(AgentError::model("p"))]);
    let b1 = ScriptedModel::new("b1", [ScriptedResponse::error(AgentError::model("b1 down"))]);
    let b2 = ScriptedModel::new("b2", [ScriptedResponse::error(AgentError::model("b2 down"))]);
    let svc = ServiceBuilder::new()
        .layer(fallback(&[&b1, &b2]))
        .service(model_service());
    let (logs, _guard) = capture_logs();
    let out = describe(svc.oneshot(model_request(&primary)).await).await;
    assert_eq!(out, ["err:model error: b2 down"]);
    assert_eq!((primary.calls(), b1.calls(), b2.calls()), (1, 1, 1));
    // The error names the last model only; the log says every one was tried.
    let logs = logs.lines();
    assert_eq!(logs.len(), 3, "{logs:?}");
    assert!(
        logs[2].contains("every fallback model failed")
            && logs[2].contains("models_tried=3")
            && logs[2].contains("last=\"b2\""),
        "{logs:?}"
    );
}

#[tokio::test]
async fn the_predicate_decides_which_errors_fall_back() {
    let primary = ScriptedModel::new(
        "primary",
        [
            ScriptedResponse::error(AgentError::validation("bad request")),
            ScriptedResponse::error(AgentError::model_retryable("overloaded")),
        ],
    );
    let backup = ScriptedModel::new("backup", [ScriptedResponse::text("ok").whole()]);
    let svc = ServiceBuilder::new()
        .layer(fallback(&[&backup]).when(AgentError::is_retryable))
        .service(model_service());
    let out = describe(svc.clone().oneshot(model_request(&primary)).await).await;
    assert_eq!(out, ["err:validation failed: bad request"]);
    assert_eq!(backup.calls(), 0);
    let out = describe(svc.oneshot(model_request(&primary)).await).await;
    assert_eq!(out, ["last:ok"]);
}

#[tokio::test]
async fn a_stream_failing_before_its_first_chunk_switches_silently() {
    let primary = ScriptedModel::new(
        "primary",
        [ScriptedResponse::text("never shown").fail_mid_stream(0, AgentError::Stream("reset".into()))],
    );
    let backup = ScriptedModel::new("backup", [ScriptedResponse::text("fine")]);
    let svc = ServiceBuilder::new()
        .layer(fallback(&[&backup]))
        .service(model_service());
    let out = describe(svc.oneshot(model_request(&primary)).await).await;
    assert_eq!(out, ["text:fine", "last:fine"]);
}

#[tokio::test]
async fn a_stream_failing_after_chunks_restarts_with_a_marker() {
    let primary = ScriptedModel::new(
        "primary",
        [ScriptedResponse::text("the primary was saying").fail_mid_stream(2, AgentError::Stream("reset".into()))],
    );
    let backup = ScriptedModel::new("backup", [ScriptedResponse::text("backup answer")]);
    let svc = ServiceBuilder::new()
        .layer(fallback(&[&backup]))
        .service(model_service());
    let out = describe(svc.oneshot(model_request(&primary)).await).await;
    assert_eq!(
        out,
        [
            "text:the ",
            "text:primary ",
            "restart:model primary failed mid-stream (stream_error); restarting on fallback model backup",
            "text:backup ",
            "text:answer",
            "last:backup answer",
        ]
    );
}

/// A provider error echoing the prompt, from an internal gateway.
fn leaky_http_error() -> AgentError {
    AgentError::Http {
        status: 502,
        endpoint: "https://llm-gw.internal/v1".into(),
        message: "echo: SECRET_PROMPT".into(),
        retry_after: None,
    }
}

#[tokio::test]
async fn the_restart_reason_and_the_logs_never_carry_the_error_text() {
    let primary = ScriptedModel::new(
        "primary",
        [
            ScriptedResponse::text("a b").fail_mid_stream(1, leaky_http_error()),
            ScriptedResponse::text("c d").fail_mid_stream(1, AgentError::model_retryable("SECRET_PROMPT")),
        ],
    );
    let backup = ScriptedModel::new("backup", [ScriptedResponse::text("e f"), ScriptedResponse::text("g h")]);
    let svc = ServiceBuilder::new()
        .layer(fallback(&[&backup]))
        .service(model_service());
    let (logs, _guard) = capture_logs();
    let http = describe(svc.clone().oneshot(model_request(&primary)).await).await;
    let model = describe(svc.oneshot(model_request(&primary)).await).await;
    assert_eq!(
        http[1],
        "restart:model primary failed mid-stream (http_error 502); restarting on fallback model backup"
    );
    assert_eq!(
        model[1],
        "restart:model primary failed mid-stream (model_error); restarting on fallback model backup"
    );
    let logs = logs.lines();
    assert_eq!(logs.len(), 2, "one line per fallback: {logs:?}");
    assert!(
        logs[0].contains("error.kind=\"http_error\"") && logs[0].contains("http.status=502"),
        "{logs:?}"
    );
    for line in http.iter().chain(&model).chain(&logs) {
        assert!(
            !line.contains("SECRET_PROMPT") && !line.contains("llm-gw.internal"),
            "{line}"
        );
    }
}

#[tokio::test]
async fn a_complete_answer_after_a_restart_is_delivered_as_chunks() {
    let primary = ScriptedModel::new(
        "primary",
        [ScriptedResponse::text("partial text").fail_mid_stream(1, AgentError::Stream("cut".into()))],
    );
    let backup = ScriptedModel::new("backup", [ScriptedResponse::text("whole answer").whole()]);
    let svc = ServiceBuilder::new()
        .layer(fallback(&[&backup]))
        .service(model_service());
    let out = describe(svc.oneshot(model_request(&primary)).await).await;
    assert_eq!(out.len(), 4, "{out:?}");
    assert_eq!(out[0], "text:partial ");
    assert!(out[1].starts_with("restart:"));
    assert_eq!(out[2..], ["text:whole answer", "last:whole answer"]);
}

#[tokio::test]
async fn mid_stream_failures_of_the_fallback_move_on_to_the_next_model() {
    let primary = ScriptedModel::new(
        "primary",
        [ScriptedResponse::text("a b").fail_mid_stream(1, AgentError::Stream("cut".into()))],
    );
    let b1 = ScriptedModel::new(
        "b1",
        [ScriptedResponse::text("c d").fail_mid_stream(1, AgentError::Stream("cut".into()))],
    );
    let b2 = ScriptedModel::new("b2", [ScriptedResponse::text("e")]);
    let svc = ServiceBuilder::new()
        .layer(fallback(&[&b1, &b2]))
        .service(model_service());
    let out = describe(svc.oneshot(model_request(&primary)).await).await;
    let restarts = out.iter().filter(|s| s.starts_with("restart:")).count();
    assert_eq!(restarts, 2, "{out:?}");
    assert_eq!(out.last().map(String::as_str), Some("last:e"));
}
