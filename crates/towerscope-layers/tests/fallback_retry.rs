//! Retry and fallback through an agent: errors when the call opens and in the middle of the
//! stream, restart markers, what each model received.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::collect;
use tokio::time::Instant;
use towerscope_agent::Agent;
use towerscope_core::{AgentError, AgentEvent, Msg, RESTART_EVENT};
use towerscope_layers::retry::Backoff;
use towerscope_layers::{FallbackLayer, RetryLayer, TimeoutLayer};
use towerscope_models::{ScriptedModel, ScriptedResponse};

fn retry(max_attempts: u32) -> RetryLayer {
    RetryLayer::new(max_attempts).backoff(Backoff::new(Duration::from_millis(100), Duration::from_secs(5)).jitter(0.0))
}

/// The ids of the text blocks started before the first restart event.
fn blocks_before_restart(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .take_while(|e| !matches!(e, AgentEvent::Custom(c) if c.name == RESTART_EVENT))
        .filter_map(|e| match e {
            AgentEvent::TextBlockStart(s) => Some(s.block_id.to_string()),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn retry_waits_the_providers_hint_then_the_fallback_answers() {
    let limited = || AgentError::rate_limited("429 Too Many Requests", Some(Duration::from_secs(3)));
    let primary = ScriptedModel::new(
        "primary",
        [ScriptedResponse::error(limited()), ScriptedResponse::error(limited())],
    );
    let backup = ScriptedModel::new("backup", [ScriptedResponse::text("The backup answers.")]);
    let agent = Agent::builder("assistant")
        .model(primary.clone())
        .on_model_call(FallbackLayer::to(backup.clone()))
        .on_model_call(retry(2))
        .build()
        .unwrap();

    let start = Instant::now();
    let out = collect(agent.reply_stream(Msg::user("user", "Hello?"))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(3),
        "one retry after the hinted 3 s"
    );
    assert_eq!(out.final_text().as_deref(), Some("The backup answers."));
    assert_eq!((primary.calls(), backup.calls()), (2, 1));
    assert_eq!(backup.requests()[0].model, "backup");
    assert_eq!(backup.requests()[0].messages, primary.requests()[0].messages);
    // One model call as the agent sees it; nothing of the failed attempts was streamed.
    assert_eq!(out.count("MODEL_CALL_START"), 1);
    assert!(out.custom(RESTART_EVENT).is_empty());
    assert_eq!(out.kinds().last(), Some(&"REPLY_END"));
}

#[tokio::test]
async fn a_stream_breaking_mid_answer_restarts_on_the_fallback() {
    let primary = ScriptedModel::new(
        "primary",
        [ScriptedResponse::text("The primary model was writing this")
            .fail_mid_stream(3, AgentError::Stream("connection reset".into()))],
    );
    let backup = ScriptedModel::new("backup", [ScriptedResponse::text("The backup wrote all of this.")]);
    let agent = Agent::builder("assistant")
        .model(primary.clone())
        .on_model_call(FallbackLayer::to(backup.clone()))
        .build()
        .unwrap();

    let out = collect(agent.reply_stream(Msg::user("user", "Write something"))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.final_text().as_deref(), Some("The backup wrote all of this."));

    // The restart event lists the primary's partial block.
    let restarts = out.custom(RESTART_EVENT);
    assert_eq!(restarts.len(), 1);
    let discarded: Vec<String> = restarts[0].value["discarded_block_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    let primary_blocks = blocks_before_restart(&out.events);
    assert_eq!(primary_blocks.len(), 1);
    assert_eq!(discarded, primary_blocks);
    let reason = restarts[0].value["reason"].as_str().unwrap();
    assert!(reason.contains("primary") && reason.contains("backup"), "{reason}");

    // A consumer rebuilding the message from the events ends with the backup's text only, as
    // the agent stored it.
    let rebuilt = out.rebuilt("assistant");
    assert_eq!(rebuilt.text_content().as_deref(), Some("The backup wrote all of this."));
    let stored = agent.state().context.last().cloned().unwrap();
    assert_eq!(stored.text_content().as_deref(), Some("The backup wrote all of this."));

    // What each model received.
    assert_eq!(primary.requests()[0].model, "primary");
    assert_eq!(backup.requests()[0].model, "backup");
    assert_eq!(backup.requests()[0].messages, primary.requests()[0].messages);
}

#[tokio::test]
async fn a_stream_breaking_before_its_first_chunk_switches_silently() {
    let primary = ScriptedModel::new(
        "primary",
        [ScriptedResponse::text("never seen").fail_mid_stream(0, AgentError::Stream("reset".into()))],
    );
    let backup = ScriptedModel::new("backup", [ScriptedResponse::text("All from the backup.")]);
    let agent = Agent::builder("assistant")
        .model(primary)
        .on_model_call(FallbackLayer::to(backup))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "Go"))).await;
    assert_eq!(out.final_text().as_deref(), Some("All from the backup."));
    assert!(out.custom(RESTART_EVENT).is_empty());
    assert_eq!(out.count("TEXT_BLOCK_START"), 1);
    assert_eq!(
        out.rebuilt("assistant").text_content().as_deref(),
        Some("All from the backup.")
    );
}

#[tokio::test(start_paused = true)]
async fn retry_restarts_a_broken_stream_on_the_same_model() {
    let model = ScriptedModel::new(
        "flaky",
        [
            ScriptedResponse::text("half an answer that breaks").fail_mid_stream(2, AgentError::Stream("reset".into())),
            ScriptedResponse::text("A whole answer."),
        ],
    );
    let agent = Agent::builder("assistant")
        .model(model.clone())
        .on_model_call(retry(3))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "Go"))).await;
    assert_eq!(out.final_text().as_deref(), Some("A whole answer."));
    assert_eq!(out.custom(RESTART_EVENT).len(), 1);
    assert_eq!(
        out.rebuilt("assistant").text_content().as_deref(),
        Some("A whole answer.")
    );
    assert_eq!(model.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_model_call_is_retried() {
    let model = ScriptedModel::new(
        "slow-then-fast",
        [
            ScriptedResponse::text("too late").delay(Duration::from_secs(30)),
            ScriptedResponse::text("In time."),
        ],
    );
    let agent = Agent::builder("assistant")
        .model(model.clone())
        .on_model_call(retry(2))
        .on_model_call(TimeoutLayer::new(Duration::from_secs(5)))
        .build()
        .unwrap();
    let start = Instant::now();
    let out = collect(agent.reply_stream(Msg::user("user", "Go"))).await;
    assert_eq!(out.final_text().as_deref(), Some("In time."));
    assert_eq!(model.calls(), 2);
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(5100),
        "5 s deadline, then 100 ms backoff"
    );
}

