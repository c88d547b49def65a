//! [`ProviderError`]: what a provider said went wrong, and how it becomes an [`AgentError`] that
//! retry and fallback layers can act on.

use std::fmt;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;
use towerscope_core::{AgentError, ErrorSource, TimeoutKind};

use super::retry_after::retry_after;

/// The most of an error body kept in a message.
const MAX_BODY: usize = 512;

/// An error reported by a provider: over HTTP (with a status), or as an `error` event in the
/// middle of a stream (without one).
///
/// HTTP errors become [`AgentError::Http`] (status, endpoint, a message naming the provider's
/// error type, message and request id, and the `retry-after` hint), so
/// [`AgentError::is_retryable`] holds for 408, 429 and 5xx (Anthropic's 529 "overloaded"
/// included) and `RetryLayer` waits the provider's hint. An error event in a stream becomes a
/// [`AgentError::Model`] whose source is this error (downcast it from
/// [`std::error::Error::source`]); it is retryable when the provider says the server was
/// overloaded, rate limited or failed (`overloaded_error`, `rate_limit_error`, `api_error`,
/// `server_error`, or a code of 500 and up). [`ProviderError::of`] finds it in an agent error.
///
/// ```
/// use towerscope_models::http::ProviderError;
///
/// let event = br#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#;
/// let err = ProviderError::from_body("anthropic", None, None, event).into_agent_error("claude-x", "/v1/messages");
/// assert!(err.is_retryable());
/// let provider = ProviderError::of(&err).expect("the provider's error");
/// assert_eq!(provider.kind.as_deref(), Some("overloaded_error"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderError {
    /// The provider (`openai`, `anthropic`).
    pub provider: String,
    /// The HTTP status; `None` for an error event in a stream.
    pub status: Option<u16>,
    /// The provider's error type (`invalid_request_error`, `overloaded_error`, ...).
    pub kind: Option<String>,
    /// The provider's error code (`invalid_api_key`, `context_length_exceeded`, `500`, ...).
    pub code: Option<String>,
    /// The provider's message.
    pub message: String,
    /// The request id (`x-request-id`, `request-id`), to quote to the provider's support.
    pub request_id: Option<String>,
    /// When to try again, from `retry-after-ms` or `retry-after`.
    pub retry_after: Option<Duration>,
}

impl ProviderError {
    /// Reads an error body: `{"error": {"type", "message", "code"}}` (OpenAI and compatible
    /// servers), `{"type": "error", "error": {...}, "request_id"}` (Anthropic), a bare
    /// `{"type", "message", "code"}` object, `{"error": "text"}`, or any text (kept, cut short).
    pub fn from_body(provider: &str, status: Option<u16>, headers: Option<&HeaderMap>, body: &[u8]) -> Self {
        Self::from_body_hiding(provider, status, headers, body, |_| {})
    }

