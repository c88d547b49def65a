//! What a span records of a failure: `error.type` always, the error's text only with content
//! capture on.
//!
//! Error text is treated as content. A tool's error text often quotes its input. A provider's
//! error message is not user content, but providers, gateways and local servers echo the prompt
//! or the request in it (`Invalid value for 'content': ...`, a rejected JSON body), and it
//! lands in a trace backend read by more people than the application's own logs. So every
//! free-text part of an error (the message of a model, HTTP, rate-limit, tool, validation,
//! decoding, stream, state, middleware or other error) is recorded only on opt-in:
//!
//! | | capture off (default) | capture on |
//! |---|---|---|
//! | `error.type` | [`AgentError::kind`], `tool_error` for a tool's error result | the same |
//! | status description and `exception.message` | the error's structured fields: `model error (gpt-4o)`, `HTTP 401 from /v1/chat`, `rate limited (retry after 2s)`, `tool 'add' failed`, each followed by `; message not recorded: content capture is off`; timeouts, call limits, interruptions and overload, whose messages this crate's dependencies compose from names and numbers only, in full | the whole message, redacted ([`crate::redact`]) |
//!
//! The application still receives the whole error from `Agent::reply`, to log where its content
//! may go.

use std::borrow::Cow;
use std::time::Duration;

use towerscope_core::{AgentError, ErrorInfo, ToolResponse};

use crate::redact::redact_text;

/// Appended to a description whose message was left out.
pub(crate) const WITHHELD: &str = "; message not recorded: content capture is off";

/// The `error.type` of a tool that answered with an error result.
pub(crate) const TOOL_ERROR: &str = "tool_error";

/// A failure as a span records it: `error.type`, and the description of the status and the
/// `exception` event, free of content unless content capture is on.
#[derive(Debug)]
pub(crate) struct Failure<'a> {
    pub(crate) kind: &'a str,
    pub(crate) description: Cow<'a, str>,
}

impl<'a> Failure<'a> {
    /// A failure this crate describes itself (no content in the description).
    pub(crate) fn new(kind: &'a str, description: &'a str) -> Self {
        Self {
            kind,
            description: Cow::Borrowed(description),
        }
    }

    /// An error of a position.
    pub(crate) fn of_error(err: &AgentError, capture: bool) -> Failure<'static> {
        let description = if capture {
            Cow::Owned(redact_text(&err.to_string()).into_owned())
        } else {
            summary(err)
        };
        Failure {
            kind: err.kind(),
            description,
        }
    }

    /// A tool's final response in the `error` state: its text is the tool's content.
    pub(crate) fn of_tool_response(response: &ToolResponse, capture: bool) -> Failure<'static> {
        let description = if capture {
            match response.text_content() {
                Some(text) => Cow::Owned(redact_text(&text).into_owned()),
                None => Cow::Borrowed("the tool returned an error"),
            }
        // Without capture, whether there is a text is enough (joining it would copy it).
        } else if response.content.iter().any(|b| b.as_text().is_some()) {
            Cow::Owned(format!("the tool returned an error{WITHHELD}"))
        } else {
            Cow::Borrowed("the tool returned an error")
        };
        Failure {
            kind: TOOL_ERROR,
            description,
        }
    }

    /// The error a reply ended with (`REPLY_END` with the finished reason `error`).
    pub(crate) fn of_reply_end(info: Option<&'a ErrorInfo>, capture: bool) -> Self {
        match info {
            None => Self::new("_OTHER", "the reply ended with an error"),
            Some(info) if capture => Self {
                kind: &info.kind,
                description: redact_text(&info.message),
            },
            Some(info) => Self {
                kind: &info.kind,
                description: Cow::Owned(format!("the reply ended with a {} error{WITHHELD}", info.kind)),
            },
        }
    }
}

