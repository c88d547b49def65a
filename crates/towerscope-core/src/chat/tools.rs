//! What the model is told about tools: which it may or must call, and their schemas.

use std::fmt;

use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::AgentError;

/// Whether and which tool the model must call. Serialized as a plain string: `"auto"`, `"none"`,
/// `"required"`, or any other string, which is the name of the tool to force.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ToolChoiceMode {
    /// The model decides whether to call a tool.
    Auto,
    /// The model must not call any tool.
    None,
    /// The model must call at least one tool.
    Required,
    /// The model must call exactly this tool.
    Tool(String),
}

impl ToolChoiceMode {
    /// The mode's wire string.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Auto => "auto",
            Self::None => "none",
            Self::Required => "required",
            Self::Tool(name) => name,
        }
    }
}

impl From<&str> for ToolChoiceMode {
    fn from(mode: &str) -> Self {
        match mode {
            "auto" => Self::Auto,
            "none" => Self::None,
            "required" => Self::Required,
            name => Self::Tool(name.to_owned()),
        }
    }
}

impl From<String> for ToolChoiceMode {
    fn from(mode: String) -> Self {
        match mode.as_str() {
            "auto" | "none" | "required" => Self::from(mode.as_str()),
            _ => Self::Tool(mode),
        }
    }
}

impl fmt::Display for ToolChoiceMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ToolChoiceMode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ToolChoiceMode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

/// The tool choice of a model call: a mode, and optionally the only tools to offer.
///
/// `tools` filters the schemas sent to the model and is the allow-list for a forced tool.
/// Prefer forcing a tool by mode over narrowing `tools`: a changed tool list invalidates prompt
/// caches.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolChoice {
    /// Whether and which tool the model must call.
    pub mode: ToolChoiceMode,
    /// The only tools to offer, if restricted.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
}

impl ToolChoice {
    /// The model decides.
    pub fn auto() -> Self {
        Self {
            mode: ToolChoiceMode::Auto,
            tools: None,
        }
    }

    /// The model must not call a tool.
    pub fn none() -> Self {
        Self {
            mode: ToolChoiceMode::None,
            tools: None,
        }
    }

    /// The model must call some tool.
    pub fn required() -> Self {
        Self {
            mode: ToolChoiceMode::Required,
            tools: None,
        }
    }

    /// The model must call the tool `name`.
    pub fn tool(name: impl Into<String>) -> Self {
        Self {
            mode: ToolChoiceMode::Tool(name.into()),
            tools: None,
        }
    }

    /// A mode restricted to the given tools.
    pub fn allow_list(mode: ToolChoiceMode, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            mode,
            tools: Some(tools.into_iter().map(Into::into).collect()),
        }
    }

    /// The name of the forced tool, if the mode forces one.
    pub fn forced_tool(&self) -> Option<&str> {
        match &self.mode {
            ToolChoiceMode::Tool(name) => Some(name),
            _ => None,
        }
    }

    /// Checks that a forced tool is in the allow-list, when there is one.
    pub fn validate(&self) -> Result<(), AgentError> {
        match (self.forced_tool(), &self.tools) {
            (Some(name), Some(tools)) if !tools.iter().any(|tool| tool == name) => {
                Err(AgentError::validation(format!(
                    "tool choice forces '{name}', which is not in its tools [{}]; add it to `tools` or force another tool",
                    tools.join(", ")
                )))
            }
            _ => Ok(()),
        }
    }
}

/// A tool as offered to the model, in OpenAI function format:
/// `{"type": "function", "function": {"name", "description", "parameters"}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSchema {
    /// The tool's name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The JSON schema of the arguments (shared: one schema serves every agent and every
    /// request that offers the tool).
    pub parameters: Arc<Value>,
}

impl ToolSchema {
    /// A tool schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: impl Into<Arc<Value>>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters: parameters.into(),
        }
    }
}

#[derive(Serialize)]
struct FunctionSchemaRef<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionRef<'a>,
}

#[derive(Serialize)]
struct FunctionRef<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

impl Serialize for ToolSchema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let function = FunctionRef {
            name: &self.name,
            description: &self.description,
            parameters: &self.parameters,
        };
        FunctionSchemaRef {
            kind: "function",
            function,
        }
        .serialize(serializer)
    }
}

#[derive(Deserialize)]
struct FunctionSchemaWire {
    #[serde(rename = "type")]
    kind: String,
    function: FunctionWire,
}

#[derive(Deserialize)]
struct FunctionWire {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default = "empty_object")]
    parameters: Value,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

impl<'de> Deserialize<'de> for ToolSchema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = FunctionSchemaWire::deserialize(deserializer)?;
        if wire.kind != "function" {
            return Err(D::Error::custom(format!(
                "unsupported tool schema type `{}`, expected `function`",
                wire.kind
            )));
        }
        let FunctionWire {
            name,
            description,
            parameters,
        } = wire.function;
        Ok(Self {
            name,
            description,
            parameters: Arc::new(parameters),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn modes_are_plain_strings() {
        for (choice, mode) in [
            (ToolChoice::auto(), "auto"),
            (ToolChoice::none(), "none"),
            (ToolChoice::required(), "required"),
            (ToolChoice::tool("search"), "search"),
        ] {
            let value = serde_json::to_value(&choice).unwrap();
            assert_eq!(value, json!({"mode": mode, "tools": null}));
            assert_eq!(serde_json::from_value::<ToolChoice>(value).unwrap(), choice);
        }
        let parsed: ToolChoice = serde_json::from_value(json!({"mode": "required", "tools": ["a", "b"]})).unwrap();
        assert_eq!(parsed, ToolChoice::allow_list(ToolChoiceMode::Required, ["a", "b"]));
        assert_eq!(ToolChoiceMode::from(String::from("none")), ToolChoiceMode::None);
        assert_eq!(ToolChoice::tool("x").forced_tool(), Some("x"));
        assert_eq!(ToolChoice::auto().forced_tool(), None);
    }

    #[test]
    fn forced_tool_must_be_allowed() {
        assert!(
            ToolChoice::allow_list(ToolChoiceMode::Tool("a".into()), ["a"])
                .validate()
                .is_ok()
        );
        let err = ToolChoice::allow_list(ToolChoiceMode::Tool("c".into()), ["a", "b"])
            .validate()
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("tool choice forces 'c', which is not in its tools [a, b]"),
            "{err}"
        );
        assert!(ToolChoice::tool("c").validate().is_ok());
    }

    #[test]
    fn schema_in_openai_function_format() {
        let parameters = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
        let schema = ToolSchema::new("get_weather", "Weather of a city", parameters.clone());
        let value = serde_json::to_value(&schema).unwrap();
        assert_eq!(
            value,
            json!({"type": "function", "function": {"name": "get_weather", "description": "Weather of a city", "parameters": parameters}})
        );
        assert_eq!(serde_json::from_value::<ToolSchema>(value).unwrap(), schema);
        let minimal: ToolSchema =
            serde_json::from_value(json!({"type": "function", "function": {"name": "t"}})).unwrap();
        assert_eq!(*minimal.parameters, json!({}));
        let err =
            serde_json::from_value::<ToolSchema>(json!({"type": "custom", "function": {"name": "t"}})).unwrap_err();
        assert!(
            err.to_string().contains("unsupported tool schema type `custom`"),
            "{err}"
        );
        let err = serde_json::from_value::<ToolSchema>(json!({"type": "function", "function": {}})).unwrap_err();
        assert!(err.to_string().contains("missing field `name`"), "{err}");
    }
}
