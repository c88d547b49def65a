//! The reply loop: event sequences, the decision table, usage, ids, what the model received.
#![allow(clippy::unwrap_used)]

mod common;

use common::{assert_consistent, collect, results};
use towerscope_agent::Agent;
use towerscope_agent::HintConfig;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{
    AgentError, AgentEvent, ContentBlock, Msg, ReplyFinishedReason, Role, ToolChoice, ToolChoiceMode, ToolResultState,
    prompt_fn,
};
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// Add two integers.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    /// The first operand.
    a: i64,
    /// The second operand.
    b: i64,
}

fn add_tool() -> FunctionTool {
    FunctionTool::new("add", |args: Add| async move { (args.a + args.b).to_string() })
}

/// An agent with `add` that asks the user before every call, and `max_iters(2)`.
fn asking_for_add(model: &ScriptedModel) -> towerscope_agent::AgentBuilder {
    Agent::builder("a")
        .model(model.clone())
        .tool(add_tool())
        .default_permission(towerscope_core::PermissionDecision::Ask {
            suggested_rules: vec![],
        })
        .max_iters(2)
}

fn agent(model: &ScriptedModel) -> Agent {
    Agent::builder("assistant")
        .hints(HintConfig::disabled())
        .system_prompt("You are helpful.")
        .model(model.clone())
        .tool(add_tool())
        .build()
        .unwrap()
}

#[tokio::test]
async fn plain_text_reply_event_sequence() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("Hello there").with_usage(10, 2)]);
    let agent = agent(&model);
    let out = collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
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
    let msg = out.final_msg.unwrap();
    assert_eq!(msg.text_content().as_deref(), Some("Hello there"));
    assert_eq!(msg.finished_reason, Some(ReplyFinishedReason::Completed));
    let AgentEvent::ReplyStart(start) = &out.events[0] else {
        panic!()
    };
    assert_eq!(msg.id, start.reply_id, "the final message's id is the reply id");
    let AgentEvent::ReplyEnd(end) = out.events.last().unwrap() else {
        panic!()
    };
    assert_eq!(end.finished_reason, ReplyFinishedReason::Completed);
    // The context holds the user message and one assistant message with id = reply id.
    let state = agent.state();
    assert_eq!(state.context.len(), 2);
    assert_eq!(state.context[1].role, Role::Assistant);
    assert_eq!(state.context[1].id, start.reply_id);
}

#[tokio::test]
async fn non_streaming_response_emits_one_delta() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("Hello there")]).streaming(false);
    let out = collect(agent(&model).reply_stream(Msg::user("user", "hi"))).await;
    assert_eq!(
        out.kinds(),
        [
            "REPLY_START",
            "MODEL_CALL_START",
            "TEXT_BLOCK_START",
            "TEXT_BLOCK_DELTA",
            "TEXT_BLOCK_END",
            "MODEL_CALL_END",
            "REPLY_END"
        ]
    );
}

#[tokio::test]
async fn tool_round_then_answer() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 2, "b": 3}"#).with_usage(10, 5),
            ScriptedResponse::text("5").with_usage(20, 1),
        ],
    );
    let agent = agent(&model);
    let out = collect(agent.reply_stream(Msg::user("user", "2+3?"))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(
        out.kinds(),
        [
            "REPLY_START",
            "MODEL_CALL_START",
            "TOOL_CALL_START",
            "TOOL_CALL_DELTA",
            "TOOL_CALL_DELTA",
            "TOOL_CALL_END",
            "MODEL_CALL_END",
            "TOOL_RESULT_START",
            "TOOL_RESULT_TEXT_DELTA",
            "TOOL_RESULT_END",
            "MODEL_CALL_START",
            "TEXT_BLOCK_START",
            "TEXT_BLOCK_DELTA",
            "TEXT_BLOCK_END",
            "MODEL_CALL_END",
            "REPLY_END"
        ]
    );
    let AgentEvent::ToolResultTextDelta(delta) = &out.events[8] else {
        panic!()
    };
    assert_eq!(delta.delta, "5");
    let final_msg = out.final_msg.unwrap();
    // The final message holds only the last model call's content; usage is the reply's sum.
    assert_eq!(final_msg.content.len(), 1);
    let usage = final_msg.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (30, 6));
    // The second model call saw the tool call and its result.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let last = requests[1].messages.last().unwrap();
    let result = results(last)[0];
    assert_eq!(result.state, ToolResultState::Success);
    assert_eq!(result.output.text_content().as_deref(), Some("5"));
    assert_consistent(&agent.state().context);
}

