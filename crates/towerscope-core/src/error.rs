//! One error type for every position.
//!
//! Every position (`on_reply`, `on_model_call`, `on_acting`, ...) fails with [`AgentError`], so
//! layers compose without error conversions and a layer such as retry or fallback can inspect
//! what went wrong ([`AgentError::is_retryable`], [`AgentError::retry_after`]).
//!
//! Bad input from a *model* (malformed tool arguments, an unknown tool) is not an `AgentError`:
//! it becomes an error tool result that goes back to the model. `AgentError` is for failures the
//! caller of the agent must see.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use towerscope_core::AgentError;
//!
//! let err = AgentError::rate_limited("provider said slow down", Some(Duration::from_secs(2)));
//! assert!(err.is_retryable());
//! assert_eq!(err.retry_after(), Some(Duration::from_secs(2)));
//! assert!(err.to_string().contains("retry after 2s"));
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A boxed error usable as a source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A shared, cloneable error source.
#[derive(Clone)]
pub struct ErrorSource(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl ErrorSource {
    /// Wraps any error as a shared source.
    pub fn new(err: impl Into<BoxError>) -> Self {
        Self(Arc::from(err.into()))
    }

    /// The wrapped error.
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl fmt::Debug for ErrorSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for ErrorSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl std::error::Error for ErrorSource {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Which deadline a [`AgentError::Timeout`] refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeoutKind {
    /// The whole call (or the whole stream) took too long.
    Call,
    /// No first chunk arrived in time.
    FirstChunk,
    /// Too long between two chunks of a stream.
    Idle,
}

impl fmt::Display for TimeoutKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Call => "call",
            Self::FirstChunk => "first chunk",
            Self::Idle => "idle time between chunks",
        })
    }
}

/// What a call limit counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitKind {
    /// Model calls.
    ModelCalls,
    /// Tool calls.
    ToolCalls,
}

impl fmt::Display for LimitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ModelCalls => "model calls",
            Self::ToolCalls => "tool calls",
        })
    }
}

/// The error of every position.
///
/// Variants are specific so that layers can act on them: retry looks at
/// [`is_retryable`](Self::is_retryable) and [`retry_after`](Self::retry_after), fallback has a
/// predicate over the whole error. Messages say what to do next.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model provider returned an error or an unusable answer.
    #[error("model error{}: {message}", model.as_deref().map(|m| format!(" ({m})")).unwrap_or_default())]
    Model {
        /// The model that failed, if known.
        model: Option<String>,
        /// What went wrong.
        message: String,
        /// Whether calling again may succeed (a 5xx, a dropped connection).
        retryable: bool,
        /// The underlying error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// An HTTP call to a provider failed with a status code.
    #[error("HTTP {status} from {endpoint}: {message}{}", retry_hint(*retry_after))]
    Http {
        /// The status code.
        status: u16,
        /// The endpoint that was called (never with credentials).
        endpoint: String,
        /// The provider's error message.
        message: String,
        /// The provider's retry-after hint.
        retry_after: Option<Duration>,
    },
    /// A rate limit was hit, locally or at the provider.
    #[error("rate limited: {message}{}", retry_hint(*retry_after))]
    RateLimited {
        /// What limit was hit.
        message: String,
        /// When to try again.
        retry_after: Option<Duration>,
    },
    /// A deadline passed.
    #[error("{what} timed out: {}; raise the timeout or check the provider", missed(*kind, *after))]
    Timeout {
        /// What timed out ("model call gpt-4o", "tool get_weather").
        what: String,
        /// Which deadline.
        kind: TimeoutKind,
        /// The configured deadline, when known (a tower `Timeout` layer does not say).
        after: Option<Duration>,
    },
    /// A call limit of the reply or session was reached.
    #[error("{kind} limit of {limit} reached for this {scope}; raise the limit or shorten the task")]
    CallLimit {
        /// What was counted.
        kind: LimitKind,
        /// The configured limit.
        limit: u32,
        /// `"reply"` or `"session"`.
        scope: &'static str,
    },
    /// A tool failed in a way that cannot be turned into a tool result.
    #[error("tool '{tool}' failed: {message}")]
    Tool {
        /// The tool's name.
        tool: String,
        /// What went wrong.
        message: String,
    },
    /// Input did not validate: a message for its role, a schema, a configuration.
    #[error("validation failed: {0}")]
    Validation(String),
    /// Data from outside (JSON of a message or event, a stream) could not be decoded.
    #[error("could not decode {what}: {message}")]
    Decode {
        /// What was being decoded.
        what: String,
        /// The decoder's message, naming the field.
        message: String,
    },
    /// The model stream broke or ended without its final chunk.
    #[error("model stream broke: {0}")]
    Stream(String),
    /// The reply was interrupted (cancelled by the user).
    #[error("the reply was interrupted")]
    Interrupted,
    /// A service is overloaded and shed the request.
    #[error("service overloaded; try again later")]
    Overloaded,
    /// The agent was used in a state that does not allow the call.
    #[error("invalid agent state: {0}")]
    State(String),
    /// A middleware broke the protocol of its position.
    #[error("middleware error: {0}")]
    Middleware(String),
    /// A service the agent depends on (a session store, a shared rate-limit backend) could not
    /// be reached or failed. Retryable: the same call may succeed once it is back.
    #[error("{what} is unavailable: {message}; check that it runs and is reachable, then retry")]
    Unavailable {
        /// What could not be reached ("session store redis://127.0.0.1:6379/").
        what: String,
        /// What went wrong.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// A save lost a race: someone else saved the same thing since it was loaded, and saving
    /// would have overwritten their change. Retryable: load again, redo the work, save again.
    #[error("{what} was changed by someone else (expected {expected}, found {found}); load it again and retry")]
    Conflict {
        /// What was saved ("session alice/conv-1").
        what: String,
        /// The revision the save expected.
        expected: String,
        /// The revision found.
        found: String,
    },
    /// Strict loading of a saved state found no value for a registered key.
    #[error(
        "the saved state has no `{key}`: it was saved before that state was registered; register it under the \
         name it was saved with, or load with strict off"
    )]
    MissingState {
        /// The missing key, as a dotted path from the outermost module (`modules.prefs`).
        key: String,
    },
    /// Anything else, with its source.
    #[error("{message}")]
    Other {
        /// What went wrong.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<ErrorSource>,
    },
}

