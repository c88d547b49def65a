//! Acting: bad input from the model becomes an error result and the loop goes on; batches.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{assert_consistent, collect, results};
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{AgentEvent, Msg, ToolResultState};
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// Look up a city.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct City {
    /// The city name.
    city: String,
}

/// Wait, then echo.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Sleep {
    /// Milliseconds to wait.
    ms: u64,
    /// What to return.
    tag: String,
}

fn city_tool() -> FunctionTool {
    FunctionTool::new("weather", |a: City| async move { format!("sunny in {}", a.city) })
}

/// One tool call, then a text answer; returns the reply and the result block of the call.
async fn one_call(tool: FunctionTool, name: &str, input: &str) -> (common::Collected, Agent, ScriptedModel) {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", name, input),
            ScriptedResponse::text("recovered"),
        ],
    );
    let agent = Agent::builder("a").model(model.clone()).tool(tool).build().unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "go"))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(
        out.final_text().as_deref(),
        Some("recovered"),
        "the loop goes on after the error result"
    );
    assert_consistent(&agent.state().context);
    (out, agent, model)
}

fn result_of(agent: &Agent) -> (ToolResultState, String) {
    let ctx = agent.state().context;
    let r = results(ctx.last().unwrap())[0].clone();
    (r.state, r.output.text_content().unwrap_or_default())
}

#[tokio::test]
async fn unknown_tool_is_an_error_result() {
    let (out, agent, model) = one_call(city_tool(), "teleport", "{}").await;
    assert_eq!(
        result_of(&agent),
        (
            ToolResultState::Error,
            "ToolNotFoundError: The tool named 'teleport' doesn't exist.".into()
        )
    );
    // The model saw the error on the next call.
    let seen = model.requests()[1].messages.last().unwrap().clone();
    assert_eq!(results(&seen)[0].state, ToolResultState::Error);
    assert!(out.kinds().contains(&"TOOL_RESULT_END"));
}

#[tokio::test]
async fn invalid_input_is_the_reference_validation_error() {
    let (_, agent, _) = one_call(city_tool(), "weather", r#"{"town": "Paris"}"#).await;
    let (state, text) = result_of(&agent);
    assert_eq!(state, ToolResultState::Error);
    assert_eq!(
        text,
        "Input validation failed for tool 'weather': 'city' is a required property (at $)"
    );
}

#[tokio::test]
async fn truncated_json_is_repaired_and_numbers_coerced() {
    let (_, agent, _) = one_call(city_tool(), "weather", r#"{"city": "Par"#).await;
    assert_eq!(result_of(&agent), (ToolResultState::Success, "sunny in Par".into()));
    let (_, agent, _) = one_call(city_tool(), "weather", r#"{"city": 75}"#).await;
    assert_eq!(result_of(&agent), (ToolResultState::Success, "sunny in 75".into()));
}

#[tokio::test]
async fn failing_tool_is_an_error_result() {
    let tool = FunctionTool::new(
        "weather",
        |_a: City| async move { Err::<String, _>("service unavailable") },
    );
    let (_, agent, _) = one_call(tool, "weather", r#"{"city":"x"}"#).await;
    assert_eq!(
        result_of(&agent),
        (ToolResultState::Error, "service unavailable".into())
    );
}

#[tokio::test]
async fn panicking_tool_is_an_error_result() {
    let tool = FunctionTool::new("weather", |a: City| async move {
        if a.city == "boom" {
            panic!("the tool exploded");
        }
        a.city
    });
    let (_, agent, _) = one_call(tool, "weather", r#"{"city":"boom"}"#).await;
    let (state, text) = result_of(&agent);
    assert_eq!(state, ToolResultState::Error);
    assert!(
        text.contains("panicked") && text.contains("the tool exploded"),
        "{text}"
    );
}

fn sleep_tool(name: &str, safe: bool, log: Arc<Mutex<Vec<String>>>) -> FunctionTool {
    FunctionTool::new(name.to_owned(), move |a: Sleep| {
        let log = Arc::clone(&log);
        async move {
            log.lock().unwrap().push(format!("start {}", a.tag));
            tokio::time::sleep(Duration::from_millis(a.ms)).await;
            log.lock().unwrap().push(format!("end {}", a.tag));
            a.tag
        }
    })
    .concurrency_safe(safe)
}

fn end_order(out: &common::Collected) -> Vec<String> {
    out.events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResultEnd(e) => Some(e.tool_call_id.to_string()),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn concurrent_batch_interleaves_in_completion_order() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("slow", "safe", r#"{"ms": 300, "tag": "slow"}"#).and_tool_call(
                "fast",
                "safe",
                r#"{"ms": 100, "tag": "fast"}"#,
            ),
            ScriptedResponse::text("done"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model)
        .tool(sleep_tool("safe", true, Arc::clone(&log)))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "go"))).await;
    assert_eq!(end_order(&out), ["fast", "slow"], "the faster call finishes first");
    assert_eq!(
        *log.lock().unwrap(),
        ["start slow", "start fast", "end fast", "end slow"]
    );
    assert_consistent(&agent.state().context);
}

#[tokio::test(start_paused = true)]
async fn sequential_batch_runs_one_at_a_time_in_order() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("slow", "unsafe", r#"{"ms": 300, "tag": "slow"}"#).and_tool_call(
                "fast",
                "unsafe",
                r#"{"ms": 100, "tag": "fast"}"#,
            ),
            ScriptedResponse::text("done"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model)
        .tool(sleep_tool("unsafe", false, Arc::clone(&log)))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "go"))).await;
    assert_eq!(end_order(&out), ["slow", "fast"]);
    assert_eq!(
        *log.lock().unwrap(),
        ["start slow", "end slow", "start fast", "end fast"]
    );
}