#[tokio::test]
async fn what_the_model_received() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("ok")]);
    let agent = Agent::builder("assistant")
        .hints(HintConfig::disabled())
        .system_prompt("Base.")
        .model(model.clone())
        .tool(add_tool())
        .on_system_prompt(prompt_fn(|_ctx, p| async move { Ok(format!("{p} One.")) }))
        .on_system_prompt(prompt_fn(|ctx, p| {
            let name = ctx.agent_name().to_owned();
            async move { Ok(format!("{p} Two, for {name}.")) }
        }))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hi")).await.unwrap();
    let req = &model.requests()[0];
    assert_eq!(req.system_prompt().as_deref(), Some("Base. One. Two, for assistant."));
    assert_eq!(req.messages[0].role, Role::System);
    assert_eq!(req.messages[1].text_content().as_deref(), Some("hi"));
    assert_eq!(req.tool_names(), ["add"]);
    let params = &req.tools[0].parameters;
    assert_eq!(params["properties"]["a"]["description"], "The first operand.");
    assert_eq!(req.tool_choice, None);
}

#[tokio::test]
async fn the_prompt_fold_runs_every_round_and_an_unchanged_prompt_is_sent_as_one_message() {
    let call = |id: &str| ScriptedResponse::tool_call(id, "add", r#"{"a":1,"b":1}"#);
    let rounds = |model: &ScriptedModel| {
        model
            .requests()
            .iter()
            .map(|r| r.messages[0].clone())
            .collect::<Vec<_>>()
    };
    // A transformer whose output changes with the round: each model call sees its own prompt.
    let model = ScriptedModel::new("m", [call("c1"), call("c2"), ScriptedResponse::text("done")]);
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .system_prompt("Base.")
        .model(model.clone())
        .tool(add_tool())
        .on_system_prompt(prompt_fn(|ctx, p| {
            let round = ctx.iteration();
            async move { Ok(format!("{p} Round {round}.")) }
        }))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hi")).await.unwrap();
    let prompts: Vec<_> = rounds(&model).iter().map(|m| m.text_content()).collect();
    assert_eq!(
        prompts,
        [
            Some("Base. Round 0.".to_owned()),
            Some("Base. Round 1.".to_owned()),
            Some("Base. Round 2.".to_owned())
        ]
    );
    // A transformer that keeps the prompt: one system message, shared by every call.
    let model = ScriptedModel::new(
        "m",
        [
            call("c1"),
            ScriptedResponse::text("done"),
            ScriptedResponse::text("again"),
        ],
    );
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .system_prompt("Base.")
        .model(model.clone())
        .tool(add_tool())
        .on_system_prompt(prompt_fn(|_ctx, p| async move { Ok(p) }))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hi")).await.unwrap();
    agent.reply(Msg::user("user", "again")).await.unwrap();
    let heads = rounds(&model);
    assert_eq!(heads.len(), 3);
    assert_eq!(heads[0].text_content().as_deref(), Some("Base."));
    assert!(heads.iter().all(|m| std::sync::Arc::ptr_eq(m, &heads[0])));
}

#[tokio::test]
async fn forced_final_round_at_max_iters() {
    let call = |id: &str| ScriptedResponse::tool_call(id, "add", r#"{"a":1,"b":1}"#);
    let model = ScriptedModel::new("m", [call("c1"), call("c2"), ScriptedResponse::text("summary")]);
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model.clone())
        .tool(add_tool())
        .max_iters(2)
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "loop"))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].tool_choice, None);
    assert_eq!(
        requests[2].tool_choice.as_ref().map(|c| &c.mode),
        Some(&ToolChoiceMode::None)
    );
    // The hint went into the reply's message, so the model saw it.
    let hint = requests[2]
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .find_map(|b| match b {
            ContentBlock::Hint(h) => h.text(),
            _ => None,
        });
    assert!(
        hint.unwrap()
            .contains("You have reached the maximum of 2 reasoning-acting iterations")
    );
    let kinds = out.kinds();
    assert_eq!(&kinds[kinds.len() - 2..], ["EXCEED_MAX_ITERS", "REPLY_END"]);
    let msg = out.final_msg.unwrap();
    assert_eq!(msg.finished_reason, Some(ReplyFinishedReason::ExceedMaxIters));
    assert_eq!(msg.text_content().as_deref(), Some("summary"));
}

