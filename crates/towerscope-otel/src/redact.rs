//! Redaction of credentials in every value this crate records, content capture on or off.
//!
//! Three rules, applied to every captured string and to error messages:
//!
//! - a JSON object key that names a credential (`api_key`, `apiKey`, `x-api-key`,
//!   `authorization`, `access_token`, `client_secret`, `password`, `cookie`, ...) has its value
//!   replaced, whatever the value is; a key that only counts tokens (`max_tokens`,
//!   `input_tokens`) is not a credential;
//! - in free text, the value after such a key and `=` or `:` (`api_key=abc`,
//!   `"password": "hunter2"`, `Authorization: Bearer abc`) is replaced;
//! - tokens that look like credentials wherever they appear: `Bearer <token>`, OpenAI and
//!   Anthropic keys (`sk-...`), GitHub tokens (`ghp_...`, `github_pat_...`), Slack tokens
//!   (`xoxb-...`), AWS access key ids (`AKIA...`) and Google API keys (`AIza...`).
//!
//! A replaced value reads [`REDACTED`]. The functions are public so that an application can
//! apply the same rules to what it logs.
//!
//! # Example
//!
//! ```
//! use towerscope_otel::redact::{REDACTED, redact_text, redact_value};
//!
//! assert_eq!(redact_text("curl -H 'Authorization: Bearer abc.123.xyz'"), format!("curl -H 'Authorization: Bearer {REDACTED}'"));
//! assert_eq!(redact_text("It is sunny in Paris."), "It is sunny in Paris.");
//!
//! let mut args = serde_json::json!({"city": "Paris", "api_key": "k-123", "max_tokens": 50});
//! redact_value(&mut args);
//! assert_eq!(args, serde_json::json!({"city": "Paris", "api_key": REDACTED, "max_tokens": 50}));
//! ```

use std::borrow::Cow;

use serde_json::Value;

/// What a redacted value is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Words that make a key a credential's key, wherever they appear in it.
const SENSITIVE_WORDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "authorization",
    "auth",
    "cookie",
    "credential",
    "credentials",
    "bearer",
    "jwt",
];

/// Words that make a key a credential's key when `key` follows them (`api_key`, `private-key`).
const KEY_QUALIFIERS: &[&str] = &["api", "access", "private", "secret", "signing", "encryption", "session"];

/// Whether an object key (or a `key=` in text) names a credential.
pub fn is_sensitive_key(key: &str) -> bool {
    let words = split_words(key);
    words.iter().enumerate().any(|(i, word)| {
        SENSITIVE_WORDS.contains(&word.as_str())
            || (word == "key" && i > 0 && KEY_QUALIFIERS.contains(&words[i - 1].as_str()))
            || word.ends_with("apikey")
    })
}

