//! Tool call and tool result blocks, their states, and permission rules.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::block::{MediaBlock, TextBlock, deserialize_text_or_blocks, join_text};
use crate::AgentError;
use crate::id::{Id, Timestamp, now_timestamp};

/// Where a tool call is in its life (§4.3 of the reference):
///
/// ```text
/// pending ──ALLOW──► allowed ──local tool runs──► finished
///    │                  └──external tool──► submitted ──result arrives──► finished
///    ├──ASK──► asking ──user confirms──► allowed
///    │            └──user denies──► finished
///    └──DENY / invalid input──► finished
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallState {
    /// Not yet seen by the permission system.
    #[default]
    Pending,
    /// Waiting for the user to confirm.
    Asking,
    /// Allowed, waiting to run.
    Allowed,
    /// Handed to an external executor, waiting for its result.
    Submitted,
    /// Has its result (or was denied).
    Finished,
}

/// How a tool execution ended (or that it is still running).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolResultState {
    /// The tool succeeded.
    Success,
    /// The tool, or the call's validation, failed.
    Error,
    /// The execution was interrupted.
    Interrupted,
    /// The permission system or the user denied the call.
    Denied,
    /// Still running (the default of a result block being streamed).
    #[default]
    Running,
}

impl ToolResultState {
    /// The state's wire name (`"success"`, `"error"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error => "error",
            Self::Interrupted => "interrupted",
            Self::Denied => "denied",
            Self::Running => "running",
        }
    }
}

impl fmt::Display for ToolResultState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a permission rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionBehavior {
    /// Allow matching calls.
    Allow,
    /// Deny matching calls.
    Deny,
    /// Ask the user about matching calls.
    Ask,
}

/// How an agent decides on tool calls: the reference's permission modes.
///
/// Every mode applies deny rules, then ask rules, then allows read-only calls; they differ in
/// what comes after:
///
/// | mode | tools that are not read-only |
/// |---|---|
/// | `Default` | the tool's own check, allow rules, then the agent's default permission (destructive tools ask) |
/// | `Explore` | denied: a read-only session |
/// | `AcceptEdits` | as `Default`, but edits (tools that are not destructive) are allowed whatever the default |
/// | `Bypass` | allowed, except by a deny or ask rule or the tool's own deny; the tool's asks are skipped |
/// | `DontAsk` | as `Default`, but every ask becomes a deny (nobody is there to answer) |
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionMode {
    /// Rules, the tool's own check, then the agent's default permission.
    #[default]
    Default,
    /// Read-only: calls of tools that are not read-only are denied.
    Explore,
    /// Edits are accepted: tools that are not destructive are allowed.
    AcceptEdits,
    /// Everything not denied by a rule or the tool is allowed.
    Bypass,
    /// Every ask becomes a deny.
    DontAsk,
}

/// A permission rule for a tool, such as the rule suggested when the user is asked.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PermissionRule {
    /// The tool the rule applies to.
    pub tool_name: String,
    /// A tool-specific pattern (a command prefix, a path glob), which the tool reads
    /// (`Tool::matches_rule` in `towerscope-agent`); `None` matches every call. A rule with a
    /// pattern its tool cannot read allows no call, and denies or asks about every call of the
    /// tool.
    #[serde(default)]
    pub rule_content: Option<String>,
    /// What the rule decides.
    pub behavior: PermissionBehavior,
    /// Where the rule comes from (`"suggested"`, `"userSettings"`, ...).
    pub source: String,
}

impl PermissionRule {
    /// A rule for every call of `tool_name`.
    pub fn new(tool_name: impl Into<String>, behavior: PermissionBehavior, source: impl Into<String>) -> Self {
        Self {
            tool_name: tool_name.into(),
            rule_content: None,
            behavior,
            source: source.into(),
        }
    }
}

