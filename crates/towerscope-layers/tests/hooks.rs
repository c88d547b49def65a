//! Pre/post hooks through an agent: what each hook sees and replaces, the order they run in,
//! instance before class, and changes after the agent is built.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::{collect, results};
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{Msg, ReplyInput, TextBlock, ToolChoice, ToolChoiceMode, ToolResponse};
use towerscope_layers::hooks::{Hook, HookRegistry, HookType, Hooks};
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// A city.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct City {
    city: String,
}

type Log = Arc<Mutex<Vec<String>>>;

fn push(log: &Log, entry: impl Into<String>) {
    log.lock().unwrap().push(entry.into());
}

fn entries(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

#[tokio::test]
async fn hooks_see_and_replace_every_step_in_order() {
    let log = Log::default();
    let model = ScriptedModel::new(
        "scripted",
        [
            ScriptedResponse::tool_call("c1", "weather", r#"{"city": "Paris"}"#),
            ScriptedResponse::text("It is sunny."),
            ScriptedResponse::text("Second answer."),
        ],
    );
    let cities = Log::default();
    let tool_log = Arc::clone(&cities);
    let tool = FunctionTool::new("weather", move |a: City| {
        push(&tool_log, a.city.clone());
        async move { format!("sunny in {}", a.city) }
    });

    let class = HookRegistry::new();
    let l = Arc::clone(&log);
    class.register(
        "class-pre-reply",
        Hook::pre_reply(move |_, _| {
            push(&l, "pre_reply (class)");
            None
        }),
    );
    let hooks = Hooks::with_class(&class);
    let l = Arc::clone(&log);
    hooks.register(
        "rewrite",
        Hook::pre_reply(move |_, input| {
            push(&l, "pre_reply (instance)");
            let text = input.messages()?.last()?.text_content()?;
            Some(ReplyInput::from(Msg::user("user", format!("{text} (in Paris)"))))
        }),
    );
    let l = Arc::clone(&log);
    hooks.register(
        "force-tool",
        Hook::pre_reasoning(move |ctx, choice| {
            push(
                &l,
                format!(
                    "pre_reasoning {} {:?}",
                    ctx.iteration(),
                    choice.map(|c| c.mode.as_str().to_owned())
                ),
            );
            (ctx.iteration() == 0).then(ToolChoice::required)
        }),
    );
    let l = Arc::clone(&log);
    hooks.register(
        "candidate",
        Hook::post_reasoning(move |_, _, msg| {
            push(&l, format!("post_reasoning {:?}", msg.and_then(|m| m.text_content())));
            None
        }),
    );
    let l = Arc::clone(&log);
    hooks.register(
        "to-rome",
        Hook::pre_acting(move |_, call| {
            push(&l, format!("pre_acting {}", call.input));
            let mut call = call.clone();
            call.input = r#"{"city": "Rome"}"#.to_owned();
            Some(call)
        }),
    );
    let l = Arc::clone(&log);
    hooks.register(
        "shout",
        Hook::post_acting(move |_, call, response| {
            push(&l, format!("post_acting {} {:?}", call.input, response.text_content()));
            Some(ToolResponse::text(response.text_content()?.to_uppercase()))
        }),
    );
    let l = Arc::clone(&log);
    hooks.register(
        "sign",
        Hook::post_reply(move |_, input, msg| {
            push(&l, format!("post_reply {:?}", input.messages().map(|m| m.len())));
            let mut msg = msg.clone();
            msg.content.push(TextBlock::new("-- signed").into());
            Some(msg)
        }),
    );

    let agent = Agent::builder("assistant")
        .model(model.clone())
        .tool(tool)
        .middleware(hooks.clone())
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "Weather?"))).await;
    assert!(out.error.is_none(), "{:?}", out.error);

    assert_eq!(
        entries(&log),
        [
            "pre_reply (instance)",
            "pre_reply (class)",
            "pre_reasoning 0 None",
            "post_reasoning None",
            r#"pre_acting {"city": "Paris"}"#,
            r#"post_acting {"city": "Rome"} Some("sunny in Rome")"#,
            "pre_reasoning 1 None",
            r#"post_reasoning Some("It is sunny.")"#,
            "post_reply Some(1)",
        ],
        "each hook once per call, instance hooks before class hooks"
    );
    // What the replacements changed.
    let requests = model.requests();
    // The user's question, the last user message (the runtime-state hint follows it).
    let question = requests[0]
        .messages
        .iter()
        .rev()
        .find(|m| m.role == towerscope_core::Role::User)
        .and_then(|m| m.text_content());
    assert_eq!(question.as_deref(), Some("Weather? (in Paris)"));
    assert_eq!(
        requests[0].tool_choice.as_ref().map(|c| c.mode.clone()),
        Some(ToolChoiceMode::Required)
    );
    assert_eq!(requests[1].tool_choice, None);
    assert_eq!(*cities.lock().unwrap(), ["Rome"]);
    assert_eq!(
        results(&agent)[0].output.text_content().as_deref(),
        Some("SUNNY IN ROME")
    );
    let seen = requests[1].messages.last().unwrap();
    assert_eq!(
        seen.tool_results().next().unwrap().output.text_content().as_deref(),
        Some("SUNNY IN ROME")
    );
    assert_eq!(out.final_text().as_deref(), Some("It is sunny.\n-- signed"));

    // Changes after the agent was built apply to the next reply.
    hooks.clear_all();
    assert!(hooks.remove(HookType::PostReply, "sign").is_err());
    class.register(
        "class-sign",
        Hook::post_reply(|_, _, msg| {
            let mut msg = msg.clone();
            msg.content.push(TextBlock::new("-- from the class").into());
            Some(msg)
        }),
    );
    let out = collect(agent.reply_stream(Msg::user("user", "Again?"))).await;
    assert_eq!(entries(&log), ["pre_reply (class)"]);
    assert_eq!(out.final_text().as_deref(), Some("Second answer.\n-- from the class"));
    assert_eq!(
        model.requests()[2]
            .messages
            .last()
            .and_then(|m| m.text_content())
            .as_deref(),
        Some("Again?")
    );
}

