//! A journaled step: what the journal records for one model or tool call, and the channel over
//! which the journal layers hand their work to the reply's handler, which runs it through
//! Restate's `ctx.run`.
//!
//! The layers cannot hold Restate's context (it is borrowed by the handler), so each call
//! sends a [`StepRequest`] (its fingerprint and its work, not yet started) and awaits the
//! record. On a first run the handler runs the work inside `ctx.run` and journals its result;
//! on a replay Restate returns the journaled record and the work is dropped unstarted: no
//! model is called, no tool runs.
//!
//! A fingerprint says which step the agent asks for: for a model call, the tools offered
//! (names and schemas) and how many messages are sent; for a tool call, the tool's name, the
//! call id and its arguments. A journal entry with another fingerprint ends the reply with
//! [`crate::DurableError::JournalMismatch`].
//!
//! # Example
//!
//! ```
//! use towerscope_restate::step::Fingerprint;
//! use towerscope_restate::StepKind;
//!
//! let a = Fingerprint::new(StepKind::ToolCall).text("refund").text(r#"{"order":1}"#);
//! let b = Fingerprint::new(StepKind::ToolCall).text("refund").text(r#"{"order":2}"#);
//! assert_ne!(a, b);
//! assert_eq!(a, Fingerprint::new(StepKind::ToolCall).text("refund").text(r#"{"order":1}"#));
//! ```

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};
use towerscope_core::{AgentError, ChatResponse, LimitKind, Timestamp, ToolResponse};

use crate::error::{DurableError, StepKind};

/// What a step's work hands back: a record, or an error Restate retries the step on.
pub type StepWork = BoxFuture<'static, Result<StepRecord, towerscope_core::AgentError>>;

/// Which step an agent asks for (see the [module docs](self)): its kind and an FNV-1a hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The step's kind.
    pub kind: StepKind,
    /// The hash of what the step depends on.
    pub hash: u64,
}

impl Fingerprint {
    /// The fingerprint of a step of this kind that depends on nothing yet.
    pub fn new(kind: StepKind) -> Self {
        Self {
            kind,
            hash: towerscope_core::id::FNV1A_OFFSET,
        }
    }

    /// Adds text the step depends on (length-prefixed, so `"ab","c"` differs from `"a","bc"`).
    pub fn text(self, text: &str) -> Self {
        self.bytes(&(text.len() as u64).to_le_bytes()).bytes(text.as_bytes())
    }

    /// Adds a number the step depends on.
    pub fn number(self, n: u64) -> Self {
        self.bytes(&n.to_le_bytes())
    }

    fn bytes(mut self, bytes: &[u8]) -> Self {
        self.hash = towerscope_core::id::fnv1a_from(self.hash, bytes);
        self
    }

    /// The fingerprint in words, for errors.
    pub fn describe(&self) -> String {
        format!("a {} ({:016x})", self.kind.as_str(), self.hash)
    }
}

/// What the journal records for one step.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepRecord {
    /// Which step this was.
    pub fingerprint: Fingerprint,
    /// When the step's work ended.
    pub at: Timestamp,
    /// Its result.
    pub output: StepOutput,
}

/// The result of a step.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StepOutput {
    /// A model call's complete response (a stream collected to its last chunk).
    Model {
        /// The response.
        response: ChatResponse,
    },
    /// A tool's final response.
    Tool {
        /// The response.
        response: ToolResponse,
    },
    /// The step failed for good: a non-retryable error, or Restate's retries ran out.
    Failed {
        /// The error's message.
        message: String,
        /// The call limit a layer inside the step reached, if that was the error: the replayed
        /// step fails with it again, and the agent ends the reply as it does for a limit
        /// outside a step (its `REPLY_END` with the error), not as a failed model call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<StepLimit>,
    },
}

impl StepOutput {
    /// The journaled failure of `err`.
    pub fn failed(err: &AgentError) -> Self {
        let limit = match err {
            AgentError::CallLimit { kind, limit, scope }
                if matches!(kind, LimitKind::ModelCalls | LimitKind::ToolCalls) =>
            {
                Some(StepLimit {
                    kind: *kind,
                    limit: *limit,
                    session: *scope == "session",
                })
            }
            _ => None,
        };
        Self::Failed {
            message: err.to_string(),
            limit,
        }
    }

    /// The error a journaled failure stands for: the call limit it reached, or a model error
    /// with its message (a model step's failure as the agent sees it).
    pub fn model_error(message: String, limit: Option<StepLimit>) -> AgentError {
        match limit {
            Some(StepLimit { kind, limit, session }) => AgentError::CallLimit {
                kind,
                limit,
                scope: if session { "session" } else { "reply" },
            },
            None => AgentError::model(message),
        }
    }
}

/// A call limit reached inside a step ([`AgentError::CallLimit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepLimit {
    /// What was counted.
    #[serde(with = "limit_kind")]
    pub kind: LimitKind,
    /// The configured limit.
    pub limit: u32,
    /// Whether the limit was the session's (else the reply's).
    pub session: bool,
}

/// [`LimitKind`] as `model_calls` or `tool_calls`.
mod limit_kind {
    use serde::{Deserialize, Deserializer, Serializer};
    use towerscope_core::LimitKind;

    pub(super) fn serialize<S: Serializer>(kind: &LimitKind, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match kind {
            LimitKind::ModelCalls => "model_calls",
            LimitKind::ToolCalls => "tool_calls",
            // `StepOutput::failed` keeps only the kinds above.
            _ => "unknown",
        })
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<LimitKind, D::Error> {
        match String::deserialize(d)?.as_str() {
            "model_calls" => Ok(LimitKind::ModelCalls),
            "tool_calls" => Ok(LimitKind::ToolCalls),
            other => Err(serde::de::Error::unknown_variant(other, &["model_calls", "tool_calls"])),
        }
    }
}

/// One step a journal layer asks the handler to run.
pub struct StepRequest {
    /// Which step.
    pub fingerprint: Fingerprint,
    /// The work, not yet started (a replay drops it).
    pub work: StepWork,
    /// Where the record goes.
    pub reply: oneshot::Sender<Result<StepOutput, DurableError>>,
}

impl std::fmt::Debug for StepRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepRequest")
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

/// The journal layers' end of the channel to the reply's handler.
#[derive(Debug, Clone)]
pub struct Steps(mpsc::UnboundedSender<StepRequest>);

impl Steps {
    /// A channel: the layers' end and the handler's.
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<StepRequest>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self(tx), rx)
    }

    /// Asks for a step; the receiver gets its output (or why the reply must end).
    pub fn request(
        &self,
        fingerprint: Fingerprint,
        work: StepWork,
    ) -> oneshot::Receiver<Result<StepOutput, DurableError>> {
        let (reply, rx) = oneshot::channel();
        // A handler that is gone drops the request, and with it `reply`: the receiver reports it.
        let _ = self.0.send(StepRequest {
            fingerprint,
            work,
            reply,
        });
        rx
    }
}

/// A model response as a step's record.
pub(crate) fn model_record(fingerprint: Fingerprint, response: ChatResponse) -> StepRecord {
    StepRecord {
        fingerprint,
        at: Timestamp::now(),
        output: StepOutput::Model { response },
    }
}

/// A tool response as a step's record.
pub(crate) fn tool_record(fingerprint: Fingerprint, response: ToolResponse) -> StepRecord {
    StepRecord {
        fingerprint,
        at: Timestamp::now(),
        output: StepOutput::Tool { response },
    }
}
