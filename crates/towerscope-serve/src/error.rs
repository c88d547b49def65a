//! [`ServeError`]: every failure of the server as an HTTP status and a JSON body.
//!
//! ```
//! use axum::http::StatusCode;
//! use axum::response::IntoResponse;
//! use towerscope_core::AgentError;
//! use towerscope_serve::ServeError;
//!
//! let err = ServeError::from(AgentError::State("the agent is already replying".into()));
//! assert_eq!(err.status(), StatusCode::CONFLICT);
//! assert_eq!(err.code(), "state_error");
//! assert_eq!(err.into_response().status(), StatusCode::CONFLICT);
//! ```

use std::fmt;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use towerscope_core::AgentError;

/// A failed request: a status, a stable code and a message that tells the client what to do.
///
/// Its response body is `{"error": {"code": "...", "message": "..."}}`. Errors whose text could
/// carry what the client must not see (a provider's answer, a middleware's panic) are reported
/// by kind only; the server logs them whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ServeError {
    /// An error of this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    /// The body is not sent as JSON (415).
    pub fn not_json() -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the body must be sent with content-type application/json",
        )
    }

    /// The body is not JSON (400).
    pub fn bad_json(detail: impl fmt::Display) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "bad_json",
            format!("the body is not valid JSON: {detail}"),
        )
    }

    /// The body is JSON of the wrong shape, or asks for something impossible (422).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", message)
    }

    /// A run on a thread that already has one running in this process (409).
    pub fn thread_busy(thread: &str) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "thread_busy",
            format!("thread '{thread}' already has a run in progress; wait for it to finish or stop it"),
        )
    }

    /// The body is over the server's limit (413).
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the body is over the server's limit of {limit} bytes"),
        )
    }

    /// No or a wrong bearer token (401).
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "send the server's token as `Authorization: Bearer <token>`",
        )
    }

    /// No such route (404).
    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
    }

    /// The route exists, not with this method (405).
    pub fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "this endpoint does not take that method",
        )
    }

    /// A handler panicked (500); the panic's text is not sent.
    pub fn panicked() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "the server failed on this request; see its log",
        )
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The stable code (`thread_busy`, `state_error`, ...).
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The message sent to the client.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.status.as_u16(), self.code, self.message)
    }
}

impl std::error::Error for ServeError {}

/// The message a client may see for `err`: the error's own text where it is about the request,
/// only its kind where it comes from behind the server (a provider, a store, a middleware). A
/// decode error is one of the latter: it quotes what could not be decoded (a provider's answer,
/// a stored session) and where it came from (the provider's URL).
pub(crate) fn client_message(err: &AgentError) -> String {
    match err {
        AgentError::Validation(_)
        | AgentError::State(_)
        | AgentError::Conflict { .. }
        | AgentError::RateLimited { .. }
        | AgentError::Timeout { .. }
        | AgentError::CallLimit { .. }
        | AgentError::Interrupted
        | AgentError::Overloaded => err.to_string(),
        _ => format!("the agent failed ({}); the server's log has the details", err.kind()),
    }
}

impl From<AgentError> for ServeError {
    fn from(err: AgentError) -> Self {
        let status = match &err {
            AgentError::Validation(_) | AgentError::CallLimit { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            AgentError::State(_) | AgentError::Conflict { .. } => StatusCode::CONFLICT,
            AgentError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            AgentError::Overloaded | AgentError::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            AgentError::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            AgentError::Model { .. } | AgentError::Http { .. } | AgentError::Stream(_) => StatusCode::BAD_GATEWAY,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if status.is_server_error() {
            tracing::warn!(error = %err, kind = err.kind(), "a request failed");
        }
        Self::new(status, err.kind(), client_message(&err))
    }
}

impl IntoResponse for ServeError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": { "code": self.code, "message": self.message } });
        (self.status, Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decode_error_reaches_the_client_by_its_kind_only() {
        let err = AgentError::decode(
            "openai chat completion from http://gw.internal:8443/v1/chat/completions",
            "expected value at line 1 column 1: <html>upstream llm-gw-07 (key sk-live-INTERNAL)</html>",
        );
        let message = client_message(&err);
        assert_eq!(
            message,
            "the agent failed (decode_error); the server's log has the details"
        );
        let served = ServeError::from(err);
        assert_eq!(served.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!served.message.contains("gw.internal"), "{}", served.message);
    }
}
