//! Soak: 10,000 replies against a hostile model, faulty tools and a careless caller, checking
//! after every step what users rely on. Runs in the README's test command (`scripts/test.sh`
//! prints the counts).
//!
//! The model answers each call at random: text, thinking only, tool calls (with reused ids,
//! unknown tools, broken arguments), an error (retryable or not), a stream cut before or after
//! its final chunk, or a stream that breaks in the middle. Tools succeed, fail, panic, hang (a
//! `TimeoutLayer` ends them) or ask for confirmation. The caller reads replies to the end, drops
//! them half-way, interrupts them, observes messages at random times, and answers confirmations
//! (yes, no, or interrupt).
//!
//! After every step:
//! - a reply read to the end ended with `REPLY_END` and its final message, parked with the
//!   waiting message, or failed with a typed error, and nothing came after its final item;
//! - once open calls are closed, every tool call in the context has exactly one result;
//! - a completed reply's events fold back into the message the context stored;
//!
//! and at the end: no task panicked, and the memory held is what it was at the start.
#![allow(clippy::unwrap_used)]

use std::alloc::System;
use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::StreamExt;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use towerscope::agent::toolkit::FunctionTool;
use towerscope::agent::{Agent, AgentState, ReplyStream};
use towerscope::event::{ConfirmResult, UserConfirmResultEvent, UserInterruptEvent};
use towerscope::layers::TimeoutLayer;
use towerscope::models::{ScriptedModel, ScriptedResponse};
use towerscope::{
    AgentError, AgentEvent, ChatModel, Messages, ModelCallRequest, ModelFuture, Msg, PermissionDecision,
    ReplyFinishedReason, ReplyItem, ToolCallState,
};

#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const REPLIES: usize = 10_000;

fn steps() -> usize {
    std::env::var("SOAK_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(REPLIES)
}

/// A model whose every call answers something random (seeded: the run is reproducible).
#[derive(Debug)]
struct HostileModel {
    rng: std::sync::Mutex<fastrand::Rng>,
}

impl HostileModel {
    fn answer(&self) -> ScriptedResponse {
        let mut rng = self.rng.lock().unwrap();
        let tools = ["ok", "ok", "fail", "panic", "hang", "ask", "nope"];
        let call = |rng: &mut fastrand::Rng, i: u32| {
            let id = if rng.u8(..10) == 0 {
                "dup".to_owned()
            } else {
                format!("c{}", rng.u32(..1_000_000))
            };
            let args = if rng.u8(..10) == 0 {
                r#"{"n": "#.to_owned()
            } else {
                format!(r#"{{"n": {i}}}"#)
            };
            (id, tools[rng.usize(..tools.len())], args)
        };
        let stream = rng.bool();
        let response = match rng.u8(..100) {
            0..=34 => ScriptedResponse::text("all done here"),
            35..=39 => ScriptedResponse::thinking("hmm"),
            40..=74 => {
                let (id, name, args) = call(&mut rng, 1);
                let mut r = ScriptedResponse::tool_call(id, name, args);
                for i in 0..rng.u32(..3) {
                    let (id, name, args) = call(&mut rng, i + 2);
                    r = r.and_tool_call(id, name, args);
                }
                r
            }
            75..=79 => ScriptedResponse::error(AgentError::model_retryable("503 from the provider")),
            80..=84 => ScriptedResponse::error(AgentError::model("400 bad request")),
            85..=89 => ScriptedResponse::text("cut short before the end").without_final_chunk(),
            90..=94 => ScriptedResponse::text("breaks in the middle of it")
                .fail_mid_stream(rng.usize(..4), AgentError::Stream("connection reset".to_owned())),
            _ => ScriptedResponse::text("slow answer, in pieces").chunk_delay(Duration::from_millis(300)),
        };
        if stream { response.streamed() } else { response }
    }
}

impl ChatModel for HostileModel {
    fn model_name(&self) -> &str {
        "hostile"
    }

    fn call(&self, request: ModelCallRequest) -> ModelFuture {
        ScriptedModel::new("hostile", [self.answer()])
            .record(false)
            .call(request)
    }
}

/// A number.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct N {
    n: i64,
}

fn agent(state: AgentState, seed: u64) -> Agent {
    let ask = |_: &serde_json::Value| {
        Some(PermissionDecision::Ask {
            suggested_rules: vec![],
        })
    };
    Agent::builder("soak")
        .model(HostileModel {
            rng: std::sync::Mutex::new(fastrand::Rng::with_seed(seed)),
        })
        .max_iters(4)
        .tool(FunctionTool::new("ok", |a: N| async move { a.n.to_string() }))
        .tool(FunctionTool::new("fail", |_: N| async move {
            Err::<String, _>("it broke".to_owned())
        }))
        .tool(FunctionTool::new("panic", |_: N| async move {
            if true {
                panic!("tool bug");
            }
            "unreachable"
        }))
        .tool(FunctionTool::new("hang", |_: N| async move {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            "woke up"
        }))
        .tool(FunctionTool::new("ask", |a: N| async move { a.n.to_string() }).permission(ask))
        .on_acting(TimeoutLayer::new(Duration::from_secs(2)))
        .state(state)
        .build()
        .unwrap()
}

/// What a step read of a reply stream.
struct Read {
    events: Vec<AgentEvent>,
    last: Option<Result<ReplyItem, AgentError>>,
    ended: bool,
}

async fn read(mut stream: ReplyStream, limit: Option<usize>) -> Read {
    let mut out = Read {
        events: Vec::new(),
        last: None,
        ended: false,
    };
    let mut n = 0;
    while let Some(item) = stream.next().await {
        assert!(
            !matches!(out.last, Some(Ok(ReplyItem::Final(_))) | Some(Err(_))),
            "an item came after the final message or the error"
        );
        if let Ok(ReplyItem::Event(e)) = &item {
            out.events.push(e.clone());
        }
        out.last = Some(item);
        n += 1;
        if limit.is_some_and(|l| n >= l) {
            return out;
        }
    }
    out.ended = true;
    out
}

/// Every tool call has exactly one result, in its own message (a reply's calls and results
/// live in the reply's message; ids are unique within it, and may repeat across replies).
fn assert_consistent(context: &Messages) {
    for msg in context.iter() {
        let mut results: BTreeMap<String, usize> = BTreeMap::new();
        for r in msg.tool_results() {
            *results.entry(r.id.to_string()).or_default() += 1;
        }
        let calls: Vec<String> = msg.tool_calls().map(|c| c.id.to_string()).collect();
        let mut unique = calls.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            calls.len(),
            "tool-call ids are unique within a message: {calls:?}"
        );
        for id in &calls {
            assert_eq!(results.get(id), Some(&1), "tool call {id} has one result");
        }
        assert_eq!(results.len(), calls.len(), "no result without its call");
    }
}