/// An agent whose one `pre_acting` hook edits every call with `edit`.
fn agent_with_pre_acting(
    model: &ScriptedModel,
    cities: &Log,
    edit: impl Fn(&mut towerscope_core::ToolCallBlock) + Send + Sync + 'static,
) -> Agent {
    let tool_log = Arc::clone(cities);
    let tool = FunctionTool::new("weather", move |a: City| {
        push(&tool_log, a.city.clone());
        async move { format!("sunny in {}", a.city) }
    });
    let hooks = Hooks::new();
    hooks.register(
        "edit",
        Hook::pre_acting(move |_, call| {
            let mut call = call.clone();
            edit(&mut call);
            Some(call)
        }),
    );
    Agent::builder("assistant")
        .model(model.clone())
        .tool(tool)
        .middleware(hooks)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_pre_acting_hooks_input_is_repaired_and_validated_and_its_id_or_name_cannot_change() {
    let script = || {
        ScriptedModel::new(
            "scripted",
            [
                ScriptedResponse::tool_call("c1", "weather", r#"{"city": "Paris"}"#),
                ScriptedResponse::text("done"),
            ],
        )
    };
    // Truncated text and a number for a string: repaired and coerced, as the model's.
    let cities = Log::default();
    let agent = agent_with_pre_acting(&script(), &cities, |call| call.input = r#"{"city": 7"#.to_owned());
    agent.reply(Msg::user("user", "Weather?")).await.unwrap();
    assert_eq!(entries(&cities), ["7"]);

    // Arguments that do not validate: the model's validation error, and the tool never runs.
    let agent = agent_with_pre_acting(&script(), &cities, |call| call.input = r#"{"town": "Rome"}"#.to_owned());
    agent.reply(Msg::user("user", "Weather?")).await.unwrap();
    assert!(entries(&cities).is_empty());
    let text = results(&agent)[0].output.text_content().unwrap();
    assert!(
        text.starts_with("Input validation failed for tool 'weather': "),
        "{text}"
    );

    // Another tool: refused with an error result that says why, never silently ignored.
    let agent = agent_with_pre_acting(&script(), &cities, |call| call.name = "other".to_owned());
    agent.reply(Msg::user("user", "Weather?")).await.unwrap();
    assert!(entries(&cities).is_empty());
    let result = &results(&agent)[0];
    assert_eq!(result.state, towerscope_core::ToolResultState::Error);
    let text = result.output.text_content().unwrap();
    assert!(
        text.contains("a pre_acting hook changed the tool call c1 'weather' into c1 'other'"),
        "{text}"
    );
}

#[tokio::test]
async fn class_hooks_are_shared_by_every_agent_built_with_them() {
    let class = HookRegistry::new();
    let agents: Vec<(Agent, Hooks)> = ["a", "b"]
        .into_iter()
        .map(|name| {
            let hooks = Hooks::with_class(&class);
            let agent = Agent::builder(name)
                .model(ScriptedModel::cycle("scripted", [ScriptedResponse::text("hi")]))
                .middleware(hooks.clone())
                .build()
                .unwrap();
            (agent, hooks)
        })
        .collect();
    class.register(
        "who",
        Hook::post_reply(|ctx, _, _| Some(Msg::assistant(ctx.agent_name(), format!("I am {}", ctx.agent_name())))),
    );
    agents[0].1.register(
        "only-a",
        Hook::post_reply(|_, _, msg| {
            Some(Msg::assistant(
                "a",
                format!("{} (instance)", msg.text_content().unwrap_or_default()),
            ))
        }),
    );
    let a = agents[0].0.reply(Msg::user("user", "?")).await.unwrap();
    let b = agents[1].0.reply(Msg::user("user", "?")).await.unwrap();
    // Agent a: its instance hook, then the class hook (which replaces everything).
    assert_eq!(a.text_content().as_deref(), Some("I am a"));
    assert_eq!(b.text_content().as_deref(), Some("I am b"));
    class.remove(HookType::PostReply, "who").unwrap();
    let a = agents[0].0.reply(Msg::user("user", "?")).await.unwrap();
    assert_eq!(a.text_content().as_deref(), Some("hi (instance)"));
}

#[tokio::test]
async fn observe_hooks_replace_what_is_stored() {
    let seen = Log::default();
    let hooks = Hooks::new();
    hooks.register(
        "redact",
        Hook::pre_observe(|_, msgs| {
            Some(
                msgs.iter()
                    .map(|m| Msg::user("user", m.text_content().unwrap_or_default().replace("secret", "***")))
                    .collect(),
            )
        }),
    );
    let sink = Arc::clone(&seen);
    hooks.register(
        "audit",
        Hook::post_observe(move |name, msgs| push(&sink, format!("{name}: {:?}", msgs[0].text_content()))),
    );
    let agent = Agent::builder("assistant")
        .model(ScriptedModel::new("scripted", []))
        .middleware(hooks)
        .build()
        .unwrap();
    agent.observe([Msg::user("user", "the secret is 42")]).unwrap();
    assert_eq!(
        agent.state().context[0].text_content().as_deref(),
        Some("the *** is 42")
    );
    assert_eq!(entries(&seen), [r#"assistant: Some("the *** is 42")"#]);
}
