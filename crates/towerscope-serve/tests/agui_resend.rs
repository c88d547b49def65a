//! A run sent again, as a client does when a run's answer was lost on the way or its reply
//! failed: the user messages the thread already holds (same id and text) are not added twice,
//! an answered run is replayed from the session without calling the model (the same messages,
//! calls and outcome), only what is new is answered, and a stale copy of an old run is
//! refused.
#![allow(clippy::unwrap_used)]

mod support;

use axum::http::StatusCode;
use serde_json::{Value, json};
use towerscope_agent::session::{JsonFileStore, SessionKey, SessionStore};
use towerscope_core::{AgentError, Role};
use towerscope_models::{ScriptedModel, ScriptedResponse};

use support::{events, factory, model, post, session_dir};

/// What the endpoint tells the model when it answers a question whose first answer was cut off
/// or failed.
const AGAIN: &str =
    "<system-reminder>Your previous answer to this was cut off or failed. Answer it again, in full.</system-reminder>";

/// A run of `messages` on `thread` under the run id `run`.
fn run_as(thread: &str, run: &str, messages: &Value) -> String {
    json!({"threadId": thread, "runId": run, "messages": messages}).to_string()
}

/// What a client builds from a run's events: one line per message, tool call and result, with
/// its whole text (deltas joined), and the run's outcome. Tool calls and results with their
/// ids; text and reasoning without: a streamed answer's events carry generated block ids, as
/// the reference's do, and a replay the ids of the stored blocks.
fn view(events: &[Value]) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for e in events {
        let kind = e["type"].as_str().unwrap();
        let delta = e["delta"].as_str().unwrap_or_default();
        match kind {
            "TEXT_MESSAGE_START" => lines.push("text: ".to_owned()),
            "REASONING_MESSAGE_START" => lines.push("reasoning: ".to_owned()),
            "TOOL_CALL_START" => lines.push(format!("call {} {}: ", e["toolCallId"], e["toolCallName"])),
            "TEXT_MESSAGE_CONTENT" | "REASONING_MESSAGE_CONTENT" | "TOOL_CALL_ARGS" => {
                lines.last_mut().unwrap().push_str(delta);
            }
            "TOOL_CALL_RESULT" => lines.push(format!(
                "result {} {}: {}",
                e["messageId"], e["toolCallId"], e["content"]
            )),
            "RUN_FINISHED" => lines.push(format!("finished {}", e["outcome"])),
            "RUN_ERROR" => lines.push(format!("error {}", e["code"])),
            _ => {}
        }
    }
    lines
}

/// The texts of the session's stored messages, by role.
async fn stored(dir: &std::path::Path, thread: &str) -> Vec<String> {
    let key = SessionKey::new("web", thread).unwrap();
    let stored = JsonFileStore::new(dir).load(&key).await.unwrap().unwrap();
    stored
        .document
        .agent
        .context
        .iter()
        .map(|m| format!("{:?}: {}", m.role, m.text_content().unwrap_or_default()))
        .collect()
}

/// The texts of the messages the model's last request held, its system prompt aside.
fn last_request(model: &ScriptedModel) -> Vec<String> {
    model
        .requests()
        .pop()
        .expect("the model was called")
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .filter_map(|m| m.text_content())
        .collect()
}

