//! AG-UI over HTTP, in process: the events of a tool round, what reaches the session, keep-alive
//! comments, and every refusal as a status with a JSON body (the human in the loop is in
//! agui_hitl.rs).
#![allow(clippy::unwrap_used)]

mod support;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;
use towerscope_serve::RouterBuilder;

use support::{error_code, events, factory, model, post, router, run, session_dir, types};

#[tokio::test]
async fn a_tool_round_streams_reasoning_the_call_its_result_and_the_answer_in_order() {
    let (router, model) = router("tool-round");
    let (status, sse) = post(
        &router,
        run("t1", json!([{"id": "u1", "role": "user", "content": "weather?"}])),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let events = events(&sse);
    assert_eq!(
        types(&events),
        [
            "RUN_STARTED",
            "REASONING_START",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "REASONING_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ]
    );
    assert_eq!(events[0]["threadId"], "t1");
    let call = events.iter().find(|e| e["type"] == "TOOL_CALL_START").unwrap();
    assert_eq!(call["toolCallName"], "get_weather");
    let result = events.iter().find(|e| e["type"] == "TOOL_CALL_RESULT").unwrap();
    assert_eq!(result["toolCallId"], call["toolCallId"]);
    assert_eq!(result["content"], "sunny in Paris");
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Result: sunny in Paris");
    assert_eq!(events.last().unwrap()["outcome"]["type"], "success");
    // The model saw the user's message once.
    let first = &model.requests()[0];
    let users: Vec<_> = first
        .messages
        .iter()
        .filter(|m| m.role == towerscope_core::Role::User)
        .collect();
    assert_eq!(users.len(), 1);
    assert_eq!(users[0].text_content().as_deref(), Some("weather?"));
}

#[tokio::test]
async fn the_next_run_sends_only_new_messages_and_the_session_keeps_the_conversation() {
    let (router, model) = router("second-run");
    let (_, sse) = post(
        &router,
        run("t1", json!([{"id": "u1", "role": "user", "content": "hi"}])),
    )
    .await;
    let first = events(&sse);
    let answer_id = first.iter().find(|e| e["type"] == "TEXT_MESSAGE_START").unwrap()["messageId"].clone();
    // As @ag-ui/client does: the whole conversation, then the new message.
    let history = json!([
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": answer_id, "role": "assistant", "content": "Hello!"},
        {"id": "u2", "role": "user", "content": "hi again"}
    ]);
    let (status, _) = post(&router, run("t1", history)).await;
    assert_eq!(status, StatusCode::OK);
    let second = model.requests().pop().unwrap();
    let texts: Vec<_> = second
        .messages
        .iter()
        .filter(|m| m.role != towerscope_core::Role::System)
        .filter_map(|m| m.text_content())
        .collect();
    assert_eq!(
        texts,
        ["hi", "Hello!", "hi again"],
        "the stored conversation, each message once"
    );
}

#[tokio::test]
async fn bad_input_gets_400_or_422_with_a_json_body() {
    let (router, model) = router("bad-input");
    let (status, body) = post(&router, "{not json").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "bad_json");
    let (status, body) = post(&router, r#"{"runId": "r", "messages": []}"#).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_code(&body), "invalid_input");
    assert!(body.contains("threadId"), "{body}");
    let (status, body) = post(&router, r#"{"threadId": "t", "runId": "r", "messages": [{"id": "u", "role": "user"}], "resume": [{"interruptId": "nope", "status": "resolved"}]}"#).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_code(&body), "invalid_input");
    let long_thread = "x".repeat(10_000);
    let (status, body) = post(
        &router,
        run(&long_thread, json!([{"id": "u", "role": "user", "content": "hi"}])),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(error_code(&body), "validation_error");
    assert_eq!(model.calls(), 0);
}

/// A run on a new thread with nothing to answer (no messages, an instruction or a context
/// alone, a tool result no call waits on, an image alone, which this server does not take) is
/// refused: the model was called with the system prompt alone, or an empty message. An image
/// alone beside a question in text is left out, and the run is recognised when sent again.
#[tokio::test]
async fn a_run_with_no_question_is_refused_and_an_unreadable_message_beside_one_is_left_out() {
    let (router, model) = router("no-question");
    let image = json!({"type": "binary", "mimeType": "image/png", "url": "https://example.com/a.png"});
    for (i, messages) in [
        json!([]),
        json!([{"id": "s1", "role": "system", "content": "Be brief."}]),
        json!([{"id": "t1", "role": "tool", "toolCallId": "nope", "content": "orange"}]),
        json!([{"id": "u1", "role": "user", "content": [image]}]),
    ]
    .into_iter()
    .enumerate()
    {
        let (status, body) = post(&router, run(&format!("refused-{i}"), messages.clone())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{messages}: {body}");
        assert_eq!(error_code(&body), "invalid_input", "{body}");
    }
    let mut greeting: Value = serde_json::from_str(&run("greet", json!([]))).unwrap();
    greeting["context"] = json!([{"description": "the user's name", "value": "Ada"}]);
    let (status, body) = post(&router, greeting.to_string()).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(model.calls(), 0);

    // An image-only message beside a question in text: the question is answered, with the
    // run's context; the same run sent again (its answer lost) is answered from the thread.
    let both = json!([
        {"id": "u1", "role": "user", "content": [image]},
        {"id": "u2", "role": "user", "content": [{"type": "text", "text": "What is this?"}, image]}
    ]);
    let mut body: Value = serde_json::from_str(&run("mixed", both)).unwrap();
    body["context"] = json!([{"description": "the user's name", "value": "Ada"}]);
    let (status, first) = post(&router, body.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let heard: Vec<String> = model
        .requests()
        .pop()
        .unwrap()
        .messages
        .iter()
        .filter(|m| m.role == towerscope_core::Role::User)
        .filter_map(|m| m.text_content())
        .collect();
    assert_eq!(heard.len(), 2, "{heard:?}");
    assert!(
        heard[0].contains("the user's name: Ada") && heard[1] == "What is this?",
        "{heard:?}"
    );
    let (status, again) = post(&router, body.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(
        model.calls(),
        1,
        "sent again, the run was answered from the thread: {again}"
    );
}

/// A page on another site can make its visitor's browser POST a body that is JSON under a
/// "simple" content type (a form field named like a JSON document, sent as `text/plain`),
/// without asking the server first: neither endpoint takes it, so no agent runs.
#[tokio::test]
async fn a_body_not_sent_as_json_gets_415_and_runs_nothing() {
    let (router, model) = router("csrf");
    let body = "{\"threadId\":\"csrf\",\"runId\":\"r1\",\"messages\":[{\"id\":\"u1\",\"role\":\"user\",\"content\":\"what is the weather\"}],\"pad\":\"=\"}\r\n";
    for (path, content_type) in [
        ("/agui", Some("text/plain")),
        ("/agui", Some("application/x-www-form-urlencoded")),
        ("/agui", None),
        ("/a2a", Some("text/plain")),
    ] {
        let mut request = Request::post(path).header(header::ORIGIN, "https://evil.example");
        if let Some(content_type) = content_type {
            request = request.header(header::CONTENT_TYPE, content_type);
        }
        let response = router
            .clone()
            .oneshot(request.body(Body::from(body)).unwrap())
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{path} {content_type:?}"
        );
    }
    assert_eq!(model.calls(), 0);
}

#[tokio::test]
async fn a_resume_on_a_thread_with_nothing_waiting_is_a_conflict() {
    let (router, _) = router("unknown-thread");
    let body = json!({"threadId": "never-seen", "runId": "r", "messages": [
        {"id": "c1", "role": "assistant", "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "delete_file", "arguments": "{}"}}]}
    ], "resume": [{"interruptId": "c1", "status": "resolved"}]});
    let (status, body) = post(&router, body.to_string()).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(error_code(&body), "state_error");
}

#[tokio::test]
async fn a_body_over_the_limit_gets_413() {
    let model = model();
    let router = RouterBuilder::new(factory(model.clone(), session_dir("limit")))
        .body_limit(1024)
        .build();
    let big = run("t1", json!([{"id": "u1", "role": "user", "content": "a".repeat(4096)}]));
    let (status, body) = post(&router, big).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_code(&body), "body_too_large");
    assert_eq!(model.calls(), 0);
}

#[tokio::test]
async fn a_second_run_on_a_busy_thread_gets_409_and_the_first_completes() {
    let (router, _) = router("busy");
    let request = Request::post("/agui")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(run(
            "t1",
            json!([{"id": "u1", "role": "user", "content": "slow"}]),
        )))
        .unwrap();
    let first = router.clone().oneshot(request).await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    let (status, body) = post(
        &router,
        run("t1", json!([{"id": "u2", "role": "user", "content": "hi"}])),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(error_code(&body), "thread_busy");
    // Another thread is not busy.
    let (status, _) = post(
        &router,
        run("t2", json!([{"id": "u1", "role": "user", "content": "hi"}])),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let sse = axum::body::to_bytes(first.into_body(), usize::MAX).await.unwrap();
    let first = events(std::str::from_utf8(&sse).unwrap());
    assert_eq!(first.last().unwrap()["type"], "RUN_FINISHED");
    // Free again.
    let (status, _) = post(
        &router,
        run("t1", json!([{"id": "u2", "role": "user", "content": "hi"}])),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn unknown_routes_methods_and_panics_answer_json_and_never_the_panic_text() {
    let (router, _) = router("routes");
    let response = router
        .clone()
        .oneshot(Request::get("/nope").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = router
        .clone()
        .oneshot(Request::get("/agui").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    assert_eq!(error_code(std::str::from_utf8(&bytes).unwrap()), "method_not_allowed");

    let panicking = towerscope_serve::router(
        |_: &str| -> Result<towerscope_agent::Agent, towerscope_core::AgentError> {
            panic!("secret-key-123 in a panic")
        },
    );
    let (status, body) = post(&panicking, run("t1", json!([]))).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(error_code(&body), "internal_error");
    assert!(!body.contains("secret-key-123"), "{body}");
    // The thread the panicking request claimed is free again: the claim is dropped on unwind.
    let (status, _) = post(&panicking, run("t1", json!([]))).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
}

#[tokio::test]
async fn a_bearer_token_guards_the_endpoints_but_not_the_page() {
    let model = model();
    let router = RouterBuilder::new(factory(model, session_dir("token")))
        .bearer_token("s3cret")
        .build();
    let (status, body) = post(
        &router,
        run("t1", json!([{"id": "u1", "role": "user", "content": "hi"}])),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(error_code(&body), "unauthorized");
    let request = |token: &str| {
        Request::post("/agui")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Body::from(run(
                "t1",
                json!([{"id": "u1", "role": "user", "content": "hi"}]),
            )))
            .unwrap()
    };
    assert_eq!(
        router.clone().oneshot(request("wrong")).await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        router.clone().oneshot(request("s3cret")).await.unwrap().status(),
        StatusCode::OK
    );
    // The scheme's name in any case (RFC 9110).
    let lower = Request::post("/agui")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, "bearer s3cret")
        .body(Body::from(run(
            "t2",
            json!([{"id": "u1", "role": "user", "content": "hi"}]),
        )))
        .unwrap();
    assert_eq!(router.clone().oneshot(lower).await.unwrap().status(), StatusCode::OK);
    let page = router
        .oneshot(Request::get("/").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let html = axum::body::to_bytes(page.into_body(), usize::MAX).await.unwrap();
    assert!(std::str::from_utf8(&html).unwrap().contains("fetch(endpoint"));
}

#[tokio::test]
async fn context_and_developer_messages_reach_the_model_before_the_question() {
    let (router, model) = router("context");
    let body = json!({"threadId": "t1", "runId": "r1",
        "messages": [
            {"id": "d1", "role": "developer", "content": "Answer in French."},
            {"id": "u1", "role": "user", "content": "hi"}
        ],
        "context": [{"description": "the user's city", "value": "Lyon"}]});
    let (status, sse) = post(&router, body.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{sse}");
    let request = model.requests().pop().unwrap();
    let seen: Vec<String> = request
        .messages
        .iter()
        .filter(|m| m.role == towerscope_core::Role::User)
        .map(|m| serde_json::to_string(&m.content).unwrap())
        .collect();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(
        seen[0].contains("the user's city: Lyon") && seen[0].contains("Answer in French."),
        "{seen:?}"
    );
    assert!(seen[1].contains("hi"), "{seen:?}");
}

/// A client sending its context with every run (CopilotKit's readables) adds it to the
/// thread once while it does not change, and again when it does: the model is not sent one
/// copy per run.
#[tokio::test]
async fn a_context_sent_with_every_run_is_added_once_until_it_changes() {
    let (router, model) = router("context-every-run");
    let mut messages: Vec<Value> = Vec::new();
    for (i, page) in ["/cart", "/cart", "/cart", "/receipt"].iter().enumerate() {
        messages.push(json!({"id": format!("u{i}"), "role": "user", "content": format!("question {i}")}));
        let mut body: Value = serde_json::from_str(&run("t1", Value::Array(messages.clone()))).unwrap();
        body["context"] = json!([{"description": "current page", "value": page}]);
        let (status, sse) = post(&router, body.to_string()).await;
        assert_eq!(status, StatusCode::OK, "{sse}");
        // The run sent again (its answer lost) adds nothing either.
        if i == 1 {
            let (status, again) = post(&router, body.to_string()).await;
            assert_eq!(status, StatusCode::OK, "{again}");
        }
        let id = events(&sse).iter().find(|e| e["type"] == "TEXT_MESSAGE_START").unwrap()["messageId"].clone();
        messages.push(json!({"id": id, "role": "assistant", "content": "Hello!"}));
    }
    let last = model.requests().pop().unwrap();
    let pages: Vec<String> = last
        .messages
        .iter()
        .filter_map(|m| m.text_content())
        .filter(|t| t.contains("current page"))
        .collect();
    assert_eq!(pages.len(), 2, "{pages:?}");
    assert!(pages[0].contains("/cart") && pages[1].contains("/receipt"), "{pages:?}");
    assert_eq!(model.calls(), 4, "the run sent again was answered from the thread");
}

#[tokio::test(start_paused = true)]
async fn a_silent_stream_sends_keep_alive_comments_the_client_ignores() {
    let model = model();
    let router = RouterBuilder::new(factory(model, session_dir("keep-alive")))
        .keep_alive(Some(std::time::Duration::from_secs(15)))
        .build();
    let (status, sse) = post(
        &router,
        run("t1", json!([{"id": "u1", "role": "user", "content": "wait for it"}])),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // 40 s of silence: a comment at 15 s and at 30 s, between RUN_STARTED and the answer.
    assert_eq!(sse.matches(": keep-alive\n\n").count(), 2, "{sse}");
    let first_comment = sse.find(": keep-alive").unwrap();
    assert!(sse.find("RUN_STARTED").unwrap() < first_comment);
    assert!(first_comment < sse.find("TEXT_MESSAGE_START").unwrap());
    let events = events(&sse);
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
}

/// A2A's endpoint reads its body itself: the router's body limit and keep-alive hold there
/// as they do for AG-UI.
#[tokio::test(start_paused = true)]
async fn the_routers_body_limit_and_keep_alive_hold_for_a2a_too() {
    async fn a2a(router: &axum::Router, body: String) -> (StatusCode, String) {
        let request = Request::post(towerscope_serve::a2a::RPC_PATH)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body))
            .unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }
    let message = |text: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": {
            "messageId": "m1", "role": "ROLE_USER", "contextId": "c1", "parts": [{"text": text}]}}})
        .to_string()
    };

    let model = model();
    let router = RouterBuilder::new(factory(model.clone(), session_dir("a2a-limit")))
        .body_limit(1024)
        .build();
    let (status, _) = a2a(&router, message(&"a".repeat(4096))).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(model.calls(), 0);

    // 40 s of silence: a comment at 15 s and at 30 s; none when the router sends none.
    for (keep_alive, comments) in [(Some(std::time::Duration::from_secs(15)), 2), (None, 0)] {
        let router = RouterBuilder::new(factory(model.clone(), session_dir("a2a-keep-alive")))
            .keep_alive(keep_alive)
            .build();
        let (status, sse) = a2a(&router, message("wait for it")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(sse.matches(": keep-alive\n\n").count(), comments, "{sse}");
        assert!(sse.contains("Done waiting."), "{sse}");
    }
}

/// A JSON-RPC `SendMessage` to the router's A2A endpoint (`returnImmediately`: the task is
/// answered as it starts), its response as JSON.
async fn a2a_send(router: &axum::Router, context: &str, text: &str) -> serde_json::Value {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {
            "message": {"messageId": support::fastrand_id(), "role": "ROLE_USER", "contextId": context, "parts": [{"text": text}]},
            "configuration": {"returnImmediately": true}
        }
    });
    let request = Request::post(towerscope_serve::a2a::RPC_PATH)
        .header(header::CONTENT_TYPE, "application/json")
        .header("A2A-Version", "1.0")
        .body(Body::from(body.to_string()))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// One router serves AG-UI and A2A from one factory, so a thread id and a context id that are
/// equal name one session: a reply running through one protocol makes the other wait (409
/// `thread_busy`, or a JSON-RPC error), instead of both replying and the later save failing.
#[tokio::test]
async fn agui_and_a2a_on_one_router_see_each_others_replies_running() {
    let (router, _) = router("shared-busy");

    // An AG-UI run on s1 (slow): A2A refuses a message to context s1, takes one to s2.
    let request = Request::post("/agui")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(run(
            "s1",
            json!([{"id": "u1", "role": "user", "content": "slow"}]),
        )))
        .unwrap();
    let first = router.clone().oneshot(request).await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    let refused = a2a_send(&router, "s1", "hi").await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("busy with another reply")),
        "{refused}"
    );
    let other = a2a_send(&router, "s2", "hi").await;
    assert!(other["result"]["task"]["id"].is_string(), "{other}");
    let sse = axum::body::to_bytes(first.into_body(), usize::MAX).await.unwrap();
    assert_eq!(
        events(std::str::from_utf8(&sse).unwrap()).last().unwrap()["type"],
        "RUN_FINISHED"
    );

    // An A2A task working on s3 (slow): an AG-UI run on thread s3 gets 409 thread_busy.
    let started = a2a_send(&router, "s3", "slow").await;
    assert!(started["result"]["task"]["id"].is_string(), "{started}");
    let (status, body) = post(
        &router,
        run("s3", json!([{"id": "u1", "role": "user", "content": "hi"}])),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(error_code(&body), "thread_busy");
    // Once the task's reply ended, the thread runs.
    let mut status = StatusCode::CONFLICT;
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let answered = post(
            &router,
            run("s3", json!([{"id": "u2", "role": "user", "content": "hi"}])),
        )
        .await;
        status = answered.0;
        if status == StatusCode::OK {
            break;
        }
    }
    assert_eq!(status, StatusCode::OK);
}

/// An A2A reply that fails, then at once an AG-UI run of the same session: the run finds the
/// session as the failed reply left it (its question stored), with no conflict, since the A2A
/// reply frees the context only once its session is saved.
#[tokio::test]
async fn an_agui_run_after_a_failed_a2a_reply_of_the_session_sees_what_it_stored() {
    let (router, model) = router("after-failed-a2a");
    let started = a2a_send(&router, "s1", "crash now").await;
    let task = started["result"]["task"]["id"].as_str().unwrap().to_owned();
    // Polled until the task says it failed, then the AG-UI run comes at once.
    let mut state = String::new();
    for _ in 0..200 {
        let get = json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task}});
        let request = Request::post(towerscope_serve::a2a::RPC_PATH)
            .header(header::CONTENT_TYPE, "application/json")
            .header("A2A-Version", "1.0")
            .body(Body::from(get.to_string()))
            .unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let got: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        state = got["result"]["status"]["state"].as_str().unwrap_or_default().to_owned();
        if state == "TASK_STATE_FAILED" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(state, "TASK_STATE_FAILED");
    let (status, body) = post(
        &router,
        run("s1", json!([{"id": "u1", "role": "user", "content": "hi"}])),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(events(&body).last().unwrap()["type"], "RUN_FINISHED", "{body}");
    let last = model.requests().last().cloned().unwrap();
    let texts: Vec<String> = last
        .messages
        .iter()
        .filter_map(towerscope_core::Msg::text_content)
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("crash now")),
        "the A2A question was stored: {texts:?}"
    );
}

