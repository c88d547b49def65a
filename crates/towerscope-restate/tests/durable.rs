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

/// Not a test: the endpoint process the tests start (`--ignored --exact endpoint_process`).
/// Ignored so that a plain run does not count it as a passing test.
#[test]
#[ignore = "the endpoint process the durable tests start, not a test of its own"]
fn endpoint_process() {
    if let Ok(port) = std::env::var(support::ENDPOINT_ENV) {
        support::serve(port.parse().unwrap());
    }
}

/// The server to this test alone, and one endpoint process (this binary), registered with it.
async fn one_endpoint(admin: &str) -> (tokio::sync::MutexGuard<'static, ()>, Endpoint) {
    let one = SERVER.lock().await;
    let port = free_port();
    let endpoint = Endpoint::start(port, &[]);
    register(admin, port).await;
    (one, endpoint)
}

/// A reply to `text` in `session`, through the ingress, on a task of its own (it may park, or
/// wait on a model the test holds back): its status and body.
fn reply_in_background(ingress: &str, session: &str, text: &str) -> tokio::task::JoinHandle<(u16, Value)> {
    let (ingress, session, body) = (ingress.to_owned(), session.to_owned(), json!({ "text": text }));
    tokio::spawn(async move { call(&ingress, &session, "reply", body).await })
}

/// Asks Restate's admin API to `cancel` or `kill` an invocation.
async fn invocation_action(admin: &str, invocation: &str, action: &str) {
    let response = support::client()
        .patch(format!("{admin}/invocations/{invocation}/{action}"))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{action}: {}", response.status());
}

