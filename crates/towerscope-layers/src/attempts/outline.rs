//! What a restart reason and a log line of a failed attempt say about its error.
//!
//! The error's text is content: providers and gateways echo the prompt or the request body in
//! their messages, and an endpoint can name an internal host. A restart reason reaches the
//! browser (the agent copies it into the `model_call_restart` event), and logs are read by more
//! people than the conversation. So both carry only the error's structured parts: its
//! [`kind`](AgentError::kind), the status of an HTTP error and which deadline a timeout missed.
//! The caller still receives the whole error when no attempt is left.

use std::fmt;

use towerscope_core::AgentError;

/// An error described by its structured parts only, never its message or endpoint:
/// `stream_error`, `http_error 502`, `timeout (first chunk)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outline<'a>(pub(crate) &'a AgentError);

impl Outline<'_> {
    /// The HTTP status of an HTTP error, for a log field of its own.
    pub(crate) fn status(&self) -> Option<u16> {
        match self.0 {
            AgentError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }
}

impl fmt::Display for Outline<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.kind())?;
        match self.0 {
            AgentError::Http { status, .. } => write!(f, " {status}"),
            AgentError::Timeout { kind, .. } => write!(f, " ({kind})"),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use towerscope_core::TimeoutKind;

    use super::*;

    #[test]
    fn only_structured_parts_are_shown() {
        let http = AgentError::Http {
            status: 502,
            endpoint: "https://llm-gw.internal/v1".into(),
            message: "echo: SECRET_PROMPT".into(),
            retry_after: Some(Duration::from_secs(1)),
        };
        assert_eq!(Outline(&http).to_string(), "http_error 502");
        assert_eq!(Outline(&http).status(), Some(502));
        let timeout = AgentError::Timeout {
            what: "model call m".into(),
            kind: TimeoutKind::FirstChunk,
            after: None,
        };
        assert_eq!(Outline(&timeout).to_string(), "timeout (first chunk)");
        let model = AgentError::model_retryable("SECRET_PROMPT");
        assert_eq!(Outline(&model).to_string(), "model_error");
        assert_eq!(Outline(&model).status(), None);
    }
}