/// A model call that failed mid-stream and was retried, or fallen back to another model: the
/// blocks its first attempt streamed (a text, a reasoning message, a tool call) are ended
/// before the `model_call_restart` event, so every message and call the run started is ended
/// by `RUN_FINISHED` (`@ag-ui/client` refuses a run that finishes with one open).
#[tokio::test]
async fn a_restarted_model_call_ends_what_its_first_attempt_started() {
    use std::time::Duration;
    use towerscope_agent::Agent;
    use towerscope_core::AgentError;
    use towerscope_layers::retry::Backoff;
    use towerscope_layers::{FallbackLayer, RetryLayer};
    use towerscope_models::{ScriptedModel, ScriptedResponse};

    let cut = || AgentError::Stream("cut".into());
    let firsts = || {
        [
            ScriptedResponse::text("one two three four").fail_mid_stream(2, cut()),
            ScriptedResponse::thinking("hmm hmm hmm")
                .and_text("x")
                .fail_mid_stream(2, cut()),
            ScriptedResponse::tool_call("c1", "x", r#"{"a": 1}"#).fail_mid_stream(1, cut()),
        ]
    };
    // Restarted by a retry layer (the same model again), then by a fallback layer (another).
    let retried = firsts().map(|first| (first, false));
    let fallen_back = firsts().map(|first| (first, true));
    for (first, fallback) in retried.into_iter().chain(fallen_back) {
        let model = ScriptedModel::new("m", [first, ScriptedResponse::text("done")]);
        let backup = ScriptedModel::new("backup", [ScriptedResponse::text("done")]);
        let router = towerscope_serve::router(move |_: &str| {
            let builder = Agent::builder("a").model(model.clone());
            let builder = if fallback {
                builder.on_model_call(FallbackLayer::to(backup.clone()))
            } else {
                builder.on_model_call(
                    RetryLayer::new(2).backoff(Backoff::new(Duration::from_millis(1), Duration::from_millis(2))),
                )
            };
            builder.build()
        });
        let (status, sse) = post(
            &router,
            run("t1", json!([{"id": "u1", "role": "user", "content": "hi"}])),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        let events = events(&sse);
        let mut open = std::collections::BTreeSet::new();
        for event in &events {
            let kind = event["type"].as_str().unwrap();
            let id = event["messageId"]
                .as_str()
                .or(event["toolCallId"].as_str())
                .unwrap_or_default();
            match kind {
                "TEXT_MESSAGE_START" | "REASONING_MESSAGE_START" | "TOOL_CALL_START" => {
                    assert!(open.insert((kind.split('_').next().unwrap().to_owned(), id.to_owned())))
                }
                "TEXT_MESSAGE_END" | "REASONING_MESSAGE_END" | "TOOL_CALL_END" => assert!(
                    open.remove(&(kind.split('_').next().unwrap().to_owned(), id.to_owned())),
                    "{kind} {id} not open: {:?}",
                    types(&events)
                ),
                "CUSTOM" => assert!(
                    open.is_empty(),
                    "a discarded block open at the restart: {open:?} in {:?}",
                    types(&events)
                ),
                _ => {}
            }
        }
        assert!(
            open.is_empty(),
            "open at RUN_FINISHED: {open:?} in {:?}",
            types(&events)
        );
        assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED", "{:?}", types(&events));
        let restart = events.iter().find(|e| e["type"] == "CUSTOM");
        assert_eq!(
            restart.map(|e| &e["name"]),
            Some(&json!("model_call_restart")),
            "fallback: {fallback}; {:?}",
            types(&events)
        );
        let text: String = events
            .iter()
            .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert!(text.ends_with("done"), "fallback: {fallback}; {text}");
    }
}

/// Draw something (no arguments).
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Draw {}

/// A tool result of two texts split by an image: `TOOL_CALL_RESULT` carries the texts joined as
/// the stored result's are (and as a run sent again replays them), not its pieces run together.
#[tokio::test]
async fn a_results_texts_reach_the_client_as_stored_and_as_replayed() {
    use towerscope_agent::Agent;
    use towerscope_agent::session::JsonFileStore;
    use towerscope_agent::toolkit::FunctionTool;
    use towerscope_core::{DataBlock, TextBlock, ToolChunk};
    use towerscope_models::{ScriptedModel, ScriptedResponse};

    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "draw", "{}"),
            ScriptedResponse::text("Drawn."),
        ],
    );
    let store = JsonFileStore::new(session_dir("multi-block-result"));
    let router = towerscope_serve::router(move |session: &str| {
        let chunks = || {
            futures_util::stream::iter([
                ToolChunk::new(vec![
                    TextBlock::new("the chart:").into(),
                    DataBlock::base64("aGk=", "image/png").into(),
                ])
                .with_is_last(false),
                ToolChunk::new(vec![TextBlock::new("drawn").into()]),
            ])
        };
        Agent::builder("assistant")
            .model(model.clone())
            .tool(FunctionTool::streaming("draw", move |_: Draw| chunks()))
            .session(store.clone(), "web", session)
            .build()
    });
    let messages = json!([{"id": "u1", "role": "user", "content": "draw"}]);
    let body = |run: &str| json!({"threadId": "t1", "runId": run, "messages": messages}).to_string();
    let result = |sse: &str| {
        events(sse)
            .into_iter()
            .find(|e| e["type"] == "TOOL_CALL_RESULT")
            .map(|e| e["content"].clone())
    };
    let (_, live) = post(&router, body("r1")).await;
    let (_, again) = post(&router, body("r1")).await;
    assert_eq!(result(&live), Some(json!("the chart:\ndrawn")), "{live}");
    assert_eq!(result(&again), result(&live), "{again}");
}