#[tokio::test]
async fn when_every_model_fails_the_reply_fails_with_the_last_error() {
    let primary = ScriptedModel::new("primary", [ScriptedResponse::error(AgentError::model("primary down"))]);
    let backup = ScriptedModel::new("backup", [ScriptedResponse::error(AgentError::model("backup down"))]);
    let agent = Agent::builder("assistant")
        .model(primary)
        .on_model_call(FallbackLayer::to(backup))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "Go"))).await;
    assert_eq!(out.error.unwrap().to_string(), "model error: backup down");
}

#[tokio::test(start_paused = true)]
async fn a_stream_without_its_final_chunk_is_retried_and_falls_back() {
    // The "no final chunk" failure is raised inside the model-call stream, where retry and
    // fallback see it (it used to surface only after the layers had returned).
    let primary = ScriptedModel::new(
        "primary",
        [
            ScriptedResponse::text("cut short").without_final_chunk(),
            ScriptedResponse::text("whole answer"),
        ],
    );
    let agent = Agent::builder("assistant")
        .model(primary.clone())
        .on_model_call(retry(2))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "Hello?"))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.final_text().as_deref(), Some("whole answer"));
    assert_eq!(primary.calls(), 2);

    let broken = ScriptedModel::new("broken", [ScriptedResponse::text("cut").without_final_chunk()]);
    let backup = ScriptedModel::new("backup", [ScriptedResponse::text("from the backup")]);
    let agent = Agent::builder("assistant")
        .model(broken)
        .on_model_call(FallbackLayer::to(backup.clone()))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "Hello?"))).await;
    assert_eq!(out.final_text().as_deref(), Some("from the backup"));
}

