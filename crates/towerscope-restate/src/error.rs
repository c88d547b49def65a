//! The errors of a durable reply.
//!
//! # Example
//!
//! ```
//! use towerscope_restate::{DurableError, StepKind};
//!
//! let err = DurableError::JournalMismatch {
//!     step: 2,
//!     recorded: "model call 0x1".into(),
//!     found: "tool call 0x2".into(),
//! };
//! assert!(err.to_string().contains("step 2"));
//! ```

use towerscope_core::AgentError;

/// Why a durable reply ended without an answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DurableError {
    /// The journal holds a step that this agent would not take here: the journal was written by
    /// an agent with other tools or tool schemas, or the step is of another kind or sends
    /// another number of messages. The reply ends; nothing is replayed wrongly.
    ///
    /// Prompts and message content are not compared (a prompt may hold the time, or text a
    /// transformer makes fresh at each call): an agent whose system prompt changed replays the
    /// answers recorded for the old one. Finish or cancel replies in flight before deploying a
    /// changed prompt.
    #[error(
        "the journal of this reply was written by a different agent: step {step} recorded {recorded}, this agent \
         asks for {found}; finish or cancel such replies with the agent that started them before deploying a changed one"
    )]
    JournalMismatch {
        /// The step's index in the reply (0-based).
        step: u64,
        /// What the journal recorded.
        recorded: String,
        /// What this agent asked for.
        found: String,
    },
    /// The object's stored state could not be read back.
    #[error("the stored agent state of this session cannot be read: {0}")]
    State(String),
    /// An answer to a parked reply that is not one (the reply waits for another).
    #[error("not an answer to the pending {kind}: {detail}")]
    BadAnswer {
        /// `confirmation` or `external execution`.
        kind: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// Restate cancelled the invocation while a step ran or while the reply was parked: the
    /// reply was interrupted (its open calls closed, its state stored, as after a person's
    /// interrupt), and the handler ends with HTTP 409.
    #[error("the invocation was cancelled; the reply was interrupted")]
    Cancelled,
    /// The `reply` handler's body is JSON but not a [`ReplyBody`](crate::ReplyBody) (what was
    /// wrong, without the body's content); the handler ends with HTTP 400.
    #[error("the reply's body is not {{\"text\": ...}} or {{\"messages\": [...]}}: {0}")]
    BadRequest(String),
    /// The reply parked more often than allowed.
    #[error("the reply parked {0} times; it ends here (raise DurableAgent::max_parks if that is expected)")]
    TooManyParks(u32),
    /// The agent failed (building it, or the reply itself).
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// Restate ended an operation with a terminal error.
    #[error("restate: {0}")]
    Restate(String),
}

/// What kind of step a journal entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// A model call (`on_model_call`).
    ModelCall,
    /// A tool call (`on_acting`).
    ToolCall,
}

impl StepKind {
    /// The kind in words.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ModelCall => "model call",
            Self::ToolCall => "tool call",
        }
    }
}
