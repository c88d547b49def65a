//! Readiness and tower's own layers: a readiness-sensitive pair (load shedding over a
//! concurrency limit) works inside one `ServiceBuilder` installed at once; installed as two
//! layers, the outer one cannot see the inner one's readiness (each installed layer is erased,
//! and an erased service waits for its inner service's readiness inside the call), so the call
//! waits instead of being shed.
//!
//! (tower's limits count the call's future: on a position that answers with a stream, the
//! stream is read after the permit is released. The scripted model here spends its time before
//! answering, as a provider waiting for its first byte does.)
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use tower::ServiceBuilder;
use tower::limit::GlobalConcurrencyLimitLayer;
use towerscope_agent::Agent;
use towerscope_core::{AgentError, Msg};
use towerscope_models::{ScriptedModel, ScriptedResponse};

fn slow_model() -> ScriptedModel {
    ScriptedModel::new(
        "m",
        [ScriptedResponse::text("answer").delay(Duration::from_millis(100))],
    )
}

#[tokio::test(start_paused = true)]
async fn load_shedding_over_a_shared_limit_in_one_service_builder_sheds() {
    let stack = ServiceBuilder::new()
        .map_err(AgentError::from)
        .load_shed()
        .layer(GlobalConcurrencyLimitLayer::new(1));
    let first = Agent::builder("a")
        .model(slow_model())
        .on_model_call(stack.clone())
        .build()
        .unwrap();
    let second = Agent::builder("b")
        .model(slow_model())
        .on_model_call(stack)
        .build()
        .unwrap();
    let (a, b) = tokio::join!(
        first.reply(Msg::user("user", "hi")),
        second.reply(Msg::user("user", "hi"))
    );
    assert_eq!(a.unwrap().text_content().as_deref(), Some("answer"));
    let err = b.unwrap_err();
    assert!(
        matches!(err, AgentError::Overloaded),
        "tower's Overloaded stays typed: {err:?}"
    );
    assert!(err.is_retryable());
}

#[tokio::test(start_paused = true)]
async fn split_across_two_installs_the_limit_waits_instead() {
    let shed = ServiceBuilder::new().map_err(AgentError::from).load_shed();
    let limit = GlobalConcurrencyLimitLayer::new(1);
    let first = Agent::builder("a")
        .model(slow_model())
        .on_model_call(shed.clone())
        .on_model_call(limit.clone())
        .build()
        .unwrap();
    let second = Agent::builder("b")
        .model(slow_model())
        .on_model_call(shed)
        .on_model_call(limit)
        .build()
        .unwrap();
    let start = tokio::time::Instant::now();
    let (a, b) = tokio::join!(
        first.reply(Msg::user("user", "hi")),
        second.reply(Msg::user("user", "hi"))
    );
    assert!(a.is_ok() && b.is_ok(), "nothing is shed: {a:?} {b:?}");
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(200),
        "the second waited for the first"
    );
}
