//! Our A2A server, driven by our client and by raw HTTP: the card, the task states, the stream's
//! order, input-required answered by the next message, cancellation, and bad input.
#![allow(clippy::unwrap_used)]

#[path = "a2a_support/mod.rs"]
mod support;

use futures_util::StreamExt;
use serde_json::{Value, json};
use support::{CHAT_ANSWER, CHAT_SECOND, serve};
use towerscope_serve::a2a::wire::{Role, StreamResponse, Task, TaskState};
use towerscope_serve::a2a::{A2aClient, A2aConfig, ClientError, Limits, RpcError};

fn user(text: &str, context: &str) -> towerscope_serve::a2a::wire::Message {
    let mut m = towerscope_serve::a2a::wire::Message::new_text(Role::User, text);
    m.context_id = Some(context.to_owned());
    m
}

async fn post(base: &str, body: impl Into<reqwest::Body>, version: Option<&str>) -> (u16, Value) {
    // reqwest needs a process-wide crypto provider (A2aClient installs one; this test may be first).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut req = reqwest::Client::new()
        .post(format!("{base}/a2a"))
        .header("content-type", "application/json")
        .body(body);
    if let Some(v) = version {
        req = req.header("A2A-Version", v);
    }
    let answer = req.send().await.unwrap();
    let status = answer.status().as_u16();
    (status, serde_json::from_slice(&answer.bytes().await.unwrap()).unwrap())
}