/// The id of the invocation that sent the session's first event, once there is one.
async fn invocation_of(session: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let events = std::fs::read_to_string(support::side_effects(session).join("events.jsonl")).unwrap_or_default();
        if let Some(line) = events.lines().next() {
            let event: Value = serde_json::from_str(line).unwrap();
            return event["invocation"].as_str().unwrap().to_owned();
        }
        assert!(Instant::now() < deadline, "the reply never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
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
    let reply = reply_in_background(&ingress, &session, "charge and ship");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_of_one_session_run_one_after_the_other_and_sessions_in_parallel() {
    let Some((ingress, admin)) = server("one_at_a_time") else {
        return;
    };
    let (_one, _endpoint) = one_endpoint(&admin).await;

    let session = key("slow");
    let other = key("slow");
    let (a, b, c) = tokio::join!(
        call(&ingress, &session, "reply", json!({"text": "first"})),
        call(&ingress, &session, "reply", json!({"text": "second"})),
        call(&ingress, &other, "reply", json!({"text": "elsewhere"})),
    );
    for (status, body) in [&a, &b, &c] {
        assert_eq!(*status, 200, "{body}");
    }
    // One session: the second reply started after the first ended, and saw its conversation.
    let spans = support::model_spans(&session);
    assert_eq!(spans.len(), 2);
    assert!(
        spans[0].1 <= spans[1].0,
        "the replies of one session overlapped: {spans:?}"
    );
    let (_, state) = call(&ingress, &session, "state", Value::Null).await;
    let texts: Vec<&str> = state["context"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"][0]["text"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(texts.len(), 4, "{state}");
    assert!(texts[0] == "first" || texts[0] == "second", "{texts:?}");
    assert_eq!(texts[1], "slow answer");
    assert_eq!(texts[3], "slow answer");
    // Two sessions: their model calls overlapped.
    let elsewhere = support::model_spans(&other);
    assert_eq!(elsewhere.len(), 1);
    let overlaps = spans.iter().any(|s| s.0 < elsewhere[0].1 && elsewhere[0].0 < s.1);
    assert!(
        overlaps,
        "two sessions did not run in parallel: {spans:?} {elsewhere:?}"
    );
}

/// Waits until the session's reply is parked; the awakeable id and the request.
async fn parked(ingress: &str, session: &str) -> (String, Value) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, pending) = call(ingress, session, "pending", Value::Null).await;
        assert_eq!(status, 200, "{pending}");
        if let Some(id) = pending["awakeable_id"].as_str() {
            return (id.to_owned(), pending["request"].clone());
        }
        assert!(Instant::now() < deadline, "the reply never parked");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the session's reply is parked on another awakeable than `before`.
async fn parked_again(ingress: &str, session: &str, before: &str) -> (String, Value) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (id, request) = parked(ingress, session).await;
        if id != before {
            return (id, request);
        }
        assert!(Instant::now() < deadline, "the reply never parked again");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Resolves the awakeable `id` with `answer` through the ingress.
async fn resolve(ingress: &str, id: &str, answer: &Value) {
    let response = support::client()
        .post(format!("{ingress}/restate/awakeables/{id}/resolve"))
        .json(answer)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_parked_for_confirmation_survives_a_restart_and_is_confirmed_by_another_process_or_curl() {
    let Some((ingress, admin)) = server("confirm_after_restart") else {
        return;
    };
    let _one = SERVER.lock().await;
    let port = free_port();
    let mut first = Endpoint::start(port, &[]);
    register(&admin, port).await;

    let by_http = key("confirm");
    let by_curl = key("confirm");
    let rejected = key("confirm");
    let replies: Vec<_> = [&by_http, &by_curl, &rejected]
        .into_iter()
        .map(|session| reply_in_background(&ingress, session, "refund me"))
        .collect();
    let (http_id, request) = parked(&ingress, &by_http).await;
    let (curl_id, _) = parked(&ingress, &by_curl).await;
    let (rejected_id, _) = parked(&ingress, &rejected).await;
    assert_eq!(request["type"], "REQUIRE_USER_CONFIRM");
    assert_eq!(request["tool_calls"][0]["name"], "refund");
    assert_eq!(count(&by_http, "tool_refund"), 0, "ran before it was confirmed");

    // The endpoint restarts while both replies wait.
    first.kill();
    let _second = Endpoint::start(port, &[]);

    // This test process (not the endpoint) answers one through the ingress...
    resolve(&ingress, &http_id, &json!({"confirmed": true})).await;
    // ...and curl the other.
    let curl = tokio::process::Command::new("curl")
        .args([
            "-fsS",
            "-X",
            "POST",
            &format!("{ingress}/restate/awakeables/{curl_id}/resolve"),
        ])
        .args(["-H", "content-type: application/json", "-d", r#"{"confirmed": true}"#])
        .status()
        .await
        .expect("curl is installed");
    assert!(curl.success());
    // A rejected confirmation interrupts the reply: the refund never runs.
    let response = support::client()
        .post(format!("{ingress}/restate/awakeables/{rejected_id}/reject"))
        .header("content-type", "text/plain")
        .body("the customer changed their mind")
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let mut replies = replies;
    let (status, body) = replies.pop().unwrap().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["message"]["finished_reason"], "interrupted", "{body}");
    assert_eq!(count(&rejected, "tool_refund"), 0);

    for (session, reply) in [&by_http, &by_curl].into_iter().zip(replies) {
        let (status, body) = reply.await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["message"]["content"][0]["text"], "refunded", "{body}");
        assert_eq!(body["parks"], 1);
        assert_eq!(count(session, "tool_refund"), 1);
        assert_eq!(
            count(session, "model_calls"),
            2,
            "the first call was replayed, not repeated"
        );
        let (_, pending) = call(&ingress, session, "pending", Value::Null).await;
        assert!(pending.is_null(), "{pending}");
    }
}

/// A `{"messages": [...]}` body whose message has no id or time (the fields are optional)
/// parks, the endpoint restarts, and the confirmation finishes the reply: the message's id and
/// time come from the journal's seed, so the attempt after the restart stores the same message
/// (they were drawn fresh at each attempt, and Restate refused the journal and retried the
/// invocation for good). A body that is neither shape ends with 400 and nothing stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_messages_body_without_ids_survives_a_restart_and_a_bad_body_is_refused() {
    let Some((ingress, admin)) = server("messages_without_ids") else {
        return;
    };
    let _one = SERVER.lock().await;
    let port = free_port();
    let mut first = Endpoint::start(port, &[]);
    register(&admin, port).await;
    let session = key("confirm");
    let body =
        json!({"messages": [{"name": "user", "role": "user", "content": [{"type": "text", "text": "refund me"}]}]});
    let reply = {
        let (ingress, session) = (ingress.clone(), session.clone());
        tokio::spawn(async move { call(&ingress, &session, "reply", body).await })
    };
    let (id, _) = parked(&ingress, &session).await;
    let (_, before) = call(&ingress, &session, "state", Value::Null).await;
    first.kill();
    let _second = Endpoint::start(port, &[]);
    resolve(&ingress, &id, &json!({"confirmed": true})).await;
    let (status, body) = tokio::time::timeout(Duration::from_secs(60), reply)
        .await
        .expect("the confirmed reply finishes after the restart")
        .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["message"]["content"][0]["text"], "refunded", "{body}");
    assert_eq!(count(&session, "tool_refund"), 1);
    let (_, after) = call(&ingress, &session, "state", Value::Null).await;
    let question = |state: &Value| state["context"][0].clone();
    assert_eq!(question(&after)["content"][0]["text"], "refund me", "{after}");
    assert_eq!(
        question(&after)["id"],
        question(&before)["id"],
        "the same message, stored once"
    );
    assert_eq!(question(&after)["created_at"], question(&before)["created_at"]);

    let refused = key("plain");
    let (status, body) = call(&ingress, &refused, "reply", json!({"messages": "refund me"})).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        !body.to_string().contains("refund me"),
        "the body's content is not echoed: {body}"
    );
    let (_, state) = call(&ingress, &refused, "state", Value::Null).await;
    assert!(state.is_null(), "{state}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_written_by_an_older_agent_ends_the_reply_with_a_typed_error() {
    let Some((ingress, admin)) = server("older_journal") else {
        return;
    };
    let _one = SERVER.lock().await;
    let port = free_port();
    let mut old = Endpoint::start(port, &[("TOWERSCOPE_TEST_HANG_ON", "2")]);
    register(&admin, port).await;

    let session = key("changed");
    let reply = reply_in_background(&ingress, &session, "charge and ship");
    wait_for("the second model call", 60, || count(&session, "model_calls") == 2).await;
    assert_eq!(count(&session, "tool_charge"), 1);
    old.kill();
    // The new agent lost `charge` and changed `ship`'s schema.
    let _new = Endpoint::start(port, &[("TOWERSCOPE_TEST_AGENT_VERSION", "2")]);
    let (status, body) = reply.await.unwrap();
    assert_eq!(status, 409, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains("written by a different agent"), "{body}");
    assert!(message.contains("step 0"), "{body}");
    assert_eq!(count(&session, "model_calls"), 2, "the new agent called no model");
    assert_eq!(count(&session, "tool_charge"), 1);
    assert_eq!(count(&session, "tool_ship"), 0);
}

/// Retries divide the work: a RetryLayer inside the step retries attempts of one step; Restate
/// retries a step whose work failed with a retryable error (DurableAgent::step_retry_policy:
/// 5 attempts); a non-retryable failure, or Restate's retries run out, is journaled as the
/// step's failure: the reply ends with it (HTTP 500, a terminal error Restate does not retry),
/// the session's state kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_layers_retry_inside_a_step_and_restate_retries_the_step() {
    let Some((ingress, admin)) = server("retries") else {
        return;
    };
    let (_one, _endpoint) = one_endpoint(&admin).await;

    let [retry, restep, broken, down] = ["retry", "restep", "broken", "down"].map(key);
    let (a, b, c, d) = tokio::join!(
        call(&ingress, &retry, "reply", json!({"text": "hi"})),
        call(&ingress, &restep, "reply", json!({"text": "hi"})),
        call(&ingress, &broken, "reply", json!({"text": "hi"})),
        call(&ingress, &down, "reply", json!({"text": "hi"})),
    );
    for (session, (status, body), text, calls) in [(&retry, &a, "recovered", 3), (&restep, &b, "recovered", 3)] {
        assert_eq!(*status, 200, "{body}");
        assert_eq!(body["message"]["content"][0]["text"], text, "{session}: {body}");
        assert_eq!(count(session, "model_calls"), calls, "{session}");
    }
    for (session, (status, body), calls, error) in
        [(&broken, &c, 1, "bad request (call 1)"), (&down, &d, 5, "overloaded")]
    {
        assert_eq!(*status, 500, "{body}");
        assert!(body["message"].as_str().unwrap().contains(error), "{session}: {body}");
        assert_eq!(count(session, "model_calls"), calls, "{session}");
        let (_, state) = call(&ingress, session, "state", Value::Null).await;
        assert_eq!(state["context"][0]["content"][0]["text"], "hi", "{session}: {state}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_external_tool_call_waits_on_a_durable_promise_that_the_caller_resolves_with_the_result() {
    let Some((ingress, admin)) = server("external_execution") else {
        return;
    };
    let (_one, _endpoint) = one_endpoint(&admin).await;

    let session = key("external");
    let reply = reply_in_background(&ingress, &session, "is the mug in stock?");
    let (id, request) = parked(&ingress, &session).await;
    assert_eq!(request["type"], "REQUIRE_EXTERNAL_EXECUTION", "{request}");
    let call_id = request["tool_calls"][0]["id"].as_str().unwrap().to_owned();
    // A malformed answer is ignored: the reply parks again on a new promise.
    resolve(&ingress, &id, &json!({"results": "42"})).await;
    let (id, _) = parked_again(&ingress, &session, &id).await;
    let result = json!({"execution_results": [{
        "type": "tool_result", "id": call_id, "name": "lookup", "state": "success",
        "output": [{"type": "text", "text": "42 in stock"}],
    }]});
    resolve(&ingress, &id, &result).await;
    let (status, body) = reply.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["message"]["content"][0]["text"], "looked up", "{body}");
    assert_eq!(body["parks"], 1);
    let (_, state) = call(&ingress, &session, "state", Value::Null).await;
    assert!(state.to_string().contains("42 in stock"), "{state}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_waiting_on_a_confirmation_and_an_external_call_asks_for_each_in_turn() {
    let Some((ingress, admin)) = server("confirm_then_external") else {
        return;
    };
    let (_one, _endpoint) = one_endpoint(&admin).await;

    let session = key("both");
    let reply = reply_in_background(&ingress, &session, "refund and look up");
    // The confirmation first (the agent sent it before the external request)...
    let (id, request) = parked(&ingress, &session).await;
    assert_eq!(request["type"], "REQUIRE_USER_CONFIRM", "{request}");
    assert_eq!(request["tool_calls"][0]["name"], "refund");
    resolve(&ingress, &id, &json!({"confirmed": true})).await;

    // ...then the external call, which the agent announced in the first round only.
    let (id, request) = parked_again(&ingress, &session, &id).await;
    assert_eq!(request["type"], "REQUIRE_EXTERNAL_EXECUTION", "{request}");
    assert_eq!(request["tool_calls"][0]["name"], "lookup");
    assert_eq!(count(&session, "tool_refund"), 1, "the confirmed refund ran");
    let call_id = request["tool_calls"][0]["id"].as_str().unwrap().to_owned();
    let result = json!({"execution_results": [{
        "type": "tool_result", "id": call_id, "name": "lookup", "state": "success",
        "output": [{"type": "text", "text": "in stock"}],
    }]});
    resolve(&ingress, &id, &result).await;
    let (status, body) = reply.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["message"]["content"][0]["text"], "refunded and looked up",
        "{body}"
    );
    assert_eq!(body["parks"], 2);
    let (_, pending) = call(&ingress, &session, "pending", Value::Null).await;
    assert!(pending.is_null(), "{pending}");
}

/// What a parked reply does with answers it cannot use, and with answers per call:
///
/// - a body that is not JSON, and a result the agent refuses (it names no waiting call), are
///   waited past: the reply parks again, and the right answer still resumes it;
/// - a confirmation per call (`confirm_results`, with no reply id) resumes the reply;
/// - a park that takes `max_parks` malformed answers (3 in this endpoint) ends the reply with
///   an error, and closes the park: the session takes a new message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_reply_waits_past_bad_answers_and_one_that_gives_up_leaves_the_session_usable() {
    let Some((ingress, admin)) = server("bad_answers") else {
        return;
    };
    let (_one, _endpoint) = one_endpoint(&admin).await;

    // Not JSON, then a result for a call the reply does not wait on, then the right one.
    let external = key("external");
    let reply = reply_in_background(&ingress, &external, "go");
    let (id, request) = parked(&ingress, &external).await;
    let response = support::client()
        .post(format!("{ingress}/restate/awakeables/{id}/resolve"))
        .header("content-type", "text/plain")
        .body("yes")
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let (id, _) = parked_again(&ingress, &external, &id).await;
    let result = |call_id: &str| {
        json!({"execution_results": [{
            "type": "tool_result", "id": call_id, "name": "lookup", "state": "success",
            "output": [{"type": "text", "text": "42 in stock"}],
        }]})
    };
    resolve(&ingress, &id, &result("call_elsewhere")).await;
    let (id, again) = parked_again(&ingress, &external, &id).await;
    assert_eq!(again["tool_calls"], request["tool_calls"], "{again}");
    resolve(&ingress, &id, &result(request["tool_calls"][0]["id"].as_str().unwrap())).await;
    let (status, body) = reply.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["message"]["content"][0]["text"], "looked up", "{body}");

    // A confirmation per call.
    let per_call = key("confirm");
    let reply = reply_in_background(&ingress, &per_call, "go");
    let (id, request) = parked(&ingress, &per_call).await;
    let answer = json!({"confirm_results": [{"confirmed": true, "tool_call": request["tool_calls"][0]}]});
    resolve(&ingress, &id, &answer).await;
    let (status, body) = reply.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["message"]["content"][0]["text"], "refunded", "{body}");
    assert_eq!(count(&per_call, "tool_refund"), 1);

    // Three malformed answers: the reply gives up, and the session takes a new message. One
    // sent while the reply is parked waits behind it (the park holds the session), and is
    // answered once the reply gave up.
    let given_up = key("confirm");
    let reply = reply_in_background(&ingress, &given_up, "go");
    let (mut id, _) = parked(&ingress, &given_up).await;
    let queued = reply_in_background(&ingress, &given_up, "hello again");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !queued.is_finished(),
        "a reply ran while the session's reply was parked"
    );
    for n in 0..3 {
        resolve(&ingress, &id, &json!({"yes": n})).await;
        if n < 2 {
            id = parked_again(&ingress, &given_up, &id).await.0;
        }
    }
    let (status, body) = reply.await.unwrap();
    assert_eq!(status, 500, "{body}");
    assert!(body["message"].as_str().unwrap().contains("parked 3 times"), "{body}");
    assert_eq!(count(&given_up, "tool_refund"), 0);
    let (status, body) = queued.await.unwrap();
    assert_eq!(status, 200, "the session takes a new message: {body}");
    let (_, pending) = call(&ingress, &given_up, "pending", Value::Null).await;
    assert!(pending.is_null(), "{pending}");
    // The given-up reply's park was closed as interrupted (its call has an interrupted
    // result), before the queued message.
    let (_, state) = call(&ingress, &given_up, "state", Value::Null).await;
    let context = state["context"].as_array().unwrap();
    let closed = context
        .iter()
        .position(|m| m["finished_reason"] == "interrupted")
        .unwrap_or_else(|| panic!("no interrupted reply: {state}"));
    let results: Vec<&Value> = context[closed]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .collect();
    assert!(
        !results.is_empty() && results.iter().all(|r| r["state"] == "interrupted"),
        "{state}"
    );
    let asked = context
        .iter()
        .position(|m| m.to_string().contains("hello again"))
        .unwrap();
    assert!(closed < asked, "{state}");
}