/// A call of a tool by the model.
///
/// `input` is the raw JSON text of the arguments, as streamed by the model: it may be incomplete
/// or invalid, and is only parsed when the call is executed ([`parse_input`](Self::parse_input)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallBlock {
    /// The tool call id (also the id of its result).
    pub id: Id,
    /// The tool's name.
    pub name: String,
    /// The raw JSON arguments.
    pub input: String,
    /// Where the call is in its life.
    #[serde(default)]
    pub state: ToolCallState,
    /// The rules suggested to the user when the call asked for confirmation.
    #[serde(default)]
    pub suggested_rules: Vec<PermissionRule>,
    /// When the block was created.
    #[serde(default = "now_timestamp")]
    pub created_at: Timestamp,
    /// When the block was finished, if it was.
    #[serde(default)]
    pub finished_at: Option<Timestamp>,
}

impl ToolCallBlock {
    /// A pending tool call.
    pub fn new(id: impl Into<Id>, name: impl Into<String>, input: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input: input.into(),
            state: ToolCallState::Pending,
            suggested_rules: Vec::new(),
            created_at: now_timestamp(),
            finished_at: None,
        }
    }

    /// Parses the arguments; an empty input is an empty object.
    pub fn parse_input(&self) -> Result<Value, AgentError> {
        if self.input.trim().is_empty() {
            return Ok(Value::Object(Map::new()));
        }
        serde_json::from_str(&self.input)
            .map_err(|e| AgentError::decode(format!("input of tool call '{}'", self.name), e))
    }
}

/// The output of a tool: a raw string, or text and data blocks.
///
/// Serialized as a JSON string or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ToolOutput {
    /// A raw string (the agent's own error and interruption messages use this form).
    Text(String),
    /// Text and data blocks.
    Blocks(Vec<MediaBlock>),
}

impl ToolOutput {
    /// The output as text: the string itself, or its text blocks joined with `"\n"`.
    pub fn text_content(&self) -> Option<String> {
        match self {
            Self::Text(text) => Some(text.clone()),
            Self::Blocks(blocks) => join_text(blocks),
        }
    }

    /// The output as a list of blocks, turning a raw string into one text block first.
    pub fn blocks_mut(&mut self) -> &mut Vec<MediaBlock> {
        match self {
            Self::Blocks(blocks) => blocks,
            Self::Text(text) => {
                let first = MediaBlock::Text(TextBlock::new(std::mem::take(text)));
                *self = Self::Blocks(vec![first]);
                self.blocks_mut()
            }
        }
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<Vec<MediaBlock>> for ToolOutput {
    fn from(blocks: Vec<MediaBlock>) -> Self {
        Self::Blocks(blocks)
    }
}

impl<'de> Deserialize<'de> for ToolOutput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_text_or_blocks(deserializer)
    }
}

/// The result of a tool call; `id` is the id of the call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultBlock {
    /// The id of the tool call this result answers.
    pub id: Id,
    /// The tool's name.
    pub name: String,
    /// What the tool returned.
    pub output: ToolOutput,
    /// How the execution ended.
    #[serde(default)]
    pub state: ToolResultState,
    /// Metadata of the result, for the agent and middlewares (not sent to the model).
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// When the block was created.
    #[serde(default = "now_timestamp")]
    pub created_at: Timestamp,
    /// When the block was finished, if it was.
    #[serde(default)]
    pub finished_at: Option<Timestamp>,
}

impl ToolResultBlock {
    /// A result for the call `id`.
    pub fn new(
        id: impl Into<Id>,
        name: impl Into<String>,
        output: impl Into<ToolOutput>,
        state: ToolResultState,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            output: output.into(),
            state,
            metadata: Map::new(),
            created_at: now_timestamp(),
            finished_at: None,
        }
    }

    /// Sets the result's metadata.
    #[must_use]
    pub fn with_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = metadata;
        self
    }
}

/// A block that knows its `"type"` tag, for serializing it outside a
/// [`ContentBlock`](super::ContentBlock) (event fields hold bare tool call and result blocks, and
/// the reference writes them with their tag).
pub(crate) trait BlockTag: Serialize {
    const TAG: &'static str;
}

impl BlockTag for ToolCallBlock {
    const TAG: &'static str = "tool_call";
}

