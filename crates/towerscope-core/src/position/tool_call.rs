//! The requests of the two per-tool-call positions, `on_check_permission` and `on_acting`, and
//! what they share: [`ToolInfo`] and the [`PermissionDecision`].

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::{AgentContext, PermissionRule, ToolCallBlock};

/// A call's arguments as a request holds them: parsed, or the call's text, checked and
/// parsed only when somebody asks.
///
/// The agent's toolkit checks most calls' text without making a [`Value`] of it (a tool
/// whose schema is an object of scalar properties, and a text that already is what it asks
/// for); the parse is then made only for a layer or a permission check that reads it.
#[derive(Debug, Clone)]
enum Arguments {
    /// The parse, handed over.
    Parsed(Arc<Value>),
    /// The call's text is what the tool's schema asks for as it is: its plain JSON parse,
    /// made when first asked.
    Checked(OnceLock<Arc<Value>>),
}

impl Arguments {
    /// The parse of `text` (the call's `input`, which this was made for).
    fn get(&self, text: &str) -> &Arc<Value> {
        match self {
            Self::Parsed(input) => input,
            // Checked text is a JSON object; a caller that promised wrongly reads `null`.
            Self::Checked(once) => once.get_or_init(|| Arc::new(serde_json::from_str(text).unwrap_or(Value::Null))),
        }
    }

    /// Whether the text is held checked and not parsed yet.
    fn unparsed(&self) -> bool {
        matches!(self, Self::Checked(once) if once.get().is_none())
    }
}

/// What the agent knows of a tool, for middleware (tracing records the description).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The tool's name.
    pub name: String,
    /// The tool's description.
    pub description: String,
    /// Whether calls of this tool may run concurrently with other safe calls.
    pub concurrency_safe: bool,
    /// Whether the tool only reads (allowed without asking).
    pub read_only: bool,
    /// Whether the tool is executed outside the agent.
    pub external: bool,
}

/// The `on_acting` request: one validated, permitted tool call.
///
/// # One source of truth for the arguments
///
/// The tool call is read-only ([`tool_call`](Self::tool_call)); the arguments the tool receives
/// are always the call's `input` text, which a layer changes with
/// [`set_input`](Self::set_input). The agent parses that text once, before the permission check,
/// and hands the parse along ([`input`](Self::input)); after `set_input` the innermost service
/// parses the new text, repairs it, coerces it to the tool's schema and validates it exactly as
/// it does the model's, and a text that does not pass becomes the reference's error result
/// (`Input validation failed for tool '…'`), which the model sees.
///
/// The call's id and name cannot change (a `tool_call` field that compiled but did nothing was
/// the trap this replaces): the result pairs with the call the model made, and the permission
/// was decided for that tool. A layer that wants another tool's answer short-circuits and
/// answers with its own [`ToolStream`](crate::ToolStream).
///
/// ```
/// use std::sync::Arc;
/// use towerscope_core::{ActingRequest, AgentContext, ToolCallBlock, ToolInfo};
///
/// let call = ToolCallBlock::new("c1", "read_file", r#"{"path": "notes.txt"}"#);
/// let tool = ToolInfo {
///     name: "read_file".into(),
///     description: "Read a file.".into(),
///     concurrency_safe: true,
///     read_only: true,
///     external: false,
/// };
/// let mut req = ActingRequest::new(AgentContext::new("a", "s", "r"), call, tool)
///     .with_input(serde_json::json!({"path": "notes.txt"}));
/// assert_eq!(req.input(), Some(&serde_json::json!({"path": "notes.txt"})));
///
/// // A layer confines the path: the tool receives the new text, parsed and validated.
/// req.set_input(r#"{"path": "sandbox/notes.txt"}"#);
/// assert_eq!(req.tool_call().input, r#"{"path": "sandbox/notes.txt"}"#);
/// assert_eq!(req.input(), None); // parsed by the innermost service
/// assert_eq!(req.tool_call().id, "c1");
/// ```
///
/// The edit that used to compile and do nothing does not compile:
///
/// ```compile_fail
/// use std::sync::Arc;
/// use towerscope_core::ActingRequest;
///
/// fn confine(mut req: ActingRequest) -> ActingRequest {
///     Arc::make_mut(&mut req.tool_call).input = r#"{"path": "sandbox/notes.txt"}"#.to_owned();
///     req
/// }
/// ```
///
/// Nor does changing the tool:
///
/// ```compile_fail
/// use towerscope_core::ActingRequest;
///
/// fn swap(mut req: ActingRequest, other: towerscope_core::ToolInfo) -> ActingRequest {
///     req.tool = std::sync::Arc::new(other);
///     req
/// }
/// ```
#[derive(Debug, Clone)]
pub struct ActingRequest {
    /// The reply's context.
    pub ctx: AgentContext,
    tool_call: Arc<ToolCallBlock>,
    tool: Arc<ToolInfo>,
    /// The arguments of `tool_call.input`, when known; `None` again after `set_input`.
    input: Option<Arguments>,
}