/// Posts `body` once the thread is free: 409 while a reply whose client went away is closed
/// and saved.
async fn once_free(router: &axum::Router, body: String) -> (StatusCode, String) {
    let mut answer = (StatusCode::CONFLICT, String::new());
    for _ in 0..100 {
        answer = post(router, body.clone()).await;
        if answer.0 != StatusCode::CONFLICT {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    answer
}

/// Starts the run `body` and goes away after its second piece of text, as a client whose
/// connection dropped: the events it saw.
async fn leave_mid_answer(router: &axum::Router, body: String) -> Vec<Value> {
    use futures_util::StreamExt;
    use tower::ServiceExt;

    let request = axum::http::Request::post("/agui")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let mut stream = response.into_body().into_data_stream();
    let mut seen = String::new();
    while seen.matches("TEXT_MESSAGE_CONTENT").count() < 2 {
        let chunk = stream.next().await.expect("the run streams").unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    events(&seen)
}

#[tokio::test]
async fn an_answered_run_sent_again_is_replayed_from_the_session_without_calling_the_model() {
    let model = model();
    let dir = session_dir("resend-answered");
    let router = towerscope_serve::router(factory(model.clone(), dir.clone()));
    let messages = json!([{"id": "u1", "role": "user", "content": "What's the weather?"}]);
    let (status, sse) = post(&router, run_as("t1", "run-1", &messages)).await;
    assert_eq!(status, StatusCode::OK);
    let first = events(&sse);
    let calls = model.calls();
    assert_eq!(calls, 2, "a tool round and its answer");

    // The answer was lost: the client sends the same run again, with the same message.
    let (status, sse) = post(&router, run_as("t1", "run-2", &messages)).await;
    assert_eq!(status, StatusCode::OK);
    let again = events(&sse);
    assert_eq!(model.calls(), calls, "the model was not called again");
    assert_eq!(again[0]["type"], "RUN_STARTED");
    assert_eq!(again[0]["runId"], "run-2");
    assert_eq!(again.last().unwrap()["runId"], "run-2");
    assert_eq!(view(&again), view(&first), "the same messages, calls and outcome");
    assert!(
        view(&again).iter().any(|l| l.ends_with("Result: sunny in Paris")),
        "{:?}",
        view(&again)
    );
    assert_eq!(
        stored(&dir, "t1").await,
        ["User: What's the weather?", "Assistant: Result: sunny in Paris"],
        "the question is stored once"
    );
}

#[tokio::test]
async fn a_parked_run_sent_again_ends_with_the_same_interrupt() {
    let model = model();
    let router = towerscope_serve::router(factory(model.clone(), session_dir("resend-parked")));
    let messages = json!([{"id": "u1", "role": "user", "content": "please delete it"}]);
    let (_, sse) = post(&router, run_as("t1", "run-1", &messages)).await;
    let first = events(&sse);
    let (status, sse) = post(&router, run_as("t1", "run-2", &messages)).await;
    assert_eq!(status, StatusCode::OK);
    let again = events(&sse);
    assert_eq!(model.calls(), 1);
    let outcome = |events: &[Value]| events.last().unwrap()["outcome"].clone();
    assert_eq!(outcome(&first)["type"], "interrupt");
    assert_eq!(outcome(&again), outcome(&first), "the same calls wait for the user");
    assert_eq!(view(&again), view(&first));
}

#[tokio::test]
async fn a_run_sent_again_with_a_new_message_adds_only_the_new_one() {
    let model = model();
    let dir = session_dir("resend-new");
    let router = towerscope_serve::router(factory(model.clone(), dir.clone()));
    post(
        &router,
        run_as("t1", "run-1", &json!([{"id": "u1", "role": "user", "content": "hi"}])),
    )
    .await;
    // The answer to u1 never arrived; the user asks again.
    let messages = json!([
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": "u2", "role": "user", "content": "hi again"}
    ]);
    let (status, _) = post(&router, run_as("t1", "run-2", &messages)).await;
    assert_eq!(status, StatusCode::OK);
    let texts = last_request(&model);
    assert_eq!(texts, ["hi", "Hello!", "hi again"]);
    assert_eq!(
        stored(&dir, "t1").await,
        ["User: hi", "Assistant: Hello!", "User: hi again", "Assistant: Hello!"]
    );
}

/// Also: a failed run keeps its thread until its session is saved, so the run sent right after
/// it loads what it saved (it used to be released at `RUN_ERROR`, and the save that followed
/// made the next run's save a conflict).
#[tokio::test]
async fn a_run_whose_reply_failed_sent_again_is_answered_without_adding_its_message_twice() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::error(AgentError::Overloaded),
            ScriptedResponse::text("Recovered."),
        ],
    )
    .record(true);
    let dir = session_dir("resend-failed");
    let router = towerscope_serve::router(factory(model.clone(), dir.clone()));
    let messages = json!([{"id": "u1", "role": "user", "content": "hi"}]);
    let (_, sse) = post(&router, run_as("t1", "run-1", &messages)).await;
    assert_eq!(events(&sse).last().unwrap()["type"], "RUN_ERROR");
    let (status, sse) = post(&router, run_as("t1", "run-2", &messages)).await;
    assert_eq!(status, StatusCode::OK);
    let again = events(&sse);
    assert!(
        view(&again).iter().any(|l| l.ends_with(": Recovered.")),
        "{:?}",
        view(&again)
    );
    let texts = last_request(&model);
    assert_eq!(
        texts,
        ["hi", AGAIN],
        "the model saw the question once, and that its first answer failed"
    );
    assert_eq!(view(&again).last().unwrap(), r#"finished {"type":"success"}"#);
    // The failed reply's message (its hints only) stays, as in one process, and the note that
    // it failed.
    assert_eq!(
        stored(&dir, "t1").await,
        [
            "User: hi",
            "Assistant: ",
            &format!("User: {AGAIN}"),
            "Assistant: Recovered."
        ]
    );
}

/// A copy of an old run arriving late (a proxy's retry, a second tab) gets only the answer to
/// its own question, not the later turns; when its question was never answered and the thread
/// went on, it is refused.
#[tokio::test]
async fn a_late_copy_of_an_old_run_gets_its_own_answer_only_or_is_refused() {
    let model = model();
    let dir = session_dir("resend-late");
    let router = towerscope_serve::router(factory(model.clone(), dir.clone()));
    let first = json!([{"id": "u1", "role": "user", "content": "hi"}]);
    let (_, sse) = post(&router, run_as("t1", "run-1", &first)).await;
    let first_view = view(&events(&sse));
    let answer_id = events(&sse).iter().find(|e| e["type"] == "TEXT_MESSAGE_START").unwrap()["messageId"].clone();
    let second = json!([
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": answer_id, "role": "assistant", "content": "Hello!"},
        {"id": "u2", "role": "user", "content": "what's the weather?"}
    ]);
    post(&router, run_as("t1", "run-2", &second)).await;
    let (calls, before) = (model.calls(), stored(&dir, "t1").await);
    let (status, sse) = post(&router, run_as("t1", "run-1", &first)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        view(&events(&sse)),
        first_view,
        "the answer to u1, nothing of u2's turn"
    );
    assert_eq!(model.calls(), calls);
    assert_eq!(stored(&dir, "t1").await, before);

    // u1's reply failed, then u2 was asked and answered: a late copy of u1's run is stale.
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::error(AgentError::Overloaded),
            ScriptedResponse::text("Fine."),
        ],
    );
    let dir = session_dir("resend-stale");
    let router = towerscope_serve::router(factory(model.clone(), dir.clone()));
    post(&router, run_as("t1", "run-1", &first)).await;
    let second = json!([
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": "u2", "role": "user", "content": "how are you?"}
    ]);
    let (_, sse) = post(&router, run_as("t1", "run-2", &second)).await;
    assert!(view(&events(&sse)).contains(&"text: Fine.".to_owned()), "{sse}");
    let before = stored(&dir, "t1").await;
    assert_eq!(
        before,
        ["User: hi", "Assistant: ", "User: how are you?", "Assistant: Fine."]
    );
    let (status, body) = post(&router, run_as("t1", "run-1", &first)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(support::error_code(&body), "stale_run");
    assert_eq!(model.calls(), 2);
    assert_eq!(stored(&dir, "t1").await, before);
}

