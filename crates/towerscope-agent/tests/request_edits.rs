//! One source of truth per request: for every position, a layer's edit of each public field of
//! the request reaches the next step (the inner layer, the implementation, the model, the tool),
//! or the field cannot be edited at all. The fields that cannot be edited are checked by the
//! `compile_fail` examples in `towerscope_core::position` (`ActingRequest`'s tool call and tool,
//! `PermissionRequest`'s call, tool and input); the prompt fold's context is a shared reference.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use towerscope_agent::toolkit::FunctionTool;
use towerscope_agent::{Agent, HintConfig};
use towerscope_core::{
    ActingNext, ActingRequest, AgentContext, CompressNext, CompressRequest, ContentBlock, ContextConfig, HintBlock,
    ModelCallNext, ModelCallRequest, Msg, PermissionNext, PermissionRequest, ReasoningNext, ReasoningRequest,
    ReplyNext, ReplyRequest, ToolChoice, ToolResultState, from_fn, prompt_fn,
};
use towerscope_models::{ScriptedModel, ScriptedResponse};

use common::{collect, results};

/// Add two numbers.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

/// The answer, as structured output.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Answer {
    answer: i64,
}

/// An `add` tool that counts its runs.
fn add_tool(runs: &Arc<AtomicUsize>) -> FunctionTool {
    let runs = Arc::clone(runs);
    FunctionTool::new("add", move |args: Add| {
        runs.fetch_add(1, Ordering::SeqCst);
        async move { (args.a + args.b).to_string() }
    })
}

/// The text of the last user message the model received.
fn last_user_text(req: &towerscope_models::RecordedRequest) -> String {
    req.messages
        .iter()
        .rev()
        .find(|m| m.role == towerscope_core::Role::User)
        .and_then(|m| m.text_content())
        .unwrap_or_default()
}

#[tokio::test]
async fn on_reply_the_input_the_schema_and_the_context_a_layer_sets_are_what_the_loop_runs_with() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::tool_call(
            "c1",
            towerscope_agent::structured::TOOL_NAME,
            r#"{"answer": 42}"#,
        )],
    );
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model.clone())
        .on_reply(from_fn(|mut req: ReplyRequest, next: ReplyNext| {
            req.input = Msg::user("user", "edited by the layer").into();
            req.structured_schema = Some(Arc::new(towerscope_agent::structured::schema_for::<Answer>()));
            req.ctx = AgentContext::new(
                Arc::clone(req.ctx.agent_name_arc()),
                req.ctx.session_id().clone(),
                "reply-from-layer",
            );
            next.run(req)
        }))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "what the caller sent"))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    let req = &model.requests()[0];
    assert_eq!(
        last_user_text(req),
        "edited by the layer",
        "the input reached the model"
    );
    assert!(
        req.tool_names().contains(&towerscope_agent::structured::TOOL_NAME),
        "the schema mounted the structured-output tool"
    );
    assert_eq!(req.reply_id, "reply-from-layer", "the context reached the model call");
    let msg = out.final_msg.unwrap();
    assert_eq!(msg.structured_output.unwrap()["answer"], 42);
    assert_eq!(msg.id, "reply-from-layer");
    let towerscope_core::AgentEvent::ReplyStart(start) = &out.events[0] else {
        panic!("REPLY_START first")
    };
    assert_eq!(start.reply_id, "reply-from-layer");
}

#[tokio::test]
async fn on_reasoning_the_tool_choice_and_the_context_a_layer_sets_reach_the_model_call() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("hi")]);
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model.clone())
        .on_reasoning(from_fn(|mut req: ReasoningRequest, next: ReasoningNext| {
            req.tool_choice = Some(ToolChoice::none());
            req.ctx = req.ctx.with_iteration(7);
            next.run(req)
        }))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hi")).await.unwrap();
    let req = &model.requests()[0];
    assert_eq!(req.tool_choice, Some(ToolChoice::none()));
    assert_eq!(req.iteration, 7);
}

