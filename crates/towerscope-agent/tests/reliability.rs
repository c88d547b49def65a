//! What a hostile model and a careless caller cannot do to the agent: loop it with reused
//! tool-call ids, break the conversation with `observe`, or unwind a panic into the caller.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use common::{add_tool, assert_consistent, collect, results};
use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::event::{ConfirmResult, UserConfirmResultEvent};
use towerscope_core::{
    ActingNext, ActingRequest, AgentError, AgentEvent, CompressNext, CompressRequest, ModelCallNext, ModelCallRequest,
    ModelOutput, Msg, PermissionDecision, PermissionNext, PermissionRequest, ReasoningNext, ReasoningRequest,
    ReplyNext, ReplyRequest, ToolResultState, from_fn, prompt_fn,
};
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// Delete a file.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Delete {
    /// The path.
    path: String,
}

fn delete_tool() -> FunctionTool {
    FunctionTool::new("delete", |a: Delete| async move { format!("deleted {}", a.path) })
}

fn confirm_all(out: &common::Collected) -> UserConfirmResultEvent {
    let (reply_id, calls) = out
        .events
        .iter()
        .find_map(|e| match e {
            AgentEvent::RequireUserConfirm(e) => Some((e.reply_id.clone(), e.tool_calls.clone())),
            _ => None,
        })
        .unwrap();
    let results = calls
        .into_iter()
        .map(|call| ConfirmResult {
            confirmed: true,
            tool_call: call,
            rules: None,
        })
        .collect();
    UserConfirmResultEvent::new(reply_id, results)
}

#[tokio::test]
async fn a_reused_tool_call_id_under_ask_does_not_loop() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("call_0", "delete", r#"{"path": "/a"}"#),
            ScriptedResponse::tool_call("call_0", "delete", r#"{"path": "/b"}"#),
            ScriptedResponse::text("done"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model)
        .tool(delete_tool())
        .default_permission(PermissionDecision::Ask {
            suggested_rules: vec![],
        })
        .build()
        .unwrap();
    let first = collect(agent.reply_stream(Msg::user("user", "clean"))).await;
    let second = collect(agent.reply_stream(confirm_all(&first))).await;
    let asked: Vec<_> = second
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::RequireUserConfirm(e) => Some(e.tool_calls[0].id.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        asked,
        ["call_0_2"],
        "the reused id is asked about once, under a new name"
    );
    let third = collect(agent.reply_stream(confirm_all(&second))).await;
    assert_eq!(third.final_text().as_deref(), Some("done"));
    let state = agent.state();
    let reply = state.context.last().unwrap();
    let outputs: Vec<_> = results(reply)
        .iter()
        .map(|r| (r.id.to_string(), r.output.text_content().unwrap_or_default()))
        .collect();
    assert_eq!(
        outputs,
        [
            ("call_0".to_owned(), "deleted /a".to_owned()),
            ("call_0_2".to_owned(), "deleted /b".to_owned())
        ]
    );
    assert_consistent(&state.context);
}

#[tokio::test]
async fn two_calls_with_one_id_in_one_answer_each_get_a_result() {
    for streaming in [false, true] {
        let model = ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/a"}"#).and_tool_call(
                    "c1",
                    "delete",
                    r#"{"path": "/b"}"#,
                ),
                ScriptedResponse::text("done"),
            ],
        )
        .streaming(streaming);
        let agent = Agent::builder("a").model(model).tool(delete_tool()).build().unwrap();
        let out = collect(agent.reply_stream(Msg::user("user", "clean"))).await;
        assert_eq!(out.final_text().as_deref(), Some("done"), "streaming {streaming}");
        let starts: Vec<String> = out
            .events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolCallStart(e) => Some(e.tool_call_id.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(
            starts,
            ["c1", "c1_2"],
            "streaming {streaming}: the events use the new id"
        );
        let state = agent.state();
        let texts: Vec<String> = results(state.context.last().unwrap())
            .iter()
            .map(|r| r.output.text_content().unwrap_or_default())
            .collect();
        assert_eq!(texts, ["deleted /a", "deleted /b"], "streaming {streaming}");
        assert_consistent(&state.context);
    }
}

