//! The agent's state: the conversation, the reply in progress, activated tool groups and
//! permission rules. It serializes with serde, so it can be saved and a new agent built from it.
//!
//! # Example
//!
//! ```
//! use towerscope_agent::{Agent, AgentState};
//! use towerscope_core::Msg;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let model = ScriptedModel::new("m", [ScriptedResponse::text("Noted."), ScriptedResponse::text("Blue.")]);
//! let agent = Agent::builder("a").model(model.clone()).build()?;
//! agent.reply(Msg::user("user", "My favourite colour is blue.")).await?;
//!
//! // Save the state, and carry the conversation on with a new agent.
//! let saved = serde_json::to_string(&agent.state())?;
//! let restored: AgentState = serde_json::from_str(&saved)?;
//! let again = Agent::builder("a").model(model.clone()).state(restored).build()?;
//! assert_eq!(again.session_id(), agent.session_id());
//! again.reply(Msg::user("user", "Which colour do I like?")).await?;
//! let seen = &model.requests()[1].messages;
//! assert_eq!(seen[1].text_content().as_deref(), Some("My favourite colour is blue."));
//! # Ok(()) }
//! ```

use serde::{Deserialize, Serialize};
use towerscope_core::{
    ContentBlock, Msg, PermissionBehavior, PermissionRule, Role, ToolCallBlock, ToolCallState, ToolResultBlock, Usage,
};

/// The reply in progress (or the last one).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplyContext {
    /// The reply's id (also the id of its assistant message in the context).
    pub reply_id: String,
    /// Completed reasoning-acting rounds.
    pub cur_iter: u32,
    /// The structured-output schema required of the reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_schema: Option<serde_json::Value>,
    /// The name of that schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_schema_name: Option<String>,
    /// The validated structured output, once generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<serde_json::Map<String, serde_json::Value>>,
    /// Usage accumulated over the reply's model calls.
    #[serde(default)]
    pub usage: Usage,
}

/// The agent's whole state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentState {
    /// Stable across replies.
    pub session_id: String,
    /// The compression summary, sent after the system prompt when not empty.
    #[serde(default)]
    pub summary: String,
    /// The conversation.
    #[serde(default)]
    pub context: Vec<Msg>,
    /// The reply in progress (or the last one).
    #[serde(default)]
    pub reply_context: ReplyContext,
    /// Tool groups the model activated.
    #[serde(default)]
    pub activated_groups: Vec<String>,
    /// Permission rules (accepted suggestions and configured rules).
    #[serde(default)]
    pub permission_rules: Vec<PermissionRule>,
}

impl Default for AgentState {
    /// A new state with a fresh session id.
    fn default() -> Self {
        Self {
            session_id: towerscope_core::id::new_id(),
            summary: String::new(),
            context: Vec::new(),
            reply_context: ReplyContext::default(),
            activated_groups: Vec::new(),
            permission_rules: Vec::new(),
        }
    }
}

impl AgentState {
    /// A new state with a fresh session id.
    pub fn new() -> Self {
        Self::default()
    }

    /// The assistant message of reply `reply_id`, if it is the tail of the context.
    pub(crate) fn reply_msg(&self, reply_id: &str) -> Option<&Msg> {
        self.context
            .last()
            .filter(|m| m.role == Role::Assistant && m.id == reply_id)
    }

    /// The assistant message of reply `reply_id`, created at the tail if missing.
    pub(crate) fn reply_msg_mut(&mut self, agent_name: &str, reply_id: &str) -> &mut Msg {
        let is_tail = self.reply_msg(reply_id).is_some();
        if !is_tail {
            let msg = Msg::assistant_blocks(agent_name, Vec::new()).with_id(reply_id);
            self.context.push(msg);
        }
        let last = self.context.len() - 1;
        &mut self.context[last]
    }

    /// Appends blocks to the reply's assistant message.
    pub(crate) fn append_to_reply(
        &mut self,
        agent_name: &str,
        reply_id: &str,
        blocks: impl IntoIterator<Item = ContentBlock>,
    ) {
        self.reply_msg_mut(agent_name, reply_id).content.extend(blocks);
    }

    /// Tool calls of the tail assistant message that have no result yet.
    pub(crate) fn unfinished_calls(&self) -> Vec<ToolCallBlock> {
        let Some(msg) = self.context.last().filter(|m| m.role == Role::Assistant) else {
            return Vec::new();
        };
        unfinished_in(msg)
    }

    /// Sets the state of tool call `id` in the tail assistant message.
    pub(crate) fn set_call_state(&mut self, id: &str, state: ToolCallState) {
        if let Some(call) = self.tail_call_mut(id) {
            call.state = state;
        }
    }

    /// The tool call `id` of the tail assistant message.
    pub(crate) fn tail_call_mut(&mut self, id: &str) -> Option<&mut ToolCallBlock> {
        let msg = self.context.last_mut().filter(|m| m.role == Role::Assistant)?;
        msg.content.iter_mut().find_map(|b| match b {
            ContentBlock::ToolCall(c) if c.id == id => Some(c),
            _ => None,
        })
    }

    /// Saves a tool result into the reply's message and marks its call finished.
    pub(crate) fn save_result(&mut self, agent_name: &str, reply_id: &str, result: ToolResultBlock) {
        self.set_call_state(&result.id, ToolCallState::Finished);
        self.append_to_reply(agent_name, reply_id, [ContentBlock::ToolResult(result)]);
    }

    /// Whether any rule of `behavior` matches `tool_name`.
    pub(crate) fn has_rule(&self, tool_name: &str, behavior: PermissionBehavior) -> bool {
        self.permission_rules
            .iter()
            .any(|r| r.behavior == behavior && r.tool_name == tool_name)
    }
}

/// Tool calls of `msg` that have no result, cloned.
pub(crate) fn unfinished_in(msg: &Msg) -> Vec<ToolCallBlock> {
    unfinished_refs(msg).into_iter().cloned().collect()
}

/// Tool calls of `msg` that have no result, borrowed (the hot path: no clone).
pub(crate) fn unfinished_refs(msg: &Msg) -> Vec<&ToolCallBlock> {
    let mut calls: Vec<&ToolCallBlock> = Vec::new();
    for block in &msg.content {
        match block {
            ContentBlock::ToolCall(c) => calls.push(c),
            ContentBlock::ToolResult(r) => calls.retain(|c| c.id != r.id),
            _ => {}
        }
    }
    calls
}
