//! How a reply ended and what it cost: token usage, finish reason, error info.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Token usage of a message, summed over the model calls of a reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    /// Input (prompt) tokens.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default)]
    pub cache_input_tokens: u64,
    /// Input tokens written to the provider's prompt cache.
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
}

impl Usage {
    /// Usage with input and output tokens and no cache tokens.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            ..Self::default()
        }
    }

    /// Adds all four counters of `other` (saturating).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_input_tokens = self.cache_input_tokens.saturating_add(other.cache_input_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(other.cache_creation_input_tokens);
    }
}

/// Why a reply finished.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyFinishedReason {
    /// The reply completed normally.
    #[default]
    Completed,
    /// The reply was interrupted by the user.
    Interrupted,
    /// The ReAct loop hit its iteration limit.
    ExceedMaxIters,
    /// The reply failed; see the message's [`ErrorInfo`].
    Error,
}

impl ReplyFinishedReason {
    /// The reason's wire name (`"completed"`, `"exceed_max_iters"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Interrupted => "interrupted",
            Self::ExceedMaxIters => "exceed_max_iters",
            Self::Error => "error",
        }
    }
}

impl fmt::Display for ReplyFinishedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A short, UI-facing description of the error that ended a reply.
///
/// `kind` is a stable classification key, serialized as `"type"`: the reference uses
/// `authentication`, `permission`, `rate_limit`, `invalid_request`, `upstream`, `connection`,
/// `internal`, `setup` and `unknown` (the default).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// The classification key.
    #[serde(rename = "type", default = "unknown_kind")]
    pub kind: String,
    /// A short, sanitized, human-readable description.
    pub message: String,
}

fn unknown_kind() -> String {
    "unknown".to_owned()
}

impl ErrorInfo {
    /// Error info with a classification key and a message.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            message: message.into(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_adds_all_counters() {
        let mut usage = Usage::new(10, 2);
        usage.add(&Usage {
            input_tokens: 1,
            output_tokens: 1,
            cache_input_tokens: 5,
            cache_creation_input_tokens: 7,
        });
        assert_eq!(
            usage,
            Usage {
                input_tokens: 11,
                output_tokens: 3,
                cache_input_tokens: 5,
                cache_creation_input_tokens: 7
            }
        );
        let parsed: Usage = serde_json::from_value(json!({"input_tokens": 1, "output_tokens": 2})).unwrap();
        assert_eq!(parsed, Usage::new(1, 2));
    }

    #[test]
    fn reasons_and_error_info_on_the_wire() {
        assert_eq!(
            serde_json::to_value(ReplyFinishedReason::ExceedMaxIters).unwrap(),
            "exceed_max_iters"
        );
        assert_eq!(ReplyFinishedReason::default(), ReplyFinishedReason::Completed);
        let info = ErrorInfo::new("rate_limit", "slow down");
        assert_eq!(
            serde_json::to_value(&info).unwrap(),
            json!({"type": "rate_limit", "message": "slow down"})
        );
        let parsed: ErrorInfo = serde_json::from_value(json!({"message": "m"})).unwrap();
        assert_eq!(parsed.kind, "unknown");
    }
}
