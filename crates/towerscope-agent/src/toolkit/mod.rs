//! Tools: the [`Tool`] trait, [`FunctionTool`]s made of async functions, and the [`Toolkit`]
//! that offers them to the model, checks each call and runs it.
//!
//! A call goes through the toolkit in two steps, as in the reference (`_execute_tool_call`):
//!
//! ```text
//! model's ToolCallBlock
//!   │
//!   ├─ Toolkit::prepare      tool exists? group active? arguments within InputLimits,
//!   │                        repaired, coerced, validated against the compiled schema
//!   │                        └─ Err(text) → error result for the model, nothing runs
//!   ├─ on_check_permission   (the agent)
//!   └─ on_acting ─▶ ToolkitService: ToolStream = Chunk, Chunk, …, Response
//! ```
//!
//! A tool's input schema is compiled when the tool is added ([`Toolkit::try_add`]): a keyword the
//! validator does not enforce (such as `unevaluatedProperties`) refuses the tool instead of
//! being silently skipped. Checking a call is bounded whatever the model sends: the raw
//! arguments are measured against [`InputLimits`] (1 MiB, 64 levels by default) before they are
//! parsed, validation is linear in the input, and values quoted back are cut to 256 bytes.
//!
//! Bad input from the model never fails a reply: an unknown tool, an inactive group, arguments
//! that do not parse or validate, a tool's error and a tool's panic all become error results
//! with a message the model can act on.
//!
//! Tools belong to groups. The `basic` group is always active; other groups
//! ([`Toolkit::create_group`]) are switched on by the model with the meta tool `reset_tools`,
//! whose result carries the chosen groups in its metadata under [`ACTIVATED_GROUPS_KEY`] for the
//! agent to store.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//!
//! use futures_util::StreamExt;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use tower::ServiceExt;
//! use towerscope_agent::toolkit::{FunctionTool, Toolkit, ToolkitService};
//! use towerscope_core::{ActingRequest, AgentContext, ToolCallBlock, ToolItem, ToolResultState};
//!
//! /// Get the current weather of a city.
//! #[derive(Deserialize, JsonSchema)]
//! struct Weather {
//!     /// The city, in English.
//!     city: String,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let mut toolkit = Toolkit::new();
//! toolkit.add(FunctionTool::new("get_weather", |args: Weather| async move { format!("Sunny in {}", args.city) }));
//!
//! // The schemas offered to the model, shared between calls with the same active groups.
//! let schemas = toolkit.schemas(&[]);
//! assert_eq!(schemas[0].description, "Get the current weather of a city.");
//! assert!(Arc::ptr_eq(&schemas, &toolkit.schemas(&[])));
//!
//! // Checking a call: the truncated arguments are repaired, the number coerced to a string.
//! let call = ToolCallBlock::new("call_1", "get_weather", r#"{"city": 75"#);
//! let prepared = toolkit.prepare(&call, &[]).map_err(towerscope_core::AgentError::validation)?;
//! assert_eq!(prepared.input, serde_json::json!({"city": "75"}));
//! let unknown = toolkit.prepare(&ToolCallBlock::new("call_2", "nope", "{}"), &[]).unwrap_err();
//! assert_eq!(unknown, "ToolNotFoundError: The tool named 'nope' doesn't exist.");
//!
//! // Running it, as the innermost `on_acting` service.
//! let call = ToolCallBlock::new("call_1", "get_weather", r#"{"city": "Paris"}"#);
//! // Built without parsed arguments, the service parses and validates the call's text itself.
//! let req = ActingRequest::new(AgentContext::new("agent", "session", "reply"), call, prepared.info);
//! let mut stream = ToolkitService::new(Arc::new(toolkit)).oneshot(req).await?;
//! let mut items = Vec::new();
//! while let Some(item) = stream.next().await {
//!     items.push(item?);
//! }
//! let Some(ToolItem::Response(response)) = items.last() else { panic!("the response comes last") };
//! assert_eq!(response.id, "call_1");
//! assert_eq!(response.state, ToolResultState::Success);
//! assert_eq!(response.text_content().as_deref(), Some("Sunny in Paris"));
//! # Ok(()) }
//! ```

mod add_error;
mod coerce;
mod function;
mod group;
mod input;
mod json_repair;
mod registry;
mod result;
mod schema;
mod service;
mod tool;
mod validate;

pub use add_error::{AddToolError, ToolSchemaError, UnknownGroupError};
pub use function::FunctionTool;
pub use group::{ACTIVATED_GROUPS_KEY, ActiveToolGroups, BASIC_GROUP, RESET_TOOLS, ToolGroup};
pub use input::{InputLimits, parse_input};
pub use json_repair::parse_with_repair;
pub use registry::{PreparedCall, Toolkit};
pub use result::{IntoToolResult, Json};
pub use schema::strip_titles;

/// How much of a tool's name error messages repeat (an unknown tool's, or one a confirmation
/// names).
const MAX_NAME_SHOWN: usize = 256;

/// A tool name as error messages repeat it: cut to [`MAX_NAME_SHOWN`] bytes with a marker.
pub(crate) fn truncate_name(name: &str) -> std::borrow::Cow<'_, str> {
    validate::truncate(name, MAX_NAME_SHOWN)
}
pub use service::ToolkitService;
pub use tool::{Tool, ToolChunkStream, ToolError};
pub(crate) use validate::truncate;
pub use validate::{CompiledSchema, SchemaError, ValidationError, validate};

#[cfg(test)]
mod tests;