impl ActingRequest {
    /// A request for `tool_call` of `tool`, whose arguments the innermost service parses (with
    /// repair and coercion) and validates before the tool runs.
    pub fn new(ctx: AgentContext, tool_call: impl Into<Arc<ToolCallBlock>>, tool: impl Into<Arc<ToolInfo>>) -> Self {
        Self {
            ctx,
            tool_call: tool_call.into(),
            tool: tool.into(),
            input: None,
        }
    }

    /// Hands over the arguments already parsed from the call's `input` (the agent parses them
    /// once, before the permission check), so the innermost service does not parse them again.
    ///
    /// They must be the parse of `tool_call().input`: the tool receives them as they are. To
    /// give the tool other arguments, use [`set_input`](Self::set_input), which is checked.
    pub fn with_input(mut self, input: impl Into<Arc<serde_json::Value>>) -> Self {
        self.input = Some(Arguments::Parsed(input.into()));
        self
    }

    /// Says that the call's `input` text is already what the tool's schema asks for, as it is:
    /// a JSON object that needs no repair or coercion and validates (the agent checks this
    /// without parsing the text into a [`Value`]). [`input`](Self::input) then parses it as
    /// plain JSON when first asked, which gives what the toolkit's checks would have given, and
    /// the innermost service hands a tool that reads its arguments from text
    /// ([`unparsed_input`](Self::unparsed_input)) the text itself.
    ///
    /// The innermost service takes the promise as it is: it does not check the text again, so
    /// a text that is not what the schema asks for reaches a tool that reads text unvalidated,
    /// and one that does not parse reads as `null`. Only the agent, which has checked the
    /// text, should make this promise; a layer changes arguments with
    /// [`set_input`](Self::set_input), which is checked.
    ///
    /// ```
    /// use towerscope_core::{ActingRequest, AgentContext, ToolCallBlock, ToolInfo};
    ///
    /// let call = ToolCallBlock::new("c1", "add", r#"{"a": 1, "b": 2}"#);
    /// let tool = ToolInfo {
    ///     name: "add".into(),
    ///     description: "Add two integers.".into(),
    ///     concurrency_safe: true,
    ///     read_only: true,
    ///     external: false,
    /// };
    /// let req = ActingRequest::new(AgentContext::new("a", "s", "r"), call, tool).with_checked_input();
    /// assert_eq!(req.unparsed_input(), Some(r#"{"a": 1, "b": 2}"#));
    /// assert_eq!(req.input(), Some(&serde_json::json!({"a": 1, "b": 2}))); // parsed when asked
    /// assert_eq!(req.unparsed_input(), None);
    /// ```
    pub fn with_checked_input(mut self) -> Self {
        self.input = Some(Arguments::Checked(OnceLock::new()));
        self
    }

