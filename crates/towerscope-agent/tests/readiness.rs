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

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use common::add_tool;
use futures_util::future::BoxFuture;
use tower::ServiceBuilder;
use tower::limit::GlobalConcurrencyLimitLayer;
use towerscope_agent::Agent;
use towerscope_core::{ActingRequest, AgentError, Msg, ToolResultState, ToolStream};
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

/// An `on_acting` layer that is not ready at its first `poll_ready` and whose answer comes at
/// its second poll: the agent opens the stack at once when it can, and otherwise awaits it
/// with the task's waker, so the tool still runs and its result is stored.
#[derive(Clone)]
struct Late<S> {
    inner: S,
    readiness_polls: Arc<AtomicUsize>,
    answer_polls: Arc<AtomicUsize>,
}

impl<S> tower::Service<ActingRequest> for Late<S>
where
    S: tower::Service<ActingRequest, Response = ToolStream, Error = AgentError>,
    S::Future: Send + 'static,
{
    type Response = ToolStream;
    type Error = AgentError;
    type Future = BoxFuture<'static, Result<ToolStream, AgentError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        if self.readiness_polls.fetch_add(1, Ordering::SeqCst) == 0 {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: ActingRequest) -> Self::Future {
        let answer = self.inner.call(req);
        let polls = Arc::clone(&self.answer_polls);
        let mut yielded = false;
        Box::pin(async move {
            std::future::poll_fn(|cx| {
                polls.fetch_add(1, Ordering::SeqCst);
                if std::mem::replace(&mut yielded, true) {
                    Poll::Ready(())
                } else {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
            })
            .await;
            answer.await
        })
    }
}

#[tokio::test]
async fn an_acting_stack_not_ready_at_once_or_answering_later_still_runs_the_tool() {
    let readiness_polls = Arc::new(AtomicUsize::new(0));
    let answer_polls = Arc::new(AtomicUsize::new(0));
    let (ready, answer) = (Arc::clone(&readiness_polls), Arc::clone(&answer_polls));
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
            ScriptedResponse::text("3"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model)
        .tool(add_tool())
        .on_acting(tower::layer::layer_fn(move |inner| Late {
            inner,
            readiness_polls: Arc::clone(&ready),
            answer_polls: Arc::clone(&answer),
        }))
        .build()
        .unwrap();
    let reply = agent.reply(Msg::user("user", "1 + 2?")).await.unwrap();
    assert_eq!(reply.text_content().as_deref(), Some("3"));
    let state = agent.state();
    let result = state
        .context
        .iter()
        .flat_map(|m| m.tool_results())
        .next()
        .cloned()
        .unwrap();
    assert_eq!(result.state, ToolResultState::Success);
    assert_eq!(result.output.text_content().as_deref(), Some("3"));
    assert_eq!(readiness_polls.load(Ordering::SeqCst), 2, "not ready once, then ready");
    assert_eq!(answer_polls.load(Ordering::SeqCst), 2, "pending once, then answered");
}
