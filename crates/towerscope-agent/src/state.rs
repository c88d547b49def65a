//! The agent's state: the conversation, the reply in progress, activated tool groups,
//! permission rules and the task list. It serializes with serde, so it can be saved and a new agent built from it.
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

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use towerscope_core::{
    AgentError, ContentBlock, Id, Messages, Msg, PermissionMode, PermissionRule, Role, ToolCallBlock, ToolCallState,
    ToolResultBlock, Usage,
};

use crate::tasks::Task;

/// The reply in progress (or the last one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplyContext {
    /// The reply's id (also the id of its assistant message in the context).
    pub reply_id: Id,
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

impl Default for ReplyContext {
    fn default() -> Self {
        Self {
            reply_id: Id::from(""),
            cur_iter: 0,
            structured_schema: None,
            structured_schema_name: None,
            structured_output: None,
            usage: Usage::default(),
        }
    }
}

/// The size of the model input at the end of the model's last call, as the model reported it
/// (what [`UsageCounter`](crate::compress::UsageCounter) starts from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastCall {
    /// Input plus output tokens of that call.
    pub tokens: u64,
    /// The index in the context of the message holding the answer.
    pub msg_index: usize,
    /// That message's id.
    pub msg_id: Id,
    /// How many blocks that message had once the answer was stored.
    pub blocks: usize,
}

/// The agent's whole state.
///
/// Two states are equal when what is saved of them is: the caches the agent keeps beside
/// (the last call's token count, a lookup hint) are not saved, and not compared, so a state
/// equals itself read back from its JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentState {
    /// Stable across replies.
    pub session_id: Id,
    /// The compression summary, sent after the system prompt when not empty.
    #[serde(default)]
    pub summary: String,
    /// The conversation. Messages are shared: a model request holds the same ones, and the
    /// agent copies a message only to change it while a request still holds it (the reply's own
    /// message, at the tail).
    #[serde(default)]
    pub context: Messages,
    /// The reply in progress (or the last one).
    #[serde(default)]
    pub reply_context: ReplyContext,
    /// Tool groups the model activated.
    #[serde(default)]
    pub activated_groups: Vec<String>,
    /// Permission rules (accepted suggestions and configured rules).
    #[serde(default)]
    pub permission_rules: Vec<PermissionRule>,
    /// How tool calls are allowed (the reference's permission modes).
    #[serde(default)]
    pub permission_mode: PermissionMode,
    /// The task list the model keeps with the task tools (the reference's `tasks_context`; see
    /// [`tasks`](crate::tasks)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<Task>,
    /// The model's reported usage of its last call and where its answer ends, for the default
    /// token counter (not saved: a restored agent estimates until its next call).
    #[serde(skip)]
    pub(crate) last_call: Option<LastCall>,
    /// Where the tail message's call last looked up is (see [`CallHint`]).
    #[serde(skip)]
    pub(crate) call_hint: CallHint,
    /// How many calls were set waiting (for the user or an external result) since the agent
    /// was built or restored: the loop compares it around a batch of calls, so whether the
    /// batch parked the reply costs a scan of the message only when a call was parked.
    #[serde(skip)]
    pub(crate) parks: u64,
    /// How many compressions applied since the agent was built or restored: the compression
    /// tool tells the model whether its call changed the context by it.
    #[serde(skip)]
    pub(crate) compressions: u64,
}

impl PartialEq for AgentState {
    fn eq(&self, other: &Self) -> bool {
        // Every field named: a new one must be added here, or left out on purpose.
        let Self {
            session_id,
            summary,
            context,
            reply_context,
            activated_groups,
            permission_rules,
            permission_mode,
            tasks,
            last_call: _,
            call_hint: _,
            parks: _,
            compressions: _,
        } = self;
        *session_id == other.session_id
            && *summary == other.summary
            && *context == other.context
            && *reply_context == other.reply_context
            && *activated_groups == other.activated_groups
            && *permission_rules == other.permission_rules
            && *permission_mode == other.permission_mode
            && *tasks == other.tasks
    }
}

/// The place, among the tail message's blocks, of the tool call last looked up by id: the
/// next lookup tries it and the block after it first (the loop takes a message's calls in
/// order), so the calls of a message with many are not each found by a scan of all of them.
/// A hint, not state: checked before it is used, never saved, and no part of equality.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CallHint(usize);

impl Default for AgentState {
    /// A new state with a fresh session id.
    fn default() -> Self {
        Self {
            session_id: Id::new(),
            summary: String::new(),
            context: Messages::new(),
            reply_context: ReplyContext::default(),
            activated_groups: Vec::new(),
            permission_rules: Vec::new(),
            permission_mode: PermissionMode::default(),
            tasks: Vec::new(),
            last_call: None,
            call_hint: CallHint::default(),
            parks: 0,
            compressions: 0,
        }
    }
}

