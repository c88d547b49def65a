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
    StructuredSchema {
        name: T::schema_name().into_owned(),
        schema: value,
    }
}

/// Whether a value of `schema` may be a JSON object, as a tool's arguments must be: its root
/// typed `object`, or a `$ref`, `oneOf` or `anyOf` leading to one, or nothing that says
/// otherwise. `false` for a `Vec`, a number, a unit-variant enum (strings, or `const`s).
pub(crate) fn may_be_object(schema: &Value) -> bool {
    may_be_object_in(schema, schema, 0)
}

fn may_be_object_in(root: &Value, schema: &Value, depth: u32) -> bool {
    // Past this many `$ref`s and branches nested, the schema is given the benefit of the doubt.
    const MAX_DEPTH: u32 = 32;
    let Value::Object(obj) = schema else {
        return schema.as_bool().unwrap_or(true);
    };
    if depth > MAX_DEPTH {
        return true;
    }
    if let Some(kind) = obj.get("type") {
        let object = match kind {
            Value::String(t) => t == "object",
            Value::Array(types) => types.iter().any(|t| t == "object"),
            _ => true,
        };
        if !object {
            return false;
        }
    }
    if let Some(value) = obj.get("const")
        && !value.is_object()
    {
        return false;
    }
    if let Some(Value::Array(values)) = obj.get("enum")
        && !values.iter().any(Value::is_object)
    {
        return false;
    }
    if let Some(Value::String(reference)) = obj.get("$ref")
        && let Some(target) = reference.strip_prefix('#').and_then(|pointer| root.pointer(pointer))
        && !may_be_object_in(root, target, depth + 1)
    {
        return false;
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(branches)) = obj.get(key)
            && !branches.iter().any(|b| may_be_object_in(root, b, depth + 1))
        {
            return false;
        }
    }
    true
}
