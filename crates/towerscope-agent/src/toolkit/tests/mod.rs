//! Behaviour of the toolkit as the agent uses it: schemas, checks, and running calls.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use futures_util::{StreamExt, stream};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tower::ServiceExt;
use towerscope_core::{
    ActingRequest, AgentContext, MediaBlock, TextBlock, ToolCallBlock, ToolChunk, ToolItem, ToolResponse,
    ToolResultState,
};

use super::*;

/// Get the weather of a city.
#[derive(Deserialize, JsonSchema)]
struct Weather {
    /// The city.
    city: String,
    /// How many days to forecast.
    #[serde(default)]
    days: Option<u8>,
}

fn weather() -> FunctionTool {
    FunctionTool::new("get_weather", |args: Weather| async move {
        format!("Sunny in {} for {} days", args.city, args.days.unwrap_or(1))
    })
}

pub(super) fn echo(name: &str) -> FunctionTool {
    FunctionTool::with_schema(
        name,
        "Echo.",
        json!({"type": "object"}),
        |input: Value| async move { input },
    )
}

pub(super) fn call(name: &str, input: &str) -> ToolCallBlock {
    ToolCallBlock::new("call_1", name, input)
}

fn grouped() -> Toolkit {
    let mut toolkit = Toolkit::new();
    toolkit.add(weather());
    toolkit.create_group("web", "Search the web.", "Always cite the page you found.");
    toolkit.create_group("files", "Work with files.", "");
    toolkit.add_to_group("web", echo("search")).unwrap();
    toolkit.add_to_group("files", echo("read_file")).unwrap();
    toolkit
}

fn request(toolkit: &Toolkit, tool_call: ToolCallBlock) -> ActingRequest {
    let tool = toolkit
        .info(&tool_call.name)
        .unwrap_or_else(|| Arc::new(echo(&tool_call.name).info()));
    // What the agent hands the toolkit: the arguments parsed once, repaired and coerced by
    // `prepare`; when they do not pass, leniently parsed, as a layer might hand them over.
    let groups: Vec<String> = toolkit.groups().iter().map(|g| g.name.clone()).collect();
    let input = match toolkit.prepare(&tool_call, &groups) {
        Ok(prepared) => prepared.input,
        Err(_) => serde_json::from_str(&tool_call.input).unwrap_or(Value::Null),
    };
    ActingRequest::new(AgentContext::new("agent", "session", "reply"), tool_call, tool).with_input(input)
}

async fn run(toolkit: Toolkit, req: ActingRequest) -> (Vec<ToolChunk>, ToolResponse) {
    let mut stream = ToolkitService::new(Arc::new(toolkit)).oneshot(req).await.unwrap();
    let mut chunks = Vec::new();
    let mut response = None;
    while let Some(item) = stream.next().await {
        assert!(response.is_none(), "the response must come last");
        match item.unwrap() {
            ToolItem::Chunk(chunk) => chunks.push(chunk),
            ToolItem::Response(r) => response = Some(r),
        }
    }
    (chunks, response.expect("exactly one response"))
}

fn names(schemas: &[towerscope_core::ToolSchema]) -> Vec<&str> {
    schemas.iter().map(|s| s.name.as_str()).collect()
}

#[test]
fn schemas_follow_groups_and_are_cached() {
    let toolkit = grouped();
    let basic = toolkit.schemas(&[]);
    assert_eq!(names(&basic), ["get_weather", "reset_tools"]);
    let weather = &basic[0];
    assert_eq!(weather.description, "Get the weather of a city.");
    assert_eq!(weather.parameters["properties"]["city"]["description"], "The city.");
    assert!(!weather.parameters.to_string().contains("title"));

    let web = vec!["web".to_owned()];
    assert_eq!(names(&toolkit.schemas(&web)), ["get_weather", "search", "reset_tools"]);
    let both = vec!["files".to_owned(), "web".to_owned(), "unknown".to_owned()];
    assert_eq!(
        names(&toolkit.schemas(&both)),
        ["get_weather", "search", "read_file", "reset_tools"]
    );

    // Same groups: the same list, not a rebuilt one (also for the same set in another order).
    assert!(Arc::ptr_eq(&basic, &toolkit.schemas(&[])));
    assert!(Arc::ptr_eq(&toolkit.schemas(&web), &toolkit.schemas(&web)));
    let reordered = vec!["web".to_owned(), "files".to_owned()];
    assert!(Arc::ptr_eq(&toolkit.schemas(&both), &toolkit.schemas(&reordered)));

    // A change of tools is seen.
    let mut toolkit = toolkit;
    toolkit.add(echo("late"));
    assert_eq!(names(&toolkit.schemas(&[])), ["get_weather", "late", "reset_tools"]);
    assert!(toolkit.remove("get_weather").is_some());
    assert_eq!(names(&toolkit.schemas(&[])), ["late", "reset_tools"]);
    assert!(toolkit.get("get_weather").is_none());
}

