//! Interrupting a running reply with `Agent::interrupt` (during a model call, a streamed answer
//! and a tool), and dropping a reply stream in the middle of an answer.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{assert_consistent, collect};
use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_agent::HintConfig;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{
    AgentError, AgentEvent, ContentBlock, MediaBlock, ModelFinishedReason, Msg, ReplyFinishedReason, ReplyItem, Role,
    ToolOutput, ToolResultState,
};
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// Wait.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Wait {
    /// Seconds.
    secs: u64,
}

fn end_reason(out: &common::Collected) -> Option<ReplyFinishedReason> {
    out.events.iter().find_map(|e| match e {
        AgentEvent::ReplyEnd(e) => Some(e.finished_reason),
        _ => None,
    })
}

fn model_call_end_reason(out: &common::Collected) -> Option<ModelFinishedReason> {
    out.events.iter().find_map(|e| match e {
        AgentEvent::ModelCallEnd(e) => Some(e.finished_reason),
        _ => None,
    })
}

/// The text of the reply's assistant message in the context.
fn stored_text(agent: &Agent) -> Option<String> {
    let state = agent.state();
    state
        .context
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .and_then(|m| m.text_content())
}

#[tokio::test(start_paused = true)]
async fn interrupt_during_a_model_call() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::text("too late").delay(Duration::from_secs(30)),
            ScriptedResponse::text("again"),
        ],
    );
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model)
        .build()
        .unwrap();
    assert!(!agent.interrupt(), "nothing to interrupt while idle");
    let start = tokio::time::Instant::now();
    let running = tokio::spawn({
        let agent = agent.clone();
        async move { collect(agent.reply_stream(Msg::user("user", "hi"))).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(agent.interrupt());
    let out = running.await.unwrap();
    assert_eq!(
        out.kinds(),
        ["REPLY_START", "MODEL_CALL_START", "MODEL_CALL_END", "REPLY_END"]
    );
    assert_eq!(model_call_end_reason(&out), Some(ModelFinishedReason::Interrupted));
    assert_eq!(end_reason(&out), Some(ReplyFinishedReason::Interrupted));
    let msg = out.final_msg.unwrap();
    assert_eq!(msg.finished_reason, Some(ReplyFinishedReason::Interrupted));
    assert_eq!(
        msg.text_content().as_deref(),
        Some("I notice the interruption. How can I help you?")
    );
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "the model call was cancelled, not awaited"
    );
    // The interrupt was for that reply only: the next one runs to the end.
    assert_eq!(
        agent
            .reply(Msg::user("user", "hi"))
            .await
            .unwrap()
            .text_content()
            .as_deref(),
        Some("again")
    );
}

#[tokio::test(start_paused = true)]
async fn interrupt_during_a_tool_closes_the_call() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let tool = {
        let log = Arc::clone(&log);
        FunctionTool::new("wait", move |a: Wait| {
            let log = Arc::clone(&log);
            async move {
                log.lock().unwrap().push("start");
                tokio::time::sleep(Duration::from_secs(a.secs)).await;
                log.lock().unwrap().push("end");
                "waited"
            }
        })
    };
    let model = ScriptedModel::new("m", [ScriptedResponse::tool_call("c1", "wait", r#"{"secs": 60}"#)]);
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model)
        .tool(tool)
        .build()
        .unwrap();
    let running = tokio::spawn({
        let agent = agent.clone();
        async move { collect(agent.reply_stream(Msg::user("user", "wait a minute"))).await }
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(agent.interrupt());
    let out = running.await.unwrap();
    let kinds = out.kinds();
    assert_eq!(
        &kinds[kinds.len() - 4..],
        [
            "TOOL_RESULT_START",
            "TOOL_RESULT_TEXT_DELTA",
            "TOOL_RESULT_END",
            "REPLY_END"
        ],
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "TOOL_RESULT_START").count(),
        1,
        "no second start for the call"
    );
    let AgentEvent::ToolResultEnd(end) = &out.events[out.events.len() - 2] else {
        panic!()
    };
    assert_eq!(end.state, ToolResultState::Interrupted);
    assert_eq!(*log.lock().unwrap(), ["start"], "the tool was cancelled, not awaited");
    assert_eq!(
        out.final_msg.unwrap().finished_reason,
        Some(ReplyFinishedReason::Interrupted)
    );
    assert_consistent(&agent.state().context);
}

#[tokio::test(start_paused = true)]
async fn interrupt_during_a_streamed_answer_keeps_the_partial_answer() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::text("one two three four five").chunk_delay(Duration::from_secs(1))],
    )
    .streaming(true);
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model)
        .build()
        .unwrap();
    let running = tokio::spawn({
        let agent = agent.clone();
        async move { collect(agent.reply_stream(Msg::user("user", "count"))).await }
    });
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(agent.interrupt());
    let out = running.await.unwrap();
    assert_eq!(
        out.kinds(),
        [
            "REPLY_START",
            "MODEL_CALL_START",
            "TEXT_BLOCK_START",
            "TEXT_BLOCK_DELTA",
            "TEXT_BLOCK_DELTA",
            "TEXT_BLOCK_END",
            "MODEL_CALL_END",
            "REPLY_END"
        ]
    );
    assert_eq!(model_call_end_reason(&out), Some(ModelFinishedReason::Interrupted));
    assert_eq!(end_reason(&out), Some(ReplyFinishedReason::Interrupted));
    let msg = out.final_msg.unwrap();
    assert_eq!(
        msg.text_content().as_deref(),
        Some("I notice the interruption. How can I help you?")
    );
    assert_eq!(
        stored_text(&agent).as_deref(),
        Some("one two "),
        "the streamed part is kept"
    );
    let stored = agent.state().context.last().cloned().unwrap();
    assert_eq!(
        stored.finished_reason,
        Some(ReplyFinishedReason::Interrupted),
        "and marked as a part: the reply was interrupted"
    );
    // Folding the events rebuilds what the context keeps.
    let mut rebuilt = Msg::assistant_blocks("a", Vec::new()).with_id(msg.id);
    for event in &out.events {
        rebuilt.append_event(event);
    }
    assert_eq!(rebuilt.text_content().as_deref(), Some("one two "));
}

