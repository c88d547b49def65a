//! AG-UI's human in the loop over HTTP, in process: a confirmation as an interrupt the next
//! run's `resume` answers (approved with edited arguments, or denied), and a front-end tool the
//! client runs, whose result resumes the reply.
#![allow(clippy::unwrap_used)]

mod support;

use axum::http::StatusCode;
use serde_json::{Value, json};

use support::{error_code, events, post, router, run};

#[tokio::test]
async fn a_call_needing_confirmation_ends_the_run_as_an_interrupt_the_next_run_answers() {
    let (router, model) = router("confirm");
    let (_, sse) = post(
        &router,
        run("t1", json!([{"id": "u1", "role": "user", "content": "delete it"}])),
    )
    .await;
    let first = events(&sse);
    let finished = first.last().unwrap();
    assert_eq!(finished["type"], "RUN_FINISHED");
    assert_eq!(finished["outcome"]["type"], "interrupt");
    let interrupt = &finished["outcome"]["interrupts"][0];
    let call_id = interrupt["toolCallId"].as_str().unwrap().to_owned();
    assert_eq!(interrupt["id"], call_id.as_str());
    assert_eq!(interrupt["reason"], "tool_confirmation");
    assert_eq!(model.calls(), 1);

    // A new message while the thread waits for the answer is refused, and changes nothing.
    let (status, body) = post(
        &router,
        run("t1", json!([{"id": "u2", "role": "user", "content": "hello"}])),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(error_code(&body), "state_error");

    let history = json!([
        {"id": "u1", "role": "user", "content": "delete it"},
        {"id": call_id, "role": "assistant", "toolCalls": [
            {"id": call_id, "type": "function", "function": {"name": "delete_file", "arguments": "{\"path\": \"/tmp/a\"}"}}
        ]}
    ]);
    let mut resume: Value = serde_json::from_str(&run("t1", history.clone())).unwrap();
    resume["resume"] = json!([{"interruptId": call_id, "status": "resolved", "payload": {"approved": true, "arguments": {"path": "/tmp/b"}}}]);
    let (status, sse) = post(&router, resume.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{sse}");
    let second = events(&sse);
    let result = second.iter().find(|e| e["type"] == "TOOL_CALL_RESULT").unwrap();
    assert_eq!(result["content"], "deleted /tmp/b", "the user's edited arguments ran");
    assert_eq!(second.last().unwrap()["outcome"]["type"], "success", "{sse}");

    // The same answer sent again (its run's answer was lost): what followed it is sent again,
    // the model is not called, and the client's interrupt is settled by the RUN_FINISHED.
    let calls = model.calls();
    let (status, sse) = post(&router, resume.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{sse}");
    let again = events(&sse);
    // The result, then the answer (its text whole, where the model streamed it in pieces).
    let seen = |events: &[Value]| -> (Vec<Value>, String) {
        let results = events
            .iter()
            .filter(|e| e["type"] == "TOOL_CALL_RESULT")
            .map(|e| e["content"].clone())
            .collect();
        let text = events
            .iter()
            .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
            .filter_map(|e| e["delta"].as_str())
            .collect();
        (results, text)
    };
    assert_eq!(seen(&again), seen(&second));
    assert_eq!(seen(&again).1, "Result: deleted /tmp/b");
    assert_eq!(again.last().unwrap()["outcome"]["type"], "success");
    assert_eq!(model.calls(), calls);

    // An answer to a call the thread never had: refused, nothing waits.
    let mut unknown = resume.clone();
    unknown["resume"][0]["interruptId"] = json!("nope");
    let (status, body) = post(&router, unknown.to_string()).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
}

/// A confirmation without `payload.arguments` runs the call as the agent stored it, not the
/// client's copy in its messages (missing here: it ran on `""` and failed).
#[tokio::test]
async fn a_confirmation_without_arguments_runs_the_stored_call() {
    let (router, _model) = router("confirm");
    let (_, sse) = post(
        &router,
        run("t1", json!([{"id": "u1", "role": "user", "content": "delete it"}])),
    )
    .await;
    let finished = events(&sse).last().unwrap().clone();
    let call_id = finished["outcome"]["interrupts"][0]["toolCallId"]
        .as_str()
        .unwrap()
        .to_owned();
    let history = json!([
        {"id": "u1", "role": "user", "content": "delete it"},
        {"id": call_id, "role": "assistant", "toolCalls": [
            {"id": call_id, "type": "function", "function": {"name": "delete_file"}}
        ]}
    ]);
    let mut resume: Value = serde_json::from_str(&run("t1", history)).unwrap();
    resume["resume"] = json!([{"interruptId": call_id, "status": "resolved", "payload": {"approved": true}}]);
    let (status, sse) = post(&router, resume.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{sse}");
    let result = events(&sse)
        .into_iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .unwrap();
    assert_eq!(result["content"], "deleted /tmp/a", "the stored arguments ran");
}

#[tokio::test]
async fn a_denied_confirmation_gives_the_model_a_denied_result() {
    let (router, model) = router("deny");
    let (_, sse) = post(
        &router,
        run("t1", json!([{"id": "u1", "role": "user", "content": "delete it"}])),
    )
    .await;
    let call_id = events(&sse).last().unwrap()["outcome"]["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let history = json!([
        {"id": "u1", "role": "user", "content": "delete it"},
        {"id": call_id, "role": "assistant", "toolCalls": [
            {"id": call_id, "type": "function", "function": {"name": "delete_file", "arguments": "{\"path\": \"/tmp/a\"}"}}
        ]}
    ]);
    let mut resume: Value = serde_json::from_str(&run("t1", history)).unwrap();
    resume["resume"] = json!([{"interruptId": call_id, "status": "cancelled"}]);
    let (status, sse) = post(&router, resume.to_string()).await;
    assert_eq!(status, StatusCode::OK);
    let result = events(&sse)
        .into_iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .unwrap();
    assert!(
        result["content"].as_str().unwrap().contains("denied by user"),
        "{result}"
    );
    assert_eq!(model.calls(), 2, "the model answered the denial");
}

/// The front-end tool of the tests below.
fn pick_color() -> Value {
    json!([{"name": "pick_color", "description": "Let the user pick a color", "parameters": {"type": "object", "properties": {"palette": {"type": "string"}}}}])
}

/// Runs "a color please" on thread `t1` declaring `pick_color`; the model calls it and the run
/// ends waiting for the client's result. Returns the call's id, and the conversation the
/// client then holds with its result `orange`.
async fn a_front_end_call(router: &axum::Router, model: &towerscope_models::ScriptedModel) -> (String, Value) {
    let mut body: Value = serde_json::from_str(&run(
        "t1",
        json!([{"id": "u1", "role": "user", "content": "a color please"}]),
    ))
    .unwrap();
    body["tools"] = pick_color();
    let (status, sse) = post(router, body.to_string()).await;
    assert_eq!(status, StatusCode::OK);
    let first = events(&sse);
    assert!(
        model.requests()[0].tool_names().contains(&"pick_color"),
        "the model was offered the tool"
    );
    let call = first.iter().find(|e| e["type"] == "TOOL_CALL_START").unwrap();
    assert_eq!(call["toolCallName"], "pick_color");
    let call_id = call["toolCallId"].as_str().unwrap().to_owned();
    assert!(
        first.iter().all(|e| e["type"] != "TOOL_CALL_RESULT"),
        "the server does not run it"
    );
    let finished = first.last().unwrap();
    assert_eq!(
        finished["outcome"],
        json!({"type": "success", "pendingToolCallIds": [call_id]})
    );
    let history = json!([
        {"id": "u1", "role": "user", "content": "a color please"},
        {"id": call_id, "role": "assistant", "toolCalls": [
            {"id": call_id, "type": "function", "function": {"name": "pick_color", "arguments": "{\"palette\": \"warm\"}"}}
        ]},
        {"id": "tool-1", "role": "tool", "toolCallId": call_id, "content": "orange"}
    ]);
    (call_id, history)
}

/// Two front-end calls of one turn, answered together by a run that declares only one of
/// their tools: both results are taken (the undeclared one was dropped, and the reply parked
/// again on a call the client had answered).
#[tokio::test]
async fn front_end_results_of_one_turn_are_taken_together_when_the_run_declares_one_tool() {
    let (router, _) = router("frontend-pair");
    let size = json!({"name": "pick_size", "description": "Let the user pick a size", "parameters": {"type": "object", "properties": {}}});
    let mut tools = pick_color();
    tools.as_array_mut().unwrap().push(size);
    let question = json!({"id": "u1", "role": "user", "content": "a color and size please"});
    let mut body: Value = serde_json::from_str(&run("t1", json!([question]))).unwrap();
    body["tools"] = tools;
    let (status, sse) = post(&router, body.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{sse}");
    let calls: Vec<(String, String)> = events(&sse)
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_START")
        .map(|e| {
            (
                e["toolCallId"].as_str().unwrap().to_owned(),
                e["toolCallName"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(calls.len(), 2, "{sse}");
    let mut history = vec![question];
    for (id, name) in &calls {
        history.push(json!({"id": id, "role": "assistant", "toolCalls": [
            {"id": id, "type": "function", "function": {"name": name, "arguments": "{}"}}]}));
    }
    for (id, name) in &calls {
        let answer = if name == "pick_color" { "orange" } else { "large" };
        history.push(json!({"id": format!("tool-{id}"), "role": "tool", "toolCallId": id, "content": answer}));
    }
    let mut body: Value = serde_json::from_str(&run("t1", Value::Array(history))).unwrap();
    body["tools"] = pick_color();
    let (status, sse) = post(&router, body.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{sse}");
    assert_eq!(
        events(&sse).last().unwrap()["outcome"],
        json!({"type": "success"}),
        "{sse}"
    );
    assert_eq!(answer(&sse), "Result: large");
}

/// The text of the run's answer.
fn answer(sse: &str) -> String {
    events(sse)
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_front_end_tool_is_left_to_the_client_and_its_result_resumes_the_reply() {
    let (router, model) = router("frontend");
    let (_, history) = a_front_end_call(&router, &model).await;
    let mut body: Value = serde_json::from_str(&run("t1", history)).unwrap();
    body["tools"] = pick_color();
    let (status, sse) = post(&router, body.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{sse}");
    assert_eq!(answer(&sse), "Result: orange");
    // The client's own result is not sent back: it would hold it twice. Nor when the run is
    // sent again (its answer lost), which replays the rest of the answer.
    let no_result = |sse: &str| events(sse).iter().all(|e| e["type"] != "TOOL_CALL_RESULT");
    assert!(no_result(&sse), "{sse}");
    let (status, again) = post(&router, body.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(answer(&again), "Result: orange");
    assert!(no_result(&again), "{again}");
}

/// A front end whose tool went away (a component unmounted) still sends the result of the
/// call the thread waits on: it is taken, not dropped with the call announced again and the
/// thread refusing every message after.
#[tokio::test]
async fn a_front_end_result_is_taken_when_the_run_no_longer_declares_its_tool() {
    let (router, model) = router("frontend");
    let (call_id, history) = a_front_end_call(&router, &model).await;
    // With a new question beside it, the result cannot resume the reply: refused, and named.
    let mut asking = history.as_array().unwrap().clone();
    asking.push(json!({"id": "u2", "role": "user", "content": "and now?"}));
    let (status, body) = post(&router, run("t1", Value::Array(asking))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body.contains(&call_id), "{body}");
    // Alone, it resumes the reply.
    let (status, sse) = post(&router, run("t1", history)).await;
    assert_eq!(status, StatusCode::OK, "{sse}");
    assert!(events(&sse).iter().all(|e| e["type"] != "TOOL_CALL_START"), "{sse}");
    assert_eq!(answer(&sse), "Result: orange");
    assert_eq!(events(&sse).last().unwrap()["outcome"], json!({"type": "success"}));
}

/// A front-end tool's patterns are the client's: the server does not compile them (a few bytes
/// of pattern compile to a megabyte, so a client's tools could make it compile gigabytes). A
/// pattern the validator would refuse to compile (over its size bound) no longer fails the run,
/// and the model still sees the client's schema whole.
#[tokio::test]
async fn a_front_end_tools_patterns_are_not_compiled_and_reach_the_model() {
    let (router, model) = router("frontend");
    let huge = "^.{0,100000}$";
    let parameters = json!({"type": "object", "properties": {"palette": {"type": "string", "pattern": huge}},
        "patternProperties": {"^x.{0,100000}$": {"type": "string"}}});
    let mut body: Value = serde_json::from_str(&run(
        "t1",
        json!([{"id": "u1", "role": "user", "content": "a color please"}]),
    ))
    .unwrap();
    body["tools"] =
        json!([{"name": "pick_color", "description": "Let the user pick a color", "parameters": parameters}]);
    let (status, sse) = post(&router, body.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{sse}");
    let call = events(&sse).into_iter().find(|e| e["type"] == "TOOL_CALL_START");
    assert_eq!(call.unwrap()["toolCallName"], "pick_color", "{sse}");
    let offered = model.requests()[0]
        .tools
        .iter()
        .find(|t| t.name == "pick_color")
        .cloned();
    assert_eq!(*offered.unwrap().parameters, parameters);
}

#[tokio::test]
async fn a_resumed_reply_that_parks_again_on_another_call_of_its_turn_ends_as_an_interrupt_for_it() {
    let (router, model) = router("park-again");
    let question = json!({"id": "u1", "role": "user", "content": "delete both"});
    let (_, sse) = post(&router, run("t1", json!([question]))).await;
    let first = events(&sse);
    let outcome = &first.last().unwrap()["outcome"];
    assert_eq!(outcome["type"], "interrupt", "{sse}");
    let ids: Vec<String> = outcome["interrupts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 2, "both calls wait: {sse}");
    let history = json!([
        question,
        {"id": ids[0], "role": "assistant", "toolCalls": [
            {"id": ids[0], "type": "function", "function": {"name": "delete_file", "arguments": "{\"path\": \"/tmp/a\"}"}},
            {"id": ids[1], "type": "function", "function": {"name": "delete_file", "arguments": "{\"path\": \"/tmp/b\"}"}}
        ]}
    ]);

    // Only the first is answered: it runs, and the run ends waiting for the second, as an
    // interrupt naming it (the agent asked for it in the first run, not again).
    let mut resume: Value = serde_json::from_str(&run("t1", history.clone())).unwrap();
    resume["resume"] = json!([{"interruptId": ids[0], "status": "resolved", "payload": {"approved": true}}]);
    let (status, sse) = post(&router, resume.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{sse}");
    let second = events(&sse);
    let results: Vec<&Value> = second.iter().filter(|e| e["type"] == "TOOL_CALL_RESULT").collect();
    assert_eq!(results.len(), 1, "{sse}");
    assert_eq!(results[0]["content"], "deleted /tmp/a");
    let outcome = &second.last().unwrap()["outcome"];
    assert_eq!(outcome["type"], "interrupt", "{sse}");
    let waiting: Vec<&str> = outcome["interrupts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(waiting, [ids[1].as_str()], "{sse}");
    assert_eq!(model.calls(), 1, "the model waits for both results");

    // The second answered: it runs, and the model answers both results.
    let mut resume: Value = serde_json::from_str(&run("t1", history)).unwrap();
    resume["resume"] = json!([{"interruptId": ids[1], "status": "resolved", "payload": {"approved": true}}]);
    let (status, sse) = post(&router, resume.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{sse}");
    let third = events(&sse);
    let results: Vec<&Value> = third.iter().filter(|e| e["type"] == "TOOL_CALL_RESULT").collect();
    assert_eq!(results.len(), 1, "{sse}");
    assert_eq!(results[0]["content"], "deleted /tmp/b");
    assert_eq!(third.last().unwrap()["outcome"]["type"], "success", "{sse}");
    assert_eq!(model.calls(), 2);
}