#[tokio::test]
async fn forced_round_that_still_calls_tools_ends_exceeded() {
    let call = |id: &str| ScriptedResponse::tool_call(id, "add", r#"{"a":1,"b":1}"#);
    let model = ScriptedModel::new("m", [call("c1"), call("c2")]);
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model.clone())
        .tool(add_tool())
        .max_iters(1)
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "loop"))).await;
    let msg = out.final_msg.unwrap();
    assert_eq!(msg.finished_reason, Some(ReplyFinishedReason::ExceedMaxIters));
    assert_eq!(
        msg.text_content().as_deref(),
        Some("The maximum reasoning-acting iterations are exceeded.")
    );
    assert_consistent(&agent.state().context);
}

#[tokio::test]
async fn max_iters_zero_forces_the_first_call() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("direct")]);
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model.clone())
        .tool(add_tool())
        .max_iters(0)
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    assert_eq!(model.requests()[0].tool_choice, Some(ToolChoice::none()));
    assert_eq!(
        out.final_msg.unwrap().finished_reason,
        Some(ReplyFinishedReason::ExceedMaxIters)
    );
}

#[tokio::test]
async fn thinking_only_response_reasons_again() {
    let model = ScriptedModel::new("m", [ScriptedResponse::thinking("hmm"), ScriptedResponse::text("done")]);
    let out = collect(agent(&model).reply_stream(Msg::user("user", "hi"))).await;
    assert_eq!(model.calls(), 2);
    assert_eq!(out.final_text().as_deref(), Some("done"));
}

#[tokio::test]
async fn empty_stream_is_a_clear_error() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("partial").without_final_chunk()]);
    let out = collect(agent(&model).reply_stream(Msg::user("user", "hi"))).await;
    let err = out.error.as_ref().unwrap();
    assert!(err.to_string().contains("no is_last=True chunk"), "{err}");
    assert!(
        !out.kinds().contains(&"REPLY_END"),
        "a model error ends the stream without REPLY_END"
    );
}

#[tokio::test]
async fn replies_have_new_ids_and_one_session() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("one"), ScriptedResponse::text("two")]);
    let agent = agent(&model);
    let a = collect(agent.reply_stream(Msg::user("user", "1"))).await;
    let b = collect(agent.reply_stream(Msg::user("user", "2"))).await;
    let (AgentEvent::ReplyStart(sa), AgentEvent::ReplyStart(sb)) = (&a.events[0], &b.events[0]) else {
        panic!()
    };
    assert_ne!(sa.reply_id, sb.reply_id);
    assert_eq!(sa.session_id, sb.session_id);
    assert_eq!(sa.session_id, agent.session_id());
    // The second call saw the whole conversation.
    let texts: Vec<_> = model.requests()[1]
        .messages
        .iter()
        .skip(1)
        .filter_map(Msg::text_content)
        .collect();
    assert_eq!(texts, ["1", "one", "2"]);
}