    /// [`from_body`](Self::from_body), with `hide` run over the message, type and code before
    /// they are cut short: a credential it hides is hidden whole, also one across the cut.
    pub(crate) fn from_body_hiding(
        provider: &str,
        status: Option<u16>,
        headers: Option<&HeaderMap>,
        body: &[u8],
        hide: impl Fn(&mut String),
    ) -> Self {
        let mut error = Self {
            provider: provider.to_owned(),
            status,
            kind: None,
            code: None,
            message: String::new(),
            request_id: headers.and_then(request_id),
            retry_after: headers.and_then(retry_after),
        };
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(top)) => {
                let inner = match top.get("error") {
                    Some(Value::Object(inner)) => inner,
                    Some(Value::String(message)) => {
                        error.message.clone_from(message);
                        &top
                    }
                    _ => &top,
                };
                let text = |key: &str| match inner.get(key) {
                    Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
                    Some(Value::Number(n)) => Some(n.to_string()),
                    _ => None,
                };
                error.kind = text("type").filter(|kind| kind != "error");
                error.code = text("code");
                if let Some(message) = text("message") {
                    error.message = message;
                }
                if error.request_id.is_none() {
                    error.request_id = top.get("request_id").and_then(Value::as_str).map(str::to_owned);
                }
                if error.message.is_empty() {
                    error.message = unquoted_message(&top, body.len());
                }
            }
            Ok(other) => {
                // A string, an array, a number: JSON that may echo the request; its kind only.
                let kind = match other {
                    Value::String(_) => "a string",
                    Value::Array(_) => "an array",
                    _ => "a scalar",
                };
                error.message = format!("(a JSON error body that is {kind}, {} bytes, not quoted)", body.len());
            }
            Err(_) => {
                let text = String::from_utf8_lossy(body);
                error.message = if text.trim().is_empty() {
                    status
                        .and_then(|s| StatusCode::from_u16(s).ok())
                        .and_then(|s| s.canonical_reason())
                        .unwrap_or("no error body")
                        .to_owned()
                } else if text.trim_start().starts_with(['{', '[', '"']) {
                    // JSON cut short (the body's first 64 KiB): it may echo the request.
                    format!("(JSON that does not parse, {} bytes, not quoted)", body.len())
                } else {
                    format!("(not JSON) {}", text.trim())
                };
            }
        }
        // A proxy's message may quote the whole upstream answer or the request: cut short,
        // after the credentials in it are hidden.
        for text in [Some(&mut error.message), error.kind.as_mut(), error.code.as_mut()]
            .into_iter()
            .flatten()
        {
            hide(text);
            cut(text);
        }
        error
    }

    /// The provider error inside an agent error from a stream (the source of an
    /// [`AgentError::Model`]), if there is one.
    pub fn of(err: &AgentError) -> Option<&Self> {
        match err {
            AgentError::Model {
                source: Some(source), ..
            } => source.get().downcast_ref::<Self>(),
            _ => None,
        }
    }

    /// Whether calling again may succeed.
    pub fn is_retryable(&self) -> bool {
        if let Some(status) = self.status {
            return status == 408 || status == 429 || status >= 500;
        }
        let retryable_kind = matches!(
            self.kind.as_deref(),
            Some("overloaded_error" | "rate_limit_error" | "api_error" | "server_error" | "timeout_error")
        );
        let server_code = self
            .code
            .as_deref()
            .and_then(|c| c.parse::<u16>().ok())
            .is_some_and(|c| c >= 500);
        retryable_kind || server_code
    }

    /// The error as the agent's error: [`AgentError::Http`] with a status, a
    /// [`AgentError::Model`] whose source is this error without one.
    pub fn into_agent_error(self, model: &str, endpoint: &str) -> AgentError {
        match self.status {
            Some(status) => AgentError::Http {
                status,
                endpoint: endpoint.to_owned(),
                message: self.detail(),
                retry_after: self.retry_after,
            },
            None => AgentError::Model {
                model: Some(model.to_owned()),
                message: format!("{} stream error: {}", self.provider, self.detail()),
                retryable: self.is_retryable(),
                source: Some(ErrorSource::new(self)),
            },
        }
    }

    /// `type: message (code c, request id r)`, leaving out what is unknown.
    fn detail(&self) -> String {
        let mut out = String::new();
        if let Some(kind) = &self.kind {
            out.push_str(kind);
            out.push_str(": ");
        }
        out.push_str(&self.message);
        let extras: Vec<String> = [
            self.code
                .as_ref()
                .filter(|c| Some(*c) != self.kind.as_ref())
                .map(|c| format!("code {c}")),
            self.request_id.as_ref().map(|r| format!("request id {r}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !extras.is_empty() {
            out.push_str(" (");
            out.push_str(&extras.join(", "));
            out.push(')');
        }
        out
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status {
            Some(status) => write!(f, "{} HTTP {status}: {}", self.provider, self.detail()),
            None => write!(f, "{} error: {}", self.provider, self.detail()),
        }
    }
}

impl std::error::Error for ProviderError {}

/// The request id a provider put in its response headers.
pub(crate) fn request_id(headers: &HeaderMap) -> Option<String> {
    ["x-request-id", "request-id"]
        .iter()
        .find_map(|name| headers.get(*name)?.to_str().ok())
        .map(str::to_owned)
}

/// The message of a JSON error body that has no `message`: FastAPI's `detail` (a text, or its
/// validation errors' `loc` and `msg`, never their `input`, which echoes the request), else the
/// body's field names only: an unknown body may quote the conversation.
fn unquoted_message(top: &serde_json::Map<String, Value>, len: usize) -> String {
    match top.get("detail") {
        Some(Value::String(detail)) if !detail.is_empty() => return detail.clone(),
        Some(Value::Array(items)) => {
            let described: Vec<String> = items
                .iter()
                .filter_map(|item| {
                    let msg = item.get("msg").and_then(Value::as_str)?;
                    let loc: Vec<String> = item
                        .get("loc")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(|part| match part {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .collect();
                    Some(if loc.is_empty() {
                        msg.to_owned()
                    } else {
                        format!("{}: {msg}", loc.join("."))
                    })
                })
                .collect();
            if !described.is_empty() {
                return described.join("; ");
            }
        }
        _ => {}
    }
    let fields: Vec<&str> = top.keys().map(String::as_str).take(8).collect();
    format!(
        "(a {len}-byte JSON error without a message, not quoted; its fields: {})",
        fields.join(", ")
    )
}

/// Cuts `text` to [`MAX_BODY`] characters, marking the cut with `...`.
fn cut(text: &mut String) {
    if let Some((end, _)) = text.char_indices().nth(MAX_BODY) {
        text.truncate(end);
        text.push_str("...");
    }
}

/// A failure of the HTTP transport (connecting, sending, reading), as the agent's error.
///
/// Timeouts become [`AgentError::Timeout`] (`FirstChunk` before the response, `Idle` while it
/// streams, after the configured read timeout); anything else is a retryable
/// [`AgentError::Model`] before the response and an [`AgentError::Stream`] while it streams.
pub(crate) fn transport_error(
    err: &(dyn std::error::Error + 'static),
    call: &CallSite<'_>,
    streaming: bool,
) -> AgentError {
    let reqwest_err = err.downcast_ref::<reqwest::Error>();
    let replayed = replayed(err);
    let timed_out = reqwest_err.is_some_and(reqwest::Error::is_timeout) || replayed.is_some_and(|r| r.timed_out());
    if timed_out {
        return AgentError::Timeout {
            what: format!("model call {}", call.model),
            kind: if streaming {
                TimeoutKind::Idle
            } else {
                TimeoutKind::FirstChunk
            },
            after: call.read_timeout,
        };
    }
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        source = inner.source();
    }
    // reqwest quotes the whole URL, query (a key, on some gateways) included: the endpoint
    // stands for it.
    if let Some(url) = reqwest_err.and_then(reqwest::Error::url) {
        message = message.replace(url.as_str(), call.endpoint);
    }
    if streaming {
        AgentError::Stream(format!(
            "the {} response stream of {} broke: {message}",
            call.provider, call.endpoint
        ))
    } else {
        let what =
            if reqwest_err.is_some_and(reqwest::Error::is_connect) || replayed.is_some_and(|r| r.could_not_connect()) {
                "could not connect to"
            } else {
                "request to"
            };
        AgentError::Model {
            model: Some(call.model.to_owned()),
            message: format!("{what} {} failed: {message}", call.endpoint),
            retryable: true,
            source: None,
        }
    }
}

/// A cassette's replayed failure in `err`'s chain: its recorded class decides the error, as
/// the recorded `reqwest::Error`'s did.
#[cfg(feature = "cassette")]
fn replayed<'e>(err: &'e (dyn std::error::Error + 'static)) -> Option<&'e crate::cassette::Replayed> {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(replayed) = e.downcast_ref::<crate::cassette::Replayed>() {
            return Some(replayed);
        }
        next = e.source();
    }
    None
}

/// Without the cassette, no failure is replayed.
#[cfg(not(feature = "cassette"))]
fn replayed(_: &(dyn std::error::Error + 'static)) -> Option<&'static NeverReplayed> {
    None
}

/// Stands for the cassette's replayed failure when the cassette is not built.
#[cfg(not(feature = "cassette"))]
enum NeverReplayed {}

#[cfg(not(feature = "cassette"))]
impl NeverReplayed {
    fn timed_out(&self) -> bool {
        match *self {}
    }

    fn could_not_connect(&self) -> bool {
        match *self {}
    }
}

/// What names one model call in its errors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallSite<'a> {
    pub(crate) provider: &'a str,
    pub(crate) model: &'a str,
    pub(crate) endpoint: &'a str,
    pub(crate) read_timeout: Option<Duration>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn every_body_shape() {
        let openai = br#"{"error": {"message": "Incorrect API key provided: sk-****", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}"#;
        let mut headers = HeaderMap::new();
        headers.insert("x-request-id", HeaderValue::from_static("req_123"));
        let err = ProviderError::from_body("openai", Some(401), Some(&headers), openai);
        assert_eq!(err.kind.as_deref(), Some("invalid_request_error"));
        assert_eq!(err.code.as_deref(), Some("invalid_api_key"));
        assert!(!err.is_retryable());
        let agent = err.into_agent_error("gpt-x", "https://host/v1/chat/completions");
        assert_eq!(
            agent.to_string(),
            "HTTP 401 from https://host/v1/chat/completions: invalid_request_error: Incorrect API key provided: \
             sk-**** (code invalid_api_key, request id req_123)"
        );

        let anthropic = br#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_9"}"#;
        let err = ProviderError::from_body("anthropic", Some(529), None, anthropic);
        assert_eq!(
            (err.kind.as_deref(), err.request_id.as_deref()),
            (Some("overloaded_error"), Some("req_9"))
        );
        assert!(err.is_retryable());

        let llama =
            br#"{"code": 500, "message": "The model produced output that does not match", "type": "server_error"}"#;
        let err = ProviderError::from_body("openai", None, None, llama);
        assert_eq!(
            (err.kind.as_deref(), err.code.as_deref()),
            (Some("server_error"), Some("500"))
        );
        assert!(err.is_retryable());
        let agent = err.into_agent_error("m", "e");
        assert!(agent.is_retryable());
        assert_eq!(ProviderError::of(&agent).and_then(|e| e.code.as_deref()), Some("500"));

        let plain = ProviderError::from_body("openai", Some(404), None, br#"{"error": "model 'x' not found"}"#);
        assert_eq!(plain.message, "model 'x' not found");
        let html = ProviderError::from_body("openai", Some(502), None, b"<html>Bad Gateway</html>");
        assert_eq!(html.message, "(not JSON) <html>Bad Gateway</html>");
        let empty = ProviderError::from_body("openai", Some(503), None, b"");
        assert_eq!(empty.message, "Service Unavailable");
        // FastAPI's validation errors (vLLM, proxies): their places and messages, never the
        // `input` they echo; an unknown body: its field names only; JSON cut short: nothing.
        let fastapi =
            br#"{"detail": [{"loc": ["body", "messages", 0], "msg": "field required", "input": {"PATIENT": 1}}]}"#;
        let err = ProviderError::from_body("openai", Some(422), None, fastapi);
        assert_eq!(err.message, "body.messages.0: field required");
        let detail = ProviderError::from_body("openai", Some(400), None, br#"{"detail": "Not Found"}"#);
        assert_eq!(detail.message, "Not Found");
        let unknown = ProviderError::from_body("openai", Some(400), None, br#"{"oops": "PATIENT", "n": 1}"#);
        assert!(
            !unknown.message.contains("PATIENT") && unknown.message.contains("n, oops"),
            "{}",
            unknown.message
        );
        let cut_short = ProviderError::from_body("openai", Some(400), None, br#"{"error": {"message": "PATIENT"#);
        assert!(!cut_short.message.contains("PATIENT"), "{}", cut_short.message);
        for body in [&br#""PATIENT""#[..], br#"["PATIENT"]"#, br#""PATIENT"#] {
            let err = ProviderError::from_body("openai", Some(400), None, body);
            assert!(!err.message.contains("PATIENT"), "{}", err.message);
        }
        let long = ProviderError::from_body("openai", Some(500), None, "é".repeat(2000).as_bytes());
        assert!(long.message.chars().count() < 600);
        // A JSON message is cut too (a proxy quoting the upstream answer or the request).
        let dump = format!(
            r#"{{"error": {{"message": "{}", "type": "{}"}}}}"#,
            "x".repeat(10_000),
            "t".repeat(2_000)
        );
        let long = ProviderError::from_body("openai", Some(400), None, dump.as_bytes());
        assert!(long.message.chars().count() < 600, "{}", long.message.len());
        assert!(long.kind.as_ref().is_some_and(|k| k.chars().count() < 600));

        let invalid = ProviderError::from_body(
            "anthropic",
            None,
            None,
            br#"{"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}"#,
        );
        assert!(!invalid.is_retryable());
    }
}