#[tokio::test(start_paused = true)]
async fn dropping_the_stream_mid_answer_keeps_what_was_streamed() {
    let (agent, model) =
        streaming_agent(ScriptedResponse::text("alpha beta gamma delta").chunk_delay(Duration::from_secs(1)));
    let mut stream = agent.reply_stream(Msg::user("user", "go"));
    let mut deltas = 0;
    while let Some(item) = stream.next().await {
        if let Ok(ReplyItem::Event(AgentEvent::TextBlockDelta(_))) = item {
            deltas += 1;
            if deltas == 2 {
                break;
            }
        }
    }
    drop(stream);
    assert_eq!(stored_text(&agent).as_deref(), Some("alpha beta "));
    the_next_reply_sees(&agent, &model, "alpha beta ").await;
}

/// An agent over a streaming model that answers `first`, then "next".
fn streaming_agent(first: ScriptedResponse) -> (Agent, ScriptedModel) {
    let model = ScriptedModel::new("m", [first, ScriptedResponse::text("next")]).streaming(true);
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model.clone())
        .build()
        .unwrap();
    (agent, model)
}

/// The next reply sees `answer` as the assistant's turn of the first, and the context stays
/// consistent.
async fn the_next_reply_sees(agent: &Agent, model: &ScriptedModel, answer: &str) {
    agent.reply(Msg::user("user", "and?")).await.unwrap();
    let seen = &model.requests()[1].messages;
    assert_eq!(seen[2].role, Role::Assistant);
    assert_eq!(seen[2].text_content().as_deref(), Some(answer));
    assert_consistent(&agent.state().context);
}

