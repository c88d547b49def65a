//! Arguments a tool's schema accepts as they are: a typed tool reads them from the call's text,
//! with no parse into a `serde_json::Value` on the way, and every reader of the arguments (a
//! permission layer, an acting layer, a tool taking a `Value`) still gets their parse.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use towerscope_agent::toolkit::FunctionTool;
use towerscope_agent::{Agent, HintConfig};
use towerscope_core::{ActingNext, ActingRequest, Msg, PermissionNext, PermissionRequest, from_fn};
use towerscope_models::{ScriptedModel, ScriptedResponse};

use common::results;

/// Add two numbers.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

fn add() -> FunctionTool {
    FunctionTool::new("add", |args: Add| async move { (args.a + args.b).to_string() })
}

/// A tool taking its arguments as a `Value`: it has no way to read text.
fn echo() -> FunctionTool {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    FunctionTool::with_schema("echo", "Repeat the text.", schema, |input: Value| async move {
        input["text"].as_str().unwrap_or("(none)").to_owned()
    })
}

/// The texts of the tool results in the agent's context, in order.
fn result_texts(agent: &Agent) -> Vec<String> {
    let context = agent.state().context;
    context
        .iter()
        .flat_map(|m| {
            results(m)
                .into_iter()
                .map(|r| r.output.text_content().unwrap_or_default())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// What an acting layer saw of one call: whether the text was still unparsed, then the parse.
type Seen = Arc<Mutex<Vec<(String, bool, Value)>>>;

#[tokio::test]
async fn arguments_taken_as_they_are_reach_the_tool_unparsed_and_every_reader_still_gets_their_parse() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
            // A string where an integer is wanted: coerced, so parsed before the checks.
            ScriptedResponse::tool_call("c2", "add", r#"{"a": "3", "b": 4}"#),
            ScriptedResponse::tool_call("c3", "echo", r#"{"text": "hi"}"#),
            ScriptedResponse::tool_call("c4", "add", r#"{"a": 5, "b": 6}"#),
            ScriptedResponse::text("done"),
        ],
    );
    let permission_saw: Arc<Mutex<Vec<Value>>> = Arc::default();
    let acting_saw: Seen = Arc::default();
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model)
        .tool(add())
        .tool(echo())
        .on_check_permission(from_fn({
            let saw = Arc::clone(&permission_saw);
            move |req: PermissionRequest, next: PermissionNext| {
                // Only the last call's arguments are read here: the others stay unparsed.
                if req.tool_call().id == "c4" {
                    saw.lock().unwrap().push((**req.input()).clone());
                }
                next.run(req)
            }
        }))
        .on_acting(from_fn({
            let saw = Arc::clone(&acting_saw);
            move |req: ActingRequest, next: ActingNext| {
                let unparsed = req.unparsed_input().is_some();
                let input = req.input().cloned().unwrap_or(Value::Null);
                assert!(req.unparsed_input().is_none(), "parsed once asked");
                saw.lock()
                    .unwrap()
                    .push((req.tool_call().id.to_string(), unparsed, input));
                next.run(req)
            }
        }))
        .build()
        .unwrap();
    let answer = agent.reply(Msg::user("user", "sums?")).await.unwrap();
    assert_eq!(answer.text_content().as_deref(), Some("done"));

    assert_eq!(*permission_saw.lock().unwrap(), [json!({"a": 5, "b": 6})]);
    assert_eq!(
        *acting_saw.lock().unwrap(),
        [
            ("c1".to_owned(), true, json!({"a": 1, "b": 2})),
            ("c2".to_owned(), false, json!({"a": 3, "b": 4})),
            ("c3".to_owned(), true, json!({"text": "hi"})),
            ("c4".to_owned(), true, json!({"a": 5, "b": 6})),
        ]
    );
    let outputs = result_texts(&agent);
    assert_eq!(outputs, ["3", "7", "hi", "11"]);
}

#[tokio::test]
async fn a_typed_tool_reads_unparsed_arguments_when_no_layer_asks_for_them() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"b": 40, "a": 2, "note": "ignored"}"#),
            ScriptedResponse::tool_call("c2", "add", r#"{"a": 1}"#),
            ScriptedResponse::text("done"),
        ],
    );
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model)
        .tool(add())
        .on_acting(from_fn({
            let seen = Arc::clone(&seen);
            move |req: ActingRequest, next: ActingNext| {
                seen.lock().unwrap().push(req.unparsed_input().map(str::to_owned));
                next.run(req)
            }
        }))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "sums?")).await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [Some(r#"{"b": 40, "a": 2, "note": "ignored"}"#.to_owned())],
        "the second call's missing argument is refused before on_acting"
    );
    let outputs = result_texts(&agent);
    assert_eq!(outputs.len(), 2);
    assert_eq!(outputs[0], "42");
    assert!(
        outputs[1].starts_with("Input validation failed for tool 'add'"),
        "{}",
        outputs[1]
    );
}

/// A tool that says which way it was called: from the call's text, or from a parsed value.
struct Which {
    schema: Value,
}

impl towerscope_agent::toolkit::Tool for Which {
    fn name(&self) -> &str {
        "which"
    }
    fn description(&self) -> &str {
        "Says how it got its arguments."
    }
    fn input_schema(&self) -> &Value {
        &self.schema
    }
    fn decides_on_input(&self) -> bool {
        false
    }
    fn call_text(&self, text: &str) -> Option<towerscope_agent::toolkit::ToolChunkStream> {
        let chunk = towerscope_core::ToolChunk::text(format!("text {text}"));
        Some(Box::pin(futures_util::stream::iter([Ok(chunk)])))
    }
    fn call(&self, input: Value) -> towerscope_agent::toolkit::ToolChunkStream {
        let chunk = towerscope_core::ToolChunk::text(format!("value {input}"));
        Box::pin(futures_util::stream::iter([Ok(chunk)]))
    }
}

/// The text goes to the tool as the model wrote it when the schema takes it as it is, and no
/// layer asked for the arguments; otherwise the tool gets the parse (repaired and coerced, or
/// made for a layer that asked).
#[tokio::test]
async fn the_tool_gets_the_text_only_when_nothing_needed_its_parse() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let run = |asks: bool| {
        let schema = schema.clone();
        async move {
            let model = ScriptedModel::new(
                "m",
                [
                    ScriptedResponse::tool_call("c1", "which", r#"{"n": 1}"#),
                    ScriptedResponse::tool_call("c2", "which", r#"{"n": "2"}"#),
                    ScriptedResponse::text("done"),
                ],
            );
            let mut builder = Agent::builder("a")
                .hints(HintConfig::disabled())
                .model(model)
                .tool(Which { schema });
            if asks {
                builder = builder.on_acting(from_fn(|req: ActingRequest, next: ActingNext| {
                    let _ = req.input();
                    next.run(req)
                }));
            }
            let agent = builder.build().unwrap();
            agent.reply(Msg::user("user", "which?")).await.unwrap();
            result_texts(&agent)
        }
    };
    assert_eq!(run(false).await, [r#"text {"n": 1}"#, r#"value {"n":2}"#]);
    assert_eq!(run(true).await, [r#"value {"n":1}"#, r#"value {"n":2}"#]);
}
