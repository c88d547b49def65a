//! The message type and its role rules.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::content::{BlockKind, ContentBlock};
use super::outcome::{ErrorInfo, ReplyFinishedReason, Usage};
use super::tool_block::{ToolCallBlock, ToolResultBlock};
use crate::AgentError;
use crate::id::{Id, Timestamp, new_id, now_timestamp};

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A user: text and data blocks only.
    User,
    /// An assistant (an agent): any block.
    Assistant,
    /// The system prompt: text blocks only.
    System,
}

impl Role {
    /// The role's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::System => "system",
        }
    }

    /// Checks that a message of this role may hold `content`.
    ///
    /// A user message may hold only text and data blocks, a system message only text blocks.
    pub fn check_content(self, content: &[ContentBlock]) -> Result<(), AgentError> {
        let (allowed, rule): (&[BlockKind], &str) = match self {
            Self::Assistant => return Ok(()),
            Self::User => (
                &[BlockKind::Text, BlockKind::Data],
                "a user message may only hold text and data blocks",
            ),
            Self::System => (&[BlockKind::Text], "a system message may only hold text blocks"),
        };
        match content
            .iter()
            .map(ContentBlock::kind)
            .find(|kind| !allowed.contains(kind))
        {
            Some(found) => Err(AgentError::validation(format!("{rule}, found '{found}'"))),
            None => Ok(()),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A message: who sent it, its content blocks, and how the reply that produced it went.
///
/// The role rules ([`Role::check_content`]) are checked by [`Msg::new`] and when a message is
/// deserialized; the fields stay public, so code that edits a message keeps them itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "MsgWire")]
pub struct Msg {
    /// The sender's name (shared: every message of one agent holds the same name).
    pub name: Arc<str>,
    /// The content blocks.
    pub content: Vec<ContentBlock>,
    /// The sender's role.
    pub role: Role,
    /// The message id (for an agent's reply, the reply id of its events).
    pub id: Id,
    /// Free-form metadata.
    pub metadata: Map<String, Value>,
    /// When the message was created.
    pub created_at: Timestamp,
    /// Tokens used to produce the message.
    pub usage: Option<Usage>,
    /// When the message was finished; user and system messages are finished when created.
    pub finished_at: Option<Timestamp>,
    /// Why the reply finished; `None` until its `REPLY_END`.
    pub finished_reason: Option<ReplyFinishedReason>,
    /// The structured output of the reply, when one was requested and produced.
    pub structured_output: Option<Map<String, Value>>,
    /// What went wrong, when the reply finished with an error.
    pub error: Option<ErrorInfo>,
}

/// The JSON form of a message, checked against the role rules on the way in.
#[derive(Deserialize)]
struct MsgWire {
    name: Arc<str>,
    content: Vec<ContentBlock>,
    role: Role,
    #[serde(default = "new_id")]
    id: Id,
    #[serde(default)]
    metadata: Map<String, Value>,
    #[serde(default = "now_timestamp")]
    created_at: Timestamp,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    finished_at: Option<Timestamp>,
    #[serde(default)]
    finished_reason: Option<ReplyFinishedReason>,
    #[serde(default)]
    structured_output: Option<Map<String, Value>>,
    #[serde(default)]
    error: Option<ErrorInfo>,
}

impl TryFrom<MsgWire> for Msg {
    type Error = AgentError;

    fn try_from(wire: MsgWire) -> Result<Self, AgentError> {
        wire.role.check_content(&wire.content)?;
        Ok(Self {
            name: wire.name,
            content: wire.content,
            role: wire.role,
            id: wire.id,
            metadata: wire.metadata,
            created_at: wire.created_at,
            usage: wire.usage,
            finished_at: wire.finished_at,
            finished_reason: wire.finished_reason,
            structured_output: wire.structured_output,
            error: wire.error,
        })
    }
}

impl Msg {
    /// A message of any role, checked against the role rules.
    ///
    /// User and system messages are finished when created (`finished_at == created_at`);
    /// assistant messages are not.
    pub fn new(name: impl Into<Arc<str>>, role: Role, content: Vec<ContentBlock>) -> Result<Self, AgentError> {
        role.check_content(&content)?;
        Ok(Self::new_unchecked(name.into(), role, content))
    }

    fn new_unchecked(name: Arc<str>, role: Role, content: Vec<ContentBlock>) -> Self {
        let created_at = now_timestamp();
        let finished_at = (role != Role::Assistant).then_some(created_at);
        Self {
            name,
            content,
            role,
            id: new_id(),
            metadata: Map::new(),
            created_at,
            usage: None,
            finished_at,
            finished_reason: None,
            structured_output: None,
            error: None,
        }
    }

    /// A user message holding one text block.
    pub fn user(name: impl Into<Arc<str>>, text: impl Into<String>) -> Self {
        Self::new_unchecked(name.into(), Role::User, vec![ContentBlock::text(text)])
    }

    /// A system message holding one text block.
    pub fn system(name: impl Into<Arc<str>>, text: impl Into<String>) -> Self {
        Self::new_unchecked(name.into(), Role::System, vec![ContentBlock::text(text)])
    }

    /// An (unfinished) assistant message holding one text block.
    pub fn assistant(name: impl Into<Arc<str>>, text: impl Into<String>) -> Self {
        Self::new_unchecked(name.into(), Role::Assistant, vec![ContentBlock::text(text)])
    }

    /// An assistant message holding `content` (an assistant message may hold every kind of
    /// block, so this cannot fail).
    pub fn assistant_blocks(name: impl Into<Arc<str>>, content: Vec<ContentBlock>) -> Self {
        Self::new_unchecked(name.into(), Role::Assistant, content)
    }

    /// Sets the message id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<Id>) -> Self {
        self.id = id.into();
        self
    }

    /// Parses a message from JSON: malformed JSON is a [`AgentError::Decode`] naming the field,
    /// content that breaks the role rules a [`AgentError::Validation`].
    pub fn from_json(json: &str) -> Result<Self, AgentError> {
        let wire: MsgWire = serde_json::from_str(json).map_err(|e| AgentError::decode("message", e))?;
        Self::try_from(wire)
    }

    /// Checks the content against the role rules.
    pub fn validate(&self) -> Result<(), AgentError> {
        self.role.check_content(&self.content)
    }

    /// The text of all text blocks joined with `"\n"`; `None` when there is no text block.
    pub fn text_content(&self) -> Option<String> {
        let mut texts = self.content.iter().filter_map(ContentBlock::as_text);
        let first = texts.next()?;
        let mut joined = first.text.clone();
        for text in texts {
            joined.push('\n');
            joined.push_str(&text.text);
        }
        Some(joined)
    }

    /// The blocks of one kind, in order.
    pub fn blocks_of(&self, kind: BlockKind) -> impl Iterator<Item = &ContentBlock> + '_ {
        self.content.iter().filter(move |block| block.kind() == kind)
    }

    /// Whether the message holds a block of this kind.
    pub fn has_block(&self, kind: BlockKind) -> bool {
        self.content.iter().any(|block| block.kind() == kind)
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCallBlock> + '_ {
        self.content.iter().filter_map(ContentBlock::as_tool_call)
    }

    /// The tool results, in order.
    pub fn tool_results(&self) -> impl Iterator<Item = &ToolResultBlock> + '_ {
        self.content.iter().filter_map(ContentBlock::as_tool_result)
    }

    /// The first tool call with this id (an [`Id`] or its text).
    pub fn tool_call_mut<Q>(&mut self, id: &Q) -> Option<&mut ToolCallBlock>
    where
        Q: ?Sized,
        Id: PartialEq<Q>,
    {
        self.content.iter_mut().find_map(|block| match block {
            ContentBlock::ToolCall(call) if call.id == *id => Some(call),
            _ => None,
        })
    }

    /// The first tool result for the call with this id (an [`Id`] or its text).
    pub fn tool_result_mut<Q>(&mut self, id: &Q) -> Option<&mut ToolResultBlock>
    where
        Q: ?Sized,
        Id: PartialEq<Q>,
    {
        self.content.iter_mut().find_map(|block| match block {
            ContentBlock::ToolResult(result) if result.id == *id => Some(result),
            _ => None,
        })
    }

    /// Adds the usage of one model call to the message's usage.
    pub fn append_usage(&mut self, usage: &Usage) {
        match &mut self.usage {
            Some(total) => total.add(usage),
            None => self.usage = Some(*usage),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::message::{DataBlock, ToolResultState};
    use serde_json::json;

    #[test]
    fn constructors_follow_the_reference() {
        let user = Msg::user("alice", "hi");
        assert_eq!(user.role, Role::User);
        assert_eq!(user.finished_at, Some(user.created_at));
        let system = Msg::system("system", "be brief");
        assert_eq!(system.finished_at, Some(system.created_at));
        let assistant = Msg::assistant("bot", "hello");
        assert_eq!(assistant.finished_at, None);
        assert_eq!(assistant.text_content().as_deref(), Some("hello"));
        assert_ne!(user.id, assistant.id);
    }

    #[test]
    fn role_rules_are_enforced_with_a_clear_message() {
        let err = Msg::new("u", Role::User, vec![ContentBlock::tool_call("c", "t", "{}")]).unwrap_err();
        assert!(matches!(err, AgentError::Validation(_)));
        assert!(
            err.to_string()
                .contains("a user message may only hold text and data blocks, found 'tool_call'"),
            "{err}"
        );
        let err = Msg::new(
            "s",
            Role::System,
            vec![DataBlock::url("https://x/a.png", "image/png").into()],
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("a system message may only hold text blocks, found 'data'"),
            "{err}"
        );
        assert!(
            Msg::new(
                "u",
                Role::User,
                vec![ContentBlock::text("a"), ContentBlock::data_base64("", "image/png")]
            )
            .is_ok()
        );
        let tools = vec![
            ContentBlock::thinking("hm"),
            ContentBlock::tool_call("c", "t", "{}"),
            ContentBlock::tool_result("c", "t", "ok", ToolResultState::Success),
        ];
        assert!(Msg::new("a", Role::Assistant, tools).is_ok());
    }

    #[test]
    fn json_shape_and_round_trip() {
        let mut msg = Msg::assistant("bot", "hello").with_id("m1");
        msg.append_usage(&Usage::new(3, 4));
        msg.append_usage(&Usage::new(1, 1));
        let value = serde_json::to_value(&msg).unwrap();
        let mut keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut expected = vec![
            "name",
            "content",
            "role",
            "id",
            "metadata",
            "created_at",
            "usage",
            "finished_at",
            "finished_reason",
            "structured_output",
            "error",
        ];
        expected.sort_unstable();
        assert_eq!(keys, expected);
        assert_eq!(value["role"], "assistant");
        assert_eq!(
            value["usage"],
            json!({"input_tokens": 4, "output_tokens": 5, "cache_input_tokens": 0, "cache_creation_input_tokens": 0})
        );
        assert_eq!(value["finished_reason"], Value::Null);
        let text = serde_json::to_string(&msg).unwrap();
        assert!(text.starts_with(r#"{"name":"bot","content":[{"type":"text""#), "{text}");
        assert_eq!(Msg::from_json(&text).unwrap(), msg);
    }

    #[test]
    fn deserializing_checks_fields_and_roles() {
        let err = Msg::from_json(r#"{"name": "u", "content": []}"#).unwrap_err();
        assert!(matches!(err, AgentError::Decode { .. }));
        assert!(err.to_string().contains("missing field `role`"), "{err}");
        let bad_role = r#"{"name": "u", "role": "user", "content": [{"type": "thinking", "thinking": "x"}]}"#;
        let err = Msg::from_json(bad_role).unwrap_err();
        assert!(matches!(err, AgentError::Validation(_)), "{err:?}");
        let err = serde_json::from_str::<Msg>(bad_role).unwrap_err();
        assert!(
            err.to_string()
                .contains("a user message may only hold text and data blocks, found 'thinking'"),
            "{err}"
        );
        let minimal =
            Msg::from_json(r#"{"name": "u", "role": "user", "content": [{"type": "text", "text": "hi"}]}"#).unwrap();
        assert_eq!(minimal.id.len(), 32);
        assert_eq!(minimal.text_content().as_deref(), Some("hi"));
    }

    #[test]
    fn helpers_find_blocks() {
        let mut msg = Msg::new(
            "bot",
            Role::Assistant,
            vec![
                ContentBlock::text("a"),
                ContentBlock::tool_call("c1", "t", "{}"),
                ContentBlock::text("b"),
                ContentBlock::tool_result("c1", "t", "ok", ToolResultState::Success),
            ],
        )
        .unwrap();
        assert_eq!(msg.text_content().as_deref(), Some("a\nb"));
        assert_eq!(msg.blocks_of(BlockKind::Text).count(), 2);
        assert!(msg.has_block(BlockKind::ToolResult));
        assert!(!msg.has_block(BlockKind::Hint));
        assert_eq!(msg.tool_calls().map(|c| c.id.to_string()).collect::<Vec<_>>(), ["c1"]);
        assert_eq!(msg.tool_results().count(), 1);
        msg.tool_call_mut("c1").unwrap().input.push(' ');
        assert_eq!(msg.tool_calls().next().unwrap().input, "{} ");
        assert!(msg.tool_result_mut("nope").is_none());
        assert_eq!(Msg::new("x", Role::Assistant, Vec::new()).unwrap().text_content(), None);
    }
}