#[tokio::test(start_paused = true)]
async fn batches_follow_the_reference_grouping() {
    // [s, s, c, unknown, s] -> seq[1,2], conc[3,4], seq[5] (the unknown tool counts as concurrent).
    let log = Arc::new(Mutex::new(Vec::new()));
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("1", "seq", r#"{"ms": 50, "tag": "1"}"#)
                .and_tool_call("2", "seq", r#"{"ms": 10, "tag": "2"}"#)
                .and_tool_call("3", "conc", r#"{"ms": 30, "tag": "3"}"#)
                .and_tool_call("4", "nope", "{}")
                .and_tool_call("5", "seq", r#"{"ms": 1, "tag": "5"}"#),
            ScriptedResponse::text("done"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model)
        .tool(sleep_tool("seq", false, Arc::clone(&log)))
        .tool(sleep_tool("conc", true, Arc::clone(&log)))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "go"))).await;
    // 4 (unknown) fails at once, inside the concurrent batch, before 3 ends.
    assert_eq!(end_order(&out), ["1", "2", "4", "3", "5"]);
    assert_consistent(&agent.state().context);
}

#[tokio::test]
async fn instant_tools_of_a_concurrent_batch_render_in_one_piece_each() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("b", "weather", r#"{"city": "Bern"}"#).and_tool_call(
                "c",
                "weather",
                r#"{"city": "Chur"}"#,
            ),
            ScriptedResponse::text("done"),
        ],
    );
    let agent = Agent::builder("a").model(model).tool(city_tool()).build().unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "go"))).await;
    let results: Vec<String> = out
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResultStart(e) => Some(format!("START({})", e.tool_call_id)),
            AgentEvent::ToolResultTextDelta(e) => Some(format!("DELTA({})", e.tool_call_id)),
            AgentEvent::ToolResultEnd(e) => Some(format!("END({})", e.tool_call_id)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        ["START(b)", "DELTA(b)", "END(b)", "START(c)", "DELTA(c)", "END(c)"]
    );
}

#[tokio::test]
async fn a_whole_reply_gives_the_streamed_final_message() {
    let script = || {
        ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "weather", r#"{"city": "Bern"}"#),
                ScriptedResponse::text("sunny").with_usage(10, 2),
            ],
        )
    };
    let streamed = Agent::builder("a").model(script()).tool(city_tool()).build().unwrap();
    let whole = Agent::builder("a").model(script()).tool(city_tool()).build().unwrap();
    let from_stream = collect(streamed.reply_stream(Msg::user("user", "Bern?")))
        .await
        .final_msg
        .unwrap();
    // `reply` builds no events (nobody can read them); what it returns and stores is the same.
    let from_reply = whole.reply(Msg::user("user", "Bern?")).await.unwrap();
    assert_eq!(from_reply.content.len(), from_stream.content.len());
    assert_eq!(from_reply.text_content(), from_stream.text_content());
    assert_eq!(from_reply.usage, from_stream.usage);
    assert_eq!(from_reply.finished_reason, from_stream.finished_reason);
    let (a, b) = (streamed.state().context, whole.state().context);
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.content.len(), y.content.len());
        assert_eq!(x.text_content(), y.text_content());
    }
}

#[tokio::test]
async fn a_tool_whose_schema_cannot_be_enforced_fails_the_build() {
    let schema = serde_json::json!({"type": "object", "unevaluatedProperties": false});
    let tool = FunctionTool::with_schema("odd", "A tool with an odd schema.", schema, |_args| async move { "x" });
    let model = ScriptedModel::new("m", [ScriptedResponse::text("hi")]);
    let err = Agent::builder("a").model(model).tool(tool).build().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("odd") && text.contains("unevaluatedProperties"), "{text}");
}

/// A tool under a name the agent answers itself (`GenerateStructuredOutput`; `CompressContext`
/// when the compression tool is offered) is refused when the agent is built: it would be offered
/// and never run.
#[test]
fn a_tool_under_a_name_the_agent_answers_itself_is_refused() {
    let tool = |name: &str| {
        FunctionTool::with_schema(
            name,
            "Mine.",
            serde_json::json!({"type": "object"}),
            |_: serde_json::Value| async { "ran" },
        )
    };
    let model = || ScriptedModel::new("m", [ScriptedResponse::text("ok")]);
    let err = Agent::builder("a")
        .model(model())
        .tool(tool(towerscope_agent::structured::TOOL_NAME))
        .build()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("'GenerateStructuredOutput' is the agent's own"),
        "{err}"
    );
    // `CompressContext` is free while the compression tool is not offered.
    let compress = towerscope_agent::compress::COMPRESS_TOOL;
    assert!(Agent::builder("a").model(model()).tool(tool(compress)).build().is_ok());
    let err = Agent::builder("a")
        .model(model())
        .tool(tool(compress))
        .context(towerscope_agent::ContextConfig::default().compression_tool(true))
        .build()
        .unwrap_err();
    assert!(
        err.to_string().contains("'CompressContext' is the agent's own"),
        "{err}"
    );
}