pub use towerscope_core::WaitingCalls;

impl AgentState {
    /// A new state with a fresh session id.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `msgs` to the context, leaving out each one it already holds (same id, speaker,
    /// role and content). A message delivered twice is stored once, as in the reference, whose
    /// memory drops a message whose id it holds: a pipeline's member in a hub hears the
    /// previous member's reply from the hub, then gets it as its reply's input. A message
    /// whose id is held with other content (an edited message) is stored. One message costs
    /// one scan of the context; several, one pass to index the context by id.
    pub(crate) fn store_input(&mut self, msgs: impl IntoIterator<Item = Arc<Msg>>) {
        let mut msgs = msgs.into_iter().peekable();
        let Some(first) = msgs.next() else {
            return;
        };
        if msgs.peek().is_none() {
            if !self.context.arcs().any(|held| same_message(held, &first)) {
                self.context.push(first);
            }
            return;
        }
        let mut held: std::collections::HashMap<Id, Vec<Arc<Msg>>> = std::collections::HashMap::new();
        for msg in self.context.arcs() {
            held.entry(msg.id.clone()).or_default().push(Arc::clone(msg));
        }
        for msg in std::iter::once(first).chain(msgs) {
            let copies = held.entry(msg.id.clone()).or_default();
            if !copies.iter().any(|copy| same_message(copy, &msg)) {
                copies.push(Arc::clone(&msg));
                self.context.push(msg);
            }
        }
    }

    /// The assistant message of reply `reply_id`, if it is the tail of the context.
    pub(crate) fn reply_msg(&self, reply_id: &Id) -> Option<&Msg> {
        self.context
            .last()
            .map(|m| &**m)
            .filter(|m| m.role == Role::Assistant && m.id == *reply_id)
    }

    /// The assistant message of reply `reply_id` for editing, created at the tail if missing
    /// (copied first if a model request still holds it).
    pub(crate) fn reply_msg_mut(&mut self, agent_name: &Arc<str>, reply_id: &Id) -> &mut Msg {
        if self.reply_msg(reply_id).is_none() {
            let msg = Msg::assistant_blocks(Arc::clone(agent_name), Vec::new()).with_id(reply_id);
            self.context.push(msg);
        }
        let last = self.context.len() - 1;
        self.context.make_mut(last)
    }

    /// Appends blocks to the reply's assistant message.
    pub(crate) fn append_to_reply(
        &mut self,
        agent_name: &Arc<str>,
        reply_id: &Id,
        blocks: impl IntoIterator<Item = ContentBlock>,
    ) {
        self.reply_msg_mut(agent_name, reply_id).content.extend(blocks);
    }

    /// The tail assistant message, if the context ends with one.
    fn tail_assistant(&self) -> Option<&Msg> {
        self.context.last().map(|m| &**m).filter(|m| m.role == Role::Assistant)
    }

    /// Tool calls of the tail assistant message that have no result yet.
    pub(crate) fn unfinished_calls(&self) -> Vec<ToolCallBlock> {
        self.tail_assistant().map(unfinished_in).unwrap_or_default()
    }

    /// Whether a call of the tail assistant message waits for the user or an external result.
    pub(crate) fn is_parked(&self) -> bool {
        self.tail_assistant().is_some_and(|m| {
            m.tool_calls()
                .any(|c| matches!(c.state, ToolCallState::Asking | ToolCallState::Submitted))
                && unfinished_refs(m)
                    .iter()
                    .any(|c| matches!(c.state, ToolCallState::Asking | ToolCallState::Submitted))
        })
    }

    /// What the parked reply waits for (see [`WaitingCalls`]); `None` when not parked.
    pub(crate) fn waiting_calls(&self) -> Option<WaitingCalls> {
        self.tail_assistant().and_then(WaitingCalls::of)
    }

    /// Whether the tail call `id` waits for the user or an external result.
    pub(crate) fn is_call_parked(&self, id: &Id) -> bool {
        let Some(index) = self.tail_call_index(id) else {
            return false;
        };
        self.tail_assistant().and_then(|m| m.content.get(index)).is_some_and(|block| {
            matches!(block, ContentBlock::ToolCall(c) if matches!(c.state, ToolCallState::Asking | ToolCallState::Submitted))
        })
    }

