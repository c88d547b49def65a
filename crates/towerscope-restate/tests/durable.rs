//! Durable replies against a real Restate server (`scripts/restate-server.sh start`), the
//! service endpoint in a child process: this binary re-run as `endpoint_process`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Endpoint, call, count, free_port, key, normalized_context, register, server, side_effects};
use tokio::sync::Mutex;

/// One endpoint registration at a time: the object `Agent` is routed to the latest one.
static SERVER: Mutex<()> = Mutex::const_new(());

/// Not a test: the endpoint process the tests start (does nothing unless asked to serve).
#[test]
fn endpoint_process() {
    if let Ok(port) = std::env::var(support::ENDPOINT_ENV) {
        support::serve(port.parse().unwrap());
    }
}

async fn wait_for(what: &str, secs: u64, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_killed_mid_model_call_finishes_in_a_new_process_without_running_a_tool_twice() {
    let Some((ingress, admin)) = server("kill_and_resume") else {
        return;
    };
    let _one = SERVER.lock().await;
    let port = free_port();
    let mut first = Endpoint::start(port, &[("TOWERSCOPE_TEST_HANG_ON", "3")]);
    register(&admin, port).await;

    // The interrupted run.
    let session = key("shop");
    let reply = tokio::spawn({
        let (ingress, session) = (ingress.clone(), session.clone());
        async move { call(&ingress, &session, "reply", json!({"text": "charge and ship"})).await }
    });
    wait_for("the third model call", 60, || count(&session, "model_calls") == 3).await;
    assert_eq!(count(&session, "tool_charge"), 1);
    assert_eq!(count(&session, "tool_ship"), 1);
    let killed_at = Instant::now();
    first.kill();
    let _second = Endpoint::start(port, &[]);
    let (status, body) = reply.await.unwrap();
    let recovery = killed_at.elapsed();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["message"]["content"][0]["text"], "charged and shipped", "{body}");
    assert_eq!(count(&session, "tool_charge"), 1, "charge ran again");
    assert_eq!(count(&session, "tool_ship"), 1, "ship ran again");
    assert_eq!(count(&session, "model_calls"), 4, "3 calls, the third again; not 6");
    eprintln!("recovered from kill -9 in {recovery:?} (including the new process's start)");

    // An uninterrupted run of the same reply stores the same conversation.
    let calm = key("shop");
    let (status, calm_body) = call(&ingress, &calm, "reply", json!({"text": "charge and ship"})).await;
    assert_eq!(status, 200, "{calm_body}");
    assert_eq!(count(&calm, "model_calls"), 3);
    let (_, interrupted_state) = call(&ingress, &session, "state", Value::Null).await;
    let (_, calm_state) = call(&ingress, &calm, "state", Value::Null).await;
    assert_eq!(
        interrupted_state["context"].as_array().map(Vec::len),
        Some(2),
        "{interrupted_state}"
    );
    assert_eq!(normalized_context(&interrupted_state), normalized_context(&calm_state));

    // The resumed attempt sent its events again, equal to the first attempt's.
    let log = std::fs::read_to_string(side_effects(&session).join("events.jsonl")).unwrap();
    let mut by_seq: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    let mut pids = std::collections::BTreeSet::new();
    for line in log.lines() {
        let entry: Value = serde_json::from_str(line).unwrap();
        pids.insert(entry["pid"].as_u64().unwrap());
        by_seq
            .entry(entry["seq"].as_u64().unwrap())
            .or_default()
            .push(entry["event"].clone());
    }
    assert_eq!(pids.len(), 2, "both processes sent events");
    let repeated = by_seq.values().filter(|events| events.len() == 2).count();
    assert!(
        repeated > 5,
        "the resumed attempt replays the first attempt's events ({repeated} repeated)"
    );
    for (seq, events) in &by_seq {
        assert!(
            events.windows(2).all(|w| w[0] == w[1]),
            "event {seq} differs between attempts: {events:?}"
        );
    }
    let kinds: Vec<&str> = by_seq.values().map(|e| e[0]["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"REPLY_START"));
    assert_eq!(kinds.last(), Some(&"REPLY_END"));
}
