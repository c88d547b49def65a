//! The [`Tool`] trait and its error.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;

use futures_core::Stream;
use serde_json::Value;
use towerscope_core::{PermissionDecision, ToolChunk, ToolInfo};

/// The stream a tool answers with: chunks of its result, or an error for the model.
pub type ToolChunkStream = Pin<Box<dyn Stream<Item = Result<ToolChunk, ToolError>> + Send>>;

/// Something the model can call.
///
/// Most tools are [`FunctionTool`](super::FunctionTool)s built from async functions; implement
/// this trait for tools that keep their own state or build their schema at run time.
///
/// The toolkit repairs, coerces and validates the model's arguments against
/// [`input_schema`](Self::input_schema) before [`call`](Self::call) runs, so `call` receives a
/// value that matches the schema (unless a middleware overrode the arguments).
///
/// ```
/// use futures_util::stream;
/// use serde_json::{Value, json};
/// use towerscope_agent::toolkit::{Tool, ToolChunkStream};
/// use towerscope_core::ToolChunk;
///
/// struct Clock {
///     schema: Value,
/// }
///
/// impl Tool for Clock {
///     fn name(&self) -> &str {
///         "clock"
///     }
///     fn description(&self) -> &str {
///         "The current time."
///     }
///     fn input_schema(&self) -> &Value {
///         &self.schema
///     }
///     fn read_only(&self) -> bool {
///         true
///     }
///     fn call(&self, _input: Value) -> ToolChunkStream {
///         Box::pin(stream::iter([Ok(ToolChunk::text("12:00"))]))
///     }
/// }
///
/// let clock = Clock { schema: json!({"type": "object", "properties": {}}) };
/// assert!(clock.info().read_only);
/// assert!(clock.info().concurrency_safe);
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls the tool by.
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// The JSON schema of the arguments (an object schema, without titles).
    fn input_schema(&self) -> &Value;

    /// The same schema, shared: the toolkit keeps one copy for the model and the validator.
    /// The default copies [`input_schema`](Self::input_schema) once, when the tool is added;
    /// a tool that already holds its schema in an `Arc` returns a clone of it.
    fn shared_input_schema(&self) -> Arc<Value> {
        Arc::new(self.input_schema().clone())
    }

    /// Whether calls may run concurrently with other concurrency-safe calls (default: `true`).
    fn concurrency_safe(&self) -> bool {
        true
    }

    /// Whether the tool only reads, so calls are allowed without asking (default: `false`).
    fn read_only(&self) -> bool {
        false
    }

    /// Whether this call only reads (the reference's `check_read_only`; default:
    /// [`read_only`](Self::read_only)). Read-only calls are allowed in every permission mode
    /// unless a deny or ask rule names the tool.
    fn read_only_call(&self, input: &Value) -> bool {
        let _ = input;
        self.read_only()
    }

    /// Whether calls may destroy or overwrite data (MCP's `destructiveHint`; default: `false`).
    /// With no rule and no opinion of the tool, a destructive call is asked about in the
    /// `Default` and `AcceptEdits` permission modes (and denied in `DontAsk`).
    fn destructive(&self) -> bool {
        false
    }

    /// Whether this call must be confirmed by the user whatever the allow rules say (the
    /// reference's bypass-immune ask: for calls such as `rm -rf /`; default: `false`). The
    /// `Bypass` permission mode skips it, as the reference does; `DontAsk` denies the call.
    fn requires_confirmation(&self, input: &Value) -> bool {
        let _ = input;
        false
    }

    /// Whether the tool is executed outside the agent (default: `false`). The agent hands such
    /// calls to the caller with `REQUIRE_EXTERNAL_EXECUTION` and never calls [`call`](Self::call).
    fn external(&self) -> bool {
        false
    }

    /// The tool's own opinion on a call with this (validated) input; `None` (the default) has no
    /// opinion and leaves the decision to the permission rules.
    fn check_permission(&self, input: &Value) -> Option<PermissionDecision> {
        let _ = input;
        None
    }

    /// Whether a permission rule's pattern (its
    /// [`rule_content`](towerscope_core::PermissionRule::rule_content): a command prefix, a path
    /// glob, as this tool's suggested rules write it) covers a call with this input. `None` (the
    /// default): the tool does not read patterns, so a rule with one allows none of its calls,
    /// and denies or asks about all of them. Rules without a pattern cover every call.
    fn matches_rule(&self, content: &str, input: &Value) -> Option<bool> {
        let _ = (content, input);
        None
    }

    /// Whether [`read_only_call`](Self::read_only_call),
    /// [`requires_confirmation`](Self::requires_confirmation) or
    /// [`check_permission`](Self::check_permission) look at the arguments (default: `true`).
    ///
    /// Say `false` only when the three keep their defaults (a [`FunctionTool`](super::FunctionTool)
    /// says `false` unless it was given a confirmation or permission check): the agent then
    /// calls none of them, and a call whose text already is what the schema asks for, as it is
    /// (an object schema of scalar properties), is checked and run without its parse into a
    /// [`Value`] (see [`call_text`](Self::call_text)). Asked once, when the tool is added.
    fn decides_on_input(&self) -> bool {
        true
    }

    /// Whether the toolkit compiles the schema's `pattern`s and `patternProperties` and checks
    /// the arguments against them (default: `true`). Every other keyword is checked either way;
    /// a pattern not compiled holds nothing back (the properties it would cover are taken as
    /// `additionalProperties` allows them, unchecked).
    ///
    /// Say `false` for a schema that someone the application does not trust wrote, for a tool
    /// that the agent does not run: a pattern of a few bytes (`^.{0,8000}$`) compiles to about a
    /// megabyte, so a client's schemas could make the server compile gigabytes.
    /// AG-UI's front-end tools (`towerscope_serve::agui::FrontendTool`), declared by a client
    /// and run in its browser, say `false`. Asked once, when the tool is added.
    fn checks_patterns(&self) -> bool {
        true
    }

    /// Runs the tool with its arguments as JSON text that already is what the schema asks for,
    /// as it is (an object of the right scalar types, nothing to repair or coerce), so the
    /// tool may read them without the agent's parse into a [`Value`] (default: `None`, which
    /// has the agent parse the text and [`call`](Self::call) the tool).
    ///
    /// `None` also when the tool cannot read this text after all: the agent then parses it and
    /// calls [`call`](Self::call), so a tool answers the same either way. A
    /// [`FunctionTool`](super::FunctionTool) built from a typed function deserializes its
    /// arguments' type from the text.
    fn call_text(&self, text: &str) -> Option<ToolChunkStream> {
        let _ = text;
        None
    }

    /// Runs the tool. Errors (an `Err` item) end the call with an error result for the model;
    /// so does a panic, which the toolkit catches.
    fn call(&self, input: Value) -> ToolChunkStream;

    /// What middleware sees of the tool.
    fn info(&self) -> ToolInfo {
        ToolInfo {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            concurrency_safe: self.concurrency_safe(),
            read_only: self.read_only(),
            external: self.external(),
        }
    }
}