/// A model answering with thousands of calls under one id: each is renamed to an id of its
/// own, runs once and gets its result, streamed or not. (Renaming looked every candidate up in
/// a list of the ids used: 2,000 such calls took 13 s before, in time growing with their cube.)
#[tokio::test]
async fn thousands_of_calls_with_one_id_each_run_once_under_an_id_of_their_own() {
    const CALLS: usize = 2_000;
    for streaming in [false, true] {
        let mut answer = ScriptedResponse::empty();
        for i in 0..CALLS {
            answer = answer.and_tool_call("c1", "add", format!(r#"{{"a": {i}, "b": 1}}"#));
        }
        let model = ScriptedModel::new("m", [answer, ScriptedResponse::text("done")]).streaming(streaming);
        let agent = Agent::builder("a").model(model).tool(add_tool()).build().unwrap();
        let reply = agent.reply(Msg::user("user", "add them")).await.unwrap();
        assert_eq!(reply.text_content().as_deref(), Some("done"), "streaming {streaming}");
        let state = agent.state();
        let answer = &state.context[1];
        let ids: Vec<String> = answer.tool_calls().map(|c| c.id.to_string()).collect();
        let expected: Vec<String> = std::iter::once("c1".to_owned())
            .chain((2..=CALLS).map(|n| format!("c1_{n}")))
            .collect();
        assert_eq!(ids, expected, "streaming {streaming}");
        let texts: Vec<String> = results(answer)
            .iter()
            .map(|r| r.output.text_content().unwrap_or_default())
            .collect();
        let sums: Vec<String> = (0..CALLS).map(|i| (i + 1).to_string()).collect();
        assert_eq!(texts, sums, "streaming {streaming}: one result per call, in order");
        assert_consistent(&state.context);
    }
}

#[tokio::test]
async fn observe_follows_the_rules_of_reply() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/a"}"#),
            ScriptedResponse::text("ok"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model)
        .tool(delete_tool())
        .default_permission(PermissionDecision::Ask {
            suggested_rules: vec![],
        })
        .build()
        .unwrap();
    let parked = collect(agent.reply_stream(Msg::user("user", "clean"))).await;
    let before = agent.state().context.len();
    let err = agent.observe([Msg::user("bob", "hello")]).unwrap_err();
    assert!(matches!(err, AgentError::State(_)), "{err}");
    assert!(err.to_string().contains("is waiting for 1 tool calls"), "{err}");
    assert_eq!(agent.state().context.len(), before, "nothing was added");
    // The confirmation still works after the refused observe.
    let resumed = collect(agent.reply_stream(confirm_all(&parked))).await;
    assert_eq!(resumed.final_text().as_deref(), Some("ok"));
    assert_consistent(&agent.state().context);
}

#[tokio::test]
async fn observe_after_a_dropped_reply_closes_its_calls() {
    let model = ScriptedModel::new("m", [ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/a"}"#)]);
    let agent = Agent::builder("a").model(model).tool(delete_tool()).build().unwrap();
    {
        use futures_util::StreamExt;
        let mut stream = agent.reply_stream(Msg::user("user", "clean"));
        // Read up to the tool call's end, then drop the stream: the call never runs.
        while let Some(Ok(item)) = stream.next().await {
            if matches!(item.as_event(), Some(AgentEvent::ModelCallEnd(_))) {
                break;
            }
        }
    }
    agent.observe([Msg::user("bob", "by the way")]).unwrap();
    let state = agent.state();
    assert_consistent(&state.context);
    let closed = results(&state.context[1])[0];
    assert_eq!(closed.state, ToolResultState::Interrupted);
    assert_eq!(
        state.context.last().unwrap().text_content().as_deref(),
        Some("by the way")
    );
}

#[tokio::test]
async fn a_panicking_acting_layer_fails_only_its_call() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
            ScriptedResponse::text("sorry"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model)
        .tool(add_tool())
        .on_acting(from_fn(|req: ActingRequest, next: ActingNext| async move {
            if req.tool_call().name == "add" {
                panic!("layer bug");
            }
            next.run(req).await
        }))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "1 + 2?"))).await;
    assert_eq!(out.final_text().as_deref(), Some("sorry"), "the reply went on");
    let state = agent.state();
    let result = results(state.context.last().unwrap())[0].clone();
    assert_eq!(result.state, ToolResultState::Error);
    assert_eq!(
        result.output.text_content().as_deref(),
        Some("a middleware on on_acting panicked: layer bug")
    );
}