/// A call limit layer inside the step ends the reply as it does in memory: HTTP 200, the
/// reply's message finished with `error`, the tool it asked for run once (not a failed model
/// call and a 500).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_limit_inside_a_step_ends_the_reply_as_in_memory() {
    let Some((ingress, admin)) = server("call_limit") else {
        return;
    };
    let (_one, _endpoint) = one_endpoint(&admin).await;

    let session = key("limit");
    let (status, body) = call(&ingress, &session, "reply", json!({"text": "charge me"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["message"]["finished_reason"], "error", "{body}");
    assert_eq!(count(&session, "tool_charge"), 1);
    assert_eq!(
        count(&session, "model_calls"),
        1,
        "the second call was refused by the limit"
    );
}

/// Restate cancels the invocation while its model call runs: the reply is interrupted (its
/// state stored, as after a person's interrupt), the model is not called again, and the
/// handler ends with 409.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_invocation_interrupts_the_reply() {
    let Some((ingress, admin)) = server("cancel") else {
        return;
    };
    let (_one, _endpoint) = one_endpoint(&admin).await;

    let session = key("slow");
    let reply = reply_in_background(&ingress, &session, "take your time");
    // The invocation's id, from its first event; then wait for the model call to start.
    let deadline = Instant::now() + Duration::from_secs(60);
    let invocation = invocation_of(&session).await;
    while count(&session, "model_calls") == 0 {
        assert!(Instant::now() < deadline, "the model was never called");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    invocation_action(&admin, &invocation, "cancel").await;

    let (status, body) = reply.await.unwrap();
    assert_eq!(status, 409, "{body}");
    assert!(body["message"].as_str().unwrap().contains("cancelled"), "{body}");
    assert_eq!(count(&session, "model_calls"), 1);
    let (_, state) = call(&ingress, &session, "state", Value::Null).await;
    assert_eq!(state["context"][0]["content"][0]["text"], "take your time", "{state}");
    // As after a person's interrupt during a model call that streamed nothing: the question is
    // kept, and nothing of the cancelled call.
    assert_eq!(state["context"].as_array().unwrap().len(), 1, "{state}");
}

/// Starts a reply of `session` that parks for a confirmation, then asks Restate to `action`
/// (`cancel` or `kill`) its invocation: the reply's status and body.
async fn parked_then(ingress: &str, admin: &str, session: &str, action: &str) -> (u16, Value) {
    let reply = reply_in_background(ingress, session, "refund me");
    parked(ingress, session).await;
    let invocation = invocation_of(session).await;
    invocation_action(admin, &invocation, action).await;
    reply.await.unwrap()
}

/// Restate cancels the invocation while its reply is parked for a confirmation: the reply is
/// closed as interrupted (its call's result says so, the refund never runs), the handler ends
/// with 409 as a cancel during a step does, and the session takes a new message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_while_parked_interrupts_the_reply_and_ends_with_409() {
    let Some((ingress, admin)) = server("cancel_parked") else {
        return;
    };
    let (_one, _endpoint) = one_endpoint(&admin).await;

    let session = key("confirm");
    let (status, body) = parked_then(&ingress, &admin, &session, "cancel").await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("the reply was interrupted"),
        "the handler's own error, after closing the reply: {body}"
    );

    let (_, pending) = call(&ingress, &session, "pending", Value::Null).await;
    assert!(pending.is_null(), "{pending}");
    // Closed before the next message: the call's result is stored, interrupted.
    let (_, state) = call(&ingress, &session, "state", Value::Null).await;
    let results: Vec<&Value> = state["context"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap().iter())
        .filter(|b| b["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 1, "{state}");
    assert_eq!(results[0]["state"], "interrupted", "{state}");
    assert_eq!(count(&session, "tool_refund"), 0, "the refund never ran");
    let (status, body) = call(&ingress, &session, "reply", json!({"text": "never mind"})).await;
    assert_eq!(status, 200, "the session takes a new message: {body}");
}

/// A reply parked for confirmation is killed (Restate's way out of a stuck invocation): the
/// session's next message closes that park (its call gets an interrupted result) and is
/// answered; it was refused for good ("waiting for ... tool calls").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_parked_reply_leaves_the_session_usable() {
    let Some((ingress, admin)) = server("killed_park") else {
        return;
    };
    let (_one, _endpoint) = one_endpoint(&admin).await;

    let session = key("confirm");
    let (status, _) = parked_then(&ingress, &admin, &session, "kill").await;
    assert_ne!(status, 200, "the killed reply did not answer");

    let (status, body) = call(&ingress, &session, "reply", json!({"text": "never mind"})).await;
    assert_eq!(status, 200, "{body}");
    let (_, pending) = call(&ingress, &session, "pending", Value::Null).await;
    assert!(pending.is_null(), "{pending}");
    assert_eq!(count(&session, "tool_refund"), 0, "the refund never ran");
    let (_, state) = call(&ingress, &session, "state", Value::Null).await;
    let texts = state["context"].to_string();
    assert!(texts.contains("never mind") && texts.contains("interrupted"), "{state}");
}