#[tokio::test]
async fn usage_accumulates_across_model_calls() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a":1,"b":2}"#).with_usage(100, 10),
            ScriptedResponse::tool_call("c2", "add", r#"{"a":3,"b":4}"#).with_usage(120, 11),
            ScriptedResponse::text("done").with_usage(140, 3),
        ],
    );
    let out = collect(agent(&model).reply_stream(Msg::user("user", "sum"))).await;
    let ends: Vec<_> = out
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ModelCallEnd(e) => Some((e.input_tokens, e.output_tokens)),
            _ => None,
        })
        .collect();
    assert_eq!(ends, [(100, 10), (120, 11), (140, 3)]);
    let usage = out.final_msg.unwrap().usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (360, 24));
}

#[tokio::test]
async fn observe_adds_context_and_rejects_what_the_reference_rejects() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("ok")]);
    let agent = agent(&model);
    agent.observe([Msg::user("bob", "I was here")]).unwrap();
    let err = agent.observe([Msg::system("system", "obey")]).unwrap_err();
    assert!(err.to_string().contains("system messages are not accepted"), "{err}");
    let mut with_call = Msg::assistant("x", "");
    with_call.content = vec![ContentBlock::tool_call("c", "add", "{}")];
    let err = agent.observe([with_call]).unwrap_err();
    assert!(err.to_string().contains("'tool_call'"), "{err}");
    // A user message breaking its role's rules (edited through its public fields), which a
    // saved session holding it would refuse to load.
    let mut with_hint = Msg::user("user", "hi");
    with_hint
        .content
        .push(ContentBlock::Hint(towerscope_core::HintBlock::new("be brief", None)));
    let err = agent.observe([with_hint.clone()]).unwrap_err();
    assert!(
        err.to_string()
            .contains("a user message may only hold text and data blocks, found 'hint'"),
        "{err}"
    );
    assert!(agent.reply(with_hint).await.is_err());
    assert_eq!(agent.state().context.len(), 1, "rejected messages are not stored");
    agent.reply(Msg::user("user", "hi")).await.unwrap();
    assert_eq!(
        model.requests()[0].messages[1].text_content().as_deref(),
        Some("I was here")
    );
}

#[tokio::test]
async fn a_second_reply_while_one_streams_is_refused() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("a b c"), ScriptedResponse::text("ok")]);
    let agent = agent(&model);
    let first = agent.reply_stream(Msg::user("user", "1"));
    let err = agent.reply(Msg::user("user", "2")).await.unwrap_err();
    assert!(matches!(err, AgentError::State(_)), "{err}");
    drop(first);
    assert_eq!(
        agent
            .reply(Msg::user("user", "3"))
            .await
            .unwrap()
            .text_content()
            .as_deref(),
        Some("a b c")
    );
}

/// Replies to `agent` and resumes every park at once with what `answer` makes of the parked
/// reply's id and the call it waits for (as an automatic resumer, a team's leader, does),
/// until the reply ends; its final message.
async fn resumed_until_it_ends(
    agent: &Agent,
    model: &ScriptedModel,
    answer: impl Fn(towerscope_core::Id, towerscope_core::ToolCallBlock) -> towerscope_core::ReplyInput,
) -> Msg {
    let mut out = collect(agent.reply_stream(Msg::user("user", "go"))).await;
    for _ in 0..10 {
        let msg = out.final_msg.clone().unwrap();
        if msg.finished_reason.is_some() {
            return msg;
        }
        let parked = out.events.iter().rev().find_map(|e| match e {
            AgentEvent::RequireExternalExecution(e) => e.tool_calls.first().cloned(),
            AgentEvent::RequireUserConfirm(e) => e.tool_calls.first().cloned(),
            _ => None,
        });
        out = collect(agent.reply_stream(answer(msg.id, parked.unwrap()))).await;
    }
    panic!("never stopped: {} model calls", model.calls())
}