    /// Whether the arguments are known (parsed, or checked as text), without parsing them:
    /// `false` after [`set_input`](Self::set_input) and for a request built with neither
    /// [`with_input`](Self::with_input) nor [`with_checked_input`](Self::with_checked_input).
    pub fn input_known(&self) -> bool {
        self.input.is_some()
    }

    /// The call's text, when the request holds it checked
    /// ([`with_checked_input`](Self::with_checked_input)) and nobody has parsed it yet.
    pub fn unparsed_input(&self) -> Option<&str> {
        self.input
            .as_ref()
            .filter(|input| input.unparsed())
            .map(|_| self.tool_call.input.as_str())
    }

    /// The tool call as the model made it (its `input` is the raw JSON text of the arguments,
    /// as [`set_input`](Self::set_input) last changed it). Read-only: see the type's docs.
    pub fn tool_call(&self) -> &Arc<ToolCallBlock> {
        &self.tool_call
    }

    /// What the agent knows of the tool being called (read-only).
    pub fn tool(&self) -> &Arc<ToolInfo> {
        &self.tool
    }

    /// The parsed, repaired, coerced and validated arguments the tool will receive, when they
    /// are known: `None` after [`set_input`](Self::set_input) (the innermost service parses the
    /// new text) and for a request built without [`with_input`](Self::with_input).
    ///
    /// Checked text ([`with_checked_input`](Self::with_checked_input)) is parsed at the first
    /// call.
    pub fn input(&self) -> Option<&serde_json::Value> {
        self.input_arc().map(|input| &**input)
    }

    /// The parsed arguments, shared, when they are known (see [`input`](Self::input)).
    pub fn input_arc(&self) -> Option<&Arc<serde_json::Value>> {
        self.input.as_ref().map(|input| input.get(&self.tool_call.input))
    }

    /// Takes the request apart, for the innermost service: the context, the tool call, the tool,
    /// and the parsed arguments when they are known (see [`input`](Self::input)).
    pub fn into_parts(
        self,
    ) -> (
        AgentContext,
        Arc<ToolCallBlock>,
        Arc<ToolInfo>,
        Option<Arc<serde_json::Value>>,
    ) {
        let input = self
            .input
            .as_ref()
            .map(|input| Arc::clone(input.get(&self.tool_call.input)));
        (self.ctx, self.tool_call, self.tool, input)
    }

    /// Replaces the call's arguments with `raw` JSON text: what the tool receives. The innermost
    /// service parses, repairs, coerces and validates it as it does the model's; text that does
    /// not pass ends the call with the reference's validation error, which the model sees.
    ///
    /// The permission was decided on the model's arguments, before `on_acting`; a layer that
    /// changes them answers for the change, as in the reference.
    pub fn set_input(&mut self, raw: impl Into<String>) {
        Arc::make_mut(&mut self.tool_call).input = raw.into();
        self.input = None;
    }
}

/// The `on_check_permission` request: the call to decide on, read-only.
///
/// The decision is about the call that will run, so a layer cannot change what the engine
/// sees without changing the call: the fields other than `ctx` have getters only (the
/// reference hands the middleware deep copies, whose edits are silently lost). A layer decides
/// differently by answering another [`PermissionDecision`], or by not calling its inner service.
///
/// ```
/// use towerscope_core::{AgentContext, PermissionRequest, ToolCallBlock, ToolInfo};
///
/// let call = ToolCallBlock::new("c1", "rm", r#"{"path": "/"}"#);
/// let tool = ToolInfo {
///     name: "rm".into(),
///     description: "Remove a file.".into(),
///     concurrency_safe: false,
///     read_only: false,
///     external: false,
/// };
/// let req = PermissionRequest::new(AgentContext::new("a", "s", "r"), call, tool, serde_json::json!({"path": "/"}));
/// assert_eq!(req.input()["path"], "/");
/// assert_eq!(req.tool_call().name, req.tool().name);
/// ```
///
/// Changing what the engine decides on does not compile:
///
/// ```compile_fail
/// use towerscope_core::PermissionRequest;
///
/// fn harmless_looking(mut req: PermissionRequest) -> PermissionRequest {
///     req.input = std::sync::Arc::new(serde_json::json!({"path": "/tmp/x"}));
///     req
/// }
/// ```
///
/// ```compile_fail
/// use std::sync::Arc;
/// use towerscope_core::PermissionRequest;
///
/// fn rename(mut req: PermissionRequest) -> PermissionRequest {
///     Arc::make_mut(&mut req.tool_call).name = "ls".to_owned();
///     req
/// }
/// ```
#[derive(Debug, Clone)]
pub struct PermissionRequest {
    /// The reply's context.
    pub ctx: AgentContext,
    tool_call: Arc<ToolCallBlock>,
    tool: Arc<ToolInfo>,
    input: Arguments,
}

