//! Human-in-the-loop events: requests that park a reply, and the inputs that resume it.

use serde::{Deserialize, Serialize};
use serde_json::Map;

use crate::id::{Id, new_id, now_timestamp};
use crate::message::{PermissionRule, ToolCallBlock, ToolResultBlock, serialize_tagged, serialize_tagged_list};

event_struct! {
    /// `REQUIRE_USER_CONFIRM`: tool calls (one per event in practice) wait for the user's
    /// confirmation; each call is in state `asking` and carries its suggested rules.
    pub struct RequireUserConfirmEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The calls to confirm.
        #[serde(serialize_with = "serialize_tagged_list")]
        pub tool_calls: Vec<ToolCallBlock>,
    }
}

impl RequireUserConfirmEvent {
    /// A confirmation request for these calls.
    pub fn new(reply_id: impl Into<Id>, tool_calls: Vec<ToolCallBlock>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            tool_calls,
        }
    }
}

event_struct! {
    /// `REQUIRE_EXTERNAL_EXECUTION`: tool calls (in state `submitted`) wait for an external
    /// executor.
    pub struct RequireExternalExecutionEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The calls to execute.
        #[serde(serialize_with = "serialize_tagged_list")]
        pub tool_calls: Vec<ToolCallBlock>,
    }
}

impl RequireExternalExecutionEvent {
    /// An external execution request for these calls.
    pub fn new(reply_id: impl Into<Id>, tool_calls: Vec<ToolCallBlock>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            tool_calls,
        }
    }
}

/// The user's answer about one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfirmResult {
    /// Whether the user allowed the call.
    pub confirmed: bool,
    /// The call; a confirmed call runs with this block's name and input, so the user may edit
    /// the arguments.
    #[serde(serialize_with = "serialize_tagged")]
    pub tool_call: ToolCallBlock,
    /// Rules to add to the permission engine (only when confirmed), so that later matching calls
    /// are allowed without asking.
    #[serde(default)]
    pub rules: Option<Vec<PermissionRule>>,
}

impl ConfirmResult {
    /// An answer without rules.
    pub fn new(confirmed: bool, tool_call: ToolCallBlock) -> Self {
        Self {
            confirmed,
            tool_call,
            rules: None,
        }
    }

    /// Sets the rules to add.
    #[must_use]
    pub fn with_rules(mut self, rules: Vec<PermissionRule>) -> Self {
        self.rules = Some(rules);
        self
    }
}

event_struct! {
    /// `USER_CONFIRM_RESULT` (input): the user's answers to confirmation requests.
    pub struct UserConfirmResultEvent {
        /// The id of the parked reply.
        pub reply_id: Id,
        /// One answer per asking call.
        pub confirm_results: Vec<ConfirmResult>,
    }
}

impl UserConfirmResultEvent {
    /// The user's answers.
    pub fn new(reply_id: impl Into<Id>, confirm_results: Vec<ConfirmResult>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            confirm_results,
        }
    }
}

event_struct! {
    /// `USER_INTERRUPT` (input): the user interrupts a parked reply; its unfinished calls get
    /// interrupted results and the reply ends.
    pub struct UserInterruptEvent {
        /// The id of the parked reply. An interrupt of another reply (one that ended, sent
        /// again after a later reply parked) changes nothing.
        pub reply_id: Id,
    }
}

impl UserInterruptEvent {
    /// An interrupt of the reply `reply_id`.
    pub fn new(reply_id: impl Into<Id>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
        }
    }
}

event_struct! {
    /// `EXTERNAL_EXECUTION_RESULT` (input): results of externally executed calls.
    pub struct ExternalExecutionResultEvent {
        /// The id of the parked reply.
        pub reply_id: Id,
        /// One result per submitted call (`id` = the call's id).
        #[serde(serialize_with = "serialize_tagged_list")]
        pub execution_results: Vec<ToolResultBlock>,
    }
}

impl ExternalExecutionResultEvent {
    /// Results of external executions.
    pub fn new(reply_id: impl Into<Id>, execution_results: Vec<ToolResultBlock>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            execution_results,
        }
    }
}
