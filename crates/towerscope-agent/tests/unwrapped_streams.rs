//! A layer on `on_reply` or `on_reasoning` that hands back the stream of the service below it
//! unchanged cannot read its events, so the agent builds them only for whoever else reads them,
//! and runs such a reasoning step inline (`EventsRead` in the agent's `emit` module). These
//! tests pin what must not change with that: the request the layers passed in is the one that
//! runs, a layer that answers with its own stream still replaces the step, a stream reader
//! still sees every event, and a layer that does wrap the stream still sees what it declared.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{
    AgentError, AgentEvent, ErasedLayer, EventKinds, EventStream, Middleware, Msg, Next, ReasoningLayer,
    ReasoningRequest, ReplyEndEvent, ReplyFinishedReason, ReplyItem, ReplyRequest, ToolChoice, ToolChoiceMode, from_fn,
};
use towerscope_models::{ScriptedModel, ScriptedResponse};

type Answer = BoxFuture<'static, Result<EventStream, AgentError>>;

/// Adds two numbers.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

fn model() -> ScriptedModel {
    ScriptedModel::cycle(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
            ScriptedResponse::text("3"),
        ],
    )
    .record(true)
}

fn builder(model: &ScriptedModel) -> towerscope_agent::AgentBuilder {
    Agent::builder("a").model(model.clone()).tool(FunctionTool::new(
        "add",
        |x: Add| async move { (x.a + x.b).to_string() },
    ))
}

/// Hands back the inner stream unchanged.
fn pass<R: Send + 'static>() -> impl Fn(R, Next<R, EventStream>) -> Answer + Clone {
    |req, next| Box::pin(async move { next.run(req).await })
}

#[tokio::test]
async fn a_stream_reader_sees_the_same_events_through_pass_through_layers() {
    let bare = model();
    let plain = common::collect(builder(&bare).build().unwrap().reply_stream(Msg::user("u", "1 + 2?"))).await;
    let layered_model = model();
    let layered = builder(&layered_model)
        .on_reply(from_fn(pass::<ReplyRequest>()))
        .on_reasoning(from_fn(pass::<ReasoningRequest>()))
        .build()
        .unwrap();
    let out = common::collect(layered.reply_stream(Msg::user("u", "1 + 2?"))).await;
    assert_eq!(out.kinds(), plain.kinds());
    assert!(out.kinds().len() > 10, "{:?}", out.kinds());
    assert_eq!(out.final_text().as_deref(), Some("3"));
    assert_eq!(layered_model.calls(), 2);
}

#[tokio::test]
async fn the_request_a_pass_through_reasoning_layer_changed_is_the_one_that_runs() {
    let model = model();
    let choose = |mut req: ReasoningRequest, next: Next<ReasoningRequest, EventStream>| -> Answer {
        req.tool_choice = Some(ToolChoice::tool("add"));
        Box::pin(async move { next.run(req).await })
    };
    let agent = builder(&model).on_reasoning(from_fn(choose)).build().unwrap();
    agent.reply(Msg::user("u", "1 + 2?")).await.unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    for request in requests {
        let choice = request.tool_choice.expect("the layer's tool choice reached the model");
        assert_eq!(choice.mode, ToolChoiceMode::Tool("add".to_owned()));
    }
}

#[tokio::test]
async fn a_layer_that_drops_the_inner_stream_and_answers_itself_replaces_the_step() {
    let model = model();
    let canned = |req: ReasoningRequest, next: Next<ReasoningRequest, EventStream>| -> Answer {
        Box::pin(async move {
            // Made, never polled, dropped: its step must not run.
            drop(next.run(req.clone()).await?);
            let msg = Msg::assistant("a", "canned").with_id(req.ctx.reply_id());
            let own: EventStream = Box::pin(futures_util::stream::iter([Ok(ReplyItem::Final(msg))]));
            Ok(own)
        })
    };
    let agent = builder(&model).on_reasoning(from_fn(canned)).build().unwrap();
    let msg = agent.reply(Msg::user("u", "1 + 2?")).await.unwrap();
    assert_eq!(msg.text_content().as_deref(), Some("canned"));
    assert_eq!(model.calls(), 0);
}