#[tokio::test]
async fn a_message_sent_again_with_another_text_is_a_new_message() {
    let model = model();
    let dir = session_dir("resend-edited");
    let router = towerscope_serve::router(factory(model.clone(), dir.clone()));
    post(
        &router,
        run_as("t1", "run-1", &json!([{"id": "u1", "role": "user", "content": "hi"}])),
    )
    .await;
    let edited = json!([{"id": "u1", "role": "user", "content": "hi, what's the weather?"}]);
    let (status, sse) = post(&router, run_as("t1", "run-2", &edited)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        view(&events(&sse))
            .iter()
            .any(|l| l.ends_with("Result: sunny in Paris")),
        "{sse}"
    );
    assert_eq!(model.calls(), 3, "one answer, then a tool round and its answer");
    assert_eq!(
        stored(&dir, "t1").await,
        [
            "User: hi",
            "Assistant: Hello!",
            "User: hi, what's the weather?",
            "Assistant: Result: sunny in Paris"
        ]
    );
}

/// A client that went away in the middle of an answer and sends the run again gets a whole
/// answer, not the part the interrupted reply kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_run_sent_again_is_answered_again_not_replayed() {
    let model = model();
    let dir = session_dir("resend-interrupted");
    let router = towerscope_serve::router(factory(model.clone(), dir.clone()));
    let messages = json!([{"id": "u1", "role": "user", "content": "long please"}]);
    leave_mid_answer(&router, run_as("t1", "run-1", &messages)).await;

    // Sent again once the interrupted reply has closed and saved (409 until then).
    let answer = once_free(&router, run_as("t1", "run-2", &messages)).await;
    assert_eq!(answer.0, StatusCode::OK, "{}", answer.1);
    let again = view(&events(&answer.1));
    assert_eq!(again[0], format!("text: {}", support::LONG), "{again:?}");
    assert_eq!(again.last().unwrap(), r#"finished {"type":"success"}"#);
    assert_eq!(model.calls(), 2, "the model answered again");
    let stored = stored(&dir, "t1").await;
    assert_eq!(
        stored,
        [
            "User: long please".to_owned(),
            "Assistant: one two ".to_owned(),
            format!("User: {AGAIN}"),
            format!("Assistant: {}", support::LONG)
        ],
        "the question once, the part kept, the note that it was cut off, the whole answer"
    );
    // The model was not left to continue the part: its last turn was the note.
    let last = model.requests().pop().unwrap();
    assert_eq!(last.messages.last().unwrap().text_content().as_deref(), Some(AGAIN));
    // Sent a third time: the whole answer, without the part the interrupted reply kept.
    let (status, sse) = post(&router, run_as("t1", "run-3", &messages)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(view(&events(&sse)), again);
    assert_eq!(model.calls(), 2);
}

/// A reply that stored an answer and then failed (a layer asked for another round, whose model
/// call failed) is not taken for answered: the run sent again is answered again.
#[tokio::test]
async fn a_run_that_failed_after_storing_an_answer_is_answered_again() {
    use futures_util::StreamExt;
    use towerscope_agent::Agent;
    use towerscope_core::{AgentEvent, EventStream, ReplyItem, ReplyNext, ReplyRequest, from_fn};

    /// Asks for one more round the first time the reply ends.
    fn once_more(
        req: ReplyRequest,
        next: ReplyNext,
    ) -> futures_util::future::BoxFuture<'static, Result<EventStream, AgentError>> {
        Box::pin(async move {
            let ctx = req.ctx.clone();
            let inner = next.run(req).await?;
            let mut asked = false;
            Ok(Box::pin(inner.filter(move |item| {
                let end = matches!(item, Ok(ReplyItem::Event(AgentEvent::ReplyEnd(_))));
                let swallow = end && !asked;
                if swallow {
                    asked = true;
                    ctx.request_another_round();
                }
                std::future::ready(!swallow)
            })) as EventStream)
        })
    }

    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::text("First draft."),
            ScriptedResponse::error(AgentError::Overloaded),
            ScriptedResponse::text("Second."),
            ScriptedResponse::text("Final."),
        ],
    );
    let dir = session_dir("resend-failed-late");
    let store = JsonFileStore::new(dir.clone());
    let m = model.clone();
    let router = towerscope_serve::router(move |session: &str| {
        Agent::builder("assistant")
            .model(m.clone())
            .on_reply(from_fn(once_more))
            .session(store.clone(), "web", session)
            .build()
    });
    let messages = json!([{"id": "u1", "role": "user", "content": "hi"}]);
    let (_, sse) = post(&router, run_as("t1", "run-1", &messages)).await;
    assert_eq!(events(&sse).last().unwrap()["type"], "RUN_ERROR");
    let (status, sse) = post(&router, run_as("t1", "run-2", &messages)).await;
    assert_eq!(status, StatusCode::OK);
    let again = view(&events(&sse));
    assert_eq!(model.calls(), 4, "answered again: {again:?}");
    assert!(!again.iter().any(|l| l.contains("First draft.")), "{again:?}");
    assert_eq!(again.last().unwrap(), r#"finished {"type":"success"}"#);
}