    /// Sets tool call `id` of the tail assistant message waiting, in `state` (`Asking` or
    /// `Submitted`), and counts it in [`parks`](Self::parks).
    pub(crate) fn park_call(&mut self, id: &Id, state: ToolCallState) -> Option<&mut ToolCallBlock> {
        self.parks = self.parks.wrapping_add(1);
        let call = self.tail_call_mut(id)?;
        call.state = state;
        Some(call)
    }

    /// Sets the state of tool call `id` in the tail assistant message.
    pub(crate) fn set_call_state(&mut self, id: &Id, state: ToolCallState) {
        if let Some(call) = self.tail_call_mut(id) {
            call.state = state;
        }
    }

    /// The tool call `id` of the tail assistant message (ids are unique within a reply's
    /// message: the reasoning step renames a model's duplicate ids).
    pub(crate) fn tail_call_mut(&mut self, id: &Id) -> Option<&mut ToolCallBlock> {
        let index = self.tail_call_index(id)?;
        self.call_hint = CallHint(index);
        // Found first, copied (if a request holds the message) only then.
        match self.context.last_mut()?.content.get_mut(index) {
            Some(ContentBlock::ToolCall(call)) => Some(call),
            _ => None,
        }
    }

    /// Where the tool call `id` is among the tail assistant message's blocks: where the last
    /// call looked up is, or the block after it (the loop takes a message's calls in order, and
    /// a sequential batch asks about each call right after it was looked up), else a scan.
    fn tail_call_index(&self, id: &Id) -> Option<usize> {
        let content = &self.tail_assistant()?.content;
        let is_call = |i: usize| matches!(content.get(i), Some(ContentBlock::ToolCall(c)) if c.id == *id);
        let hint = self.call_hint.0;
        [hint, hint + 1]
            .into_iter()
            .find(|&i| is_call(i))
            .or_else(|| (0..content.len()).find(|&i| is_call(i)))
    }

    /// Saves a tool result into the reply's message and marks its call finished.
    pub(crate) fn save_result(&mut self, agent_name: &Arc<str>, reply_id: &Id, result: ToolResultBlock) {
        self.set_call_state(&result.id, ToolCallState::Finished);
        self.append_to_reply(agent_name, reply_id, [ContentBlock::ToolResult(result)]);
    }

    /// The rules naming `tool_name`, cloned (none, without allocating, for a tool no rule
    /// names).
    pub(crate) fn rules_of(&self, tool_name: &str) -> Vec<PermissionRule> {
        self.permission_rules
            .iter()
            .filter(|r| r.tool_name == tool_name)
            .cloned()
            .collect()
    }
}

/// Tool calls of `msg` that have no result, cloned.
pub(crate) fn unfinished_in(msg: &Msg) -> Vec<ToolCallBlock> {
    unfinished_refs(msg).into_iter().cloned().collect()
}

/// Tool calls of `msg` that have no result, borrowed (no clone).
pub(crate) fn unfinished_refs(msg: &Msg) -> Vec<&ToolCallBlock> {
    let answered = msg.answered_ids();
    msg.tool_calls().filter(|c| !answered.contains(&c.id)).collect()
}

/// The calls of a reply's message that have no result, as the loop reads them before each
/// action ([`open_calls`]).
#[derive(Debug, Default)]
pub(crate) struct OpenCalls {
    /// Whether any call has no result (whatever its state): the round is not complete.
    pub(crate) unfinished: bool,
    /// Whether a call waits for the user or an external executor.
    pub(crate) awaiting: bool,
    /// The calls to run now (allowed ones, and pending ones unless a call waits), cloned, in
    /// the message's order.
    pub(crate) runnable: Vec<ToolCallBlock>,
}

/// What the loop does with the calls of `msg` that have no result. One scan, no list in
/// between: the loop asks before every action, and both whether the round it finished is
/// complete and what to run next come from this one scan.
pub(crate) fn open_calls(msg: &Msg) -> OpenCalls {
    let answered = msg.answered_ids();
    let mut open = OpenCalls::default();
    for call in msg.tool_calls().filter(|c| !answered.contains(&c.id)) {
        open.unfinished = true;
        match call.state {
            ToolCallState::Asking | ToolCallState::Submitted => open.awaiting = true,
            ToolCallState::Allowed | ToolCallState::Pending => open.runnable.push(call.clone()),
            ToolCallState::Finished => {}
        }
    }
    if open.awaiting {
        // Pending calls wait with the ones that wait (rare: cloned above for nothing).
        open.runnable.retain(|c| c.state == ToolCallState::Allowed);
    }
    open
}

/// Whether two messages are one (same id, speaker, role and content).
fn same_message(a: &Msg, b: &Msg) -> bool {
    a.id == b.id && a.role == b.role && a.name == b.name && a.content == b.content
}

