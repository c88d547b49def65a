//! Which events a layer sees when its middleware declares the kinds it reads
//! (`Middleware::reads_events`): with `Agent::reply` (whose caller reads none) a declaring
//! layer sees its kinds, in order, and the final message; a layer that declares nothing, or a
//! stream reader, still sees every event, exactly as before.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{
    AgentError, ErasedLayer, EventKinds, EventStream, EventType, Middleware, Msg, Next, ReasoningLayer,
    ReasoningRequest, ReplyItem, ReplyLayer, ReplyRequest, from_fn,
};
use towerscope_models::{ScriptedModel, ScriptedResponse};

type Log = Arc<Mutex<Vec<&'static str>>>;

fn seen(item: &Result<ReplyItem, AgentError>) -> &'static str {
    match item {
        Ok(ReplyItem::Event(e)) => e.event_type().as_str(),
        Ok(ReplyItem::Final(_)) => "final",
        Err(_) => "error",
    }
}

fn logging<R: Send + 'static>(
    log: Log,
) -> impl Fn(R, Next<R, EventStream>) -> futures_util::future::BoxFuture<'static, Result<EventStream, AgentError>> + Clone
{
    move |req, next| {
        let log = Arc::clone(&log);
        Box::pin(async move {
            let inner = next.run(req).await?;
            let logged: EventStream = Box::pin(inner.inspect(move |item| log.lock().unwrap().push(seen(item))));
            Ok(logged)
        })
    }
}

/// Logs what its `on_reply` and `on_reasoning` layers see; reads the kinds it is given.
struct Watch {
    reads: EventKinds,
    reply: Log,
    reasoning: Log,
}

impl Watch {
    fn new(reads: EventKinds) -> Self {
        Self {
            reads,
            reply: Log::default(),
            reasoning: Log::default(),
        }
    }

    fn logs(&self) -> (Log, Log) {
        (Arc::clone(&self.reply), Arc::clone(&self.reasoning))
    }
}

impl Middleware for Watch {
    fn on_reply(&self) -> Option<ReplyLayer> {
        Some(ErasedLayer::new(from_fn(logging::<ReplyRequest>(Arc::clone(
            &self.reply,
        )))))
    }
    fn on_reasoning(&self) -> Option<ReasoningLayer> {
        Some(ErasedLayer::new(from_fn(logging::<ReasoningRequest>(Arc::clone(
            &self.reasoning,
        )))))
    }
    fn reads_events(&self) -> EventKinds {
        self.reads
    }
}

/// Adds two numbers.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

fn agent_with(watches: Vec<Watch>) -> Agent {
    let model = ScriptedModel::cycle(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
            ScriptedResponse::text("3"),
        ],
    );
    let mut b =
        Agent::builder("a").model(model).tool(FunctionTool::new(
            "add",
            |x: Add| async move { (x.a + x.b).to_string() },
        ));
    for w in watches {
        b = b.middleware(w);
    }
    b.build().unwrap()
}

fn all_kinds(log: &Log) -> Vec<&'static str> {
    log.lock().unwrap().clone()
}

#[tokio::test]
async fn a_layer_that_reads_no_events_sees_only_the_final_message_of_a_plain_reply() {
    let watch = Watch::new(EventKinds::NONE);
    let (reply, reasoning) = watch.logs();
    let agent = agent_with(vec![watch]);
    let msg = agent.reply(Msg::user("user", "1 + 2?")).await.unwrap();
    assert_eq!(msg.text_content().as_deref(), Some("3"));
    assert_eq!(all_kinds(&reply), ["final"]);
    // Two reasoning steps, each ending with its candidate message (the first has none: it
    // called a tool).
    assert_eq!(all_kinds(&reasoning), ["final"]);
}

#[tokio::test]
async fn a_layer_sees_the_kinds_it_declared_in_order() {
    let watch = Watch::new(EventKinds::of(&[
        EventType::ReplyStart,
        EventType::ModelCallEnd,
        EventType::ToolResultEnd,
        EventType::ReplyEnd,
    ]));
    let (reply, reasoning) = watch.logs();
    let agent = agent_with(vec![watch]);
    agent.reply(Msg::user("user", "1 + 2?")).await.unwrap();
    assert_eq!(
        all_kinds(&reply),
        [
            "REPLY_START",
            "MODEL_CALL_END",
            "TOOL_RESULT_END",
            "MODEL_CALL_END",
            "REPLY_END",
            "final"
        ]
    );
    assert_eq!(all_kinds(&reasoning), ["MODEL_CALL_END", "MODEL_CALL_END", "final"]);
}

#[tokio::test]
async fn a_stream_reader_or_an_undeclared_layer_makes_every_event_built_for_everyone() {
    // The reference run: nothing declared, the events read as a stream.
    let plain = agent_with(Vec::new());
    let expected = common::collect(plain.reply_stream(Msg::user("user", "1 + 2?"))).await;
    let mut expected: Vec<&'static str> = expected.kinds();
    expected.push("final");

    // A stream reader: the declaring layer sees everything too.
    let watch = Watch::new(EventKinds::NONE);
    let (reply, _) = watch.logs();
    let agent = agent_with(vec![watch]);
    let got = common::collect(agent.reply_stream(Msg::user("user", "1 + 2?"))).await;
    let mut kinds = got.kinds();
    kinds.push("final");
    assert_eq!(kinds, expected);
    assert_eq!(all_kinds(&reply), expected);

    // `Agent::reply`, with a second middleware that does not say what it reads: both see all.
    let quiet = Watch::new(EventKinds::NONE);
    let undeclared = Watch::new(EventKinds::ALL);
    let (quiet_log, _) = quiet.logs();
    let (all_log, _) = undeclared.logs();
    let agent = agent_with(vec![quiet, undeclared]);
    agent.reply(Msg::user("user", "1 + 2?")).await.unwrap();
    assert_eq!(all_kinds(&quiet_log), expected);
    assert_eq!(all_kinds(&all_log), expected);
}

#[tokio::test]
async fn a_layer_installed_directly_reads_every_event() {
    let log = Log::default();
    let agent = Agent::builder("a")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("hi")]))
        .middleware(Watch::new(EventKinds::NONE))
        .on_reply(from_fn(logging::<ReplyRequest>(Arc::clone(&log))))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hello")).await.unwrap();
    let kinds = all_kinds(&log);
    assert_eq!(kinds.first(), Some(&"REPLY_START"));
    assert!(kinds.contains(&"TEXT_BLOCK_DELTA"), "{kinds:?}");
    assert_eq!(kinds[kinds.len() - 2..], ["REPLY_END", "final"]);
}
