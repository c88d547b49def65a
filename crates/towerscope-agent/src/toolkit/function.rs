//! [`FunctionTool`]: a tool made of an async Rust function.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use futures_util::StreamExt;
use pin_project_lite::pin_project;
use serde::de::DeserializeOwned;
use serde_json::Value;
use towerscope_core::{PermissionDecision, ToolChunk};

use super::schema::{args_schema, strip_titles};
use super::{IntoToolResult, Tool, ToolChunkStream, ToolError};

type CallFn = Box<dyn Fn(Value) -> ToolChunkStream + Send + Sync>;
/// Runs the function with arguments read from text ([`Tool::call_text`]); `None` for text its
/// type does not read (the agent then parses the text and calls [`CallFn`], whose error is
/// the one reported).
type TextCallFn = Box<dyn Fn(&str) -> Option<ToolChunkStream> + Send + Sync>;
type PermissionFn = Box<dyn Fn(&Value) -> Option<PermissionDecision> + Send + Sync>;

/// A tool made of an async function whose argument is a typed struct.
///
/// The input schema is the struct's JSON schema (`schemars`), without titles: field doc comments
/// become property descriptions, and the struct's doc comment becomes the tool's description
/// (unless [`description`](Self::description) sets one). The toolkit repairs and validates the
/// model's arguments before the function runs, so a call only fails to deserialize when a
/// middleware overrode the arguments; that failure is an error result for the model.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use towerscope_agent::toolkit::{FunctionTool, Tool};
///
/// /// Get the current weather of a city.
/// #[derive(Deserialize, JsonSchema)]
/// struct Weather {
///     /// The city, in English.
///     city: String,
/// }
///
/// let tool = FunctionTool::new("get_weather", |args: Weather| async move { format!("Sunny in {}", args.city) })
///     .read_only(true);
/// // The builders share their names with `Tool`'s getters; `info()` reads them all.
/// let info = tool.info();
/// assert_eq!(info.description, "Get the current weather of a city.");
/// assert!(info.read_only);
/// assert_eq!(tool.input_schema()["properties"]["city"]["description"], "The city, in English.");
/// ```
pub struct FunctionTool {
    name: String,
    description: String,
    schema: Arc<Value>,
    concurrency_safe: bool,
    read_only: bool,
    destructive: bool,
    confirm: Option<ConfirmFn>,
    permission: Option<PermissionFn>,
    rule_matcher: Option<RuleMatchFn>,
    call: CallFn,
    /// The typed function's reading of its arguments from text (none for a hand-written
    /// schema, whose function takes a [`Value`]).
    call_text: Option<TextCallFn>,
}

/// Says whether a call must always be confirmed.
type ConfirmFn = Box<dyn Fn(&Value) -> bool + Send + Sync>;

/// Says whether a permission rule's pattern covers a call.
type RuleMatchFn = Box<dyn Fn(&str, &Value) -> bool + Send + Sync>;

impl FunctionTool {
    /// A tool running `f` with the arguments deserialized into `Args`.
    pub fn new<Args, F, Fut, R>(name: impl Into<String>, f: F) -> Self
    where
        Args: schemars::JsonSchema + DeserializeOwned + Send + 'static,
        F: Fn(Args) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult,
    {
        let name = name.into();
        let (schema, description) = args_schema::<Args>();
        let tool = name.clone();
        let f = Arc::new(f);
        let text_f = Arc::clone(&f);
        let call = move |input: Value| -> ToolChunkStream {
            match serde_json::from_value::<Args>(input) {
                Ok(args) => Box::pin(Once { fut: Some(f(args)) }),
                Err(err) => failed(&tool, &err),
            }
        };
        let call_text = move |text: &str| -> Option<ToolChunkStream> {
            let args = serde_json::from_str::<Args>(text).ok()?;
            Some(Box::pin(Once {
                fut: Some(text_f(args)),
            }))
        };
        let mut tool = Self::from_parts(name, description.unwrap_or_default(), schema, Box::new(call));
        tool.call_text = Some(Box::new(call_text));
        tool
    }

