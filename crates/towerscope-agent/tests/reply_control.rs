//! Ending a reply or running another round: an `on_reply` layer asks for another round
//! explicitly; layers that read ahead (buffer, or bridge the stream through a channel) change
//! nothing.
#![allow(clippy::unwrap_used)]

mod common;

use futures_util::StreamExt;
use towerscope_agent::{Agent, structured};
use towerscope_core::{AgentError, AgentEvent, EventStream, Msg, ReplyItem, ReplyNext, ReplyRequest, from_fn};
use towerscope_models::{ScriptedModel, ScriptedResponse};

type LayerFuture = futures_util::future::BoxFuture<'static, Result<EventStream, AgentError>>;

/// Holds back the first `n` REPLY_END events it sees, asking for another round each time.
fn retry_answer(n: usize) -> impl Fn(ReplyRequest, ReplyNext) -> LayerFuture + Clone {
    move |req, next| {
        Box::pin(async move {
            let ctx = req.ctx.clone();
            let inner = next.run(req).await?;
            let mut left = n;
            Ok(Box::pin(inner.filter(move |item| {
                let swallow = left > 0 && matches!(item, Ok(ReplyItem::Event(AgentEvent::ReplyEnd(_))));
                if swallow {
                    left -= 1;
                    ctx.request_another_round();
                }
                std::future::ready(!swallow)
            })) as EventStream)
        })
    }
}

#[tokio::test]
async fn a_layer_that_asks_for_another_round_gets_one() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("first"), ScriptedResponse::text("second")]);
    let agent = Agent::builder("a")
        .model(model.clone())
        .on_reply(from_fn(retry_answer(1)))
        .build()
        .unwrap();
    let out = common::collect(agent.reply_stream(Msg::user("user", "hello"))).await;
    assert_eq!(model.calls(), 2);
    assert_eq!(out.final_text().as_deref(), Some("second"));
    assert_eq!(out.kinds().iter().filter(|k| **k == "REPLY_END").count(), 1);
}

#[tokio::test]
async fn asking_twice_without_progress_is_an_error() {
    let model = ScriptedModel::new("m", [ScriptedResponse::tool_call("s", structured::TOOL_NAME, "{}")]);
    let agent = Agent::builder("a")
        .model(model)
        .on_reply(from_fn(retry_answer(usize::MAX)))
        .build()
        .unwrap();
    let schema = towerscope_core::StructuredSchema {
        name: "Empty".into(),
        schema: serde_json::json!({"type": "object"}),
    };
    let out = common::collect(agent.reply_stream_structured(Msg::user("user", "hello"), schema)).await;
    let err = out.error.unwrap();
    assert!(
        err.to_string()
            .contains("asked for another round twice without any reasoning/acting"),
        "{err}"
    );
}

/// What a read-ahead layer must not change: one model call, REPLY_END last, then the message.
fn assert_one_round(model: &ScriptedModel, out: &common::Collected) {
    assert_eq!(model.calls(), 1, "no extra round");
    assert_eq!(out.kinds().last(), Some(&"REPLY_END"), "nothing after REPLY_END");
    assert_eq!(out.final_text().as_deref(), Some("only"));
    assert!(out.error.is_none(), "{:?}", out.error);
}

#[tokio::test]
async fn a_buffering_layer_does_not_cause_another_round() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("only"), ScriptedResponse::text("extra")]);
    let agent = Agent::builder("a")
        .model(model.clone())
        .on_reply(from_fn(|req: ReplyRequest, next: ReplyNext| async move {
            let inner = next.run(req).await?;
            // Reads up to 64 ready items ahead of the consumer.
            let buffered = inner.ready_chunks(64).flat_map(futures_util::stream::iter);
            Ok(Box::pin(buffered) as EventStream)
        }))
        .build()
        .unwrap();
    let out = common::collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    assert_one_round(&model, &out);
}