/// With the application's context in every run: the run's context message is stored once,
/// and a run sent again after its failed first sending was answered is replayed (not taken
/// for a stale copy), without the part of the failed attempt.
#[tokio::test]
async fn a_run_with_context_sent_again_stores_its_context_once_and_replays() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::error(AgentError::Overloaded),
            ScriptedResponse::text("Fine."),
        ],
    );
    let dir = session_dir("resend-context");
    let router = towerscope_serve::router(factory(model.clone(), dir.clone()));
    let body = |run: &str| {
        json!({"threadId": "t1", "runId": run,
            "messages": [{"id": "u1", "role": "user", "content": "hi"}],
            "context": [{"description": "page", "value": "home"}]})
        .to_string()
    };
    let (_, sse) = post(&router, body("r1")).await;
    assert_eq!(events(&sse).last().unwrap()["type"], "RUN_ERROR");
    let (_, sse) = post(&router, body("r2")).await;
    let answered = view(&events(&sse));
    assert!(answered.contains(&"text: Fine.".to_owned()), "{answered:?}");
    let (status, sse) = post(&router, body("r3")).await;
    assert_eq!(status, StatusCode::OK, "{sse}");
    assert_eq!(view(&events(&sse)), answered, "the answer, replayed");
    assert_eq!(model.calls(), 2);
    let stored = stored(&dir, "t1").await;
    assert_eq!(
        stored
            .iter()
            .filter(|m| m.contains("Context from the application"))
            .count(),
        1,
        "{stored:?}"
    );
    assert_eq!(stored.iter().filter(|m| *m == "User: hi").count(), 1, "{stored:?}");
}