#[tokio::test]
async fn a_layer_that_makes_two_steps_gets_the_one_it_hands_back() {
    let model = model();
    let second = |req: ReasoningRequest, next: Next<ReasoningRequest, EventStream>| -> Answer {
        Box::pin(async move {
            let mut first_req = req.clone();
            first_req.tool_choice = Some(ToolChoice::none());
            let first = next.clone().run(first_req).await?;
            let mut req = req;
            req.tool_choice = Some(ToolChoice::required());
            let second = next.run(req).await?;
            drop(first);
            Ok(second)
        })
    };
    let agent = builder(&model).on_reasoning(from_fn(second)).build().unwrap();
    let msg = agent.reply(Msg::user("u", "1 + 2?")).await.unwrap();
    assert_eq!(msg.text_content().as_deref(), Some("3"));
    let modes: Vec<_> = model
        .requests()
        .into_iter()
        .map(|r| r.tool_choice.unwrap().mode)
        .collect();
    assert_eq!(modes, [ToolChoiceMode::Required, ToolChoiceMode::Required]);
}

/// Logs the kinds its `on_reasoning` layer sees; declares that it reads none.
struct QuietWatch(Arc<Mutex<Vec<&'static str>>>);

impl Middleware for QuietWatch {
    fn on_reasoning(&self) -> Option<ReasoningLayer> {
        let log = Arc::clone(&self.0);
        Some(ErasedLayer::new(from_fn(
            move |req: ReasoningRequest, next: Next<ReasoningRequest, EventStream>| -> Answer {
                let log = Arc::clone(&log);
                Box::pin(async move {
                    let inner = next.run(req).await?;
                    let logged: EventStream = Box::pin(inner.inspect(move |item| {
                        log.lock().unwrap().push(match item {
                            Ok(ReplyItem::Event(e)) => e.event_type().as_str(),
                            Ok(ReplyItem::Final(_)) => "final",
                            Err(_) => "error",
                        });
                    }));
                    Ok(logged)
                })
            },
        )))
    }
    fn reads_events(&self) -> EventKinds {
        EventKinds::NONE
    }
}

#[tokio::test]
async fn a_pass_through_reply_layer_makes_no_events_for_a_plain_reply() {
    // The reasoning layer wraps its stream and reads nothing, so it sees the events someone
    // else reads: none when the `on_reply` layer hands the reply's stream back unwrapped.
    let log = Arc::new(Mutex::new(Vec::new()));
    let model = model();
    let agent = builder(&model)
        .on_reply(from_fn(pass::<ReplyRequest>()))
        .middleware(QuietWatch(Arc::clone(&log)))
        .build()
        .unwrap();
    agent.reply(Msg::user("u", "1 + 2?")).await.unwrap();
    assert_eq!(*log.lock().unwrap(), ["final"]);
}

#[tokio::test]
async fn a_reply_layer_that_wraps_the_stream_still_gets_every_event() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let wrap = |req: ReplyRequest, next: Next<ReplyRequest, EventStream>| -> Answer {
        Box::pin(async move {
            let inner = next.run(req).await?;
            // Turns REPLY_END into one of its own, so the wrapping is visible.
            let mapped: EventStream = Box::pin(inner.map(|item| match item {
                Ok(ReplyItem::Event(AgentEvent::ReplyEnd(end))) => Ok(ReplyItem::Event(AgentEvent::from(
                    ReplyEndEvent::new(end.session_id.clone(), &end.reply_id, ReplyFinishedReason::Completed),
                ))),
                other => other,
            }));
            Ok(mapped)
        })
    };
    let model = model();
    let agent = builder(&model)
        .on_reply(from_fn(wrap))
        .middleware(QuietWatch(Arc::clone(&log)))
        .build()
        .unwrap();
    agent.reply(Msg::user("u", "1 + 2?")).await.unwrap();
    let seen = log.lock().unwrap().clone();
    assert!(
        seen.contains(&"MODEL_CALL_START") && seen.contains(&"TOOL_CALL_END"),
        "{seen:?}"
    );
    assert_eq!(seen.last(), Some(&"final"));
}