/// A completed reply's events, folded, give the message the context stored for it.
fn assert_events_rebuild_the_message(events: &[AgentEvent], reply_id: &towerscope::Id, state: &AgentState) {
    let Some(stored) = state.context.iter().rev().find(|m| m.id == *reply_id) else {
        return;
    };
    // One input the events cannot describe: a streamed call with broken arguments followed by
    // another call under the same id reads as one call's pieces (the stored message, from the
    // model's final chunk, has both, renamed, each with its result).
    let renamed = stored.tool_calls().any(|c| c.id.to_string().ends_with("_2"));
    let broken = stored
        .tool_calls()
        .any(|c| serde_json::from_str::<serde_json::Value>(&c.input).is_err());
    if renamed && broken {
        return;
    }
    let mut folded = Msg::assistant_blocks("soak", Vec::new()).with_id(reply_id.clone());
    for event in events {
        folded.append_event(event);
    }
    let calls = |m: &Msg| {
        m.tool_calls()
            .map(|c| (c.id.to_string(), c.input.clone()))
            .collect::<Vec<_>>()
    };
    // Results of concurrent calls are stored as they finish and folded as they start: compare
    // them as sets.
    let results = |m: &Msg| {
        let mut r = m
            .tool_results()
            .map(|r| (r.id.to_string(), r.state))
            .collect::<Vec<_>>();
        r.sort_by(|a, b| a.0.cmp(&b.0));
        r
    };
    assert_eq!(calls(&folded), calls(stored), "tool calls rebuilt from the events");
    assert_eq!(
        results(&folded),
        results(stored),
        "tool results rebuilt from the events"
    );
}

#[derive(Debug, Default)]
struct Counts {
    completed: usize,
    exceeded: usize,
    interrupted: usize,
    parked: usize,
    typed_errors: usize,
    dropped: usize,
    observed: usize,
    observe_refused: usize,
    confirmed: usize,
    denied: usize,
    parked_interrupts: usize,
    new_message_refused: usize,
}