/// A question without an id is new whatever else the run holds.
#[tokio::test]
async fn a_question_without_an_id_is_never_taken_for_one_sent_again() {
    let model = model();
    let router = towerscope_serve::router(factory(model.clone(), session_dir("resend-anonymous")));
    post(
        &router,
        run_as("t1", "run-1", &json!([{"id": "u1", "role": "user", "content": "hi"}])),
    )
    .await;
    let messages = json!([
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": "", "role": "user", "content": "what's the weather?"}
    ]);
    let (status, sse) = post(&router, run_as("t1", "run-2", &messages)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        view(&events(&sse))
            .iter()
            .any(|l| l.ends_with("Result: sunny in Paris")),
        "{sse}"
    );
}

/// A run that adds a question to one whose sending failed before the client saw anything: the
/// model sees this run's context (it is named after the new question, not the old one).
#[tokio::test]
async fn a_run_adding_a_question_to_a_failed_one_brings_its_own_context() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::error(AgentError::Overloaded),
            ScriptedResponse::text("Fine."),
        ],
    )
    .record(true);
    let router = towerscope_serve::router(factory(model.clone(), session_dir("resend-new-context")));
    let body = |run: &str, messages: Value, page: &str| {
        json!({"threadId": "t1", "runId": run, "messages": messages,
            "context": [{"description": "page", "value": page}]})
        .to_string()
    };
    let u1 = json!({"id": "u1", "role": "user", "content": "hi"});
    let u2 = json!({"id": "u2", "role": "user", "content": "and now?"});
    post(&router, body("r1", json!([u1]), "home")).await;
    let (status, _) = post(&router, body("r2", json!([u1, u2]), "settings")).await;
    assert_eq!(status, StatusCode::OK);
    let texts = last_request(&model);
    assert!(texts.iter().any(|t| t.contains("page: settings")), "{texts:?}");
    assert_eq!(texts.iter().filter(|t| *t == "hi").count(), 1, "{texts:?}");
}