/// What a deadline of `kind` missed: "did not finish within 2s", "no first chunk within
/// 10s", "no chunk for 1s".
fn missed(kind: TimeoutKind, after: Option<Duration>) -> String {
    match (kind, after) {
        (TimeoutKind::Call, Some(d)) => format!("did not finish within {d:?}"),
        (TimeoutKind::FirstChunk, Some(d)) => format!("no first chunk within {d:?}"),
        (TimeoutKind::Idle, Some(d)) => format!("no chunk for {d:?}"),
        (TimeoutKind::Call, None) => "did not finish by its deadline".to_owned(),
        (TimeoutKind::FirstChunk, None) => "no first chunk by its deadline".to_owned(),
        (TimeoutKind::Idle, None) => "too long between two chunks".to_owned(),
    }
}

fn retry_hint(after: Option<Duration>) -> String {
    match after {
        Some(d) if d.subsec_millis() == 0 => format!(" (retry after {}s)", d.as_secs()),
        Some(d) => format!(" (retry after {:.3}s)", d.as_secs_f64()),
        None => String::new(),
    }
}

impl AgentError {
    /// A model error that is not worth retrying.
    pub fn model(message: impl Into<String>) -> Self {
        Self::Model {
            model: None,
            message: message.into(),
            retryable: false,
            source: None,
        }
    }

    /// A model error that may succeed when tried again (a 5xx, a dropped connection).
    pub fn model_retryable(message: impl Into<String>) -> Self {
        Self::Model {
            model: None,
            message: message.into(),
            retryable: true,
            source: None,
        }
    }

    /// A rate-limit error with an optional retry-after hint.
    pub fn rate_limited(message: impl Into<String>, retry_after: Option<Duration>) -> Self {
        Self::RateLimited {
            message: message.into(),
            retry_after,
        }
    }

    /// A validation error.
    pub fn validation(message: impl Into<String>) -> Self {
        Self::Validation(message.into())
    }

    /// A decoding error naming what was decoded.
    pub fn decode(what: impl Into<String>, message: impl fmt::Display) -> Self {
        Self::Decode {
            what: what.into(),
            message: message.to_string(),
        }
    }

    /// A service that could not be reached or failed (retryable).
    pub fn unavailable(what: impl Into<String>, err: impl Into<BoxError>) -> Self {
        let source = ErrorSource::new(err);
        Self::Unavailable {
            what: what.into(),
            message: source.to_string(),
            source: Some(source),
        }
    }

    /// Any other error, keeping its source.
    ///
    /// Errors with a meaning of their own keep it: an `AgentError` that was boxed comes back as
    /// itself, tower's `Elapsed` (from `tower::timeout`) becomes [`AgentError::Timeout`] and
    /// tower's `Overloaded` (from `tower::load_shed`) becomes [`AgentError::Overloaded`], so they
    /// stay retryable and typed.
    pub fn other(err: impl Into<BoxError>) -> Self {
        let err = match err.into().downcast::<AgentError>() {
            Ok(agent) => return *agent,
            Err(err) => err,
        };
        if err.is::<tower::timeout::error::Elapsed>() {
            return Self::Timeout {
                what: "a tower timeout layer".to_owned(),
                kind: TimeoutKind::Call,
                after: None,
            };
        }
        if err.is::<tower::load_shed::error::Overloaded>() {
            return Self::Overloaded;
        }
        let source = ErrorSource::new(err);
        Self::Other {
            message: source.to_string(),
            source: Some(source),
        }
    }

