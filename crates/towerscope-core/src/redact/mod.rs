//! Redaction of credentials: the rules `towerscope-otel` applies to everything it records and
//! the cassettes of `towerscope-models` apply to what they write.
//!
//! The rules follow those of [gitleaks](https://github.com/gitleaks/gitleaks) (its
//! `config/gitleaks.toml`, the secret scanners' common reference), reduced to what an agent's
//! messages, tool calls and errors are likely to hold, and tuned to redact a little too much
//! rather than too little (shorter keys than the providers issue, fake keys in examples):
//!
//! | family | what is replaced | gitleaks rule |
//! |---|---|---|
//! | OpenAI | `sk-...`, `sk-proj-...`, `sk-svcacct-...`, `sk-admin-...` (6+ characters that look random, or 16+) | `openai-api-key` |
//! | Anthropic | `sk-ant-...` | `anthropic-api-key`, `anthropic-admin-api-key` |
//! | AWS | access key ids `AKIA`/`ASIA`/`ABIA`/`ACCA`/`A3T.` + 16; secret keys after `aws_secret_access_key=` (a credential key) | `aws-access-token` |
//! | GitHub | `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_` tokens | `github-pat`, `github-oauth`, `github-app-token`, `github-refresh-token`, `github-fine-grained-pat` |
//! | GitLab | `glpat-`, `gldt-`, `glrt-`, `glptt-`, ... tokens | `gitlab-pat`, `gitlab-*-token` |
//! | Slack | `xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, ... and `xapp-` tokens | `slack-*-token` |
//! | Stripe | `sk_live_`, `sk_test_`, `rk_live_`, ... keys and `whsec_` webhook secrets | `stripe-access-token` |
//! | Google | API keys `AIza...` | `gcp-api-key` |
//! | Hugging Face, Perplexity | `hf_...`, `pplx-...` | `huggingface-access-token`, `perplexity-api-key` |
//! | JWT | `eyJ...`.`eyJ...`.`...` | `jwt` |
//! | bearer tokens | the token after `Bearer` (`Authorization: Bearer ...`) | `curl-auth-header` |
//! | private keys | the body of a `-----BEGIN ... PRIVATE KEY-----` block, up to its `-----END` | `private-key` |
//! | credential keys | the value after a key naming a credential and `=`, `:`, `:=` or `=>` (`api_key=...`, `"password": "..."`, `token: ...`, `Authorization: Basic ...`) | `generic-api-key` |
//! | passwords in URLs | the password of `scheme://user:password@host` | `*-url` rules |
//! | signed URLs | the signature of `?sig=`, `&X-Amz-Signature=`, `&X-Goog-Signature=` (in a query string only) | - |
//! | passwords in prose | the word after `password is` / `password was` | - |
//! | curl's user | the password of `-u user:password` / `--user user:password` | `curl-auth-user` |
//!
//! A key names a credential when one of its words (split at `_`, `-`, `.` and camelCase) is
//! `password(s)`, `passwd`, `pwd`, `passphrase`, `passcode`, `secret`, `token`, `apikey`,
//! `auth`, `authorization`, `cookie`, `credential(s)`, `creds`, `bearer` or `jwt`, or is `key`
//! after `api`, `access`, `private`, `secret`, `signing`, `encryption` or `session`: `api_key`,
//! `apiKey`, `x-api-key`, `aws_secret_access_key`, `client_secret`; `max_tokens` and `author`
//! are not credential keys; `api key`, `secret key` (a qualifier, one blank, `key`) name one
//! too. An unquoted value after `:` or in prose that is a common word (`password: required`,
//! `token: none`) is left as it is, as gitleaks' stop words do; after `=` (`password=correct
//! horse`, a setting's value) it is redacted.
//!
//! In JSON ([`redact_value`]; `towerscope_otel::redact::redact_json_text` for raw JSON text) the
//! value of a credential key is replaced whatever it is (a string, a number, an object), and
//! every string goes through the text rules.
//!
//! A replaced value reads [`REDACTED`]. Text with nothing to redact is returned borrowed, without
//! allocating; the scan is one pass over the bytes. The functions are public so that an
//! application can apply the same rules to what it logs.
//!
//! # Example
//!
//! ```
//! use towerscope_core::redact::{REDACTED, redact_text, redact_value};
//!
//! assert_eq!(redact_text("curl -H 'Authorization: Bearer abc.123.xyz'"), format!("curl -H 'Authorization: Bearer {REDACTED}'"));
//! assert_eq!(redact_text("my password is hunter2"), format!("my password is {REDACTED}"));
//! assert_eq!(redact_text("postgres://app:s3cret@db:5432/app"), format!("postgres://app:{REDACTED}@db:5432/app"));
//! assert_eq!(redact_text("It is sunny in Paris."), "It is sunny in Paris.");
//!
//! let mut args = serde_json::json!({"city": "Paris", "api_key": "k-123", "max_tokens": 50});
//! redact_value(&mut args);
//! assert_eq!(args, serde_json::json!({"city": "Paris", "api_key": REDACTED, "max_tokens": 50}));
//! ```