/// A store whose saves take a while: a run that reads the session while another's save is on
/// its way would load the old one, and its own save would be a conflict.
struct SlowSaves(JsonFileStore);

impl SessionStore for SlowSaves {
    fn load<'a>(
        &'a self,
        key: &'a SessionKey,
    ) -> towerscope_agent::session::StoreFuture<'a, Option<towerscope_agent::session::Stored>> {
        self.0.load(key)
    }

    fn save<'a>(
        &'a self,
        key: &'a SessionKey,
        document: &'a towerscope_agent::session::SessionDocument,
        expect: towerscope_agent::session::Expect,
    ) -> towerscope_agent::session::StoreFuture<'a, u64> {
        Box::pin(async move {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            self.0.save(key, document, expect).await
        })
    }

    fn delete<'a>(&'a self, key: &'a SessionKey) -> towerscope_agent::session::StoreFuture<'a, bool> {
        self.0.delete(key)
    }

    fn list<'a>(&'a self, user_id: &'a str) -> towerscope_agent::session::StoreFuture<'a, Vec<String>> {
        self.0.list(user_id)
    }
}

/// A client that goes away before its run's first event (a layer holds the reply back): the
/// thread stays busy until that reply's session is saved, so the next run loads it and saves
/// after it, instead of failing with a conflict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_gone_before_the_first_event_keeps_the_thread_until_the_save() {
    use std::sync::Arc;
    use tower::ServiceExt;
    use towerscope_agent::Agent;
    use towerscope_core::{EventStream, ReplyNext, ReplyRequest, from_fn};

    fn slow_start(
        req: ReplyRequest,
        next: ReplyNext,
    ) -> futures_util::future::BoxFuture<'static, Result<EventStream, AgentError>> {
        Box::pin(async move {
            use futures_util::StreamExt;
            let inner = next.run(req).await?;
            // The reply (and its session's stream) is open; its first event comes late.
            let late = futures_util::stream::once(tokio::time::sleep(std::time::Duration::from_millis(200)))
                .filter_map(|()| async { None::<Result<towerscope_core::ReplyItem, AgentError>> });
            Ok(Box::pin(late.chain(inner)) as EventStream)
        })
    }

    let dir = session_dir("resend-gone-early");
    let store = Arc::new(SlowSaves(JsonFileStore::new(dir.clone())));
    let model = ScriptedModel::cycle("m", [ScriptedResponse::text("Hello!")]);
    let router = towerscope_serve::router(move |session: &str| {
        Agent::builder("assistant")
            .model(model.clone())
            .on_reply(from_fn(slow_start))
            .session(Arc::clone(&store), "web", session)
            .build()
    });
    let request = axum::http::Request::post("/agui")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(run_as(
            "t1",
            "run-1",
            &json!([{"id": "u1", "role": "user", "content": "hi"}]),
        )))
        .unwrap();
    let gone = tokio::time::timeout(std::time::Duration::from_millis(50), router.clone().oneshot(request)).await;
    assert!(gone.is_err(), "the client left before the first event");

    let next = json!([{"id": "u2", "role": "user", "content": "hello"}]);
    let answer = once_free(&router, run_as("t1", "run-2", &next)).await;
    assert_eq!(answer.0, StatusCode::OK, "{}", answer.1);
    let events = events(&answer.1);
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED", "{}", answer.1);
}