/// A layer whose service panics in `call` itself, before it returns a future (a hand-written
/// service, not an `async` block).
#[derive(Clone)]
struct PanicsInCall<S>(S);

impl<S, Req> tower::Service<Req> for PanicsInCall<S>
where
    S: tower::Service<Req>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, _req: Req) -> S::Future {
        panic!("call bug")
    }
}

#[tokio::test]
async fn a_layer_panicking_in_call_itself_fails_only_its_tool_call() {
    for position in ["on_acting", "on_check_permission"] {
        let model = ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
                ScriptedResponse::text("sorry"),
            ],
        );
        let builder = Agent::builder("a").model(model).tool(add_tool());
        let agent = match position {
            "on_acting" => builder.on_acting(tower::layer::layer_fn(PanicsInCall)),
            _ => builder.on_check_permission(tower::layer::layer_fn(PanicsInCall)),
        }
        .build()
        .unwrap();
        let out = collect(agent.reply_stream(Msg::user("user", "1 + 2?"))).await;
        assert_eq!(
            out.final_text().as_deref(),
            Some("sorry"),
            "{position}: the reply went on"
        );
        let state = agent.state();
        let result = results(state.context.last().unwrap())[0].clone();
        assert_eq!(result.state, ToolResultState::Error, "{position}");
        assert_eq!(
            result.output.text_content().as_deref(),
            Some(format!("a middleware on {position} panicked: call bug").as_str())
        );
    }
}

#[tokio::test]
async fn a_panicking_model_call_layer_ends_the_reply_with_an_error() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("fine")]);
    let armed = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let trigger = Arc::clone(&armed);
    let agent = Agent::builder("a")
        .model(model)
        .on_model_call(from_fn(move |req: ModelCallRequest, next: ModelCallNext| {
            let trigger = Arc::clone(&trigger);
            async move {
                if trigger.swap(false, std::sync::atomic::Ordering::SeqCst) {
                    panic!("model layer bug");
                }
                next.run(req).await
            }
        }))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    let err = out.error.unwrap();
    assert!(matches!(err, AgentError::Middleware(_)), "{err:?}");
    assert!(err.to_string().contains("panicked: model layer bug"), "{err}");
    assert!(!armed.load(std::sync::atomic::Ordering::SeqCst));
    // The agent is free again, and the next reply works.
    let again = agent.reply(Msg::user("user", "again")).await.unwrap();
    assert_eq!(again.text_content().as_deref(), Some("fine"));
}

/// Panics the first time it is called, then passes through.
#[derive(Clone)]
struct PanicOnce(Arc<std::sync::atomic::AtomicBool>);

impl PanicOnce {
    fn new() -> Self {
        Self(Arc::new(std::sync::atomic::AtomicBool::new(true)))
    }

    fn fire(&self, what: &str) {
        if self.0.swap(false, std::sync::atomic::Ordering::SeqCst) {
            panic!("{what} bug");
        }
    }