/// Restate cancels the invocation while the first of two tool calls of one answer runs: the
/// second, whose step was waiting behind it, never starts (it ran after the cancel, its result
/// thrown away, so the next reply could run it again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_starts_no_further_step() {
    let Some((ingress, admin)) = server("cancel_steps") else {
        return;
    };
    let (_one, _endpoint) = one_endpoint(&admin).await;

    let session = key("pair");
    let reply = reply_in_background(&ingress, &session, "pack both");
    wait_for("the first pack", 60, || count(&session, "tool_pack") == 1).await;
    let invocation = invocation_of(&session).await;
    invocation_action(&admin, &invocation, "cancel").await;
    let (status, body) = reply.await.unwrap();
    assert_eq!(status, 409, "{body}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(count(&session, "tool_pack"), 1, "the second pack never started");
}

/// Lets a parked invocation suspend after `inactivity` without activity (Restate's default is a
/// minute), so that its answer is delivered by a replay in the same endpoint process.
async fn set_inactivity(admin: &str, inactivity: &str) {
    let response = support::client()
        .patch(format!("{admin}/services/Agent"))
        .json(&json!({ "inactivity_timeout": inactivity }))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
}

/// Whether the session's invocation is suspended (Restate's admin SQL).
async fn suspended(admin: &str, session: &str) -> bool {
    let sql = format!("SELECT status FROM sys_invocation WHERE target_service_key = '{session}'");
    let response = support::client()
        .post(format!("{admin}/query"))
        .header("accept", "application/json")
        .json(&json!({ "query": sql }))
        .send()
        .await
        .unwrap();
    response.text().await.unwrap().contains("suspended")
}