/// Splits `x-api-key`, `apiKey`, `ACCESS_TOKEN` into lower-case words.
fn split_words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for ch in key.chars() {
        if !ch.is_ascii_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            prev_lower = false;
            continue;
        }
        if ch.is_ascii_uppercase() && prev_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        prev_lower = ch.is_ascii_lowercase() || ch.is_ascii_digit();
        current.push(ch.to_ascii_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// Redacts a JSON value in place: the values of credential keys, and credentials in strings.
pub fn redact_value(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if is_sensitive_key(key) {
                    *value = Value::String(REDACTED.to_owned());
                } else {
                    redact_value(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_value),
        Value::String(text) => {
            if let Cow::Owned(redacted) = redact_text(text) {
                *text = redacted;
            }
        }
        _ => {}
    }
}

/// Redacts a raw JSON text (tool arguments): parsed and redacted when it parses (re-encoded only
/// if something was redacted), redacted as text otherwise.
pub fn redact_json_text(raw: &str) -> Cow<'_, str> {
    match serde_json::from_str::<Value>(raw) {
        Ok(mut value) => {
            let before = value.clone();
            redact_value(&mut value);
            if value == before {
                Cow::Borrowed(raw)
            } else {
                Cow::Owned(value.to_string())
            }
        }
        Err(_) => redact_text(raw),
    }
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Redacts credentials in free text; borrows when there is nothing to redact.
pub fn redact_text(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !is_ident(bytes[i]) || (i > 0 && is_ident(bytes[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i;
        while end < bytes.len() && is_ident(bytes[end]) {
            end += 1;
        }
        let word = &text[start..end];
        if let Some(len) = known_token_len(word) {
            ranges.push((start, start + len));
        } else if word.eq_ignore_ascii_case("bearer") {
            if let Some(range) = token_after(bytes, end) {
                ranges.push(range);
            }
        } else if is_sensitive_key(word) {
            if let Some(range) = value_after_key(bytes, end) {
                ranges.push(range);
                end = range.1.max(end);
            }
        }
        i = end;
    }
    if ranges.is_empty() {
        return Cow::Borrowed(text);
    }
    ranges.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in ranges {
        if start < at {
            continue;
        }
        out.push_str(&text[at..start]);
        out.push_str(REDACTED);
        at = end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// The length of a credential token at the start of `word` (an identifier run), if it is one.
fn known_token_len(word: &str) -> Option<usize> {
    let body = |prefix_len: usize, min: usize| (word.len() >= prefix_len + min).then_some(word.len());
    let b = word.as_bytes();
    if word.starts_with("sk-") {
        return body(3, 16);
    }
    for prefix in ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"] {
        if word.starts_with(prefix) {
            return body(prefix.len(), 20);
        }
    }
    for prefix in ["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-"] {
        if word.starts_with(prefix) {
            return body(prefix.len(), 10);
        }
    }
    if word.starts_with("AKIA")
        && b.len() >= 20
        && b[4..20].iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        return Some(20);
    }
    if word.starts_with("AIza") {
        return body(4, 30);
    }
    None
}

/// Token characters of a bearer token or a credential value.
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'~' | b'+' | b'/' | b'=')
}

/// The token after `Bearer` and spaces: at least 8 token characters, with a digit or a symbol
/// (or 20 characters of anything), so that "bearer of" stays.
fn token_after(bytes: &[u8], mut i: usize) -> Option<(usize, usize)> {
    let spaces = i;
    while i < bytes.len() && bytes[i] == b' ' {
        i += 1;
    }
    if i == spaces {
        return None;
    }
    let start = i;
    while i < bytes.len() && is_token(bytes[i]) {
        i += 1;
    }
    let token = &bytes[start..i];
    let looks_like_token = token.len() >= 20 || token.iter().any(|b| !b.is_ascii_alphabetic());
    (token.len() >= 8 && looks_like_token).then_some((start, i))
}

/// The value after a credential key: optional closing quote, `=` or `:`, spaces, an optional
/// opening quote, an optional `Bearer`/`Basic`/`Token` scheme, then the value up to a delimiter.
fn value_after_key(bytes: &[u8], mut i: usize) -> Option<(usize, usize)> {
    if i < bytes.len() && matches!(bytes[i], b'"' | b'\'') {
        i += 1;
    }
    while i < bytes.len() && bytes[i] == b' ' {
        i += 1;
    }
    if i >= bytes.len() || !matches!(bytes[i], b'=' | b':') {
        return None;
    }
    i += 1;
    while i < bytes.len() && bytes[i] == b' ' {
        i += 1;
    }
    if i < bytes.len() && matches!(bytes[i], b'"' | b'\'') {
        i += 1;
    }
    for scheme in [&b"bearer "[..], b"basic ", b"token "] {
        if bytes.len() >= i + scheme.len() && bytes[i..i + scheme.len()].eq_ignore_ascii_case(scheme) {
            i += scheme.len();
            while i < bytes.len() && bytes[i] == b' ' {
                i += 1;
            }
            break;
        }
    }
    let start = i;
    while i < bytes.len()
        && !bytes[i].is_ascii_whitespace()
        && !matches!(bytes[i], b'"' | b'\'' | b'&' | b',' | b';' | b'}' | b')' | b']')
    {
        i += 1;
    }
    (i > start).then_some((start, i))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn credential_keys_but_not_token_counts() {
        for key in [
            "api_key",
            "apiKey",
            "x-api-key",
            "API_KEY",
            "Authorization",
            "access_token",
            "refreshToken",
            "client_secret",
            "password",
            "Cookie",
            "private_key",
            "openai_api_key",
            "auth",
            "x-goog-apikey",
        ] {
            assert!(is_sensitive_key(key), "{key}");
        }
        for key in [
            "max_tokens",
            "input_tokens",
            "city",
            "author",
            "keyboard",
            "key",
            "monkey",
            "tokens",
        ] {
            assert!(!is_sensitive_key(key), "{key}");
        }
    }

    #[test]
    fn json_values_of_credential_keys_are_replaced() {
        let mut value = json!({
            "city": "Paris",
            "api_key": "abc",
            "nested": [{"Authorization": {"scheme": "x"}, "max_tokens": 5}],
            "note": "use sk-abcdefghijklmnop1234 please",
        });
        redact_value(&mut value);
        assert_eq!(
            value,
            json!({
                "city": "Paris",
                "api_key": REDACTED,
                "nested": [{"Authorization": REDACTED, "max_tokens": 5}],
                "note": format!("use {REDACTED} please"),
            })
        );
    }

    #[test]
    fn raw_json_is_kept_unless_redacted() {
        let raw = r#"{"city":  "Paris"}"#;
        assert!(matches!(redact_json_text(raw), Cow::Borrowed(r) if r == raw));
        let redacted: Value = serde_json::from_str(&redact_json_text(r#"{"password": "hunter2", "n": 1}"#)).unwrap();
        assert_eq!(redacted, json!({"password": REDACTED, "n": 1}));
        assert_eq!(
            redact_json_text(r#"{"password": "hunter2""#),
            format!(r#"{{"password": "{REDACTED}""#)
        );
    }

    #[test]
    fn credentials_in_text() {
        let cases = [
            (
                "Authorization: Bearer abc.def.ghi123",
                "Authorization: Bearer [REDACTED]",
            ),
            ("header bearer eyJhbGciOiJIUzI1NiJ9.x.y", "header bearer [REDACTED]"),
            ("key sk-proj-ABCDEFGHIJKLMNOP1234", "key [REDACTED]"),
            ("sk-ant-api03-abcdefghijklmnopqrstu", "[REDACTED]"),
            ("url?api_key=s3cr3t&city=Paris", "url?api_key=[REDACTED]&city=Paris"),
            (r#"{"password": "hunter2"}"#, r#"{"password": "[REDACTED]"}"#),
            ("token=abc123, next", "token=[REDACTED], next"),
            ("AKIAABCDEFGHIJKLMNOP is aws", "[REDACTED] is aws"),
            ("ghp_abcdefghijklmnopqrstuvwxyz0123", "[REDACTED]"),
            ("xoxb-1234567890-abc", "[REDACTED]"),
        ];
        for (input, expected) in cases {
            assert_eq!(redact_text(input), expected, "{input}");
        }
    }

    #[test]
    fn ordinary_text_is_borrowed() {
        for text in [
            "The bearer of bad news",
            "max_tokens: 100",
            "a task-list with sk-short",
            "It is sunny in Paris, 21 °C.",
            "Pässwörter sind geheim",
            "",
        ] {
            assert!(matches!(redact_text(text), Cow::Borrowed(_)), "{text}");
        }
    }
}