/// A shared tool is a tool, so an `Arc<dyn Tool>` can be added to a [`Toolkit`](super::Toolkit).
impl<T: Tool + ?Sized> Tool for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn description(&self) -> &str {
        (**self).description()
    }

    fn input_schema(&self) -> &Value {
        (**self).input_schema()
    }

    fn shared_input_schema(&self) -> Arc<Value> {
        (**self).shared_input_schema()
    }

    fn concurrency_safe(&self) -> bool {
        (**self).concurrency_safe()
    }

    fn read_only(&self) -> bool {
        (**self).read_only()
    }

    fn external(&self) -> bool {
        (**self).external()
    }

    fn read_only_call(&self, input: &Value) -> bool {
        (**self).read_only_call(input)
    }

    fn destructive(&self) -> bool {
        (**self).destructive()
    }

    fn requires_confirmation(&self, input: &Value) -> bool {
        (**self).requires_confirmation(input)
    }

    fn check_permission(&self, input: &Value) -> Option<PermissionDecision> {
        (**self).check_permission(input)
    }

    fn matches_rule(&self, content: &str, input: &Value) -> Option<bool> {
        (**self).matches_rule(content, input)
    }

    fn decides_on_input(&self) -> bool {
        (**self).decides_on_input()
    }

    fn checks_patterns(&self) -> bool {
        (**self).checks_patterns()
    }

    fn call_text(&self, text: &str) -> Option<ToolChunkStream> {
        (**self).call_text(text)
    }

    fn call(&self, input: Value) -> ToolChunkStream {
        (**self).call(input)
    }

    fn info(&self) -> ToolInfo {
        (**self).info()
    }
}

/// A tool failure, with a message for the model.
///
/// It becomes an error chunk whose text is the message, and the call's result is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    message: String,
}

impl ToolError {
    /// An error with this message for the model.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message for the model.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The message, owned.
    pub fn into_message(self) -> String {
        self.message
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self { message }
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        Self {
            message: message.to_owned(),
        }
    }
}