#[test]
fn without_groups_there_is_no_reset_tools() {
    let mut toolkit = Toolkit::new();
    toolkit.add(weather());
    assert_eq!(names(&toolkit.schemas(&[])), ["get_weather"]);
    assert!(toolkit.get(RESET_TOOLS).is_none());
    assert_eq!(
        toolkit.prepare(&call(RESET_TOOLS, "{}"), &[]).unwrap_err(),
        "ToolNotFoundError: The tool named 'reset_tools' doesn't exist."
    );
}

#[test]
fn registry_basics() {
    let mut toolkit = grouped();
    assert_eq!(toolkit.len(), 3);
    assert_eq!(toolkit.group_of("search").map(|g| g.name.as_str()), Some("web"));
    assert_eq!(
        toolkit.group_of("get_weather").map(|g| g.name.as_str()),
        Some(BASIC_GROUP)
    );
    let err = toolkit.add_to_group("nope", echo("x")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the tool group 'nope' does not exist; create it first with Toolkit::create_group"
    );
    // The same name replaces the tool in its place.
    toolkit.add(echo("get_weather").read_only(true));
    assert_eq!(
        toolkit.tools().next().map(|t| t.name().to_owned()).as_deref(),
        Some("get_weather")
    );
    assert!(toolkit.info("get_weather").unwrap().read_only);
    // Groups marked active seed the agent's list.
    toolkit.add_group(ToolGroup::new("db", "Query the database.").with_active(true));
    assert_eq!(toolkit.default_active_groups(), ["db"]);
    let info = toolkit.info(RESET_TOOLS).unwrap();
    assert!(info.read_only && !info.concurrency_safe);
}

#[test]
fn tools_are_found_by_name_with_few_or_many_and_after_removals() {
    let mut toolkit = Toolkit::new();
    let names: Vec<String> = (0..12).map(|i| format!("t{i}")).collect();
    for (n, name) in names.iter().enumerate() {
        toolkit.add(echo(name));
        // Across the point where names start being hashed, every tool added so far is found.
        for earlier in &names[..=n] {
            assert_eq!(
                toolkit.get(earlier).map(|t| t.name().to_owned()).as_ref(),
                Some(earlier)
            );
        }
        assert!(toolkit.get("missing").is_none());
    }
    // A replacement keeps its place; a removal shifts the ones after it, back below the point.
    toolkit.add(echo("t3").read_only(true));
    assert!(toolkit.info("t3").unwrap().read_only);
    assert_eq!(toolkit.len(), 12);
    for name in ["t0", "t5", "t11", "t7"] {
        assert!(toolkit.remove(name).is_some());
        assert!(toolkit.get(name).is_none());
    }
    assert!(toolkit.remove("t0").is_none());
    let left: Vec<String> = toolkit.tools().map(|t| t.name().to_owned()).collect();
    assert_eq!(left, ["t1", "t2", "t3", "t4", "t6", "t8", "t9", "t10"]);
    for name in &left {
        assert_eq!(toolkit.get(name).map(|t| t.name().to_owned()).as_ref(), Some(name));
    }
    assert!(toolkit.prepare(&call("t9", "{}"), &[]).is_ok());
}

