//! Events of the reply itself and of its model calls, and custom events.

use serde_json::{Map, Value};

use crate::chat::ModelFinishedReason;
use std::sync::Arc;

use crate::id::{Id, new_id, now_timestamp};
use crate::message::{ErrorInfo, ReplyFinishedReason, Role, Usage};

fn assistant() -> Role {
    Role::Assistant
}

event_struct! {
    /// `REPLY_START`: an agent started a reply.
    pub struct ReplyStartEvent {
        /// The session the reply belongs to.
        pub session_id: Id,
        /// The id of the reply (and of its message).
        pub reply_id: Id,
        /// The agent's name.
        pub name: Arc<str>,
        /// The agent's role (`assistant` unless told otherwise).
        #[serde(default = "assistant")]
        pub role: Role,
    }
}

impl ReplyStartEvent {
    /// A reply start of an assistant.
    pub fn new(session_id: impl Into<Id>, reply_id: impl Into<Id>, name: impl Into<Arc<str>>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            session_id: session_id.into(),
            reply_id: reply_id.into(),
            name: name.into(),
            role: Role::Assistant,
        }
    }
}

event_struct! {
    /// `REPLY_END`: a reply finished.
    pub struct ReplyEndEvent {
        /// The session the reply belongs to.
        pub session_id: Id,
        /// The id of the reply.
        pub reply_id: Id,
        /// Why the reply finished (default `completed`).
        #[serde(default)]
        pub finished_reason: ReplyFinishedReason,
        /// What went wrong, when `finished_reason` is `error`.
        #[serde(default)]
        pub error: Option<ErrorInfo>,
    }
}

impl ReplyEndEvent {
    /// A reply end without error info.
    pub fn new(session_id: impl Into<Id>, reply_id: impl Into<Id>, finished_reason: ReplyFinishedReason) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            session_id: session_id.into(),
            reply_id: reply_id.into(),
            finished_reason,
            error: None,
        }
    }

    /// Sets the error info (and does not change the finished reason).
    #[must_use]
    pub fn with_error(mut self, error: ErrorInfo) -> Self {
        self.error = Some(error);
        self
    }
}

event_struct! {
    /// `MODEL_CALL_START`: the agent called a model.
    pub struct ModelCallStartEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The model's name.
        pub model_name: Arc<str>,
    }
}

impl ModelCallStartEvent {
    /// A model call start.
    pub fn new(reply_id: impl Into<Id>, model_name: impl Into<Arc<str>>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            model_name: model_name.into(),
        }
    }
}

event_struct! {
    /// `MODEL_CALL_END`: a model call finished, with its token usage.
    pub struct ModelCallEndEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// Input tokens.
        pub input_tokens: u64,
        /// Output tokens.
        pub output_tokens: u64,
        /// Input tokens read from the prompt cache.
        #[serde(default)]
        pub cache_input_tokens: u64,
        /// Input tokens written to the prompt cache.
        #[serde(default)]
        pub cache_creation_input_tokens: u64,
        /// How the call finished (default `completed`).
        #[serde(default)]
        pub finished_reason: ModelFinishedReason,
    }
}

impl ModelCallEndEvent {
    /// A completed model call with this usage.
    pub fn new(reply_id: impl Into<Id>, usage: &Usage) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_input_tokens: usage.cache_input_tokens,
            cache_creation_input_tokens: usage.cache_creation_input_tokens,
            finished_reason: ModelFinishedReason::Completed,
        }
    }

    /// Sets how the call finished.
    #[must_use]
    pub fn with_finished_reason(mut self, finished_reason: ModelFinishedReason) -> Self {
        self.finished_reason = finished_reason;
        self
    }

    /// The call's token usage.
    pub fn usage(&self) -> Usage {
        Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_input_tokens: self.cache_input_tokens,
            cache_creation_input_tokens: self.cache_creation_input_tokens,
        }
    }
}

event_struct! {
    /// `EXCEED_MAX_ITERS` (deprecated in the reference, still emitted): the reply hit its
    /// iteration limit. Check [`ReplyEndEvent::finished_reason`] instead.
    pub struct ExceedMaxItersEvent {
        /// The id of the reply.
        pub reply_id: Id,
        /// The agent's name.
        pub name: Arc<str>,
    }
}

impl ExceedMaxItersEvent {
    /// An iteration-limit event.
    pub fn new(reply_id: impl Into<Id>, name: impl Into<Arc<str>>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            reply_id: reply_id.into(),
            name: name.into(),
        }
    }
}

event_struct! {
    /// `CUSTOM`: an application-defined signal. Consumers skip names they do not know.
    ///
    /// Known names: `state_updated`, `team_updated`, and `mcp_progress` (transient tool progress
    /// with `reply_id`, `tool_call_id`, `progress`, `total` and `message` in `value`).
    pub struct CustomEvent {
        /// What kind of signal this is.
        pub name: String,
        /// The payload, whose shape depends on `name`.
        #[serde(default)]
        pub value: Map<String, Value>,
    }
}

impl CustomEvent {
    /// A custom event.
    pub fn new(name: impl Into<String>, value: Map<String, Value>) -> Self {
        Self {
            id: new_id(),
            created_at: now_timestamp(),
            metadata: Map::new(),
            name: name.into(),
            value,
        }
    }
}
