//! Messages and their content blocks.
//!
//! A [`Msg`] is a list of [`ContentBlock`]s with a sender, a [`Role`], and, for an agent's reply,
//! how the reply ended ([`Usage`], [`ReplyFinishedReason`], [`ErrorInfo`]). Everything
//! serializes to the JSON of the reference (AgentScope 2.x): blocks are tagged by `"type"`
//! (`text`, `thinking`, `data`, `hint`, `tool_call`, `tool_result`), absent optional fields are
//! written as `null`, and missing ids and timestamps are generated when a message is read.
//!
//! Role rules hold at construction and when a message is deserialized: a user message may hold
//! only text and data blocks, a system message only text blocks.
//!
//! An agent's reply is streamed as [`AgentEvent`](crate::event::AgentEvent)s;
//! [`Msg::append_event`] folds them back into the message.
//!
//! # Example
//!
//! ```
//! use towerscope_core::message::{BlockKind, ContentBlock, Msg, Role, ToolResultState};
//!
//! let question = Msg::user("alice", "What is the weather in Paris?");
//! assert_eq!(question.text_content().as_deref(), Some("What is the weather in Paris?"));
//!
//! let answer = Msg::new("bot", Role::Assistant, vec![
//!     ContentBlock::thinking("I should call the weather tool."),
//!     ContentBlock::tool_call("call_1", "get_weather", r#"{"city": "Paris"}"#),
//!     ContentBlock::tool_result("call_1", "get_weather", "sunny", ToolResultState::Success),
//!     ContentBlock::text("It is sunny."),
//! ])?;
//! assert!(answer.has_block(BlockKind::ToolCall));
//! assert_eq!(answer.tool_calls().next().map(|c| c.name.as_str()), Some("get_weather"));
//!
//! // A user message cannot carry tool calls, neither built nor parsed.
//! let err = Msg::new("alice", Role::User, vec![ContentBlock::tool_call("c", "t", "{}")]).unwrap_err();
//! assert!(err.to_string().contains("a user message may only hold text and data blocks"));
//!
//! let json = serde_json::to_string(&answer)?;
//! assert_eq!(Msg::from_json(&json)?, answer);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub(crate) mod base64;
mod block;
mod content;
mod messages;
mod msg;
mod outcome;
mod tool_block;
mod waiting;

pub use block::{DataBlock, DataSource, HintBlock, HintContent, MediaBlock, TextBlock, ThinkingBlock};
pub use content::{BlockKind, ContentBlock};
pub use messages::{Messages, MessagesIter};
pub use msg::{Msg, Role};
pub use outcome::{ErrorInfo, ReplyFinishedReason, Usage};
pub use tool_block::{
    PermissionBehavior, PermissionMode, PermissionRule, ToolCallBlock, ToolCallState, ToolOutput, ToolResultBlock,
    ToolResultState,
};
pub use waiting::{AnsweredIds, ResumeApplied, WaitingCalls};

pub(crate) use block::join_text;
pub(crate) use tool_block::{serialize_tagged, serialize_tagged_list};