#[tokio::test]
async fn on_model_call_every_field_a_layer_sets_is_what_the_model_receives() {
    let primary = ScriptedModel::new("primary", [ScriptedResponse::text("from the primary")]);
    let other = ScriptedModel::new("other", [ScriptedResponse::text("from the other")]);
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(primary.clone())
        .tool(add_tool(&runs))
        .on_model_call(from_fn({
            let other = other.clone();
            move |mut req: ModelCallRequest, next: ModelCallNext| {
                req.model = Arc::new(other.clone());
                req.messages.push(Msg::user("user", "added by the layer"));
                req.tools = Arc::from(Vec::new());
                req.tool_choice = Some(ToolChoice::none());
                req.ctx = req.ctx.with_iteration(3);
                next.run(req)
            }
        }))
        .build()
        .unwrap();
    let msg = agent.reply(Msg::user("user", "hi")).await.unwrap();
    assert_eq!(msg.text_content().as_deref(), Some("from the other"));
    assert_eq!(primary.calls(), 0, "the model the layer chose was called instead");
    let req = &other.requests()[0];
    assert_eq!(last_user_text(req), "added by the layer");
    assert!(req.tools.is_empty());
    assert_eq!(req.tool_choice, Some(ToolChoice::none()));
    assert_eq!(req.iteration, 3);
}

#[tokio::test]
async fn on_check_permission_the_context_a_layer_sets_reaches_the_inner_layer() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
            ScriptedResponse::text("3"),
        ],
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model)
        .tool(add_tool(&runs))
        .on_check_permission(from_fn(|mut req: PermissionRequest, next: PermissionNext| {
            req.ctx = AgentContext::new("checker", "s", "reply-of-the-check");
            next.run(req)
        }))
        .on_check_permission(from_fn({
            let seen = Arc::clone(&seen);
            move |req: PermissionRequest, next: PermissionNext| {
                // The rest is read-only: what the engine decides on is the call that runs.
                seen.lock().unwrap().push((
                    req.ctx.reply_id().to_string(),
                    req.tool_call().name.clone(),
                    req.input()["a"].clone(),
                ));
                next.run(req)
            }
        }))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "1 + 2?")).await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [("reply-of-the-check".to_owned(), "add".to_owned(), serde_json::json!(1))]
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// An agent whose `on_acting` layer replaces the arguments of every `add` call with `raw`.
fn agent_setting_input(model: ScriptedModel, runs: &Arc<AtomicUsize>, raw: &'static str) -> Agent {
    Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model)
        .tool(add_tool(runs))
        .on_acting(from_fn(move |mut req: ActingRequest, next: ActingNext| {
            assert!(req.input().is_some(), "the agent hands over the parsed arguments");
            req.set_input(raw);
            assert_eq!(req.input(), None);
            next.run(req)
        }))
        .build()
        .unwrap()
}

#[tokio::test]
async fn on_acting_arguments_a_layer_sets_reach_the_tool_repaired_and_coerced_like_the_models() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
            ScriptedResponse::text("done"),
        ],
    );
    let runs = Arc::new(AtomicUsize::new(0));
    // A string for a number and a missing brace: repaired and coerced, as the model's would be.
    let agent = agent_setting_input(model.clone(), &runs, r#"{"a": "40", "b": 2"#);
    agent.reply(Msg::user("user", "1 + 2?")).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let state = agent.state();
    let stored = results(&state.context[1]);
    assert_eq!(stored[0].state, ToolResultState::Success);
    assert_eq!(
        stored[0].output.text_content().as_deref(),
        Some("42"),
        "the tool got the layer's arguments"
    );
    // The stored call says what ran (the reference's on_acting edits the live call).
    let call = state.context[1].tool_calls().next().unwrap();
    assert_eq!(call.input, r#"{"a": "40", "b": 2"#);
    assert_eq!(state.context[1].tool_calls().count(), 1);
}

#[tokio::test]
async fn on_acting_arguments_a_layer_sets_that_do_not_validate_are_the_models_validation_error() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
            ScriptedResponse::text("sorry"),
        ],
    );
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = agent_setting_input(model.clone(), &runs, r#"{"a": "forty"}"#);
    let out = collect(agent.reply_stream(Msg::user("user", "1 + 2?"))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the tool never ran");
    let state = agent.state();
    let stored = results(&state.context[1]);
    assert_eq!(stored[0].state, ToolResultState::Error);
    let text = stored[0].output.text_content().unwrap();
    assert!(text.starts_with("Input validation failed for tool 'add': "), "{text}");
    // The model saw it in its next call.
    let second = &model.requests()[1];
    let seen = second.messages.iter().flat_map(|m| m.content.iter()).any(|b| {
        matches!(b, ContentBlock::ToolResult(r) if r.output.text_content().is_some_and(|t| t.starts_with("Input validation failed")))
    });
    assert!(seen);
}

#[tokio::test]
async fn on_acting_arguments_a_layer_sets_on_the_structured_output_tool_are_the_output() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::tool_call(
            "c1",
            towerscope_agent::structured::TOOL_NAME,
            r#"{"answer": 1}"#,
        )],
    );
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model)
        .on_acting(from_fn(|mut req: ActingRequest, next: ActingNext| {
            req.set_input(r#"{"answer": "2"}"#);
            next.run(req)
        }))
        .build()
        .unwrap();
    let (_, answer) = agent.reply_structured::<Answer>(Msg::user("user", "?")).await.unwrap();
    assert_eq!(answer.answer, 2);
}