    /// Whether calling again may succeed: rate limits, timeouts, overload, 429/5xx, broken
    /// streams, model errors marked retryable, unavailable services and save conflicts.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Model { retryable, .. } => *retryable,
            Self::Http { status, .. } => *status == 408 || *status == 429 || *status >= 500,
            Self::RateLimited { .. }
            | Self::Timeout { .. }
            | Self::Overloaded
            | Self::Stream(_)
            | Self::Unavailable { .. }
            | Self::Conflict { .. } => true,
            _ => false,
        }
    }

    /// The provider's (or a local limiter's) hint of when to try again.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Http { retry_after, .. } | Self::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A short, low-cardinality name for the kind of error (used as `error.type` in traces).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Model { .. } => "model_error",
            Self::Http { .. } => "http_error",
            Self::RateLimited { .. } => "rate_limited",
            Self::Timeout { .. } => "timeout",
            Self::CallLimit { .. } => "call_limit",
            Self::Tool { .. } => "tool_error",
            Self::Validation(_) => "validation_error",
            Self::Decode { .. } => "decode_error",
            Self::Stream(_) => "stream_error",
            Self::Interrupted => "interrupted",
            Self::Overloaded => "overloaded",
            Self::State(_) => "state_error",
            Self::Middleware(_) => "middleware_error",
            Self::Unavailable { .. } => "unavailable",
            Self::Conflict { .. } => "conflict",
            Self::MissingState { .. } => "missing_state",
            Self::Other { .. } => "_OTHER",
        }
    }
}

impl From<BoxError> for AgentError {
    /// As [`AgentError::other`]: known errors keep their meaning.
    fn from(err: BoxError) -> Self {
        Self::other(err)
    }
}

impl From<serde_json::Error> for AgentError {
    fn from(err: serde_json::Error) -> Self {
        Self::decode("JSON", err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_to_do() {
        let e = AgentError::Timeout {
            what: "model call m".into(),
            kind: TimeoutKind::FirstChunk,
            after: Some(Duration::from_secs(3)),
        };
        assert_eq!(
            e.to_string(),
            "model call m timed out: no first chunk within 3s; raise the timeout or check the provider"
        );
        let e = AgentError::CallLimit {
            kind: LimitKind::ToolCalls,
            limit: 4,
            scope: "reply",
        };
        assert!(e.to_string().contains("tool calls limit of 4 reached for this reply"));
    }

    /// Each deadline says what did not happen in time (the idle one said "no idle time
    /// between chunks", the opposite of what happened).
    #[test]
    fn each_timeout_says_what_was_late() {
        let text = |kind, after| {
            AgentError::Timeout {
                what: "tool t".into(),
                kind,
                after,
            }
            .to_string()
        };
        let second = Some(Duration::from_secs(1));
        assert!(text(TimeoutKind::Call, second).starts_with("tool t timed out: did not finish within 1s;"));
        assert!(text(TimeoutKind::Idle, second).starts_with("tool t timed out: no chunk for 1s;"));
        assert!(text(TimeoutKind::Idle, None).starts_with("tool t timed out: too long between two chunks;"));
        assert!(text(TimeoutKind::Call, None).starts_with("tool t timed out: did not finish by its deadline;"));
    }

    #[test]
    fn retryable_classification() {
        let http = |status| AgentError::Http {
            status,
            endpoint: "/v1/chat".into(),
            message: String::new(),
            retry_after: None,
        };
        assert!(http(429).is_retryable());
        assert!(http(503).is_retryable());
        assert!(!http(400).is_retryable());
        assert!(!AgentError::model("bad").is_retryable());
        assert!(AgentError::model_retryable("reset").is_retryable());
        assert!(!AgentError::validation("x").is_retryable());
    }

    #[test]
    fn tower_errors_keep_their_meaning() {
        let elapsed: BoxError = Box::new(tower::timeout::error::Elapsed::new());
        let err = AgentError::from(elapsed);
        assert!(matches!(err, AgentError::Timeout { after: None, .. }), "{err:?}");
        assert!(err.is_retryable());
        assert!(err.to_string().contains("did not finish by its deadline"), "{err}");
        let shed: BoxError = Box::new(tower::load_shed::error::Overloaded::new());
        assert!(matches!(AgentError::from(shed), AgentError::Overloaded));
        let boxed: BoxError = Box::new(AgentError::rate_limited("slow", Some(Duration::from_secs(1))));
        let err = AgentError::other(boxed);
        assert_eq!(err.retry_after(), Some(Duration::from_secs(1)));
        let io: BoxError = Box::new(std::io::Error::other("disk"));
        assert!(matches!(AgentError::from(io), AgentError::Other { .. }));
    }
}