mod keys;
mod tokens;

use std::borrow::Cow;
use std::ops::Range;

use serde_json::Value;

pub use keys::is_sensitive_key;

/// What a redacted value is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// The characters of a word: a key, or the start of a token (`sk-proj-x`, `x-api-key`).
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Redacts credentials in free text; borrows when there is nothing to redact.
pub fn redact_text(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out = Output::new(text);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if is_word(b) {
            let end = i + bytes[i..].iter().position(|&b| !is_word(b)).unwrap_or(bytes.len() - i);
            if i > 0 && is_word(bytes[i - 1]) {
                // The rest of a word a match ended in.
                i = end;
                continue;
            }
            match at_word(text, i, end) {
                Some(found) => {
                    out.replace(found.clone());
                    i = found.end.max(i + 1);
                }
                None => i = end,
            }
        } else if b == b':' {
            match tokens::url_password(bytes, i) {
                Some(found) => {
                    out.replace(found.clone());
                    i = found.end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out.finish()
}

/// Redacts a JSON value in place: the values of credential keys, and credentials in strings.
pub fn redact_value(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if is_sensitive_key(key) {
                    if value.as_str() != Some(REDACTED) {
                        *value = Value::String(REDACTED.to_owned());
                    }
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

/// What to redact from the word `text[start..end]` on, if anything.
fn at_word(text: &str, start: usize, end: usize) -> Option<Range<usize>> {
    let bytes = text.as_bytes();
    if let Some(token_end) = tokens::credential(bytes, start) {
        return Some(start..token_end);
    }
    let word = &text[start..end];
    if word.eq_ignore_ascii_case("bearer") {
        return tokens::after_bearer(bytes, end);
    }
    if word == "-u" || word == "--user" {
        return tokens::curl_user_password(bytes, end);
    }
    if word.starts_with("-----BEGIN") {
        return tokens::private_key_body(text, start);
    }
    keys::value_after_key(text, start, end)
}

/// The redacted text, allocated at the first replacement only.
struct Output<'a> {
    text: &'a str,
    out: Option<String>,
    copied: usize,
}

impl<'a> Output<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            out: None,
            copied: 0,
        }
    }

    /// Replaces `range` (after what was replaced so far) with [`REDACTED`]; a value that already
    /// reads `[REDACTED]` stays as it is.
    fn replace(&mut self, range: Range<usize>) {
        if range.start < self.copied || range.is_empty() || &self.text[range.clone()] == REDACTED {
            return;
        }
        let out = self
            .out
            .get_or_insert_with(|| String::with_capacity(self.text.len() + REDACTED.len()));
        out.push_str(&self.text[self.copied..range.start]);
        out.push_str(REDACTED);
        self.copied = range.end;
    }

    fn finish(self) -> Cow<'a, str> {
        match self.out {
            None => Cow::Borrowed(self.text),
            Some(mut out) => {
                out.push_str(&self.text[self.copied..]);
                Cow::Owned(out)
            }
        }
    }
}

#[cfg(test)]
mod tests;