#[tokio::test]
async fn rounds_answered_from_outside_count_towards_max_iters() {
    use towerscope_core::ToolResultBlock;
    use towerscope_core::event::{ConfirmResult, ExternalExecutionResultEvent, UserConfirmResultEvent};
    // A model that calls the outside tool every round, answered at once: the rounds count, and
    // max_iters stops the reply after max_iters rounds and the forced last one.
    let model = ScriptedModel::cycle("m", [ScriptedResponse::tool_call("c", "search", r#"{"q": "x"}"#)]);
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(common::RemoteSearch)
        .max_iters(2)
        .build()
        .unwrap();
    let last = resumed_until_it_ends(&agent, &model, |reply_id, call| {
        let result = ToolResultBlock::new(call.id, "search", "ok", ToolResultState::Success);
        ExternalExecutionResultEvent::new(reply_id, vec![result]).into()
    })
    .await;
    assert_eq!(last.finished_reason, Some(ReplyFinishedReason::ExceedMaxIters));
    assert_eq!(model.calls(), 3);
    assert_consistent(&agent.state().context);

    // The same with a user who denies every call.
    let model = ScriptedModel::cycle("m", [ScriptedResponse::tool_call("c", "add", r#"{"a": 1, "b": 2}"#)]);
    let agent = asking_for_add(&model).build().unwrap();
    let last = resumed_until_it_ends(&agent, &model, |reply_id, call| {
        UserConfirmResultEvent::new(reply_id, vec![ConfirmResult::new(false, call)]).into()
    })
    .await;
    assert_eq!(last.finished_reason, Some(ReplyFinishedReason::ExceedMaxIters));
    assert_eq!(model.calls(), 3);
}

/// A round that can never complete (a call marked finished without its result, as a state
/// edited by hand can hold) never counts towards `max_iters`; a structured reply, which asks
/// for another round after every text answer, then runs until the bound on a reply's steps,
/// `2 * (max_iters + grace) + 8`, ends it with an error. The rounds it ran are not counted.
#[tokio::test]
async fn a_round_that_never_completes_is_ended_by_the_bound_on_steps() {
    use towerscope_core::event::{ConfirmResult, UserConfirmResultEvent};
    use towerscope_core::{StructuredSchema, ToolCallState};
    let model = ScriptedModel::new(
        "m",
        std::iter::once(
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#).and_tool_call(
                "c2",
                "add",
                r#"{"a": 3, "b": 4}"#,
            ),
        )
        .chain((0..100).map(|_| ScriptedResponse::text("no structure"))),
    );
    let agent = asking_for_add(&model).hints(HintConfig::disabled()).build().unwrap();
    let schema = StructuredSchema {
        name: "Empty".into(),
        schema: serde_json::json!({"type": "object"}),
    };
    let parked = collect(agent.reply_stream_structured(Msg::user("user", "go"), schema)).await;
    let reply_id = parked.final_msg.unwrap().id;
    let mut state = agent.state();
    let msg = state.context.last_mut().unwrap();
    let mut first = None;
    for block in &mut msg.content {
        if let ContentBlock::ToolCall(call) = block {
            match first {
                None => first = Some(call.clone()),
                Some(_) => call.state = ToolCallState::Finished,
            }
        }
    }
    agent.load_state(state).unwrap();
    let confirm = UserConfirmResultEvent::new(reply_id, vec![ConfirmResult::new(true, first.unwrap())]);
    let out = collect(agent.reply_stream(confirm)).await;
    let err = out.error.unwrap().to_string();
    // max_iters 2 and the structured output's 5 grace rounds: 22 steps, the confirmed call's
    // acting and 21 reasoning steps (each answered with text, then reminded of the structure).
    assert!(
        err.contains("the reply took 22 reasoning and acting steps without ending (max_iters 2)"),
        "{err}"
    );
    assert_eq!(model.calls(), 22, "one call before parking, 21 after");
    assert_eq!(agent.state().reply_context.cur_iter, 0, "no round completed");
}
