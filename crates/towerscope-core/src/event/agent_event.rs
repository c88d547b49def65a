//! The [`AgentEvent`] union and its [`EventType`]s.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::block::*;
use super::hitl::*;
use super::reply::*;
use super::tool::*;

/// Declares `AgentEvent`, `EventType` and the accessors that match on every kind, from one list.
/// Kinds in the first group carry a `reply_id`; the second group does not.
macro_rules! agent_events {
    (
        with_reply_id { $( $(#[$doc:meta])* $variant:ident($ty:ident) = $tag:literal, )* }
        without_reply_id { $( $(#[$odoc:meta])* $ovariant:ident($oty:ident) = $otag:literal, )* }
    ) => {
        /// Any event of a reply, tagged by `"type"` in JSON.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "type")]
        pub enum AgentEvent {
            $( $(#[$doc])* #[serde(rename = $tag)] $variant($ty), )*
            $( $(#[$odoc])* #[serde(rename = $otag)] $ovariant($oty), )*
        }

        /// The kind of an [`AgentEvent`], serialized as its `"type"` string (`"REPLY_START"`, ...).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum EventType {
            $( $(#[$doc])* #[serde(rename = $tag)] $variant, )*
            $( $(#[$odoc])* #[serde(rename = $otag)] $ovariant, )*
        }

        impl EventType {
            /// Every kind, in the order of the reference's `EventType`.
            pub const ALL: &'static [EventType] = &[ $( Self::$variant, )* $( Self::$ovariant, )* ];

            /// The kind's `"type"` string.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $tag, )*
                    $( Self::$ovariant => $otag, )*
                }
            }
        }

        impl AgentEvent {
            /// The event's kind.
            pub fn event_type(&self) -> EventType {
                match self {
                    $( Self::$variant(_) => EventType::$variant, )*
                    $( Self::$ovariant(_) => EventType::$ovariant, )*
                }
            }

            /// The id of the reply the event belongs to; `None` for [`CustomEvent`].
            pub fn reply_id(&self) -> Option<&crate::id::Id> {
                match self {
                    $( Self::$variant(event) => Some(&event.reply_id), )*
                    $( Self::$ovariant(_) => None, )*
                }
            }

            /// The event's id.
            pub fn id(&self) -> &crate::id::Id {
                match self {
                    $( Self::$variant(event) => &event.id, )*
                    $( Self::$ovariant(event) => &event.id, )*
                }
            }

            /// When the event was created.
            pub fn created_at(&self) -> crate::id::Timestamp {
                match self {
                    $( Self::$variant(event) => event.created_at, )*
                    $( Self::$ovariant(event) => event.created_at, )*
                }
            }

            /// The event's metadata.
            pub fn metadata(&self) -> &Map<String, Value> {
                match self {
                    $( Self::$variant(event) => &event.metadata, )*
                    $( Self::$ovariant(event) => &event.metadata, )*
                }
            }
        }

        $(
            impl From<$ty> for AgentEvent {
                fn from(event: $ty) -> Self {
                    Self::$variant(event)
                }
            }
        )*
        $(
            impl From<$oty> for AgentEvent {
                fn from(event: $oty) -> Self {
                    Self::$ovariant(event)
                }
            }
        )*
    };
}

agent_events! {
    with_reply_id {
        /// A reply started.
        ReplyStart(ReplyStartEvent) = "REPLY_START",
        /// A reply ended.
        ReplyEnd(ReplyEndEvent) = "REPLY_END",
        /// A model call started.
        ModelCallStart(ModelCallStartEvent) = "MODEL_CALL_START",
        /// A model call ended, with its token usage.
        ModelCallEnd(ModelCallEndEvent) = "MODEL_CALL_END",
        /// A text block started.
        TextBlockStart(TextBlockStartEvent) = "TEXT_BLOCK_START",
        /// More text of a text block.
        TextBlockDelta(TextBlockDeltaEvent) = "TEXT_BLOCK_DELTA",
        /// A text block ended.
        TextBlockEnd(TextBlockEndEvent) = "TEXT_BLOCK_END",
        /// A data block started.
        DataBlockStart(DataBlockStartEvent) = "DATA_BLOCK_START",
        /// More bytes (or the URL) of a data block.
        DataBlockDelta(DataBlockDeltaEvent) = "DATA_BLOCK_DELTA",
        /// A data block ended.
        DataBlockEnd(DataBlockEndEvent) = "DATA_BLOCK_END",
        /// A thinking block started.
        ThinkingBlockStart(ThinkingBlockStartEvent) = "THINKING_BLOCK_START",
        /// More text of a thinking block.
        ThinkingBlockDelta(ThinkingBlockDeltaEvent) = "THINKING_BLOCK_DELTA",
        /// A thinking block ended.
        ThinkingBlockEnd(ThinkingBlockEndEvent) = "THINKING_BLOCK_END",
        /// A whole hint block.
        HintBlock(HintBlockEvent) = "HINT_BLOCK",
        /// A tool call started.
        ToolCallStart(ToolCallStartEvent) = "TOOL_CALL_START",
        /// More of a tool call's JSON arguments.
        ToolCallDelta(ToolCallDeltaEvent) = "TOOL_CALL_DELTA",
        /// A tool call ended.
        ToolCallEnd(ToolCallEndEvent) = "TOOL_CALL_END",
        /// A tool result started.
        ToolResultStart(ToolResultStartEvent) = "TOOL_RESULT_START",
        /// More text of a tool result.
        ToolResultTextDelta(ToolResultTextDeltaEvent) = "TOOL_RESULT_TEXT_DELTA",
        /// A data block of a tool result.
        ToolResultDataDelta(ToolResultDataDeltaEvent) = "TOOL_RESULT_DATA_DELTA",
        /// A tool result ended.
        ToolResultEnd(ToolResultEndEvent) = "TOOL_RESULT_END",
        /// The reply hit its iteration limit (deprecated: see [`ReplyEndEvent::finished_reason`]).
        ExceedMaxIters(ExceedMaxItersEvent) = "EXCEED_MAX_ITERS",
        /// Tool calls wait for the user's confirmation; the reply is parked.
        RequireUserConfirm(RequireUserConfirmEvent) = "REQUIRE_USER_CONFIRM",
        /// Tool calls wait for an external executor; the reply is parked.
        RequireExternalExecution(RequireExternalExecutionEvent) = "REQUIRE_EXTERNAL_EXECUTION",
        /// The user's answers to confirmation requests (input).
        UserConfirmResult(UserConfirmResultEvent) = "USER_CONFIRM_RESULT",
        /// The user interrupts a parked reply (input).
        UserInterrupt(UserInterruptEvent) = "USER_INTERRUPT",
        /// Results of externally executed tool calls (input).
        ExternalExecutionResult(ExternalExecutionResultEvent) = "EXTERNAL_EXECUTION_RESULT",
    }
    without_reply_id {
        /// An application-defined signal (`state_updated`, `team_updated`, `mcp_progress`, ...).
        Custom(CustomEvent) = "CUSTOM",
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