/// The agent of the park-and-resume scenario: asks before every tool call.
fn asking(model: &ScriptedModel, layered: bool) -> Agent {
    let b = builder(model).default_permission(towerscope_core::PermissionDecision::Ask {
        suggested_rules: vec![],
    });
    let b = if layered {
        b.on_reply(from_fn(pass::<ReplyRequest>()))
            .on_reasoning(from_fn(pass::<ReasoningRequest>()))
    } else {
        b
    };
    b.build().unwrap()
}

async fn park_and_confirm(layered: bool) -> (Vec<&'static str>, Vec<&'static str>, Option<String>) {
    let model = model();
    let agent = asking(&model, layered);
    let first = common::collect(agent.reply_stream(Msg::user("u", "1 + 2?"))).await;
    let call = first
        .events
        .iter()
        .find_map(|e| match e {
            AgentEvent::RequireUserConfirm(e) => Some(e.tool_calls[0].clone()),
            _ => None,
        })
        .expect("the reply parks for the call");
    let parked = first.final_msg.clone().unwrap();
    let confirm = towerscope_core::event::UserConfirmResultEvent::new(
        parked.id.clone(),
        vec![towerscope_core::event::ConfirmResult::new(true, call)],
    );
    let second = common::collect(agent.reply_stream(confirm)).await;
    common::assert_consistent(&agent.state().context);
    (first.kinds(), second.kinds(), second.final_text())
}

#[tokio::test]
async fn a_parked_reply_resumes_the_same_through_pass_through_layers() {
    let plain = park_and_confirm(false).await;
    let layered = park_and_confirm(true).await;
    assert_eq!(layered, plain);
    assert_eq!(layered.0.last(), Some(&"REQUIRE_USER_CONFIRM"));
    assert_eq!(layered.2.as_deref(), Some("3"));
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_during_an_inline_step_ends_the_reply_as_without_layers() {
    async fn interrupted(layered: bool) -> (Vec<&'static str>, Option<ReplyFinishedReason>) {
        let model = ScriptedModel::new(
            "m",
            [ScriptedResponse::text("a long answer").delay(std::time::Duration::from_secs(60))],
        );
        let b = Agent::builder("a").model(model);
        let b = if layered {
            b.on_reasoning(from_fn(pass::<ReasoningRequest>()))
        } else {
            b
        };
        let agent = b.build().unwrap();
        let running = tokio::spawn({
            let agent = agent.clone();
            // `reply`: the caller reads no event, so the layered step runs inline.
            async move { agent.reply(Msg::user("u", "hi")).await }
        });
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        assert!(agent.interrupt());
        let msg = running.await.unwrap().unwrap();
        common::assert_consistent(&agent.state().context);
        let kinds = agent
            .state()
            .context
            .iter()
            .map(|m| {
                if m.role == towerscope_core::Role::User {
                    "user"
                } else {
                    "assistant"
                }
            })
            .collect();
        (kinds, msg.finished_reason)
    }
    let plain = interrupted(false).await;
    assert_eq!(plain.1, Some(ReplyFinishedReason::Interrupted));
    assert_eq!(interrupted(true).await, plain);
}

#[tokio::test]
async fn two_steps_read_one_after_the_other_each_run_their_own_request() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("one"), ScriptedResponse::text("two")]);
    let both = |req: ReasoningRequest, next: Next<ReasoningRequest, EventStream>| -> Answer {
        Box::pin(async move {
            let mut first = req.clone();
            first.tool_choice = Some(ToolChoice::none());
            let mut second = req;
            second.tool_choice = Some(ToolChoice::required());
            // Both made before either is polled: each must find its own request.
            let a = next.clone().run(first).await?;
            let b = next.run(second).await?;
            let chained: EventStream = Box::pin(a.chain(b));
            Ok(chained)
        })
    };
    let agent = Agent::builder("a")
        .model(model.clone())
        .on_reasoning(from_fn(both))
        .build()
        .unwrap();
    let msg = agent.reply(Msg::user("u", "hi")).await.unwrap();
    assert_eq!(msg.text_content().as_deref(), Some("two"), "the last candidate wins");
    let modes: Vec<_> = model
        .requests()
        .into_iter()
        .map(|r| r.tool_choice.unwrap().mode)
        .collect();
    assert_eq!(modes, [ToolChoiceMode::None, ToolChoiceMode::Required]);
}
