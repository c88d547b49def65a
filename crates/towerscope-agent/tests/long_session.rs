//! A long session costs no more per reply than a short one: the conversation is shared with
//! every model request, never copied. Measured in allocated bytes and allocations (counted by
//! an instrumented allocator, so the figures do not depend on the machine's load), for one reply
//! after 10 and after 10,000 messages.
#![allow(clippy::unwrap_used)]

use std::alloc::System;

use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use towerscope_agent::{Agent, AgentState};
use towerscope_core::{Messages, Msg};
use towerscope_models::{ScriptedModel, ScriptedResponse};

#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// An agent whose context already holds `messages` messages.
fn agent_with_history(messages: usize) -> Agent {
    let model = ScriptedModel::cycle("m", [ScriptedResponse::text("noted").whole()]);
    let history: Messages = (0..messages)
        .map(|i| {
            if i % 2 == 0 {
                Msg::user("user", format!("message number {i}, with a little text in it"))
            } else {
                Msg::assistant("a", format!("answer number {i}, also with some text"))
            }
        })
        .collect();
    let mut state = AgentState::new();
    state.context = history;
    Agent::builder("a").model(model).state(state).build().unwrap()
}

/// Bytes and allocations of one reply (the second: the first warms caches up).
fn cost_of_a_reply(agent: &Agent, rt: &tokio::runtime::Runtime) -> (usize, usize) {
    rt.block_on(agent.reply(Msg::user("user", "warm up"))).unwrap();
    let region = Region::new(ALLOCATOR);
    rt.block_on(agent.reply(Msg::user("user", "and one more"))).unwrap();
    let stats = region.change();
    // `bytes_allocated` counts what reallocations grew, too.
    (stats.bytes_allocated, stats.allocations + stats.reallocations)
}

#[test]
fn a_reply_after_ten_thousand_messages_costs_what_one_after_ten_does() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let short = agent_with_history(10);
    let long = agent_with_history(10_000);
    let (short_bytes, short_allocs) = cost_of_a_reply(&short, &rt);
    let (long_bytes, long_allocs) = cost_of_a_reply(&long, &rt);
    println!(
        "one reply: {short_bytes} B / {short_allocs} allocations after 10 messages, {long_bytes} B / {long_allocs} after 10,000"
    );
    assert!(
        long_bytes <= 2 * short_bytes,
        "bytes per reply grew with the session: {short_bytes} -> {long_bytes}"
    );
    assert!(
        long_allocs <= 2 * short_allocs,
        "allocations per reply grew with the session: {short_allocs} -> {long_allocs}"
    );
    assert_eq!(long.state().context.len(), 10_004);
}