fn rpc(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": "r1", "method": method, "params": params}).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_names_the_endpoint_the_skills_and_streaming() {
    let base = serve(A2aConfig::new("helper").description("Helps.")).await;
    let client = A2aClient::connect(&base).await.unwrap();
    let card = client.card();
    assert_eq!(card.name, "helper");
    assert_eq!(card.description, "Helps.");
    assert!(card.capabilities.streaming);
    assert_eq!(card.jsonrpc_url(), Some(format!("{base}/a2a").as_str()));
    assert_eq!(card.supported_interfaces[0].protocol_version, "1.0");
    assert_eq!(card.skills[0].id, "chat");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_completes_a_task_and_the_context_is_the_session() {
    let base = serve(A2aConfig::new("helper")).await;
    let client = A2aClient::connect(&base).await.unwrap();
    let first = client.send(user("Hi", "chat-s1")).await.unwrap();
    let task = first.task().unwrap().clone();
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.context_id, "chat-s1");
    assert_eq!(task.answer_text(), CHAT_ANSWER);
    let roles: Vec<Role> = task.history.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Agent]);
    assert_eq!(task.history[0].task_id.as_deref(), Some(task.id.as_str()));

    // The same context is served by the same agent: its script goes on.
    let second = client.send(user("Still there?", "chat-s1")).await.unwrap();
    assert_eq!(second.answer_text(), CHAT_SECOND);
    assert_ne!(second.task().unwrap().id, task.id, "a new task per message");

    let got = client.get_task(&task.id).await.unwrap();
    assert_eq!(got, task);
    let (_, latest) = post(&base, rpc("GetTask", json!({"id": task.id, "historyLength": 1})), None).await;
    let history = latest["result"]["history"].as_array().unwrap();
    assert_eq!(history.len(), 1, "only the latest message");
    assert_eq!(history[0]["role"], "ROLE_AGENT");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_sends_the_task_working_the_answer_in_pieces_then_completed() {
    let base = serve(A2aConfig::new("helper")).await;
    let client = A2aClient::connect(&base).await.unwrap();
    let items: Vec<StreamResponse> = client
        .stream(user("Hi", "chat-s2"))
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    let StreamResponse::Task(first) = &items[0] else {
        panic!("the stream opens with the task: {items:?}")
    };
    assert_eq!(first.status.state, TaskState::Submitted);
    let mut states = Vec::new();
    let mut pieces = Vec::new();
    let mut whole = None;
    for item in &items[1..] {
        match item {
            StreamResponse::StatusUpdate(u) => states.push(u.status.state),
            StreamResponse::ArtifactUpdate(u) if u.last_chunk => {
                assert!(!u.append, "the whole answer replaces the pieces");
                whole = Some(u.artifact.text());
            }
            StreamResponse::ArtifactUpdate(u) => {
                // The first piece creates the artifact: a client drops a piece appending to
                // an artifact it has not seen.
                assert_eq!(u.append, !pieces.is_empty(), "piece {}", pieces.len());
                pieces.push(u.artifact.text());
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(states, [TaskState::Working, TaskState::Completed]);
    assert!(pieces.len() > 1, "the answer streams in pieces: {pieces:?}");
    assert_eq!(pieces.concat(), CHAT_ANSWER);
    assert_eq!(whole.as_deref(), Some(CHAT_ANSWER));
    assert!(
        matches!(items.last(), Some(StreamResponse::StatusUpdate(u)) if u.status.state == TaskState::Completed),
        "the completed status ends the stream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_confirmation_is_input_required_and_the_next_message_answers_it() {
    let base = serve(A2aConfig::new("helper")).await;
    let client = A2aClient::connect(&base).await.unwrap();
    let parked = client.send(user("Delete /tmp/a", "confirm-s1")).await.unwrap();
    let task = parked.task().unwrap().clone();
    assert_eq!(task.status.state, TaskState::InputRequired);
    let question = task.status.message.clone().unwrap();
    assert!(
        question.text().contains(r#"delete({"path": "/tmp/a"})"#),
        "{}",
        question.text()
    );
    let data = question.parts.iter().find_map(|p| p.data.clone()).unwrap();
    assert_eq!(data["awaiting"], "confirmation");
    assert_eq!(data["toolCalls"][0]["name"], "delete");

    // Another message on the context (no task id) answers the waiting task.
    let answered = client.send(user("yes", "confirm-s1")).await.unwrap();
    let done = answered.task().unwrap();
    assert_eq!(done.id, task.id, "the same task goes on");
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(done.answer_text(), "Deleted /tmp/a.");
    assert!(
        support::DELETED.lock().unwrap().contains(&"/tmp/a".to_owned()),
        "the tool ran"
    );

    // A message to the ended task is refused, with the reason.
    let err = client.send_text("again", None, Some(&task.id)).await.unwrap_err();
    let ClientError::Rpc(e) = err else { panic!("{err:?}") };
    assert_eq!(e.code, RpcError::UNSUPPORTED_OPERATION);
    assert!(e.message.contains("has ended"), "{}", e.message);
}

/// With every other context waiting for input, a new context is kept past `max_contexts` (it
/// was dropped as it was made, and its "yes" became a new message to a new agent); the
/// contexts come back under the limit once their tasks end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_context_beside_busy_ones_keeps_its_waiting_task() {
    let limits = Limits {
        max_contexts: 1,
        ..Limits::default()
    };
    let base = serve(A2aConfig::new("helper").limits(limits)).await;
    let client = A2aClient::connect(&base).await.unwrap();
    let a = client.send(user("Delete /tmp/a", "confirm-a")).await.unwrap();
    assert_eq!(a.task().unwrap().status.state, TaskState::InputRequired);
    let b = client.send(user("Delete /tmp/b", "confirm-b")).await.unwrap();
    let b = b.task().unwrap().clone();
    assert_eq!(b.status.state, TaskState::InputRequired);

    let answered = client.send(user("yes", "confirm-b")).await.unwrap();
    let done = answered.task().unwrap();
    assert_eq!(done.id, b.id, "the waiting task goes on");
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(done.answer_text(), "Deleted /tmp/a.");
    let answered = client.send(user("yes", "confirm-a")).await.unwrap();
    let done = answered.task().unwrap();
    assert_eq!(done.id, a.task().unwrap().id);
    assert_eq!(done.answer_text(), "Deleted /tmp/a.");
}

/// The answer to a waiting task is checked as a new message is, and takes no file: no parts, or
/// a URL part, is refused, and the task still waits (a file-only answer, read as empty text,
/// would deny every confirmation).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_the_agent_cannot_read_is_refused_and_the_task_still_waits() {
    let base = serve(A2aConfig::new("helper")).await;
    let client = A2aClient::connect(&base).await.unwrap();
    let parked = client.send(user("Delete /tmp/u", "confirm-parts")).await.unwrap();
    let task = parked.task().unwrap().clone();
    assert_eq!(task.status.state, TaskState::InputRequired);

    let mut empty = user("", "confirm-parts");
    empty.parts.clear();
    let mut url = user("", "confirm-parts");
    url.parts = vec![towerscope_serve::a2a::wire::Part {
        url: Some("http://example.invalid/a.png".into()),
        ..Default::default()
    }];
    for (answer, code) in [
        (empty, RpcError::INVALID_PARAMS),
        (url, RpcError::CONTENT_TYPE_NOT_SUPPORTED),
    ] {
        let err = client.send(answer).await.unwrap_err();
        let ClientError::Rpc(e) = err else { panic!("{err:?}") };
        assert_eq!(e.code, code, "{}", e.message);
        assert_eq!(
            client.get_task(&task.id).await.unwrap().status.state,
            TaskState::InputRequired
        );
    }
    let answered = client.send(user("yes", "confirm-parts")).await.unwrap();
    assert_eq!(answered.task().unwrap().answer_text(), "Deleted /tmp/a.");
}

/// The data part of a waiting task's question (what it waits for).
fn question_data(task: &Task) -> Value {
    let question = task.status.message.as_ref().expect("a waiting task asks");
    question.parts.iter().find_map(|p| p.data.clone()).expect("a data part")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_waiting_on_a_confirmation_and_an_external_call_asks_for_each_in_turn() {
    let base = serve(A2aConfig::new("helper")).await;
    let client = A2aClient::connect(&base).await.unwrap();
    let parked = client.send(user("Delete and look up", "mixed-s1")).await.unwrap();
    let task = parked.task().unwrap().clone();
    assert_eq!(task.status.state, TaskState::InputRequired);
    let data = question_data(&task);
    assert_eq!(data["awaiting"], "confirmation", "{data}");
    assert_eq!(data["toolCalls"][0]["name"], "delete");

    // The confirmation answered, the reply parks again on the external call, which the agent
    // requested in the first reply (beside the confirmation) and not again: the task asks for
    // its result.
    let confirmed = client.send(user("yes", "mixed-s1")).await.unwrap();
    let waiting = confirmed.task().unwrap().clone();
    assert_eq!(waiting.id, task.id);
    assert_eq!(waiting.status.state, TaskState::InputRequired);
    let data = question_data(&waiting);
    assert_eq!(data["awaiting"], "external_execution", "{data}");
    assert_eq!(data["toolCalls"][0]["name"], "lookup");
    assert!(support::DELETED.lock().unwrap().contains(&"/tmp/mixed".to_owned()));

    // Its result completes the task.
    let done = client.send(user("found it", "mixed-s1")).await.unwrap();
    let done = done.task().unwrap();
    assert_eq!(done.id, task.id);
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(done.answer_text(), "Both done.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_interrupts_a_working_task_and_ends_a_waiting_one() {
    let base = serve(A2aConfig::new("helper")).await;
    let client = A2aClient::connect(&base).await.unwrap();
    let (_, started) = post(
        &base,
        rpc(
            "SendMessage",
            json!({"message": {"messageId": "m1", "role": "ROLE_USER", "contextId": "slow-s1", "parts": [{"text": "Take your time"}]},
                   "configuration": {"returnImmediately": true}}),
        ),
        Some("1.0"),
    )
    .await;
    let id = started["result"]["task"]["id"].as_str().unwrap().to_owned();
    assert!(matches!(
        started["result"]["task"]["status"]["state"].as_str(),
        Some("TASK_STATE_SUBMITTED" | "TASK_STATE_WORKING")
    ));
    // While it works, the context takes no other message.
    let busy = client.send(user("hello?", "slow-s1")).await.unwrap_err();
    assert!(
        matches!(&busy, ClientError::Rpc(e) if e.message.contains("busy")),
        "{busy:?}"
    );

    let canceled = client.cancel_task(&id).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_eq!(client.get_task(&id).await.unwrap().status.state, TaskState::Canceled);
    let again = client.cancel_task(&id).await.unwrap_err();
    assert!(matches!(
        again,
        ClientError::Rpc(RpcError {
            code: RpcError::TASK_NOT_CANCELABLE,
            ..
        })
    ));

    // A task waiting for confirmation is canceled too; its reply is interrupted, not resumed.
    let parked = client.send(user("Delete /tmp/a", "confirm-s2")).await.unwrap();
    let parked_id = parked.task().unwrap().id.clone();
    let canceled = client.cancel_task(&parked_id).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    // The context is free again: the next message is a new task.
    let next = client.send(user("Hello", "confirm-s2")).await.unwrap();
    assert_ne!(next.task().unwrap().id, parked_id);
}

/// A layer replaced the final message of a canceled reply with one that carries no finished
/// reason: the task's ending comes from the reply's `REPLY_END`, so it stays canceled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canceled_reply_whose_final_message_a_layer_replaced_stays_canceled() {
    let base = serve(A2aConfig::new("helper")).await;
    let client = A2aClient::connect(&base).await.unwrap();
    let mut stream = client.stream(user("Take your time", "veiled-s1")).await.unwrap();
    let Some(Ok(StreamResponse::Task(task))) = stream.next().await else {
        panic!("the stream opens with the task")
    };
    // Canceled once the reply streams its answer (its model was called).
    loop {
        match stream.next().await {
            Some(Ok(StreamResponse::ArtifactUpdate(_))) => break,
            Some(Ok(_)) => {}
            other => panic!("the answer streams before it ends: {other:?}"),
        }
    }
    assert_eq!(
        client.cancel_task(&task.id).await.unwrap().status.state,
        TaskState::Canceled
    );
    while stream.next().await.is_some() {}

    let canceled = client.get_task(&task.id).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert!(
        !canceled.artifacts.iter().any(|a| a.text().contains("Veiled.")),
        "the replaced message is no answer: {:?}",
        canceled.artifacts
    );
    let next = client.send(user("And now?", "veiled-s1")).await.unwrap();
    assert_eq!(next.task().unwrap().answer_text(), "Veiled.", "the layer is installed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_reply_is_a_failed_task_without_the_providers_text() {
    let base = serve(A2aConfig::new("helper")).await;
    let (status, body) = post(
        &base,
        rpc(
            "SendMessage",
            json!({"message": {"messageId": "m1", "role": "ROLE_USER", "contextId": "fail-s1", "parts": [{"text": "Hi"}]}}),
        ),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["result"]["task"]["status"]["state"], "TASK_STATE_FAILED");
    assert_eq!(
        body["result"]["task"]["status"]["message"]["parts"][0]["text"],
        "The agent's reply failed."
    );
    assert!(!body.to_string().contains("SECRET"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_the_protocols_error_codes() {
    let limits = Limits {
        max_body_bytes: 4096,
        ..Limits::default()
    };
    let base = serve(A2aConfig::new("helper").limits(limits)).await;
    let code = |body: &Value| body["error"]["code"].as_i64().unwrap();

    let (status, body) = post(&base, "{not json", None).await;
    assert_eq!((status, code(&body)), (200, RpcError::PARSE_ERROR));
    assert_eq!(body["id"], Value::Null);

    let (_, body) = post(
        &base,
        r#"{"jsonrpc": "2.0", "id": 7, "method": "message/teleport"}"#,
        None,
    )
    .await;
    assert_eq!(code(&body), RpcError::METHOD_NOT_FOUND);
    assert_eq!(body["id"], 7, "the request's id is echoed");

    let (_, body) = post(&base, r#"{"jsonrpc": "2.0", "id": 1}"#, None).await;
    assert_eq!(code(&body), RpcError::INVALID_REQUEST);

    let (_, body) = post(&base, rpc("GetTask", json!({"id": "no-such-task"})), None).await;
    assert_eq!(code(&body), RpcError::TASK_NOT_FOUND);
    let (_, body) = post(&base, rpc("CancelTask", json!({"id": "no-such-task"})), None).await;
    assert_eq!(code(&body), RpcError::TASK_NOT_FOUND);

    let (_, body) = post(&base, rpc("SendMessage", json!({"msg": "hi"})), None).await;
    assert_eq!(code(&body), RpcError::INVALID_PARAMS);
    let (_, body) = post(&base, rpc("GetTask", json!({"id": 42})), None).await;
    assert_eq!(code(&body), RpcError::INVALID_PARAMS);
    let long_context = "chat-".to_owned() + &"x".repeat(300);
    let (_, body) = post(
        &base,
        rpc(
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "contextId": long_context, "parts": [{"text": "Hi"}]}}),
        ),
        None,
    )
    .await;
    assert_eq!(code(&body), RpcError::INVALID_PARAMS);
    assert!(
        body["error"]["message"].as_str().unwrap().contains("contextId"),
        "{body}"
    );
    let (_, body) = post(
        &base,
        rpc(
            "SendMessage",
            json!({"message": {"role": "ROLE_AGENT", "parts": [{"text": "Hi"}]}}),
        ),
        None,
    )
    .await;
    assert_eq!(code(&body), RpcError::INVALID_PARAMS);
    let (_, body) = post(
        &base,
        rpc("SendMessage", json!({"message": {"role": "ROLE_USER", "parts": []}})),
        None,
    )
    .await;
    assert_eq!(code(&body), RpcError::INVALID_PARAMS);
    let (_, body) = post(
        &base,
        rpc(
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "parts": [{"url": "file:///etc/passwd"}]}}),
        ),
        None,
    )
    .await;
    assert_eq!(
        code(&body),
        RpcError::INVALID_PARAMS,
        "a URL other than http, https or data"
    );
    let (_, body) = post(
        &base,
        rpc(
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "parts": [{"raw": "not base64"}]}}),
        ),
        None,
    )
    .await;
    assert_eq!(code(&body), RpcError::INVALID_PARAMS, "raw bytes that are not base64");

    let (_, body) = post(&base, rpc("GetTask", json!({"id": "x"})), Some("0.3")).await;
    assert_eq!(code(&body), RpcError::VERSION_NOT_SUPPORTED);

    let (_, body) = post(&base, rpc("ListTasks", json!({})), None).await;
    assert_eq!(code(&body), RpcError::UNSUPPORTED_OPERATION);
    let (_, body) = post(&base, rpc("SubscribeToTask", json!({"id": "x"})), None).await;
    assert_eq!(code(&body), RpcError::TASK_NOT_FOUND);

    // A body over the limit: HTTP 413, still a JSON-RPC error.
    let huge = rpc(
        "SendMessage",
        json!({"message": {"role": "ROLE_USER", "parts": [{"text": "x".repeat(10_000)}]}}),
    );
    let (status, body) = post(&base, huge, None).await;
    assert_eq!((status, code(&body)), (413, RpcError::INVALID_REQUEST));

    // The factory failing for a context: an internal error that does not repeat its text.
    let (_, body) = post(
        &base,
        rpc(
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "contextId": "zzz-1", "parts": [{"text": "Hi"}]}}),
        ),
        None,
    )
    .await;
    assert_eq!(code(&body), RpcError::INTERNAL_ERROR);
    assert!(!body.to_string().contains("no agent for"), "{body}");

    // The factory panicking: the same JSON-RPC error, not a dropped connection.
    let (status, body) = post(
        &base,
        rpc(
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "contextId": "panic-1", "parts": [{"text": "Hi"}]}}),
        ),
        None,
    )
    .await;
    assert_eq!((status, code(&body)), (200, RpcError::INTERNAL_ERROR), "{body}");
    assert!(!body.to_string().contains("a bug"), "{body}");

    // The server still serves after all that.
    let client = A2aClient::connect(&base).await.unwrap();
    assert_eq!(
        client.send(user("Hi", "chat-s9")).await.unwrap().answer_text(),
        CHAT_ANSWER
    );
}