/// A reply parked for the user or an external executor accepts only the event that resumes
/// it (or interrupts it), as in the reference.
pub(crate) fn check_not_parked(state: &AgentState) -> Result<(), AgentError> {
    let awaiting = state.unfinished_calls();
    let asking = awaiting.iter().filter(|c| c.state == ToolCallState::Asking).count();
    let submitted = awaiting.iter().filter(|c| c.state == ToolCallState::Submitted).count();
    if asking + submitted > 0 {
        return Err(AgentError::State(format!(
            "Agent is waiting for {asking} tool calls and external execution results for {submitted} tool calls, \
             but received no event. Resume the reply with a UserConfirmResultEvent or \
             ExternalExecutionResultEvent, or interrupt it with a UserInterruptEvent."
        )));
    }
    Ok(())
}

/// Writes how reply `reply_id` ended (interrupted, failed) onto its stored message, when it
/// stored one and is not parked (a refused resume leaves the parked reply as it was): what such
/// a message holds of an answer may be a part of it. A completed reply's message is not marked
/// (its end is the common case, and costs nothing).
pub(crate) fn mark_ending(
    state: &mut AgentState,
    agent_name: &Arc<str>,
    reply_id: &Id,
    reason: towerscope_core::ReplyFinishedReason,
) {
    if state.reply_msg(reply_id).is_some() && !state.is_parked() {
        state.reply_msg_mut(agent_name, reply_id).finished_reason = Some(reason);
    }
}

#[cfg(test)]
mod tests {
    use towerscope_core::{
        ContentBlock, Msg, ToolCallBlock, ToolCallState, ToolOutput, ToolResultBlock, ToolResultState,
    };

    use super::{open_calls, unfinished_in};

    /// An assistant message with `calls` tool calls, of which the ones in `answered` have a
    /// result (results first, in reverse order, so no position lines up by chance).
    fn message(calls: usize, answered: &[usize]) -> Msg {
        let mut content: Vec<ContentBlock> = answered
            .iter()
            .rev()
            .map(|i| {
                ToolResultBlock::new(
                    format!("c{i}"),
                    "t",
                    ToolOutput::Text("ok".into()),
                    ToolResultState::Success,
                )
                .into()
            })
            .collect();
        content.extend((0..calls).map(|i| ContentBlock::from(ToolCallBlock::new(format!("c{i}"), "t", "{}"))));
        Msg::assistant_blocks("a", content)
    }

    #[test]
    fn calls_without_a_result_are_found_among_few_or_many_results() {
        for calls in [1, 3, 16, 17, 40] {
            let all: Vec<usize> = (0..calls).collect();
            assert!(
                !open_calls(&message(calls, &all)).unfinished,
                "{calls} calls, all answered"
            );
            let open = calls / 2;
            let answered: Vec<usize> = all.iter().copied().filter(|i| *i != open).collect();
            let msg = message(calls, &answered);
            assert!(open_calls(&msg).unfinished, "{calls} calls, one open");
            let ids: Vec<String> = unfinished_in(&msg).iter().map(|c| c.id.to_string()).collect();
            assert_eq!(ids, [format!("c{open}")]);
            assert_eq!(open_calls(&msg).runnable.len(), 1);
        }
    }

    #[test]
    fn pending_calls_run_with_allowed_ones_in_order_unless_a_call_waits() {
        let with_states = |states: &[ToolCallState]| {
            let mut msg = message(states.len(), &[]);
            for (block, state) in msg.content.iter_mut().zip(states) {
                if let ContentBlock::ToolCall(call) = block {
                    call.state = *state;
                }
            }
            msg
        };
        let ids = |calls: Vec<ToolCallBlock>| calls.iter().map(|c| c.id.to_string()).collect::<Vec<_>>();
        use ToolCallState::{Allowed, Asking, Finished, Pending, Submitted};

        let open = open_calls(&with_states(&[Pending, Allowed, Finished, Pending]));
        assert!(!open.awaiting && open.unfinished);
        assert_eq!(ids(open.runnable), ["c0", "c1", "c3"]);
        // A call marked finished without its result keeps the round open, and runs no more.
        let open = open_calls(&with_states(&[Finished]));
        assert!(open.unfinished && !open.awaiting && open.runnable.is_empty());
        for waiting in [Asking, Submitted] {
            let open = open_calls(&with_states(&[Pending, Allowed, waiting, Allowed]));
            assert!(open.awaiting && open.unfinished, "{waiting:?}");
            assert_eq!(ids(open.runnable), ["c1", "c3"], "{waiting:?}");
        }
    }
}
