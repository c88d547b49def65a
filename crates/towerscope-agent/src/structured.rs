//! Structured output: the `GenerateStructuredOutput` tool, mounted for one reply.
//!
//! [`Agent::reply_structured`](crate::Agent::reply_structured) takes the schema from a Rust type
//! (`T: JsonSchema + DeserializeOwned`). For that reply the model is offered the tool
//! `GenerateStructuredOutput` whose input schema is `T`'s; its arguments are validated like any
//! tool's (errors go back to the model), and the reply ends once valid output was generated.
//!
//! # Example
//!
//! ```
//! use towerscope_agent::{Agent, structured::TOOL_NAME};
//! use towerscope_core::Msg;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! /// A city's weather.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Weather {
//!     /// Degrees Celsius.
//!     celsius: i32,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let model = ScriptedModel::new("m", [ScriptedResponse::tool_call("c1", TOOL_NAME, r#"{"celsius": 21}"#)]);
//! let agent = Agent::builder("a").model(model).build()?;
//! let (_msg, weather) = agent.reply_structured::<Weather>(Msg::user("user", "Paris?")).await?;
//! assert_eq!(weather.celsius, 21);
//! # Ok(()) }
//! ```

use serde_json::Value;
use towerscope_core::{StructuredSchema, ToolSchema};

use crate::state::ReplyContext;

/// The name of the structured-output tool.
pub const TOOL_NAME: &str = "GenerateStructuredOutput";

/// The text the tool returns on success.
pub(crate) const SUCCESS_TEXT: &str = "Structured output generated successfully.";

/// The key of the structured-output tool's response metadata that carries the validated
/// output back to the loop, which stores it in the reply context.
pub(crate) const OUTPUT_KEY: &str = "structured_output";

/// The schema the reply in progress must satisfy, if any.
pub(crate) fn mounted(reply: &ReplyContext) -> Option<StructuredSchema> {
    reply.structured_schema.as_ref().map(|schema| StructuredSchema {
        name: reply.structured_schema_name.clone().unwrap_or_default(),
        schema: schema.clone(),
    })
}

/// The tool schema offered to the model.
pub(crate) fn tool_schema(schema: &StructuredSchema) -> ToolSchema {
    ToolSchema::new(
        TOOL_NAME,
        "Generate the required structured output. Call this tool with the final answer as its arguments.",
        schema.schema.clone(),
    )
}

/// The structured-output schema of a Rust type, with titles removed.
pub fn schema_for<T: schemars::JsonSchema>() -> StructuredSchema {
    let schema = schemars::schema_for!(T);
    let mut value = serde_json::to_value(&schema).unwrap_or(Value::Null);
    crate::toolkit::strip_titles(&mut value);
    if let Value::Object(map) = &mut value {
        map.remove("$schema");
    }
    inline_root_ref(&mut value);
    StructuredSchema {
        name: T::schema_name().into_owned(),
        schema: value,
    }
}
/// Whether `schema`'s root is typed `object`, as providers require of a tool's parameters
/// (OpenAI and Anthropic refuse a root `$ref`, `oneOf` or `anyOf`).
pub(crate) fn is_object_root(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        _ => false,
    }
}

/// A root that only refers to a definition (a newtype struct's `$ref`) becomes that definition,
/// its `$defs` kept, so that its root is typed as the providers require.
fn inline_root_ref(schema: &mut Value) {
    let Some(root) = schema.as_object() else {
        return;
    };
    if root.contains_key("type") {
        return;
    }
    let Some(target) = root
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| schema.pointer(pointer))
        .and_then(Value::as_object)
        .cloned()
    else {
        return;
    };
    if let Some(root) = schema.as_object_mut() {
        root.remove("$ref");
        for (key, value) in target {
            root.entry(key).or_insert(value);
        }
    }
}