async fn start_slow(base: &str, context: &str) -> String {
    let (_, started) = post(
        base,
        rpc(
            "SendMessage",
            json!({"message": {"messageId": "m1", "role": "ROLE_USER", "contextId": context, "parts": [{"text": "Take your time"}]},
                   "configuration": {"returnImmediately": true}}),
        ),
        None,
    )
    .await;
    started["result"]["task"]["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_follows_a_running_task_to_its_end() {
    let base = serve(A2aConfig::new("helper")).await;
    let client = A2aClient::connect(&base).await.unwrap();
    let id = start_slow(&base, "slow-sub").await;
    let mut updates = client.subscribe(&id).await.unwrap();
    let Some(Ok(StreamResponse::Task(task))) = updates.next().await else {
        panic!("a subscription opens with the task")
    };
    assert_eq!(task.id, id);
    assert!(!task.status.state.is_stopped());
    client.cancel_task(&id).await.unwrap();
    let rest: Vec<StreamResponse> = updates.map(Result::unwrap).collect().await;
    assert!(
        matches!(rest.last(), Some(StreamResponse::StatusUpdate(u)) if u.status.state == TaskState::Canceled),
        "{rest:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_task_limit_new_messages_are_refused_until_one_ends() {
    let limits = Limits {
        max_tasks: 2,
        ..Limits::default()
    };
    let base = serve(A2aConfig::new("helper").limits(limits)).await;
    let client = A2aClient::connect(&base).await.unwrap();
    // Ended tasks are forgotten to make room.
    for i in 0..3 {
        client.send(user("Hi", &format!("chat-l{i}"))).await.unwrap();
    }
    let first = start_slow(&base, "slow-l1").await;
    let _second = start_slow(&base, "slow-l2").await;
    let refused = client.send(user("Hi", "chat-l9")).await.unwrap_err();
    let ClientError::Rpc(e) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!(e.code, RpcError::INTERNAL_ERROR);
    assert!(e.message.contains("limit"), "{}", e.message);
    client.cancel_task(&first).await.unwrap();
    let answer = client.send(user("Hi", "chat-l9")).await.unwrap();
    assert_eq!(answer.answer_text(), CHAT_ANSWER);
}

/// Sends five 100 kB messages to a server with `limits`; the ids of their tasks, oldest first.
async fn five_large_tasks(limits: Limits) -> (A2aClient, Vec<String>) {
    let base = serve(A2aConfig::new("helper").limits(limits)).await;
    let client = A2aClient::connect(&base).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..5 {
        let text = format!("Hi {}", "x".repeat(100_000));
        let answer = client.send(user(&text, &format!("chat-b{i}"))).await.unwrap();
        assert_eq!(answer.answer_text(), CHAT_ANSWER);
        ids.push(answer.task().unwrap().id.clone());
    }
    (client, ids)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_tasks_are_forgotten_oldest_first_past_their_byte_budget() {
    // Each ended task is about 100 kB of JSON. With 250 kB kept, a new message first forgets
    // the oldest ended tasks until 250 kB or less remain: after five, the first two are gone.
    let limits = Limits {
        max_ended_task_bytes: 250_000,
        ..Limits::default()
    };
    let (client, ids) = five_large_tasks(limits).await;
    for id in &ids[..2] {
        let gone = client.get_task(id).await.unwrap_err();
        let ClientError::Rpc(e) = gone else { panic!("{gone:?}") };
        assert_eq!(e.code, RpcError::TASK_NOT_FOUND, "{}", e.message);
    }
    for id in &ids[2..] {
        let task = client.get_task(id).await.unwrap();
        assert_eq!(task.status.state, TaskState::Completed);
        assert!(task.history[0].text().starts_with("Hi xxx"), "the input is kept whole");
    }

    // The default budget keeps them all (the count limit alone would too).
    let (client, ids) = five_large_tasks(Limits::default()).await;
    for id in &ids {
        assert_eq!(client.get_task(id).await.unwrap().status.state, TaskState::Completed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_denies_the_waiting_tool_call_and_the_tool_does_not_run() {
    let base = serve(A2aConfig::new("helper")).await;
    let client = A2aClient::connect(&base).await.unwrap();
    let parked = client.send(user("Delete /tmp/keep-me", "deny-s1")).await.unwrap();
    let task_id = parked.task().unwrap().id.clone();
    assert_eq!(parked.task().unwrap().status.state, TaskState::InputRequired);
    let answered = client.send_text("no", Some("deny-s1"), Some(&task_id)).await.unwrap();
    assert_eq!(answered.task().unwrap().status.state, TaskState::Completed);
    assert_eq!(answered.answer_text(), "Kept it.");
    assert!(
        !support::DELETED.lock().unwrap().contains(&"/tmp/keep-me".to_owned()),
        "a denied call is not run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicted_context_goes_on_from_its_session_store() {
    use std::sync::Arc;
    use towerscope_agent::Agent;
    use towerscope_agent::session::JsonFileStore;
    use towerscope_core::Role as MsgRole;
    use towerscope_models::{ScriptedModel, ScriptedResponse};

    let dir = std::env::temp_dir().join(format!("towerscope-a2a-sessions-{}", std::process::id()));
    let store = JsonFileStore::new(&dir);
    // Each agent is new (a new script); what it remembers comes from the store.
    let built_for_a = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&built_for_a);
    let factory = move |context: &str| {
        if context == "ctx-a" {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        let model = ScriptedModel::new("m", []).respond_with(|req| {
            let users = req
                .messages
                .iter()
                .filter(|m| m.role == MsgRole::User && m.text_content().is_some())
                .count();
            Some(ScriptedResponse::text(format!("user messages seen: {users}")))
        });
        Agent::builder("helper")
            .model(model)
            .session(store.clone(), "", context)
            .build()
    };
    let limits = Limits {
        max_contexts: 1,
        ..Limits::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = A2aConfig::new("helper").limits(limits).routes(Arc::new(factory));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = A2aClient::connect(&base).await.unwrap();

    let first = client.send(user("one", "ctx-a")).await.unwrap();
    assert_eq!(first.answer_text(), "user messages seen: 1");
    client.send(user("other", "ctx-b")).await.unwrap(); // evicts ctx-a's agent
    let again = client.send(user("two", "ctx-a")).await.unwrap();
    assert_eq!(
        again.answer_text(),
        "user messages seen: 2",
        "the conversation came back from the store"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_stream_leaves_the_task_to_finish() {
    let base = serve(A2aConfig::new("helper")).await;
    let client = A2aClient::connect(&base).await.unwrap();
    let mut updates = client.stream(user("Hi", "drip-gone")).await.unwrap();
    let Some(Ok(StreamResponse::Task(task))) = updates.next().await else {
        panic!("the stream opens with the task")
    };
    let _working = updates.next().await;
    drop(updates); // the client goes away while the answer drips
    assert!(!client.get_task(&task.id).await.unwrap().status.state.is_stopped());
    let mut state = TaskState::Submitted;
    for _ in 0..200 {
        state = client.get_task(&task.id).await.unwrap().status.state;
        if state.is_stopped() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(state, TaskState::Completed);
    assert_eq!(client.get_task(&task.id).await.unwrap().answer_text(), CHAT_ANSWER);
}

/// A message sent again with its id (a client retrying after a lost answer) gets the task it
/// went to, as it is now: no second reply runs, and a "yes" sent again is not a new message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_sent_again_gets_its_task_and_runs_nothing_twice() {
    let base = serve(A2aConfig::new("helper")).await;
    let client = A2aClient::connect(&base).await.unwrap();
    let first = user("Hi", "chat-dup");
    let answer = client.send(first.clone()).await.unwrap();
    let task = answer.task().unwrap().clone();
    assert_eq!(task.answer_text(), CHAT_ANSWER);
    let again = client.send(first).await.unwrap();
    let same = again.task().unwrap();
    assert_eq!(same.id, task.id, "the task the message went to");
    assert_eq!(same.answer_text(), CHAT_ANSWER);
    assert_eq!(same.history.len(), 2, "the message is in the history once");
    // The script moved on once: the next new message gets its second answer.
    let next = client.send(user("Still there?", "chat-dup")).await.unwrap();
    assert_eq!(next.answer_text(), CHAT_SECOND);

    // Two copies sent at once start one task.
    let twins = user("Hi", "chat-twins");
    let (one, two) = tokio::join!(client.send(twins.clone()), client.send(twins));
    let (one, two) = (one.unwrap(), two.unwrap());
    assert_eq!(one.task().unwrap().id, two.task().unwrap().id);
    assert_eq!(two.answer_text(), CHAT_ANSWER);

    // The "yes" that answered a question, sent again once the task has ended.
    let parked = client.send(user("Delete /tmp/a", "confirm-dup")).await.unwrap();
    let task = parked.task().unwrap().clone();
    assert_eq!(task.status.state, TaskState::InputRequired);
    let yes = user("yes", "confirm-dup");
    let done = client.send(yes.clone()).await.unwrap();
    assert_eq!(done.task().unwrap().status.state, TaskState::Completed);
    let retried = client.send(yes).await.unwrap();
    let retried = retried.task().unwrap();
    assert_eq!(retried.id, task.id, "not a new task");
    assert_eq!(retried.status.state, TaskState::Completed);
    assert_eq!(retried.history.len(), done.task().unwrap().history.len());
}

/// Tasks parked for input by clients that never answer cannot fill the server for good: once
/// they have waited longer than `max_input_wait`, a message that finds the server full has
/// them canceled, and the next message finds room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_waiting_for_input_too_long_are_canceled_to_make_room() {
    let limits = Limits {
        max_tasks: 2,
        max_input_wait: std::time::Duration::from_millis(100),
        ..Limits::default()
    };
    let base = serve(A2aConfig::new("helper").limits(limits)).await;
    let client = A2aClient::connect(&base).await.unwrap();
    let mut parked = Vec::new();
    for context in ["confirm-w1", "confirm-w2"] {
        let task = client
            .send(user("Delete /tmp/a", context))
            .await
            .unwrap()
            .task()
            .unwrap()
            .clone();
        assert_eq!(task.status.state, TaskState::InputRequired);
        parked.push(task.id);
    }
    // Waiting, but not for long yet: refused, and nothing is canceled.
    let refused = client.send(user("Hi", "chat-w3")).await.unwrap_err();
    assert!(refused.to_string().contains("limit"), "{refused}");
    assert_eq!(
        client.get_task(&parked[0]).await.unwrap().status.state,
        TaskState::InputRequired
    );

    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    let mut answer = None;
    for _ in 0..100 {
        match client.send(user("Hi", "chat-w3")).await {
            Ok(a) => {
                answer = Some(a);
                break;
            }
            Err(e) => {
                assert!(e.to_string().contains("limit"), "{e}");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    }
    assert_eq!(answer.expect("room was made").answer_text(), CHAT_ANSWER);
    for id in &parked {
        let task = client.get_task(id).await;
        // Canceled, or already forgotten to make room.
        if let Ok(task) = task {
            assert_eq!(task.status.state, TaskState::Canceled, "{id}");
        }
    }
    // The canceled task's context takes a new message (its parked reply was interrupted,
    // not left waiting): a new task, answered by the script's next answer.
    let again = client.send(user("Go on", "confirm-w1")).await.unwrap();
    let again = again.task().unwrap();
    assert_ne!(again.id, parked[0]);
    assert_eq!(again.status.state, TaskState::Completed);
}

/// What the spec asks of `historyLength` and of 0.3's push-notification methods: a negative
/// length is invalid params (it dropped the whole history), a streamed task keeps no more
/// history than asked (it sent all of it), and `tasks/pushNotificationConfig/*` is "push
/// notifications not supported", not "method not found"; every skill of the card has its
/// (required) tags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_length_push_methods_and_skill_tags_follow_the_spec() {
    let base = serve(A2aConfig::new("helper")).await;
    let code = |body: &Value| body["error"]["code"].as_i64();
    let send = |id: &str, context: &str, history: i64| {
        json!({"message": {"messageId": id, "role": "ROLE_USER", "contextId": context, "parts": [{"text": "Hi"}]},
               "configuration": {"historyLength": history}})
    };

    let (_, body) = post(&base, rpc("SendMessage", send("h1", "chat-history", -1)), None).await;
    assert_eq!(code(&body), Some(RpcError::INVALID_PARAMS), "{body}");
    let (_, body) = post(&base, rpc("SendMessage", send("h2", "chat-history", 1)), None).await;
    let task = body["result"]["task"].clone();
    assert_eq!(task["history"].as_array().map(Vec::len), Some(1), "{body}");
    let (_, body) = post(
        &base,
        rpc("GetTask", json!({"id": task["id"], "historyLength": -1})),
        None,
    )
    .await;
    assert_eq!(code(&body), Some(RpcError::INVALID_PARAMS), "{body}");

    let _ = rustls::crypto::ring::default_provider().install_default();
    let streamed = reqwest::Client::new()
        .post(format!("{base}/a2a"))
        .header("content-type", "application/json")
        .body(rpc("SendStreamingMessage", send("h3", "chat-history-stream", 0)))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let first: Value = serde_json::from_str(streamed.lines().find_map(|l| l.strip_prefix("data: ")).unwrap()).unwrap();
    assert_eq!(
        first["result"]["task"]["history"].as_array().map_or(0, Vec::len),
        0,
        "{first}"
    );

    for (method, version) in [
        ("tasks/pushNotificationConfig/set", None),
        ("tasks/pushNotificationConfig/get", None),
        // As the official SDK's 0.3 transport sends them (it was -32009, version not served).
        ("tasks/pushNotificationConfig/set", Some("0.3")),
        ("tasks/pushNotificationConfig/list", Some("0.3")),
        ("tasks/pushNotificationConfig/delete", Some("0.3")),
        ("CreateTaskPushNotificationConfig", None),
    ] {
        let (_, body) = post(&base, rpc(method, json!({"taskId": "t"})), version).await;
        assert_eq!(
            code(&body),
            Some(RpcError::PUSH_NOTIFICATION_NOT_SUPPORTED),
            "{method}: {body}"
        );
    }

    let card = reqwest::get(format!("{base}/.well-known/agent-card.json"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let card: Value = serde_json::from_slice(&card).unwrap();
    for skill in card["skills"].as_array().unwrap() {
        assert!(skill["tags"].as_array().is_some_and(|t| !t.is_empty()), "{skill}");
    }
}

/// A message id sent again with other parts is refused, naming the task the first went to
/// (the new question was answered with the old task, and what it said was dropped); the same
/// message sent again still gets its task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_id_reused_with_other_parts_is_refused_not_dropped() {
    let base = serve(A2aConfig::new("helper")).await;
    let send = |text: &str| {
        rpc(
            "SendMessage",
            json!({"message": {"messageId": "m1", "role": "ROLE_USER", "contextId": "chat-reuse", "parts": [{"text": text}]}}),
        )
    };
    let (_, first) = post(&base, send("Hi"), None).await;
    let task = first["result"]["task"]["id"].clone();
    assert!(task.is_string(), "{first}");
    let (_, again) = post(&base, send("Hi"), None).await;
    assert_eq!(again["result"]["task"]["id"], task, "the same message: its task");
    let (_, other) = post(&base, send("What is the capital of France?"), None).await;
    assert_eq!(other["error"]["code"], RpcError::INVALID_PARAMS, "{other}");
    let text = other["error"]["message"].as_str().unwrap();
    assert!(text.contains("messageId `m1` was sent before"), "{text}");
}

/// A new question sent to a context (no task id) whose task waits for a confirmation is
/// refused, naming the waiting task, which still waits (it was taken as "no": the call was
/// denied and the question never reached the model); "no" on the context answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_question_on_a_context_waiting_for_a_confirmation_is_refused_not_taken_as_no() {
    let base = serve(A2aConfig::new("helper")).await;
    let client = A2aClient::connect(&base).await.unwrap();
    let parked = client
        .send(user("Delete /tmp/keep-this-too", "deny-question"))
        .await
        .unwrap();
    let task = parked.task().unwrap().clone();
    assert_eq!(task.status.state, TaskState::InputRequired);

    let err = client
        .send(user("Before that: what time is it?", "deny-question"))
        .await
        .unwrap_err();
    let ClientError::Rpc(e) = err else { panic!("{err:?}") };
    assert_eq!(e.code, RpcError::INVALID_PARAMS);
    assert!(
        e.message.contains(&task.id) && e.message.contains("yes or no"),
        "{}",
        e.message
    );
    let waiting = client.get_task(&task.id).await.unwrap();
    assert_eq!(waiting.status.state, TaskState::InputRequired, "it still waits");

    let answered = client.send(user("no", "deny-question")).await.unwrap();
    let done = answered.task().unwrap();
    assert_eq!(done.id, task.id);
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(done.answer_text(), "Kept it.");
    assert!(
        !support::DELETED
            .lock()
            .unwrap()
            .contains(&"/tmp/keep-this-too".to_owned())
    );
}