/// The answer to a front-end tool's result was lost: the result sent again gets what followed
/// it, and the client's next message, which still carries that result (it comes after the
/// client's last assistant message), is answered, as the thread applied it; a result the thread
/// has not taken, beside a new message, is refused.
#[tokio::test]
async fn a_front_end_result_already_applied_does_not_block_the_next_message() {
    let model = model();
    let router = towerscope_serve::router(factory(model.clone(), session_dir("resend-frontend")));
    let tools = json!([{"name": "pick_color", "description": "Let the user pick a color", "parameters": {}}]);
    let body = |run: &str, messages: &Value| {
        json!({"threadId": "t1", "runId": run, "messages": messages, "tools": tools}).to_string()
    };
    let u1 = json!({"id": "u1", "role": "user", "content": "a color please"});
    let (_, sse) = post(&router, body("r1", &json!([u1]))).await;
    let call = events(&sse)
        .into_iter()
        .find(|e| e["type"] == "TOOL_CALL_START")
        .unwrap();
    let call_id = call["toolCallId"].as_str().unwrap().to_owned();
    let assistant = json!({"id": call_id, "role": "assistant", "toolCalls": [
        {"id": call_id, "type": "function", "function": {"name": "pick_color", "arguments": "{\"palette\": \"warm\"}"}}
    ]});
    let result = json!({"id": "t-1", "role": "tool", "toolCallId": call_id, "content": "orange"});
    let u2 = json!({"id": "u2", "role": "user", "content": "thanks"});

    // A result beside a new message while the thread still waits for it: refused, as before.
    let (status, body_text) = post(&router, body("r2", &json!([u1, assistant, result, u2]))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body_text}");

    let (_, sse) = post(&router, body("r3", &json!([u1, assistant, result]))).await;
    assert!(
        view(&events(&sse)).contains(&"text: Result: orange".to_owned()),
        "{sse}"
    );
    // The result sent again (that run's answer was lost): what followed it, no model call.
    let calls = model.calls();
    let (status, again) = post(&router, body("r3", &json!([u1, assistant, result]))).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(view(&events(&again)), view(&events(&sse)));
    assert_eq!(model.calls(), calls);
    // That answer was lost; the client sends its next message with the result it holds.
    let (status, sse) = post(&router, body("r4", &json!([u1, assistant, result, u2]))).await;
    assert_eq!(status, StatusCode::OK, "{sse}");
    assert!(view(&events(&sse)).contains(&"text: Hello!".to_owned()), "{sse}");
}