#[test]
fn prepare_reports_the_reference_errors() {
    let toolkit = grouped();
    assert_eq!(
        toolkit.prepare(&call("nope", "{}"), &[]).unwrap_err(),
        "ToolNotFoundError: The tool named 'nope' doesn't exist."
    );
    assert_eq!(
        toolkit.prepare(&call("search", "{}"), &[]).unwrap_err(),
        "ToolGroupInactiveError: The tool 'search' in group 'web' is currently inactive. You should first activate \
         the group by calling the 'reset_tools' tool."
    );
    assert!(toolkit.prepare(&call("search", "{}"), &["web".to_owned()]).is_ok());
    assert_eq!(
        toolkit
            .prepare(&call("get_weather", r#"{"days": 2}"#), &[])
            .unwrap_err(),
        "Input validation failed for tool 'get_weather': 'city' is a required property (at $)"
    );
    assert_eq!(
        toolkit
            .prepare(&call("get_weather", r#"{"city": "Paris", "days": 300}"#), &[])
            .unwrap_err(),
        "Input validation failed for tool 'get_weather': 300 is greater than the maximum of 255 (at $.days)"
    );
    let err = toolkit
        .prepare(&call("get_weather", r#"{"city" "Paris"}"#), &[])
        .unwrap_err();
    assert!(
        err.starts_with("Input validation failed for tool 'get_weather': the input is not valid JSON ("),
        "{err}"
    );
    assert!(err.ends_with(") (at $)"), "{err}");
    let err = toolkit
        .prepare(&call(RESET_TOOLS, r#"{"mail": true}"#), &[])
        .unwrap_err();
    assert_eq!(
        err,
        "Input validation failed for tool 'reset_tools': Additional properties are not allowed ('mail' was unexpected) (at $)"
    );
}

#[test]
fn prepare_repairs_and_coerces() {
    let toolkit = grouped();
    let prepared = toolkit
        .prepare(&call("get_weather", r#"{"city": 75, "days": "3"#), &[])
        .unwrap();
    assert_eq!(prepared.input, json!({"city": "75", "days": 3}));
    assert_eq!(prepared.info.name, "get_weather");
    assert_eq!(prepared.tool.name(), "get_weather");
    assert_eq!(
        toolkit.prepare(&call("search", ""), &["web".to_owned()]).unwrap().input,
        json!({})
    );
}

/// Filter rows (a serde internally tagged enum: a `oneOf` of objects told apart by `op`).
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)] // read through serde only
struct Query {
    filter: Filter,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "lowercase")]
#[allow(dead_code)] // read through serde only
enum Filter {
    Eq { field: String, value: String },
    Gt { field: String, value: f64 },
}

#[test]
fn a_call_valid_under_a_later_branch_of_a_choice_reaches_the_tool_as_sent() {
    let mut toolkit = Toolkit::new();
    toolkit.add(FunctionTool::new("query", |q: Query| async move { format!("{q:?}") }));
    let prepare = |input: &str| toolkit.prepare(&call("query", input), &[]).map(|p| p.input);
    // Valid as sent under `Gt`: the number is not turned into the string `Eq` wants.
    let sent = r#"{"filter": {"op": "gt", "field": "age", "value": 30}}"#;
    assert_eq!(prepare(sent).unwrap(), serde_json::from_str::<Value>(sent).unwrap());
    // Still coerced into the branch it fits once coerced, not the first whose type admits it.
    assert_eq!(
        prepare(r#"{"filter": {"op": "gt", "field": "age", "value": "30.5"}}"#).unwrap(),
        json!({"filter": {"op": "gt", "field": "age", "value": 30.5}})
    );
    assert_eq!(
        prepare(r#"{"filter": {"op": "eq", "field": "name", "value": 7}}"#).unwrap(),
        json!({"filter": {"op": "eq", "field": "name", "value": "7"}})
    );
    // Fits no branch even coerced: left as sent, and the error quotes what the model sent.
    let err = prepare(r#"{"filter": {"op": "lt", "field": "age", "value": 30}}"#).unwrap_err();
    assert!(err.contains("'value': 30"), "{err}");
    assert!(!err.contains("'30'"), "{err}");
}

#[test]
fn a_value_valid_as_sent_is_not_coerced_and_an_invalid_one_is_quoted_as_sent() {
    let schema = json!({"type": "object", "properties": {
        "id": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "code": {"type": "string", "maxLength": 2},
        "n": {"type": "integer"},
    }});
    let mut toolkit = Toolkit::new();
    toolkit.add(FunctionTool::with_schema(
        "t",
        "T.",
        schema,
        |input: Value| async move { input },
    ));
    let prepare = |input: &str| toolkit.prepare(&call("t", input), &[]).map(|p| p.input);
    // 5 is valid under the second branch: it stays a number.
    assert_eq!(prepare(r#"{"id": 5}"#).unwrap(), json!({"id": 5}));
    // An integral float still becomes an integer, so that it decodes into an integer type.
    assert_eq!(prepare(r#"{"id": 5, "n": 4.0}"#).unwrap(), json!({"id": 5, "n": 4}));
    // Coerced, 123 would be the string '123', too long: the model is told about 123.
    assert_eq!(
        prepare(r#"{"code": 123}"#).unwrap_err(),
        "Input validation failed for tool 't': 123 is not of type 'string' (at $.code)"
    );
    // An error that coercion does not touch is the one reported, whatever else it fixed.
    assert_eq!(
        prepare(r#"{"code": 12, "n": "x"}"#).unwrap_err(),
        "Input validation failed for tool 't': 'x' is not of type 'integer' (at $.n)"
    );
}

/// Add two integers (a struct of scalars: its schema is a flat object).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // read through serde only
struct Add {
    /// First operand.
    a: i64,
    /// Second operand.
    b: i64,
    /// A note.
    #[serde(default)]
    note: String,
}

#[test]
fn an_input_that_fits_a_flat_schema_is_handed_on_and_the_others_are_checked_as_before() {
    let tool = FunctionTool::new("add", |args: Add| async move { (args.a + args.b).to_string() });
    let compiled = CompiledSchema::new(tool.input_schema().clone()).unwrap();
    assert!(
        compiled.accepts_as_is(&json!({"a": 1, "b": 2})),
        "the derived schema is flat"
    );
    let mut toolkit = Toolkit::new();
    toolkit.add(tool);
    let prepare = |input: &str| toolkit.prepare(&call("add", input), &[]).map(|p| p.input);
    // Fits: passed on as parsed.
    assert_eq!(prepare(r#"{"a": 1, "b": -2}"#).unwrap(), json!({"a": 1, "b": -2}));
    // Needs coercion: the general path coerces, as before.
    assert_eq!(prepare(r#"{"a": "1", "b": 2.0}"#).unwrap(), json!({"a": 1, "b": 2}));
    // Does not fit: the validator words the error, as before.
    assert_eq!(
        prepare(r#"{"a": 1}"#).unwrap_err(),
        "Input validation failed for tool 'add': 'b' is a required property (at $)"
    );
    assert_eq!(
        prepare(r#"{"a": 1, "b": 2, "c": 3}"#).unwrap_err(),
        "Input validation failed for tool 'add': Additional properties are not allowed ('c' was unexpected) (at $)"
    );
    assert_eq!(
        prepare(r#"{"a": 1, "b": true}"#).unwrap_err(),
        "Input validation failed for tool 'add': True is not of type 'integer' (at $.b)"
    );
}

#[tokio::test]
async fn a_call_streams_chunks_then_one_response() {
    let toolkit = grouped();
    let req = request(&toolkit, call("get_weather", r#"{"city": "Paris", "days": "2"}"#));
    let (chunks, response) = run(toolkit, req).await;
    assert_eq!(chunks.len(), 1);
    assert_eq!(response.id, "call_1");
    assert_eq!(response.state, ToolResultState::Success);
    assert_eq!(response.text_content().as_deref(), Some("Sunny in Paris for 2 days"));
}

#[tokio::test]
async fn a_streaming_tool_is_merged_as_the_reference_merges() {
    let mut toolkit = Toolkit::new();
    toolkit.add(FunctionTool::streaming("spell", |_: Weather| {
        let piece = |text: &str| ToolChunk::new(vec![MediaBlock::Text(TextBlock::new(text).with_id("b1"))]);
        stream::iter([Ok(piece("a")), Ok(piece("b")), Err("c")])
    }));
    let req = request(&toolkit, call("spell", r#"{"city": "x"}"#));
    let (chunks, response) = run(toolkit, req).await;
    assert_eq!(chunks.len(), 3);
    assert_eq!(chunks[2].state, ToolResultState::Error);
    assert_eq!(response.text_content().as_deref(), Some("abc"));
    assert_eq!(response.content.len(), 1);
    assert_eq!(response.state, ToolResultState::Error);
}

#[tokio::test]
async fn a_failing_tool_gives_an_error_response() {
    let mut toolkit = Toolkit::new();
    toolkit.add(FunctionTool::new("fail", |_: Weather| async {
        Err::<String, _>("the city is flooded")
    }));
    let req = request(&toolkit, call("fail", r#"{"city": "x"}"#));
    let (chunks, response) = run(toolkit, req).await;
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].state, ToolResultState::Error);
    assert_eq!(response.state, ToolResultState::Error);
    assert_eq!(response.text_content().as_deref(), Some("the city is flooded"));
}

struct PanicsOnCall;

impl Tool for PanicsOnCall {
    fn name(&self) -> &str {
        "explode"
    }
    fn description(&self) -> &str {
        "Panics."
    }
    fn input_schema(&self) -> &Value {
        &Value::Null
    }
    fn call(&self, _input: Value) -> ToolChunkStream {
        panic!("boom at call")
    }
}

#[tokio::test]
async fn a_panicking_tool_gives_an_error_response() {
    let mut toolkit = Toolkit::new();
    toolkit.add(PanicsOnCall);
    toolkit.add(FunctionTool::new("explode_later", |args: Weather| async move {
        if args.city.is_empty() {
            return String::new();
        }
        panic!("boom in {}", args.city)
    }));
    let req = request(&toolkit, call("explode", "{}"));
    let (_, response) = run(toolkit.clone(), req).await;
    assert_eq!(response.state, ToolResultState::Error);
    assert_eq!(
        response.text_content().as_deref(),
        Some("Tool 'explode' panicked: boom at call")
    );

    let req = request(&toolkit, call("explode_later", r#"{"city": "Paris"}"#));
    let (chunks, response) = run(toolkit, req).await;
    assert_eq!(chunks.len(), 1);
    assert_eq!(response.state, ToolResultState::Error);
    assert_eq!(
        response.text_content().as_deref(),
        Some("Tool 'explode_later' panicked: boom in Paris")
    );
}

#[tokio::test]
async fn calls_that_cannot_start_give_error_responses() {
    let toolkit = grouped();
    // A layer renamed the tool, or broke its arguments: still a response, not an `Err`.
    let req = request(&toolkit, call("renamed", "{}"));
    let (chunks, response) = run(toolkit.clone(), req).await;
    assert_eq!(chunks.len(), 1);
    assert_eq!(response.state, ToolResultState::Error);
    assert_eq!(
        response.text_content().as_deref(),
        Some("ToolNotFoundError: The tool named 'renamed' doesn't exist.")
    );

    // The toolkit runs the arguments it is given (parsed once, before the permission check);
    // arguments that are not an object still give a response.
    let req = request(&toolkit, call("get_weather", "{nope"));
    let (_, response) = run(toolkit.clone(), req).await;
    let text = response.text_content().unwrap();
    assert!(
        text.starts_with("The arguments of tool 'get_weather' do not match its parameters:"),
        "{text}"
    );

    // Arguments a layer made unfit for the function's type.
    let req = request(&toolkit, call("get_weather", r#"{"city": ["x"]}"#));
    let (_, response) = run(toolkit, req).await;
    let text = response.text_content().unwrap();
    assert!(
        text.starts_with("The arguments of tool 'get_weather' do not match its parameters:"),
        "{text}"
    );
}

#[tokio::test]
async fn reset_tools_returns_the_groups_for_the_agent() {
    let toolkit = grouped();
    let prepared = toolkit
        .prepare(&call(RESET_TOOLS, r#"{"web": true, "files": false}"#), &[])
        .unwrap();
    assert_eq!(prepared.input, json!({"web": true, "files": false}));
    let schema = &toolkit.schemas(&[])[1];
    assert_eq!(schema.parameters["properties"]["web"]["description"], "Search the web.");
    assert_eq!(schema.parameters["properties"]["files"]["type"], "boolean");

    let req = request(&toolkit, call(RESET_TOOLS, r#"{"web": true, "files": "true"}"#));
    let (_, response) = run(toolkit.clone(), req).await;
    assert_eq!(response.state, ToolResultState::Success);
    assert_eq!(response.metadata[ACTIVATED_GROUPS_KEY], json!(["web", "files"]));
    assert_eq!(
        response.text_content().as_deref(),
        Some(
            "The active tool groups are now: 'web', 'files'.\n\nInstructions of the tool group 'web':\nAlways cite the page you found."
        )
    );

    // With the previous groups in the context, only new groups bring their instructions.
    let req = request(&toolkit, call(RESET_TOOLS, r#"{"web": true}"#));
    req.ctx.insert(ActiveToolGroups(Arc::from(vec!["web".to_owned()])));
    let (_, response) = run(toolkit, req).await;
    assert_eq!(
        response.text_content().as_deref(),
        Some("The active tool groups are now: 'web'.")
    );
    assert_eq!(response.metadata[ACTIVATED_GROUPS_KEY], json!(["web"]));
}

#[tokio::test]
async fn a_dropped_stream_stops_the_tool() {
    let mut toolkit = Toolkit::new();
    toolkit.add(FunctionTool::streaming("forever", |_: Weather| stream::repeat("tick")));
    let req = request(&toolkit, call("forever", r#"{"city": "x"}"#));
    let mut stream = ToolkitService::new(Arc::new(toolkit)).oneshot(req).await.unwrap();
    for _ in 0..3 {
        assert!(matches!(stream.next().await, Some(Ok(ToolItem::Chunk(_)))));
    }
    drop(stream);
}

mod hostile;