#[tokio::test(start_paused = true)]
async fn ten_thousand_replies_against_a_hostile_model() {
    // The tools' panics are expected (each becomes an error result); keep them off the output.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let expected = info.payload().downcast_ref::<&str>().is_some_and(|m| *m == "tool bug");
        if !expected {
            default_hook(info);
        }
    }));
    let mut rng = fastrand::Rng::with_seed(7);
    let mut counts = Counts::default();
    let mut state = AgentState::new();
    // Warm up the runtime's timers and the allocator before counting what the loop keeps.
    tokio::time::sleep(Duration::from_millis(1)).await;
    let region = Region::new(ALLOCATOR);
    let steps = steps();
    for step in 0..steps {
        let agent = agent(std::mem::take(&mut state), step as u64);
        let parked = agent.state().context.last().is_some_and(|m| {
            m.tool_calls()
                .any(|c| matches!(c.state, ToolCallState::Asking | ToolCallState::Submitted))
                && m.tool_results().count() < m.tool_calls().count()
        });
        let read = if parked {
            let reply_id = agent.state().reply_context.reply_id;
            match rng.u8(..10) {
                0 => {
                    let err = agent.reply_stream(Msg::user("user", "something else")).next().await;
                    assert!(matches!(err, Some(Err(AgentError::State(_)))), "{err:?}");
                    counts.new_message_refused += 1;
                    None
                }
                1 | 2 => {
                    counts.parked_interrupts += 1;
                    Some(read(agent.reply_stream(UserInterruptEvent::new(reply_id)), None).await)
                }
                n => {
                    let calls: Vec<_> = agent
                        .state()
                        .context
                        .last()
                        .map(|m| {
                            m.tool_calls()
                                .filter(|c| c.state == ToolCallState::Asking)
                                .cloned()
                                .collect()
                        })
                        .unwrap_or_default();
                    let confirmed = n > 5;
                    if confirmed {
                        counts.confirmed += 1;
                    } else {
                        counts.denied += 1;
                    }
                    let results = calls
                        .into_iter()
                        .map(|call| ConfirmResult {
                            confirmed,
                            tool_call: call,
                            rules: None,
                        })
                        .collect();
                    let event = UserConfirmResultEvent::new(reply_id, results);
                    Some(read(agent.reply_stream(event), None).await)
                }
            }
        } else {
            match rng.u8(..10) {
                0 => {
                    match agent.observe([Msg::user("bob", "by the way")]) {
                        Ok(()) => counts.observed += 1,
                        Err(AgentError::State(_)) => counts.observe_refused += 1,
                        Err(e) => panic!("observe failed with {e}"),
                    }
                    None
                }
                1 | 2 => {
                    counts.dropped += 1;
                    let limit = rng.usize(1..12);
                    Some(read(agent.reply_stream(Msg::user("user", "go")), Some(limit)).await)
                }
                3 => {
                    let interrupter = {
                        let agent = agent.clone();
                        let after = Duration::from_millis(rng.u64(0..1500));
                        tokio::spawn(async move {
                            tokio::time::sleep(after).await;
                            agent.interrupt();
                        })
                    };
                    let out = read(agent.reply_stream(Msg::user("user", "go")), None).await;
                    interrupter.await.expect("the interrupting task did not panic");
                    Some(out)
                }
                _ => Some(read(agent.reply_stream(Msg::user("user", "go")), None).await),
            }
        };
        if let Some(read) = read.filter(|r| r.ended) {
            let saw_end = read.events.iter().any(|e| matches!(e, AgentEvent::ReplyEnd(_)));
            match read.last {
                Some(Ok(ReplyItem::Final(msg))) => match msg.finished_reason {
                    Some(reason) => {
                        assert!(saw_end, "a finished reply has a REPLY_END");
                        match reason {
                            ReplyFinishedReason::Completed => {
                                counts.completed += 1;
                                // A reply that started here (not a resumed one, whose first
                                // events went out with the stream that parked).
                                let whole = matches!(read.events.first(), Some(AgentEvent::ReplyStart(_)));
                                if whole && !read.events.iter().any(|e| matches!(e, AgentEvent::Custom(_))) {
                                    assert_events_rebuild_the_message(&read.events, &msg.id, &agent.state());
                                }
                            }
                            ReplyFinishedReason::ExceedMaxIters => counts.exceeded += 1,
                            ReplyFinishedReason::Interrupted => counts.interrupted += 1,
                            other => panic!("unexpected finish {other:?}"),
                        }
                    }
                    None => {
                        counts.parked += 1;
                        assert!(!saw_end, "a parked reply has no REPLY_END");
                    }
                },
                Some(Err(e)) => {
                    assert!(
                        matches!(
                            e,
                            AgentError::Model { .. } | AgentError::Stream(_) | AgentError::State(_)
                        ),
                        "a typed error: {e:?}"
                    );
                    counts.typed_errors += 1;
                }
                // A reply interrupted before it started: nothing to answer.
                None => {}
                Some(Ok(ReplyItem::Event(e))) => panic!("the stream ended on an event: {e:?}"),
            }
        }
        // Close what dropped or failed replies left open (observing nothing does it), unless a
        // reply waits for the user; then every call has exactly one result.
        if agent.observe(Vec::<Msg>::new()).is_ok() {
            assert_consistent(&agent.state().context);
        }
        state = agent.state();
        // Keep the conversation short: a new session every hundred steps.
        if step % 100 == 99 {
            state = AgentState::new();
        }
    }
    drop(state);
    let held = region.change();
    // `bytes_allocated` and `bytes_deallocated` already count what reallocations grew and shrank.
    let kept = held.bytes_allocated as i64 - held.bytes_deallocated as i64;
    println!("soak: {steps} steps: {counts:?}; bytes still held after the run: {kept}");
    // Every kind of step happened often enough to mean something.
    let tenth = steps / 10;
    assert!(
        counts.completed > 2 * tenth && counts.typed_errors > tenth,
        "{counts:?}"
    );
    assert!(
        counts.interrupted > tenth / 10 && counts.parked > tenth / 2,
        "{counts:?}"
    );
    assert!(
        counts.confirmed > tenth / 10 && counts.denied > tenth / 20,
        "{counts:?}"
    );
    assert!(kept < 64 * 1024, "memory returns to its start: {kept} bytes still held");
}
