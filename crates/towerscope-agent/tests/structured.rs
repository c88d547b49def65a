//! Structured output: accepted, rejected then accepted, given up after the grace iterations.
#![allow(clippy::unwrap_used)]

mod common;

use common::collect;
use towerscope_agent::{Agent, structured};
use towerscope_core::{AgentError, ContentBlock, Msg, ReplyFinishedReason, ToolChoiceMode};
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// A weather report.
#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Report {
    /// The city.
    city: String,
    /// Degrees Celsius.
    celsius: i32,
}

const TOOL: &str = structured::TOOL_NAME;

/// The text of the result of call `id` that the model's request `n` carried.
fn result_text(model: &ScriptedModel, n: usize, id: &str) -> String {
    model.requests()[n]
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .find_map(|b| match b {
            ContentBlock::ToolResult(r) if r.id == id => r.output.text_content(),
            _ => None,
        })
        .unwrap_or_else(|| panic!("request {n} carries no result of {id}"))
}

#[tokio::test]
async fn accepted_output_ends_the_reply_with_a_typed_value() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::tool_call(
            "s1",
            TOOL,
            r#"{"city":"Paris","celsius":21}"#,
        )],
    );
    let agent = Agent::builder("a").model(model.clone()).build().unwrap();
    let (msg, report) = agent
        .reply_structured::<Report>(Msg::user("user", "weather?"))
        .await
        .unwrap();
    assert_eq!(
        report,
        Report {
            city: "Paris".into(),
            celsius: 21
        }
    );
    assert_eq!(
        msg.text_content().as_deref(),
        Some("The required structured output is generated.")
    );
    assert_eq!(msg.finished_reason, Some(ReplyFinishedReason::Completed));
    // The tool was offered with the type's schema, titles removed.
    let tool = model.requests()[0]
        .tools
        .iter()
        .find(|t| t.name == TOOL)
        .cloned()
        .unwrap();
    assert_eq!(
        tool.parameters["properties"]["celsius"]["description"],
        "Degrees Celsius."
    );
    assert!(tool.parameters.get("title").is_none());
    // Mounted for that reply only.
    model.push(ScriptedResponse::text("plain"));
    agent.reply(Msg::user("user", "hi")).await.unwrap();
    assert!(model.requests()[1].tools.iter().all(|t| t.name != TOOL));
}

#[tokio::test]
async fn rejected_output_goes_back_to_the_model_then_accepted() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("s1", TOOL, r#"{"city":"Paris"}"#),
            ScriptedResponse::tool_call("s2", TOOL, r#"{"city":"Paris","celsius":21}"#),
        ],
    );
    let agent = Agent::builder("a").model(model.clone()).build().unwrap();
    let (_, report) = agent
        .reply_structured::<Report>(Msg::user("user", "weather?"))
        .await
        .unwrap();
    assert_eq!(report.celsius, 21);
    let error = result_text(&model, 1, "s1");
    assert_eq!(
        error,
        "Input validation failed for tool 'GenerateStructuredOutput': 'celsius' is a required property (at $)"
    );
}

/// A value out of the range of the field's Rust type (`i32` is `"format": "int32"`) goes back
/// to the model as a validation error, as a missing field does: accepted, it failed to decode
/// after the reply had ended, and the model never knew.
#[tokio::test]
async fn an_integer_out_of_its_types_range_goes_back_to_the_model() {
    for (args, expected) in [
        (
            r#"{"city":"Paris","celsius":3000000000}"#,
            "3000000000 is greater than the maximum of 2147483647 (int32) (at $.celsius)",
        ),
        (
            r#"{"city":"Paris","celsius":-3000000000}"#,
            "-3000000000 is less than the minimum of -2147483648 (int32) (at $.celsius)",
        ),
    ] {
        let model = ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("s1", TOOL, args),
                ScriptedResponse::tool_call("s2", TOOL, r#"{"city":"Paris","celsius":21}"#),
            ],
        );
        let agent = Agent::builder("a").model(model.clone()).build().unwrap();
        let (_, report) = agent
            .reply_structured::<Report>(Msg::user("user", "weather?"))
            .await
            .unwrap();
        assert_eq!(report.celsius, 21);
        let error = result_text(&model, 1, "s1");
        assert_eq!(
            error,
            format!("Input validation failed for tool 'GenerateStructuredOutput': {expected}")
        );
    }
}