/// An event sink that draws an id for each event it has not seen (it keeps the first copy of
/// each `(invocation, seq)`): a reply that suspends while parked and is replayed in the same
/// process for its confirmation still finishes. The sink ran in the reply's sequence, so its
/// draws on the first run and not on the replay shifted the reply's later ids: Restate found
/// the journal mismatched and retried the reply without end, and the refund never ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_that_draws_ids_leaves_a_replayed_reply_alone() {
    let Some((ingress, admin)) = server("sink_draws") else {
        return;
    };
    let (_one, _endpoint) = one_endpoint(&admin).await;
    set_inactivity(&admin, "2s").await;
    let session = key("confirm").replacen("confirm-", "confirm-dedup-", 1);
    let reply = reply_in_background(&ingress, &session, "refund me");
    let (id, _) = parked(&ingress, &session).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !suspended(&admin, &session).await {
        assert!(Instant::now() < deadline, "the parked reply never suspended");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    resolve(&ingress, &id, &json!({"confirmed": true})).await;
    let outcome = tokio::time::timeout(Duration::from_secs(30), reply).await;
    set_inactivity(&admin, "1m").await;
    let (status, body) = outcome.expect("the confirmed reply finishes").unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(count(&session, "tool_refund"), 1);
}

/// An event sink that panics loses the event it was given, not the reply: the reply answers,
/// and the sink gets every other event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_that_panics_loses_its_event_not_the_reply() {
    let Some((ingress, admin)) = server("sink_panics") else {
        return;
    };
    let (_one, _endpoint) = one_endpoint(&admin).await;
    let session = key("slow").replacen("slow-", "slow-sinkpanic-", 1);
    // Without the catch, the panic failed the attempt and Restate retried it for good.
    let (status, body) = tokio::time::timeout(
        Duration::from_secs(60),
        call(&ingress, &session, "reply", json!({"text": "hi"})),
    )
    .await
    .expect("the reply answers whatever its sink does");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["message"]["content"][0]["text"], "slow answer", "{body}");
    let log = std::fs::read_to_string(side_effects(&session).join("events.jsonl")).unwrap();
    let seqs: Vec<u64> = log
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["seq"].as_u64().unwrap())
        .collect();
    let last = body["events"].as_u64().unwrap();
    assert!(last > 3, "{body}");
    let expected: Vec<u64> = (0..last).filter(|&seq| seq != 1).collect();
    assert_eq!(seqs, expected, "{log}");
}

/// A model whose call panics ends the durable reply with the middleware error the agent gives
/// in memory, the model called once. The panic unwound into the SDK, failed the attempt, and
/// Restate replayed it (calling the model again) up to its retry limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_model_ends_the_durable_reply_as_in_memory() {
    let Some((ingress, admin)) = server("panicky") else {
        return;
    };
    let (_one, _endpoint) = one_endpoint(&admin).await;
    let session = key("panicky");
    let reply = reply_in_background(&ingress, &session, "hi");
    let outcome = tokio::time::timeout(Duration::from_secs(30), reply).await;
    let (status, body) = outcome.expect("the reply ends").unwrap();
    assert_eq!(count(&session, "model_calls"), 1, "{status} {body}");
    assert!(
        body.to_string().contains("panicked: a bug in the model adapter"),
        "{status} {body}"
    );
}