/// An error's description without its free text.
fn summary(err: &AgentError) -> Cow<'static, str> {
    let retry = |after: &Option<Duration>| after.map(|d| format!(" (retry after {d:?})")).unwrap_or_default();
    Cow::Owned(match err {
        AgentError::Timeout { .. }
        | AgentError::CallLimit { .. }
        | AgentError::Interrupted
        | AgentError::Overloaded => {
            // Names and numbers, but a layer names what timed out as it likes (a URL with
            // its password, say): redacted as captured text is.
            return Cow::Owned(redact_text(&err.to_string()).into_owned());
        }
        AgentError::Model { model: Some(model), .. } => format!("model error ({model}){WITHHELD}"),
        AgentError::Model { model: None, .. } => format!("model error{WITHHELD}"),
        AgentError::Http {
            status,
            endpoint,
            retry_after,
            ..
        } => format!(
            "HTTP {status} from {}{}{WITHHELD}",
            redact_text(endpoint),
            retry(retry_after)
        ),
        AgentError::RateLimited { retry_after, .. } => format!("rate limited{}{WITHHELD}", retry(retry_after)),
        AgentError::Tool { tool, .. } => format!("tool '{tool}' failed{WITHHELD}"),
        AgentError::Validation(_) => format!("validation failed{WITHHELD}"),
        AgentError::Decode { what, .. } => format!("could not decode {what}{WITHHELD}"),
        AgentError::Stream(_) => format!("model stream broke{WITHHELD}"),
        AgentError::State(_) => format!("invalid agent state{WITHHELD}"),
        AgentError::Middleware(_) => format!("middleware error{WITHHELD}"),
        other => format!("{}{WITHHELD}", other.kind()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use towerscope_core::{LimitKind, TimeoutKind};

    /// Errors whose free text holds the marker `SECRET_PROMPT`.
    fn errors_with_content() -> Vec<AgentError> {
        vec![
            AgentError::model("provider echoed: SECRET_PROMPT"),
            AgentError::Model {
                model: Some("gpt-4o".into()),
                message: "SECRET_PROMPT".into(),
                retryable: true,
                source: None,
            },
            AgentError::Http {
                status: 400,
                endpoint: "/v1/chat/completions".into(),
                message: "bad request: SECRET_PROMPT".into(),
                retry_after: Some(Duration::from_secs(2)),
            },
            AgentError::rate_limited("SECRET_PROMPT", None),
            AgentError::Tool {
                tool: "search".into(),
                message: "no results for SECRET_PROMPT".into(),
            },
            AgentError::validation("SECRET_PROMPT"),
            AgentError::decode("tool arguments", "SECRET_PROMPT"),
            AgentError::Stream("SECRET_PROMPT".into()),
            AgentError::State("SECRET_PROMPT".into()),
            AgentError::Middleware("SECRET_PROMPT".into()),
            AgentError::other(std::io::Error::other("SECRET_PROMPT")),
        ]
    }

    #[test]
    fn error_text_is_recorded_only_with_content_capture() {
        for err in errors_with_content() {
            let off = Failure::of_error(&err, false);
            assert_eq!(off.kind, err.kind());
            assert!(!off.description.contains("SECRET_PROMPT"), "{}", off.description);
            assert!(off.description.ends_with(WITHHELD), "{}", off.description);
            let on = Failure::of_error(&err, true);
            assert_eq!(on.kind, err.kind());
            assert!(on.description.contains("SECRET_PROMPT"), "{}", on.description);
        }
    }

    #[test]
    fn structured_fields_stay_without_content_capture() {
        let http = AgentError::Http {
            status: 401,
            endpoint: "https://u:pw@api.example/v1/chat".into(),
            message: "invalid key".into(),
            retry_after: Some(Duration::from_secs(2)),
        };
        assert_eq!(
            Failure::of_error(&http, false).description,
            format!("HTTP 401 from https://u:[REDACTED]@api.example/v1/chat (retry after 2s){WITHHELD}")
        );
        let model = AgentError::Model {
            model: Some("gpt-4o".into()),
            message: "down".into(),
            retryable: false,
            source: None,
        };
        assert_eq!(
            Failure::of_error(&model, false).description,
            format!("model error (gpt-4o){WITHHELD}")
        );
        for err in [
            AgentError::Timeout {
                what: "model call m".into(),
                kind: TimeoutKind::Call,
                after: Some(Duration::from_secs(3)),
            },
            AgentError::CallLimit {
                kind: LimitKind::ToolCalls,
                limit: 4,
                scope: "reply",
            },
            AgentError::Interrupted,
            AgentError::Overloaded,
        ] {
            assert_eq!(Failure::of_error(&err, false).description, err.to_string());
        }
    }

    #[test]
    fn a_tool_error_result_is_content() {
        let response = ToolResponse::error("no row matches SECRET_PROMPT; password=hunter2");
        let off = Failure::of_tool_response(&response, false);
        assert_eq!(off.kind, TOOL_ERROR);
        assert_eq!(off.description, format!("the tool returned an error{WITHHELD}"));
        let on = Failure::of_tool_response(&response, true);
        assert_eq!(on.description, "no row matches SECRET_PROMPT; password=[REDACTED]");
    }

    #[test]
    fn a_reply_end_error_keeps_its_kind_only_without_content_capture() {
        let info = ErrorInfo::new("call_limit", "SECRET_PROMPT");
        let off = Failure::of_reply_end(Some(&info), false);
        assert_eq!(off.kind, "call_limit");
        assert!(!off.description.contains("SECRET_PROMPT"));
        assert_eq!(Failure::of_reply_end(Some(&info), true).description, "SECRET_PROMPT");
        assert_eq!(Failure::of_reply_end(None, false).kind, "_OTHER");
    }
}