/// A type whose schema is not an object (a `Vec`, an enum) is refused before any model call:
/// a tool's arguments are an object, so the model could never give a valid one.
#[tokio::test]
async fn a_structured_type_that_is_not_an_object_is_refused_before_any_model_call() {
    /// A choice.
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    enum Choice {
        /// Yes.
        Yes,
        /// No.
        No,
    }
    let model = ScriptedModel::new("m", Vec::<ScriptedResponse>::new());
    let agent = Agent::builder("a").model(model.clone()).build().unwrap();
    let err = agent
        .reply_structured::<Vec<String>>(Msg::user("user", "cities?"))
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::Validation(_)), "{err:?}");
    assert!(err.to_string().contains("must be a JSON object"), "{err}");
    let err = agent
        .reply_structured::<Choice>(Msg::user("user", "yes?"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("'Choice' must be a JSON object"), "{err}");
    let err = agent
        .reply_structured::<u32>(Msg::user("user", "a number?"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("must be a JSON object"), "{err}");
    assert_eq!(model.calls(), 0);
    assert!(agent.state().context.is_empty(), "nothing stored");

    // A newtype struct's root `$ref` is inlined (its root typed as providers require), so it
    // is taken; an internally tagged enum's root `oneOf`, which providers refuse, is not.
    /// A wrapped report.
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    struct Wrapped(Report);
    /// A shape.
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    #[serde(tag = "kind")]
    #[allow(dead_code)] // never decoded: refused first
    enum Shape {
        /// A circle.
        Circle {
            /// Its radius.
            r: u32,
        },
        /// A square.
        Square {
            /// Its side.
            side: u32,
        },
    }
    model.push(ScriptedResponse::tool_call(
        "s2",
        TOOL,
        r#"{"city":"Paris","celsius":21}"#,
    ));
    let (_, wrapped) = agent
        .reply_structured::<Wrapped>(Msg::user("user", "weather?"))
        .await
        .unwrap();
    assert_eq!(wrapped.0.celsius, 21);
    let offered = model.requests()[0]
        .tools
        .iter()
        .find(|t| t.name == TOOL)
        .cloned()
        .unwrap();
    assert_eq!(offered.parameters["type"], "object", "{}", offered.parameters);
    let err = agent
        .reply_structured::<Shape>(Msg::user("user", "shape?"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("'Shape' must be a JSON object"), "{err}");
    assert_eq!(model.calls(), 1);
}

#[tokio::test]
async fn a_text_answer_gets_the_reminder_hint_and_another_round() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::text("It is 21 degrees."),
            ScriptedResponse::tool_call("s1", TOOL, r#"{"city":"P","celsius":21}"#),
        ],
    );
    let agent = Agent::builder("a").model(model.clone()).build().unwrap();
    agent
        .reply_structured::<Report>(Msg::user("user", "weather?"))
        .await
        .unwrap();
    let hint = model.requests()[1]
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .find_map(|b| match b {
            ContentBlock::Hint(h) => h.text(),
            _ => None,
        })
        .unwrap();
    assert!(
        hint.contains("You're required to generate structured output by calling the 'GenerateStructuredOutput' tool.")
    );
}

#[tokio::test]
async fn gives_up_after_the_grace_iterations() {
    // max_iters 1 + grace 2: rounds at iterations 0, 1 (forced tool choice), 2 (forced), then exit.
    let bad = |id: &str| ScriptedResponse::tool_call(id, TOOL, r#"{"city": 3}"#);
    let model = ScriptedModel::new("m", [bad("s1"), bad("s2"), bad("s3"), bad("s4")]);
    let agent = Agent::builder("a")
        .model(model.clone())
        .max_iters(1)
        .structured_output_grace_iters(2)
        .build()
        .unwrap();
    let out = collect(agent.reply_stream_structured(Msg::user("user", "?"), structured::schema_for::<Report>())).await;
    let msg = out.final_msg.clone().unwrap();
    assert_eq!(msg.finished_reason, Some(ReplyFinishedReason::ExceedMaxIters));
    assert_eq!(
        msg.text_content().as_deref(),
        Some("The maximum reasoning-acting iterations are exceeded.")
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].tool_choice, None);
    assert_eq!(
        requests[1].tool_choice.as_ref().map(|c| c.mode.clone()),
        Some(ToolChoiceMode::Tool(TOOL.into()))
    );
    let kinds = out.kinds();
    assert_eq!(&kinds[kinds.len() - 2..], ["EXCEED_MAX_ITERS", "REPLY_END"]);
    // The typed accessor says why there is no value.
    let err = towerscope_agent::structured_value::<Report>(&msg).unwrap_err();
    assert!(matches!(err, AgentError::Validation(_)), "{err}");
}

#[tokio::test]
async fn repaired_and_coerced_output_is_the_value_the_caller_gets() {
    // A number sent as a string and an object cut short: the toolkit repairs and coerces the
    // input once, and the typed value is built from what was validated.
    for input in [r#"{"city":"Paris","celsius":"21"}"#, r#"{"city":"Paris","celsius":21"#] {
        let model = ScriptedModel::new("m", [ScriptedResponse::tool_call("s1", TOOL, input)]);
        let agent = Agent::builder("a").model(model.clone()).build().unwrap();
        let (msg, report) = agent
            .reply_structured::<Report>(Msg::user("user", "weather?"))
            .await
            .unwrap();
        assert_eq!(
            report,
            Report {
                city: "Paris".into(),
                celsius: 21
            },
            "{input}"
        );
        assert_eq!(msg.finished_reason, Some(ReplyFinishedReason::Completed), "{input}");
        assert_eq!(model.requests().len(), 1, "{input}: accepted at once, no second round");
    }
}