impl BlockTag for ToolResultBlock {
    const TAG: &'static str = "tool_result";
}

#[derive(Serialize)]
struct Tagged<'a, T> {
    #[serde(rename = "type")]
    tag: &'static str,
    #[serde(flatten)]
    block: &'a T,
}

/// `serialize_with` for one bare block: writes it with its `"type"` tag.
pub(crate) fn serialize_tagged<T: BlockTag, S: serde::Serializer>(block: &T, serializer: S) -> Result<S::Ok, S::Error> {
    Tagged { tag: T::TAG, block }.serialize(serializer)
}

/// `serialize_with` for a list of bare blocks: writes each with its `"type"` tag.
pub(crate) fn serialize_tagged_list<T: BlockTag, S: serde::Serializer>(
    blocks: &[T],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(blocks.iter().map(|block| Tagged { tag: T::TAG, block }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_call_json_matches_the_reference() {
        let mut call = ToolCallBlock::new("call_1", "get_weather", r#"{"city":"Paris"}"#);
        call.state = ToolCallState::Asking;
        call.suggested_rules.push(PermissionRule::new(
            "get_weather",
            PermissionBehavior::Allow,
            "suggested",
        ));
        let value = serde_json::to_value(&call).unwrap();
        assert_eq!(value["state"], "asking");
        assert_eq!(
            value["suggested_rules"],
            json!([{"tool_name": "get_weather", "rule_content": null, "behavior": "allow", "source": "suggested"}])
        );
        assert_eq!(value["finished_at"], Value::Null);
        let back: ToolCallBlock = serde_json::from_value(value).unwrap();
        assert_eq!(back, call);
        assert_eq!(call.parse_input().unwrap(), json!({"city": "Paris"}));
        let broken = ToolCallBlock::new("c", "t", "{\"a\":");
        assert!(
            broken
                .parse_input()
                .unwrap_err()
                .to_string()
                .contains("input of tool call 't'")
        );
    }

    #[test]
    fn tool_result_defaults_and_outputs() {
        let result: ToolResultBlock =
            serde_json::from_value(json!({"type": "tool_result", "id": "c1", "name": "t", "output": "raw"})).unwrap();
        assert_eq!(result.state, ToolResultState::Running);
        assert_eq!(result.output, ToolOutput::Text("raw".into()));
        let result: ToolResultBlock = serde_json::from_value(json!({
            "id": "c1", "name": "t", "state": "success",
            "output": [{"type": "text", "text": "a"}, {"type": "data", "source": {"type": "url", "url": "https://x/y.png", "media_type": "image/png"}}]
        }))
        .unwrap();
        assert_eq!(result.output.text_content().as_deref(), Some("a"));
        let err =
            serde_json::from_value::<ToolResultBlock>(json!({"id": "c1", "name": "t", "output": [{"type": "text"}]}))
                .unwrap_err();
        assert!(err.to_string().contains("missing field `text`"), "{err}");
    }

    #[test]
    fn text_output_becomes_blocks_in_place() {
        let mut output = ToolOutput::from("abc");
        output.blocks_mut().push(MediaBlock::text("def"));
        assert_eq!(output.text_content().as_deref(), Some("abc\ndef"));
    }

    #[test]
    fn bare_blocks_are_written_with_their_tag() {
        #[derive(Serialize)]
        struct Holder {
            #[serde(serialize_with = "serialize_tagged_list")]
            calls: Vec<ToolCallBlock>,
            #[serde(serialize_with = "serialize_tagged")]
            result: ToolResultBlock,
        }
        let holder = Holder {
            calls: vec![ToolCallBlock::new("c1", "t", "{}")],
            result: ToolResultBlock::new("c1", "t", "ok", ToolResultState::Success),
        };
        let value = serde_json::to_value(&holder).unwrap();
        assert_eq!(value["calls"][0]["type"], "tool_call");
        assert_eq!(value["calls"][0]["id"], "c1");
        assert_eq!(value["result"]["type"], "tool_result");
        assert_eq!(value["result"]["output"], "ok");
    }
}