#[tokio::test]
async fn on_acting_the_context_a_layer_sets_reaches_the_inner_layer() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
            ScriptedResponse::text("3"),
        ],
    );
    let seen = Arc::new(Mutex::new(None));
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model)
        .tool(add_tool(&runs))
        .on_acting(from_fn(|mut req: ActingRequest, next: ActingNext| {
            req.ctx = req.ctx.with_iteration(9);
            next.run(req)
        }))
        .on_acting(from_fn({
            let seen = Arc::clone(&seen);
            move |req: ActingRequest, next: ActingNext| {
                *seen.lock().unwrap() = Some(req.ctx.iteration());
                next.run(req)
            }
        }))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "1 + 2?")).await.unwrap();
    assert_eq!(*seen.lock().unwrap(), Some(9));
}

#[tokio::test]
async fn on_compress_context_the_config_the_instructions_and_the_context_a_layer_sets_reach_the_compressor() {
    const SUMMARY: &str = r#"{"task_overview": "t", "current_state": "s", "important_discoveries": "d",
        "next_steps": "n", "context_to_preserve": "p"}"#;
    let model = ScriptedModel::new("m", [ScriptedResponse::text("answered")])
        .context_size(100_000)
        .respond_with(|req| {
            (req.tools.len() == 1 && req.tools[0].name == towerscope_agent::compress::SUMMARY_TOOL)
                .then(|| ScriptedResponse::tool_call("s", towerscope_agent::compress::SUMMARY_TOOL, SUMMARY))
        });
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model.clone())
        // Far from the agent's own threshold (80% of 100,000 tokens).
        .context(ContextConfig::new())
        .on_compress_context(from_fn(|mut req: CompressRequest, next: CompressNext| {
            req.config = Some(Arc::new(
                ContextConfig::new().trigger_ratio(0.001).reserve_ratio(0.0001),
            ));
            req.instructions = Some(HintBlock::new("Keep the numbers.", None));
            req.ctx = req.ctx.with_iteration(5);
            next.run(req)
        }))
        .build()
        .unwrap();
    let history: Vec<Msg> = (0..10)
        .map(|i| Msg::user("user", format!("message {i} {}", "x".repeat(60))))
        .collect();
    agent.observe(history).unwrap();
    agent.reply(Msg::user("user", "go on")).await.unwrap();
    let requests = model.requests();
    let summary = &requests[0];
    assert_eq!(
        summary.tool_names(),
        [towerscope_agent::compress::SUMMARY_TOOL],
        "the layer's config compressed"
    );
    assert_eq!(summary.iteration, 5, "the layer's context reached the summary call");
    let hint = summary
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .any(|b| matches!(b, ContentBlock::Hint(h) if h.text().as_deref() == Some("Keep the numbers.")));
    assert!(hint, "the layer's instructions reached the summary request");
    assert!(agent.state().summary.contains("# Task Overview\nt"));
}

#[tokio::test]
async fn the_prompt_a_transformer_returns_is_the_next_ones_input_and_what_the_model_receives() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("hi")]);
    let seen = Arc::new(Mutex::new(String::new()));
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .system_prompt("Be brief.")
        .model(model.clone())
        .on_system_prompt(prompt_fn(
            |_ctx, prompt| async move { Ok(format!("{prompt} Be kind.")) },
        ))
        .on_system_prompt(prompt_fn({
            let seen = Arc::clone(&seen);
            move |_ctx, prompt| {
                seen.lock().unwrap().clone_from(&prompt);
                async move { Ok(format!("{prompt} Be exact.")) }
            }
        }))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hi")).await.unwrap();
    assert_eq!(*seen.lock().unwrap(), "Be brief. Be kind.");
    assert_eq!(
        model.requests()[0].system_prompt().as_deref(),
        Some("Be brief. Be kind. Be exact.")
    );
}