    /// A tool with a hand-written input schema, running `f` with the validated arguments.
    ///
    /// ```
    /// use serde_json::{Value, json};
    /// use towerscope_agent::toolkit::{FunctionTool, Tool};
    ///
    /// let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    /// let tool = FunctionTool::with_schema("echo", "Repeat the text.", schema, |input: Value| async move {
    ///     input["text"].as_str().unwrap_or_default().to_owned()
    /// });
    /// assert_eq!(tool.name(), "echo");
    /// ```
    pub fn with_schema<F, Fut, R>(name: impl Into<String>, description: impl Into<String>, schema: Value, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult,
    {
        let mut schema = schema;
        strip_titles(&mut schema);
        let call = move |input: Value| -> ToolChunkStream { Box::pin(Once { fut: Some(f(input)) }) };
        Self::from_parts(name.into(), description.into(), Arc::new(schema), Box::new(call))
    }

    /// A tool whose function streams its result: each item is a chunk (anything
    /// [`IntoToolResult`], such as a `String`, a [`ToolChunk`] or a `Result` of one). The chunks
    /// are merged into the final result as the reference merges them; the first `Err` item ends
    /// the call with an error result.
    ///
    /// ```
    /// use futures_util::stream;
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// use towerscope_agent::toolkit::FunctionTool;
    ///
    /// /// Count up to a number.
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Count {
    ///     to: u32,
    /// }
    ///
    /// let tool = FunctionTool::streaming("count", |args: Count| stream::iter((1..=args.to).map(|i| format!("{i} "))));
    /// # let _ = tool;
    /// ```
    pub fn streaming<Args, F, S>(name: impl Into<String>, f: F) -> Self
    where
        Args: schemars::JsonSchema + DeserializeOwned + Send + 'static,
        F: Fn(Args) -> S + Send + Sync + 'static,
        S: Stream + Send + 'static,
        S::Item: IntoToolResult,
    {
        let name = name.into();
        let (schema, description) = args_schema::<Args>();
        let tool = name.clone();
        let f = Arc::new(f);
        let text_f = Arc::clone(&f);
        let call = move |input: Value| -> ToolChunkStream {
            match serde_json::from_value::<Args>(input) {
                Ok(args) => Box::pin(f(args).map(IntoToolResult::into_tool_result)),
                Err(err) => failed(&tool, &err),
            }
        };
        let call_text = move |text: &str| -> Option<ToolChunkStream> {
            let args = serde_json::from_str::<Args>(text).ok()?;
            Some(Box::pin(text_f(args).map(IntoToolResult::into_tool_result)))
        };
        let mut tool = Self::from_parts(name, description.unwrap_or_default(), schema, Box::new(call));
        tool.call_text = Some(Box::new(call_text));
        tool
    }

    fn from_parts(name: String, description: String, schema: Arc<Value>, call: CallFn) -> Self {
        Self {
            name,
            description,
            schema,
            concurrency_safe: true,
            read_only: false,
            destructive: false,
            confirm: None,
            permission: None,
            rule_matcher: None,
            call,
            call_text: None,
        }
    }

    /// Sets the description offered to the model.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets whether calls may run concurrently with other safe calls (default `true`).
    #[must_use]
    pub fn concurrency_safe(mut self, safe: bool) -> Self {
        self.concurrency_safe = safe;
        self
    }

    /// Sets whether the tool only reads, so its calls are allowed without asking (default `false`).
    #[must_use]
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Sets whether calls may destroy or overwrite data (default `false`; see
    /// [`Tool::destructive`]).
    #[must_use]
    pub fn destructive(mut self, destructive: bool) -> Self {
        self.destructive = destructive;
        self
    }

    /// Sets which calls must be confirmed by the user whatever the allow rules say (see
    /// [`Tool::requires_confirmation`]).
    #[must_use]
    pub fn requires_confirmation(mut self, check: impl Fn(&Value) -> bool + Send + Sync + 'static) -> Self {
        self.confirm = Some(Box::new(check));
        self
    }

    /// Sets the tool's own permission check, given the validated input (see
    /// [`Tool::check_permission`]).
    #[must_use]
    pub fn permission(mut self, check: impl Fn(&Value) -> Option<PermissionDecision> + Send + Sync + 'static) -> Self {
        self.permission = Some(Box::new(check));
        self
    }

    /// Sets how a permission rule's pattern (the `rule_content` of the rules this tool's
    /// [`permission`](Self::permission) check suggests: a command prefix, a path glob) is
    /// matched against a call's input (see [`Tool::matches_rule`]). Without it, a rule with a
    /// pattern allows none of the tool's calls.
    ///
    /// ```
    /// use serde_json::{Value, json};
    /// use towerscope_agent::toolkit::{FunctionTool, Tool};
    ///
    /// let shell = FunctionTool::with_schema("shell", "Runs a command.", json!({"type": "object"}), |v: Value| async move {
    ///     format!("ran {}", v["cmd"])
    /// })
    /// .rule_matcher(|prefix, input| input["cmd"].as_str().is_some_and(|cmd| cmd.starts_with(prefix)));
    /// assert_eq!(shell.matches_rule("git ", &json!({"cmd": "git status"})), Some(true));
    /// assert_eq!(shell.matches_rule("git ", &json!({"cmd": "rm -rf ~"})), Some(false));
    /// ```
    #[must_use]
    pub fn rule_matcher(mut self, matches: impl Fn(&str, &Value) -> bool + Send + Sync + 'static) -> Self {
        self.rule_matcher = Some(Box::new(matches));
        self
    }
}

impl fmt::Debug for FunctionTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FunctionTool")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("schema", &self.schema)
            .field("concurrency_safe", &self.concurrency_safe)
            .field("read_only", &self.read_only)
            .field("destructive", &self.destructive)
            .field("permission", &self.permission.is_some())
            .finish_non_exhaustive()
    }
}

impl Tool for FunctionTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn shared_input_schema(&self) -> Arc<Value> {
        Arc::clone(&self.schema)
    }

