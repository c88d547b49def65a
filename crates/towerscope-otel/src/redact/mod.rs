//! Redaction of credentials in every value this crate records, content capture on or off.
//!
//! The rules are [`towerscope_core::redact`]'s (shared with the cassettes of
//! `towerscope-models`), re-exported here; this module adds raw JSON text
//! ([`redact_json_text`]), redacted in one pass without building a tree, for tool arguments.
//!
//! # Example
//!
//! ```
//! use towerscope_otel::redact::{REDACTED, redact_json_text, redact_text, redact_value};
//!
//! assert_eq!(redact_text("curl -H 'Authorization: Bearer abc.123.xyz'"), format!("curl -H 'Authorization: Bearer {REDACTED}'"));
//! assert_eq!(redact_text("It is sunny in Paris."), "It is sunny in Paris.");
//!
//! let mut args = serde_json::json!({"city": "Paris", "api_key": "k-123", "max_tokens": 50});
//! redact_value(&mut args);
//! assert_eq!(args, serde_json::json!({"city": "Paris", "api_key": REDACTED, "max_tokens": 50}));
//! assert_eq!(redact_json_text(r#"{"token": 42, "n": 1}"#), format!(r#"{{"token": "{REDACTED}", "n": 1}}"#));
//! ```

mod json;

pub use json::redact_json_text;
pub use towerscope_core::redact::{REDACTED, is_sensitive_key, redact_text, redact_value};

pub(crate) use json::redacted_json;