#[tokio::test(start_paused = true)]
async fn the_restart_event_names_the_error_by_its_kind_never_by_its_text() {
    let leaky = || AgentError::Http {
        status: 502,
        endpoint: "https://llm-gw.internal/v1".into(),
        message: "echo: SECRET_PROMPT".into(),
        retry_after: None,
    };
    let primary = ScriptedModel::new(
        "primary",
        [ScriptedResponse::text("The primary was writing").fail_mid_stream(1, leaky())],
    );
    let backup = ScriptedModel::new("backup", [ScriptedResponse::text("The backup answers.")]);
    let with_fallback = Agent::builder("assistant")
        .model(primary)
        .on_model_call(FallbackLayer::to(backup))
        .build()
        .unwrap();
    let flaky = ScriptedModel::new(
        "flaky",
        [
            ScriptedResponse::text("The first try").fail_mid_stream(1, leaky()),
            ScriptedResponse::text("The second try."),
        ],
    );
    let with_retry = Agent::builder("assistant")
        .model(flaky)
        .on_model_call(retry(2))
        .build()
        .unwrap();

    for (agent, expected) in [
        (
            with_fallback,
            "model primary failed mid-stream (http_error 502); restarting on fallback model backup",
        ),
        (
            with_retry,
            "attempt 1 of model flaky failed mid-stream (http_error 502); retrying",
        ),
    ] {
        let out = collect(agent.reply_stream(Msg::user("user", "Go"))).await;
        assert!(out.error.is_none(), "{:?}", out.error);
        let restarts = out.custom(RESTART_EVENT);
        assert_eq!(restarts.len(), 1);
        let event = format!("{:?}", restarts[0].value);
        assert_eq!(restarts[0].value["reason"], expected);
        assert!(
            !event.contains("SECRET_PROMPT") && !event.contains("llm-gw.internal"),
            "{event}"
        );
    }
}

/// A guardrail inside retry and fallback rejects the answer after its final chunk (with an
/// error either would act on): the reply fails, the answer is not stored, and neither layer
/// asks a model again for an answer that went out.
#[tokio::test(start_paused = true)]
async fn a_guardrail_inside_retry_and_fallback_still_rejects_the_answer() {
    use futures_util::StreamExt;
    use towerscope_core::{ModelCallNext, ModelCallRequest, ModelOutput, from_fn};

    let model = ScriptedModel::new("m", [ScriptedResponse::text("forbidden words")]).streaming(true);
    let backup = ScriptedModel::new("backup", [ScriptedResponse::text("unused")]);
    let agent = Agent::builder("a")
        .model(model.clone())
        .on_model_call(retry(3))
        .on_model_call(FallbackLayer::to(backup.clone()))
        .on_model_call(from_fn(|req: ModelCallRequest, next: ModelCallNext| async move {
            match next.run(req).await? {
                ModelOutput::Stream(inner) => {
                    let verdict = futures_util::stream::once(async {
                        Err(AgentError::model_retryable("the answer broke a rule"))
                    });
                    Ok(ModelOutput::Stream(Box::pin(inner.chain(verdict))))
                }
                complete => Ok(complete),
            }
        }))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    assert!(
        out.error
            .as_ref()
            .is_some_and(|e| e.to_string().contains("broke a rule")),
        "{:?}",
        out.error
    );
    assert_eq!((model.calls(), backup.calls()), (1, 0));
    let stored = agent.state().context;
    assert!(
        stored
            .iter()
            .all(|m| m.text_content().as_deref() != Some("forbidden words")),
        "the rejected answer is not stored: {stored:?}"
    );
}