    fn concurrency_safe(&self) -> bool {
        self.concurrency_safe
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn check_permission(&self, input: &Value) -> Option<PermissionDecision> {
        self.permission.as_ref().and_then(|check| check(input))
    }

    fn matches_rule(&self, content: &str, input: &Value) -> Option<bool> {
        self.rule_matcher.as_ref().map(|matches| matches(content, input))
    }

    fn destructive(&self) -> bool {
        self.destructive
    }

    fn requires_confirmation(&self, input: &Value) -> bool {
        self.confirm.as_ref().is_some_and(|check| check(input))
    }

    /// `false` unless a confirmation or permission check was given: see
    /// [`Tool::decides_on_input`].
    fn decides_on_input(&self) -> bool {
        self.confirm.is_some() || self.permission.is_some()
    }

    /// The arguments' type deserialized from `text` (a typed function; `None` for a
    /// hand-written schema).
    fn call_text(&self, text: &str) -> Option<ToolChunkStream> {
        self.call_text.as_ref().and_then(|call| call(text))
    }

    fn call(&self, input: Value) -> ToolChunkStream {
        (self.call)(input)
    }
}

/// The result of arguments that do not fit the function's type.
fn failed(tool: &str, err: &serde_json::Error) -> ToolChunkStream {
    let error = ToolError::new(format!(
        "The arguments of tool '{tool}' do not match its parameters: {err}"
    ));
    Box::pin(futures_util::stream::iter([Err(error)]))
}

pin_project! {
    /// A future's output as a stream of one chunk.
    struct Once<Fut> {
        #[pin]
        fut: Option<Fut>,
    }
}

impl<Fut> Stream for Once<Fut>
where
    Fut: Future,
    Fut::Output: IntoToolResult,
{
    type Item = Result<ToolChunk, ToolError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        let Some(fut) = this.fut.as_mut().as_pin_mut() else {
            return Poll::Ready(None);
        };
        let output = ready!(fut.poll(cx));
        this.fut.set(None);
        Poll::Ready(Some(output.into_tool_result()))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::from(self.fut.is_some());
        (n, Some(n))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use futures_util::stream;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    /// Add two numbers.
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Add {
        /// The first number.
        a: i64,
        /// The second number.
        b: i64,
    }

    async fn collect(tool: &dyn Tool, input: Value) -> Vec<Result<ToolChunk, ToolError>> {
        tool.call(input).collect().await
    }

    fn text(item: &Result<ToolChunk, ToolError>) -> &str {
        item.as_ref().unwrap().content[0]
            .as_text()
            .map(|t| t.text.as_str())
            .unwrap()
    }

    #[tokio::test]
    async fn typed_function_schema_and_call() {
        let tool = FunctionTool::new("add", |args: Add| async move { (args.a + args.b).to_string() });
        assert_eq!(tool.info().description, "Add two numbers.");
        assert_eq!(
            tool.input_schema(),
            &json!({
                "type": "object",
                "properties": {
                    "a": {"type": "integer", "format": "int64", "description": "The first number."},
                    "b": {"type": "integer", "format": "int64", "description": "The second number."}
                },
                "required": ["a", "b"]
            })
        );
        let items = collect(&tool, json!({"a": 2, "b": 3})).await;
        assert_eq!(items.len(), 1);
        assert_eq!(text(&items[0]), "5");
        let info = tool.info();
        assert!(info.concurrency_safe && !info.read_only && !info.external);
    }

    #[tokio::test]
    async fn builders_and_overridden_arguments() {
        let tool = FunctionTool::new("add", |args: Add| async move {
            if args.a + args.b == 0 {
                Ok("zero")
            } else {
                Err(format!("{} is not zero", args.a + args.b))
            }
        })
        .description("Adds.")
        .concurrency_safe(false)
        .read_only(true)
        .permission(|input| (input["a"] == 0).then_some(PermissionDecision::Allow));
        let info = tool.info();
        assert_eq!(info.description, "Adds.");
        assert!(!info.concurrency_safe && info.read_only);
        assert_eq!(tool.check_permission(&json!({"a": 0})), Some(PermissionDecision::Allow));
        assert_eq!(tool.check_permission(&json!({"a": 1})), None);
        let items = collect(&tool, json!({"a": "x"})).await;
        let err = items[0].as_ref().unwrap_err();
        assert!(
            err.message()
                .starts_with("The arguments of tool 'add' do not match its parameters: invalid type"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn streaming_and_hand_written_tools() {
        let tool = FunctionTool::streaming("count", |args: Add| {
            stream::iter((args.a..=args.b).map(|i| if i < 3 { Ok(i.to_string()) } else { Err("too far") }))
        });
        let items = collect(&tool, json!({"a": 1, "b": 3})).await;
        assert_eq!(items.len(), 3);
        assert_eq!((text(&items[0]), text(&items[1])), ("1", "2"));
        assert_eq!(items[2].as_ref().unwrap_err().message(), "too far");

        let schema = json!({"title": "Echo", "type": "object", "properties": {"text": {"type": "string"}}});
        let tool = FunctionTool::with_schema("echo", "Echo.", schema, |input: Value| async move { input });
        assert!(tool.input_schema().get("title").is_none());
        let items = collect(&tool, json!({"text": "hi"})).await;
        assert_eq!(text(&items[0]), r#"{"text": "hi"}"#);
    }
}