    fn fired(&self) -> bool {
        !self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A reply against `agent` ends with a typed error naming the panic, the context keeps a
/// result for every call, and the next reply works.
async fn ends_with_the_panic_then_recovers(agent: &Agent, trigger: &PanicOnce, what: &str) {
    let out = collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    assert!(trigger.fired(), "the {what} layer ran");
    let err = out.error.as_ref().expect("a reply whose layer panicked fails");
    assert!(err.to_string().contains(&format!("{what} bug")), "{what}: {err}");
    assert!(
        !out.kinds().contains(&"REPLY_END") || out.kinds().last() == Some(&"REPLY_END"),
        "{what}: nothing after REPLY_END: {:?}",
        out.kinds()
    );
    assert_consistent(&agent.state().context);
    let again = agent.reply(Msg::user("user", "again")).await;
    assert!(again.is_ok(), "{what}: the agent is usable after the panic: {again:?}");
}

fn recovering_model() -> ScriptedModel {
    ScriptedModel::cycle("m", [ScriptedResponse::text("fine")])
}

#[tokio::test]
async fn a_panicking_reply_layer_fails_the_reply_and_the_agent_recovers() {
    let trigger = PanicOnce::new();
    let t = trigger.clone();
    let agent = Agent::builder("a")
        .model(recovering_model())
        .on_reply(from_fn(move |req: ReplyRequest, next: ReplyNext| {
            let t = t.clone();
            async move {
                t.fire("reply layer");
                next.run(req).await
            }
        }))
        .build()
        .unwrap();
    ends_with_the_panic_then_recovers(&agent, &trigger, "reply layer").await;
}

#[tokio::test]
async fn a_panicking_reasoning_layer_fails_the_reply_and_the_agent_recovers() {
    let trigger = PanicOnce::new();
    let t = trigger.clone();
    let agent = Agent::builder("a")
        .model(recovering_model())
        .on_reasoning(from_fn(move |req: ReasoningRequest, next: ReasoningNext| {
            let t = t.clone();
            async move {
                t.fire("reasoning layer");
                next.run(req).await
            }
        }))
        .build()
        .unwrap();
    ends_with_the_panic_then_recovers(&agent, &trigger, "reasoning layer").await;
}

#[tokio::test]
async fn a_panicking_compress_layer_fails_the_reply_and_the_agent_recovers() {
    let trigger = PanicOnce::new();
    let t = trigger.clone();
    let agent = Agent::builder("a")
        .model(recovering_model())
        .on_compress_context(from_fn(move |req: CompressRequest, next: CompressNext| {
            let t = t.clone();
            async move {
                t.fire("compress layer");
                next.run(req).await
            }
        }))
        .build()
        .unwrap();
    ends_with_the_panic_then_recovers(&agent, &trigger, "compress layer").await;
}

#[tokio::test]
async fn a_panicking_prompt_transformer_fails_the_reply_and_the_agent_recovers() {
    let trigger = PanicOnce::new();
    let t = trigger.clone();
    let agent = Agent::builder("a")
        .model(recovering_model())
        .on_system_prompt(prompt_fn(
            move |_ctx: &towerscope_core::AgentContext, prompt: String| {
                let t = t.clone();
                async move {
                    t.fire("prompt transformer");
                    Ok(prompt)
                }
            },
        ))
        .build()
        .unwrap();
    ends_with_the_panic_then_recovers(&agent, &trigger, "prompt transformer").await;
}

#[tokio::test]
async fn a_panicking_permission_layer_fails_only_its_call() {
    let trigger = PanicOnce::new();
    let t = trigger.clone();
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
            ScriptedResponse::text("done"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model)
        .tool(add_tool())
        .on_check_permission(from_fn(move |req: PermissionRequest, next: PermissionNext| {
            let t = t.clone();
            async move {
                t.fire("permission layer");
                next.run(req).await
            }
        }))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "1 + 2?"))).await;
    assert!(trigger.fired());
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.final_text().as_deref(), Some("done"));
    let context = agent.state().context;
    assert_consistent(&context);
    let result = context.iter().flat_map(results).next().unwrap().clone();
    assert_eq!(result.state, ToolResultState::Error);
    assert!(
        format!("{:?}", result.output).contains("permission layer bug"),
        "{:?}",
        result.output
    );
}

#[tokio::test]
async fn a_layer_panicking_in_the_middle_of_its_stream_fails_the_reply_and_the_agent_recovers() {
    let trigger = PanicOnce::new();
    let t = trigger.clone();
    let model = ScriptedModel::cycle("m", [ScriptedResponse::text("one two three")]).streaming(true);
    let agent = Agent::builder("a")
        .model(model)
        .on_model_call(from_fn(move |req: ModelCallRequest, next: ModelCallNext| {
            let t = t.clone();
            async move {
                match next.run(req).await? {
                    ModelOutput::Stream(inner) => {
                        let mut seen = 0;
                        Ok(ModelOutput::Stream(Box::pin(inner.inspect(move |_| {
                            seen += 1;
                            if seen == 2 {
                                t.fire("stream layer");
                            }
                        }))))
                    }
                    complete => Ok(complete),
                }
            }
        }))
        .build()
        .unwrap();
    ends_with_the_panic_then_recovers(&agent, &trigger, "stream layer").await;
}