/// The same client retries with the conversation it holds, the part of the answer it received
/// included (its last message is the agent's): nothing is new, so a cut-off answer is answered
/// again (the model told so), and a whole one is replayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_holding_the_part_it_received_is_answered_again_or_replayed() {
    let model = model();
    let router = towerscope_serve::router(factory(model.clone(), session_dir("resend-same-client")));
    let u1 = json!({"id": "u1", "role": "user", "content": "long please"});
    let first = leave_mid_answer(&router, run_as("t1", "run-1", &json!([u1]))).await;
    let part_id = first.iter().find(|e| e["type"] == "TEXT_MESSAGE_START").unwrap()["messageId"].clone();
    let part: String = first
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    let held = json!([u1, {"id": part_id, "role": "assistant", "content": part}]);

    let answer = once_free(&router, run_as("t1", "run-2", &held)).await;
    assert_eq!(answer.0, StatusCode::OK, "{}", answer.1);
    let again = view(&events(&answer.1));
    assert_eq!(again[0], format!("text: {}", support::LONG), "{again:?}");
    let last = model.requests().pop().unwrap();
    assert_eq!(last.messages.last().unwrap().text_content().as_deref(), Some(AGAIN));
    assert_eq!(model.calls(), 2);

    // It holds the whole answer now, and sends the conversation again: the outcome alone (a
    // replay of what it holds would show the answer twice: its ids are the streamed ones).
    let whole = json!([u1, {"id": "a", "role": "assistant", "content": support::LONG}]);
    let (status, sse) = post(&router, run_as("t1", "run-3", &whole)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(view(&events(&sse)), [r#"finished {"type":"success"}"#]);
    assert_eq!(model.calls(), 2);

    // A client whose last question is not the thread's last is behind: refused.
    let other = json!([{"id": "u0", "role": "user", "content": "long please"}, {"id": "b", "role": "assistant", "content": "x"}]);
    let (status, body) = post(&router, run_as("t1", "run-4", &other)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(support::error_code(&body), "stale_run");
}

/// Two calls in one turn, one run by itself, one confirmed: the confirmation sent again gets
/// its own result and what followed, not the other call's result, which went out before.
#[tokio::test]
async fn a_confirmation_sent_again_gets_only_what_followed_it() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c_w", "get_weather", r#"{"city": "Paris"}"#).and_tool_call(
                "c_d",
                "delete_file",
                r#"{"path": "/tmp/a"}"#,
            ),
            ScriptedResponse::text("Both done."),
        ],
    );
    let router = towerscope_serve::router(factory(model.clone(), session_dir("resend-confirm-two")));
    let u1 = json!({"id": "u1", "role": "user", "content": "weather and delete"});
    let (_, sse) = post(&router, run_as("t1", "run-1", &json!([u1]))).await;
    let first = events(&sse);
    assert_eq!(first.last().unwrap()["outcome"]["type"], "interrupt");
    assert!(view(&first).iter().any(|l| l.contains("sunny in Paris")));
    let history = json!([u1, {"id": "c_w", "role": "assistant", "toolCalls": [
        {"id": "c_w", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
        {"id": "c_d", "type": "function", "function": {"name": "delete_file", "arguments": "{\"path\": \"/tmp/a\"}"}}
    ]}]);
    let mut resume: Value = serde_json::from_str(&run_as("t1", "run-2", &history)).unwrap();
    resume["resume"] = json!([{"interruptId": "c_d", "status": "resolved", "payload": {"approved": true}}]);
    let (_, sse) = post(&router, resume.to_string()).await;
    let second = view(&events(&sse));
    let (status, sse) = post(&router, resume.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{sse}");
    let again = view(&events(&sse));
    assert_eq!(again, second);
    assert!(!again.iter().any(|l| l.contains("sunny in Paris")), "{again:?}");
    assert!(again.iter().any(|l| l.contains("deleted /tmp/a")), "{again:?}");
    assert_eq!(model.calls(), 2);
}

/// A reply that completed without a final text (an empty answer after a tool round) is an
/// ended reply: a run sent again is replayed, not answered again.
#[tokio::test]
async fn a_reply_completed_without_text_is_replayed() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "get_weather", r#"{"city": "Paris"}"#),
            ScriptedResponse::empty(),
        ],
    );
    let router = towerscope_serve::router(factory(model.clone(), session_dir("resend-no-text")));
    let messages = json!([{"id": "u1", "role": "user", "content": "weather?"}]);
    let (_, sse) = post(&router, run_as("t1", "run-1", &messages)).await;
    let first = view(&events(&sse));
    assert_eq!(first.last().unwrap(), r#"finished {"type":"success"}"#);
    let (status, sse) = post(&router, run_as("t1", "run-2", &messages)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(view(&events(&sse)), first);
    assert_eq!(model.calls(), 2);
}