impl PermissionRequest {
    /// A request to decide on `tool_call` of `tool`, whose arguments parsed to `input`.
    pub fn new(
        ctx: AgentContext,
        tool_call: impl Into<Arc<ToolCallBlock>>,
        tool: impl Into<Arc<ToolInfo>>,
        input: impl Into<Arc<serde_json::Value>>,
    ) -> Self {
        Self {
            ctx,
            tool_call: tool_call.into(),
            tool: tool.into(),
            input: Arguments::Parsed(input.into()),
        }
    }

    /// A request to decide on `tool_call` of `tool`, whose `input` text is already what the
    /// tool's schema asks for, as it is: [`input`](Self::input) parses it as plain JSON when
    /// first asked (see [`ActingRequest::with_checked_input`]; a text that does not parse reads
    /// as `null`).
    ///
    /// ```
    /// use towerscope_core::{AgentContext, PermissionRequest, ToolCallBlock, ToolInfo};
    ///
    /// let call = ToolCallBlock::new("c1", "rm", r#"{"path": "/"}"#);
    /// let tool = ToolInfo {
    ///     name: "rm".into(),
    ///     description: "Remove a file.".into(),
    ///     concurrency_safe: false,
    ///     read_only: false,
    ///     external: false,
    /// };
    /// let req = PermissionRequest::with_checked_input(AgentContext::new("a", "s", "r"), call, tool);
    /// assert_eq!(req.input()["path"], "/");
    /// ```
    pub fn with_checked_input(
        ctx: AgentContext,
        tool_call: impl Into<Arc<ToolCallBlock>>,
        tool: impl Into<Arc<ToolInfo>>,
    ) -> Self {
        Self {
            ctx,
            tool_call: tool_call.into(),
            tool: tool.into(),
            input: Arguments::Checked(OnceLock::new()),
        }
    }

    /// The tool call as the model made it.
    pub fn tool_call(&self) -> &Arc<ToolCallBlock> {
        &self.tool_call
    }

    /// What the agent knows of the tool being called.
    pub fn tool(&self) -> &Arc<ToolInfo> {
        &self.tool
    }

    /// The parsed, repaired, coerced and validated arguments the tool will receive (checked
    /// text is parsed at the first call: see [`with_checked_input`](Self::with_checked_input)).
    pub fn input(&self) -> &Arc<serde_json::Value> {
        self.input.get(&self.tool_call.input)
    }
}

/// The answer of `on_check_permission`.
#[derive(Debug, Clone, PartialEq)]
pub enum PermissionDecision {
    /// Run the tool.
    Allow,
    /// Do not run it; the message goes back to the model as a denied result.
    Deny {
        /// Why, for the model.
        message: String,
    },
    /// Ask the user first (the reply parks with `REQUIRE_USER_CONFIRM`).
    Ask {
        /// Rules the user may accept to allow similar calls from now on.
        suggested_rules: Vec<PermissionRule>,
    },
}