/// A reply that fails after storing part of its work has its stored message marked failed (so
/// whoever reads the conversation later does not take it for an answer); a completed one is
/// not marked, and a refused resume leaves the parked reply as it was.
#[tokio::test]
async fn a_failed_replys_stored_message_is_marked_and_a_refused_resume_marks_nothing() {
    use towerscope_core::ReplyFinishedReason;
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::text("Hello!"),
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/a"}"#),
            ScriptedResponse::error(AgentError::Overloaded),
        ],
    );
    let agent = Agent::builder("a").model(model).tool(delete_tool()).build().unwrap();
    let last_reason = |agent: &Agent| agent.state().context.last().unwrap().finished_reason;
    agent.reply(Msg::user("user", "hi")).await.unwrap();
    assert_eq!(last_reason(&agent), None, "a completed reply's message is not marked");
    let err = agent.reply(Msg::user("user", "delete /a")).await.unwrap_err();
    assert!(matches!(err, AgentError::Overloaded), "{err:?}");
    assert_eq!(last_reason(&agent), Some(ReplyFinishedReason::Error));

    let asking = Agent::builder("a")
        .model(ScriptedModel::new(
            "m",
            [ScriptedResponse::tool_call("c2", "delete", r#"{"path": "/b"}"#)],
        ))
        .tool(delete_tool())
        .default_permission(PermissionDecision::Ask {
            suggested_rules: vec![],
        })
        .build()
        .unwrap();
    let out = collect(asking.reply_stream(Msg::user("user", "delete /b"))).await;
    let mut answers = confirm_all(&out);
    answers.confirm_results[0].tool_call.name = "other".to_owned();
    let refused = collect(asking.reply_stream(answers)).await;
    assert!(refused.error.is_some(), "the resume is refused");
    assert_eq!(last_reason(&asking), None, "the parked reply is left as it was");

    // A confirmation sent again after the reply it answered completed: refused, and the
    // completed reply's message stays unmarked.
    let done = Agent::builder("a")
        .model(ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c3", "delete", r#"{"path": "/c"}"#),
                ScriptedResponse::text("Deleted."),
            ],
        ))
        .tool(delete_tool())
        .default_permission(PermissionDecision::Ask {
            suggested_rules: vec![],
        })
        .build()
        .unwrap();
    let out = collect(done.reply_stream(Msg::user("user", "delete /c"))).await;
    let answers = confirm_all(&out);
    let completed = collect(done.reply_stream(answers.clone())).await;
    assert!(completed.error.is_none(), "{:?}", completed.error);
    let again = collect(done.reply_stream(answers)).await;
    assert!(again.error.is_some(), "nothing waits any more");
    assert_eq!(last_reason(&done), None, "the completed reply is not marked failed");
}

/// A permission layer that fails (a policy service that cannot be reached) fails closed: the
/// tool does not run, the call gets an error result saying why, and the reply goes on. Before,
/// the reply failed with the call left without a result.
#[tokio::test]
async fn a_failing_permission_layer_denies_its_call_with_an_error_result() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
            ScriptedResponse::text("the policy service is down"),
        ],
    );
    let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    let agent = Agent::builder("a")
        .model(model)
        .tool(FunctionTool::new("add", move |_: serde_json::Value| {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            async { "3" }
        }))
        .on_check_permission(from_fn(|_: PermissionRequest, _: PermissionNext| async {
            Err::<PermissionDecision, _>(AgentError::Middleware("policy service unreachable".into()))
        }))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "1 + 2?"))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.final_text().as_deref(), Some("the policy service is down"));
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst), "the tool did not run");
    let state = agent.state();
    let result = results(&state.context[1])[0].clone();
    assert_eq!(result.state, ToolResultState::Error);
    assert_eq!(
        result.output.text_content().as_deref(),
        Some("the permission check of this call failed (middleware_error); the call was not run")
    );
    assert_consistent(&state.context);
}