#[tokio::test]
async fn a_channel_bridged_layer_does_not_cause_another_round() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("only"), ScriptedResponse::text("extra")]);
    let agent = Agent::builder("a")
        .model(model.clone())
        .on_reply(from_fn(|req: ReplyRequest, next: ReplyNext| async move {
            let mut inner = next.run(req).await?;
            let (tx, rx) = tokio::sync::mpsc::channel(16);
            // A task drains the reply into a channel, as a web handler forwarding events does.
            tokio::spawn(async move {
                while let Some(item) = inner.next().await {
                    if tx.send(item).await.is_err() {
                        break;
                    }
                }
            });
            Ok(Box::pin(tokio_stream_from(rx)) as EventStream)
        }))
        .build()
        .unwrap();
    let out = common::collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    assert_one_round(&model, &out);
}

fn tokio_stream_from<T: Send + 'static>(
    rx: tokio::sync::mpsc::Receiver<T>,
) -> impl futures_util::Stream<Item = T> + Send + 'static {
    futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) })
}

/// `Agent::reply` starts the reply when it is called, as `reply_stream` does: the agent is busy
/// from then on, and the future, which borrows nothing from the agent, runs it where it is polled.
#[tokio::test]
async fn a_reply_future_starts_the_reply_when_made_and_runs_where_it_is_polled() {
    let agent = Agent::builder("a")
        .model(ScriptedModel::new(
            "m",
            [ScriptedResponse::text("first"), ScriptedResponse::text("second")],
        ))
        .build()
        .unwrap();
    let pending = agent.reply(Msg::user("user", "one"));
    let refused = agent.reply(Msg::user("user", "two")).await;
    assert!(
        matches!(&refused, Err(AgentError::State(text)) if text.contains("already replying")),
        "{refused:?}"
    );
    let answer = tokio::spawn(pending).await.unwrap().unwrap();
    assert_eq!(answer.text_content().as_deref(), Some("first"));
    let next = agent.reply(Msg::user("user", "three")).await.unwrap();
    assert_eq!(next.text_content().as_deref(), Some("second"));
}

#[tokio::test]
async fn an_interrupt_at_an_end_a_layer_turns_into_another_round_stops_that_round() {
    // The interrupt comes as the layer swallows REPLY_END and asks for another round: the end
    // it came at is not the reply's, so the round after it is interrupted.
    let model = ScriptedModel::new("m", [ScriptedResponse::text("first"), ScriptedResponse::text("second")]);
    let handle: std::sync::Arc<std::sync::OnceLock<Agent>> = std::sync::Arc::default();
    let layer = {
        let handle = std::sync::Arc::clone(&handle);
        move |req: ReplyRequest, next: ReplyNext| -> LayerFuture {
            let handle = std::sync::Arc::clone(&handle);
            Box::pin(async move {
                let ctx = req.ctx.clone();
                let inner = next.run(req).await?;
                let mut left = 1;
                Ok(Box::pin(inner.filter(move |item| {
                    let swallow = left > 0 && matches!(item, Ok(ReplyItem::Event(AgentEvent::ReplyEnd(_))));
                    if swallow {
                        left -= 1;
                        ctx.request_another_round();
                        assert!(handle.get().is_some_and(Agent::interrupt), "the reply is running");
                    }
                    std::future::ready(!swallow)
                })) as EventStream)
            })
        }
    };
    let agent = Agent::builder("a")
        .model(model.clone())
        .on_reply(from_fn(layer))
        .build()
        .unwrap();
    assert!(handle.set(agent.clone()).is_ok());
    let out = common::collect(agent.reply_stream(Msg::user("user", "hello"))).await;
    let ends: Vec<_> = out
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ReplyEnd(e) => Some(e.finished_reason),
            _ => None,
        })
        .collect();
    assert_eq!(ends, [towerscope_core::ReplyFinishedReason::Interrupted]);
    assert_eq!(
        out.final_msg.and_then(|m| m.finished_reason),
        Some(towerscope_core::ReplyFinishedReason::Interrupted)
    );
    assert_eq!(model.calls(), 1, "the second round stops before its model call");
}