#[tokio::test(start_paused = true)]
async fn a_tool_interrupted_while_running_is_stored_as_a_text_block() {
    let tool = FunctionTool::new("wait", |a: Wait| async move {
        tokio::time::sleep(Duration::from_secs(a.secs)).await;
        "waited"
    });
    let model = ScriptedModel::new("m", [ScriptedResponse::tool_call("c1", "wait", r#"{"secs": 60}"#)]);
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model)
        .tool(tool)
        .build()
        .unwrap();
    let running = tokio::spawn({
        let agent = agent.clone();
        async move { collect(agent.reply_stream(Msg::user("user", "wait"))).await }
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(agent.interrupt());
    running.await.unwrap();
    let state = agent.state();
    let result = state
        .context
        .iter()
        .flat_map(|m| m.content.iter())
        .find_map(|b| match b {
            ContentBlock::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(result.state, ToolResultState::Interrupted);
    let ToolOutput::Blocks(blocks) = &result.output else {
        panic!("a running tool's interruption is a text block, got {:?}", result.output)
    };
    assert!(matches!(
        blocks.as_slice(),
        [MediaBlock::Text(t)] if t.text == "<system-reminder>The tool call has been interrupted by the user.</system-reminder>"
    ));
}

#[tokio::test(start_paused = true)]
async fn error_after_interrupt_ends_the_stream_with_interrupted() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("slow").delay(Duration::from_secs(30))]);
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model)
        .error_after_interrupt(true)
        .build()
        .unwrap();
    let running = tokio::spawn({
        let agent = agent.clone();
        async move { collect(agent.reply_stream(Msg::user("user", "hi"))).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    agent.interrupt();
    let out = running.await.unwrap();
    assert_eq!(end_reason(&out), Some(ReplyFinishedReason::Interrupted));
    assert!(out.final_msg.is_some(), "the interruption message still comes first");
    assert!(matches!(out.error, Some(AgentError::Interrupted)), "{:?}", out.error);
}

/// The answer is saved before its closing events go out: a consumer that stops reading at the
/// first one (drops the stream) keeps the whole answer, its usage counted, as if it had read on.
#[tokio::test]
async fn a_stream_dropped_at_a_closing_event_keeps_the_whole_answer_and_its_usage() {
    let (agent, model) = streaming_agent(ScriptedResponse::text("alpha beta gamma").with_usage(50, 7));
    let mut stream = agent.reply_stream(Msg::user("user", "go"));
    let mut closed = false;
    while let Some(item) = stream.next().await {
        if let Ok(ReplyItem::Event(AgentEvent::TextBlockEnd(_))) = item {
            closed = true;
            break;
        }
    }
    assert!(closed, "the answer's text block was closed");
    drop(stream);
    assert_eq!(stored_text(&agent).as_deref(), Some("alpha beta gamma"));
    let usage = agent.state().reply_context.usage;
    assert_eq!((usage.input_tokens, usage.output_tokens), (50, 7), "{usage:?}");
    the_next_reply_sees(&agent, &model, "alpha beta gamma").await;
}

/// Counts how often its future is polled.
struct CountPolls<F> {
    inner: std::pin::Pin<Box<F>>,
    polls: usize,
}

impl<F: std::future::Future> std::future::Future for CountPolls<F> {
    type Output = F::Output;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        self.polls += 1;
        self.inner.as_mut().poll(cx)
    }
}

/// The interrupt machinery costs no wake-ups: a reply whose model answers after a delay is
/// polled once to start and once per answer, and never woken by the end of a reasoning step
/// (which drops its shield) when no interrupt was requested.
#[tokio::test(start_paused = true)]
async fn a_reply_is_woken_only_by_its_model_answers() {
    let delayed = |r: ScriptedResponse| r.whole().delay(Duration::from_millis(50));
    let model = ScriptedModel::new(
        "m",
        [
            delayed(ScriptedResponse::tool_call("c1", "wait", r#"{"secs": 0}"#)),
            delayed(ScriptedResponse::tool_call("c2", "wait", r#"{"secs": 0}"#)),
            delayed(ScriptedResponse::text("done")),
        ],
    );
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(FunctionTool::new(
            "wait",
            |args: Wait| async move { args.secs.to_string() },
        ))
        .build()
        .unwrap();
    let mut reply = CountPolls {
        inner: Box::pin(agent.reply(Msg::user("user", "go"))),
        polls: 0,
    };
    let msg = (&mut reply).await.unwrap();
    assert_eq!(msg.text_content().as_deref(), Some("done"));
    assert_eq!(model.calls(), 3);
    assert_eq!(reply.polls, 1 + 3, "one poll to start, one per delayed answer");
}

#[tokio::test]
async fn an_interrupt_after_the_reply_ended_changes_nothing() {
    // The consumer interrupts when it sees REPLY_END: the reply has ended, its final message
    // is on its way, and nothing is cancelled or sent twice.
    let model = ScriptedModel::new("m", [ScriptedResponse::text("All done.")]);
    let agent = Agent::builder("a").model(model).build().unwrap();
    let mut stream = agent.reply_stream(Msg::user("user", "go"));
    let (mut ends, mut finals) = (Vec::new(), Vec::new());
    while let Some(item) = stream.next().await {
        match item.unwrap() {
            ReplyItem::Event(AgentEvent::ReplyEnd(e)) => {
                ends.push(e.finished_reason);
                agent.interrupt();
            }
            ReplyItem::Final(m) => finals.push((m.text_content(), m.finished_reason)),
            ReplyItem::Event(_) => {}
        }
    }
    assert_eq!(ends, [ReplyFinishedReason::Completed]);
    assert_eq!(
        finals,
        [(Some("All done.".to_owned()), Some(ReplyFinishedReason::Completed))]
    );
    assert_eq!(stored_text(&agent).as_deref(), Some("All done."));
    assert_consistent(&agent.state().context);
}

/// An interrupt that lands after a confirmation, while the confirmed call's permission layer
/// still runs (an audit log written remotely), closes the call with `TOOL_RESULT_START` and
/// then `TOOL_RESULT_END`, as any call not started: the confirmation allowed the call, but it
/// had not started. Before, the end came without a start.
#[tokio::test]
async fn an_interrupt_between_a_confirmation_and_its_calls_start_opens_the_call_before_closing_it() {
    use towerscope_core::event::{ConfirmResult, UserConfirmResultEvent};
    use towerscope_core::{PermissionDecision, PermissionNext, PermissionRequest, from_fn};

    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/a"}"#),
            ScriptedResponse::text("done"),
        ],
    );
    // The layer tells the test when a confirmed call reaches it, then waits until interrupted.
    let (reached_tx, reached) = tokio::sync::mpsc::unbounded_channel::<()>();
    let agent = Arc::new(
        Agent::builder("a")
            .model(model)
            .tool(FunctionTool::new("delete", |_: serde_json::Value| async { "deleted" }))
            .default_permission(PermissionDecision::Ask {
                suggested_rules: vec![],
            })
            .on_check_permission(from_fn(move |req: PermissionRequest, next: PermissionNext| {
                let reached = reached_tx.clone();
                async move {
                    if req.tool_call().state == towerscope_core::ToolCallState::Allowed {
                        let _ = reached.send(());
                        std::future::pending::<()>().await;
                    }
                    next.run(req).await
                }
            }))
            .build()
            .unwrap(),
    );
    let first = collect(agent.reply_stream(Msg::user("u", "go"))).await;
    let parked = first
        .events
        .iter()
        .find_map(|e| match e {
            AgentEvent::RequireUserConfirm(e) => Some(e.tool_calls[0].clone()),
            _ => None,
        })
        .expect("the call is asked about");
    let reply_id = first.final_msg.as_ref().unwrap().id.clone();
    let stream = agent.reply_stream(UserConfirmResultEvent::new(
        reply_id,
        vec![ConfirmResult::new(true, parked)],
    ));
    let interrupter = {
        let agent = Arc::clone(&agent);
        let mut reached = reached;
        tokio::spawn(async move {
            reached.recv().await;
            agent.interrupt();
        })
    };
    let resumed = collect(stream).await;
    interrupter.await.unwrap();
    let kinds: Vec<&str> = resumed.events.iter().map(|e| e.event_type().as_str()).collect();
    let start = kinds.iter().position(|k| *k == "TOOL_RESULT_START");
    let end = kinds.iter().position(|k| *k == "TOOL_RESULT_END");
    assert!(start.is_some() && start < end, "{kinds:?}");
    assert_consistent(&agent.state().context);
}
