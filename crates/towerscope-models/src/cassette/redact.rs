//! What a cassette writes of a request and a response, with the secrets left out:
//!
//! - request headers: only the values of `content-type`, `accept`, `user-agent`,
//!   `anthropic-version`, `anthropic-beta`, `openai-beta` and those the cassette was told to
//!   keep are written; every other value (the API key, a bearer token, a cookie, an
//!   organization, any header configured on the model) reads `[REDACTED]`;
//! - response headers: all but the framing ones (`date`, `content-length`,
//!   `transfer-encoding`, `connection`, `keep-alive`), with cookies, credential-named headers
//!   and those the cassette was told to redact reading `[REDACTED]`;
//! - the URL: its path, and its query with the values of credential-named parameters
//!   redacted (no scheme, host, port, user or password);
//! - the request body: through [`towerscope_core::redact`], the rules tracing applies;
//! - everywhere (body, response headers and chunks): the exact value of every credential
//!   header sent (a key, the token after `Bearer `) is replaced, wherever it appears, also
//!   when the server's chunks split it (the body's chunks are scrubbed together when it ends).

use std::collections::BTreeMap;

use reqwest::header::HeaderMap;
use serde_json::Value;
use towerscope_core::redact::{REDACTED, is_sensitive_key, redact_value};

use super::file::RecordedRequest;

/// Request headers whose values are written.
const KEPT: &[&str] = &[
    "content-type",
    "accept",
    "user-agent",
    "anthropic-version",
    "anthropic-beta",
    "openai-beta",
];

/// Response headers left out.
const FRAMING: &[&str] = &[
    "date",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
];

/// The shortest secret replaced wherever it appears.
const MIN_SECRET: usize = 8;

/// Which headers a cassette keeps and redacts beyond the defaults (names in lower case).
#[derive(Debug, Clone, Default)]
pub(crate) struct HeaderRules {
    pub(crate) keep: Vec<String>,
    pub(crate) redact: Vec<String>,
}

/// The secrets of one request: the values of its credential headers, its URL's password and
/// credential query values, and its URL as a whole (which an error's text quotes: it is written
/// as its redacted path).
#[derive(Debug, Clone, Default)]
pub(crate) struct Secrets {
    values: Vec<String>,
    /// The request's URL as sent, and as written.
    url: Option<(String, String)>,
}

impl HeaderRules {
    /// The request as written, and its secrets.
    pub(crate) fn request(&self, request: &reqwest::Request) -> (RecordedRequest, Secrets) {
        let mut secrets = Vec::new();
        let mut headers = BTreeMap::new();
        for (name, value) in request.headers() {
            let name = name.as_str();
            let text = String::from_utf8_lossy(value.as_bytes()).into_owned();
            let secret = value.is_sensitive() || is_sensitive_key(name) || self.redact.iter().any(|r| r == name);
            if secret {
                if let Some(token) = text.strip_prefix("Bearer ").or_else(|| text.strip_prefix("bearer ")) {
                    secrets.push(token.trim().to_owned());
                }
                secrets.push(text.trim().to_owned());
            }
            let kept = !secret && (KEPT.contains(&name) || self.keep.iter().any(|k| k == name));
            headers.insert(name.to_owned(), if kept { text } else { REDACTED.to_owned() });
        }
        let url = request.url();
        secrets.extend(url.password().map(str::to_owned));
        secrets.extend(
            url.query_pairs()
                .filter(|(k, _)| is_sensitive_key(k) || k == "key")
                .map(|(_, v)| v.into_owned()),
        );
        secrets.retain(|s| s.len() >= MIN_SECRET);
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        let secrets = Secrets {
            values: secrets,
            url: Some((url.as_str().to_owned(), path_of(url))),
        };
        let bytes = request.body().and_then(reqwest::Body::as_bytes).unwrap_or_default();
        let (body, body_text) = match serde_json::from_slice::<Value>(bytes) {
            Ok(mut json) => {
                redact_value(&mut json);
                secrets.scrub_value(&mut json);
                (Some(json), None)
            }
            Err(_) if bytes.is_empty() => (None, None),
            Err(_) => {
                let text = String::from_utf8_lossy(bytes);
                let text = towerscope_core::redact::redact_text(&text).into_owned();
                (None, Some(secrets.scrub_text(&text)))
            }
        };
        let recorded = RecordedRequest {
            method: request.method().as_str().to_owned(),
            path: path_of(request.url()),
            headers,
            body,
            body_text,
        };
        (recorded, secrets)
    }

    /// The response headers as written.
    pub(crate) fn response(&self, headers: &HeaderMap, secrets: &Secrets) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (name, value) in headers {
            let name = name.as_str();
            if FRAMING.contains(&name) {
                continue;
            }
            let secret = value.is_sensitive()
                || name == "set-cookie"
                || is_sensitive_key(name)
                || self.redact.iter().any(|r| r == name);
            let text = if secret {
                REDACTED.to_owned()
            } else {
                secrets.scrub_text(&String::from_utf8_lossy(value.as_bytes()))
            };
            // A repeated header keeps its values, comma-separated.
            out.entry(name.to_owned())
                .and_modify(|v: &mut String| {
                    v.push_str(", ");
                    v.push_str(&text);
                })
                .or_insert(text);
        }
        out
    }
}

impl Secrets {
    /// `text` with the request's URL written as its redacted path and every secret replaced.
    pub(crate) fn scrub_text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        if let Some((sent, written)) = &self.url
            && out.contains(sent.as_str())
        {
            out = out.replace(sent.as_str(), written);
        }
        for secret in &self.values {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    /// A body's `chunks` with every secret replaced, also one split across chunks: the
    /// replacement stands where the secret began, the rest of it is cut from the chunks that
    /// held it, and a chunk that held nothing else is dropped. The chunks' other bytes and
    /// boundaries are kept.
    pub(crate) fn scrub_chunks(&self, chunks: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        if self.values.is_empty() {
            return chunks;
        }
        let all = chunks.concat();
        let found = self.occurrences(&all);
        if found.is_empty() {
            return chunks;
        }
        let mut out = Vec::with_capacity(chunks.len());
        let mut ranges = found.iter().peekable();
        let mut start = 0;
        for chunk in &chunks {
            let end = start + chunk.len();
            let mut piece = Vec::with_capacity(chunk.len());
            let mut at = start;
            while at < end {
                match ranges.peek() {
                    Some(range) if range.start < end => {
                        // A secret that began in an earlier chunk is only cut here.
                        if range.start >= at {
                            piece.extend_from_slice(&all[at..range.start]);
                            piece.extend_from_slice(REDACTED.as_bytes());
                        }
                        at = range.end.min(end);
                        if range.end <= end {
                            ranges.next();
                        }
                    }
                    _ => {
                        piece.extend_from_slice(&all[at..end]);
                        at = end;
                    }
                }
            }
            if !piece.is_empty() || chunk.is_empty() {
                out.push(piece);
            }
            start = end;
        }
        out
    }

    /// Where the secrets occur in `bytes`, in order and not overlapping (the longer first
    /// where two begin together). Linear in `bytes` for the secrets' bounded lengths.
    fn occurrences(&self, bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
        let mut found: Vec<std::ops::Range<usize>> = Vec::new();
        for secret in &self.values {
            let needle = secret.as_bytes();
            if needle.is_empty() || bytes.len() < needle.len() {
                continue;
            }
            let hits = bytes.windows(needle.len()).enumerate().filter(|(_, w)| *w == needle);
            found.extend(hits.map(|(i, _)| i..i + needle.len()));
        }
        found.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
        let mut kept: Vec<std::ops::Range<usize>> = Vec::with_capacity(found.len());
        for range in found {
            if kept.last().is_none_or(|last| range.start >= last.end) {
                kept.push(range);
            }
        }
        kept
    }

    fn scrub_value(&self, value: &mut Value) {
        if self.values.is_empty() && self.url.is_none() {
            return;
        }
        match value {
            Value::String(text) => *text = self.scrub_text(text),
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub_value(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.scrub_value(v)),
            _ => {}
        }
    }
}

/// The path and query, credential-named query values redacted.
fn path_of(url: &reqwest::Url) -> String {
    let mut path = url.path().to_owned();
    if url.query().is_some() {
        let pairs: Vec<String> = url
            .query_pairs()
            .map(|(k, v)| {
                let value = if is_sensitive_key(&k) || k == "key" {
                    REDACTED.into()
                } else {
                    v
                };
                format!("{k}={value}")
            })
            .collect();
        path.push('?');
        path.push_str(&pairs.join("&"));
    }
    path
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn secrets_are_left_out_of_headers_body_and_query() {
        let url = reqwest::Url::parse("http://u:pw@127.0.0.1:8080/v1/chat?api_key=k123&x=1").unwrap();
        let mut request = reqwest::Request::new(reqwest::Method::POST, url);
        let mut key = HeaderValue::from_static("Bearer sk-test-secret-123");
        key.set_sensitive(true);
        let headers = request.headers_mut();
        headers.insert("authorization", key);
        headers.insert("x-team", HeaderValue::from_static("search"));
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        let body =
            r#"{"model": "m", "messages": [{"role": "user", "content": "my key is sk-test-secret-123, api_key=abc"}]}"#;
        *request.body_mut() = Some(body.into());
        let (recorded, secrets) = HeaderRules::default().request(&request);
        assert_eq!(recorded.path, "/v1/chat?api_key=[REDACTED]&x=1");
        assert_eq!(recorded.headers["authorization"], REDACTED);
        assert_eq!(recorded.headers["x-team"], REDACTED);
        assert_eq!(recorded.headers["content-type"], "application/json");
        let written = serde_json::to_string(&recorded).unwrap();
        assert!(
            !written.contains("sk-test") && !written.contains("abc") && !written.contains("pw"),
            "{written}"
        );
        let chunks = secrets.scrub_chunks(vec![b"data: echo sk-test-secret-123\n\n".to_vec()]);
        assert_eq!(chunks, [b"data: echo [REDACTED]\n\n".to_vec()]);
        let fine = vec![b"data: fine\n\n".to_vec()];
        assert_eq!(secrets.scrub_chunks(fine.clone()), fine);
    }

    #[test]
    fn a_secret_split_across_chunks_is_replaced_where_it_began() {
        let secrets = Secrets {
            values: vec!["Bearer sk-0123456789".into(), "sk-0123456789".into()],
            url: None,
        };
        let chunks = |parts: &[&str]| parts.iter().map(|p| p.as_bytes().to_vec()).collect::<Vec<_>>();
        // Split in two, in three (one chunk all secret, dropped), and next to an unsplit one.
        assert_eq!(
            secrets.scrub_chunks(chunks(&["data: a sk-01", "23456789 b\n\n"])),
            chunks(&["data: a [REDACTED]", " b\n\n"])
        );
        assert_eq!(
            secrets.scrub_chunks(chunks(&["x sk-", "0123", "456789", " y sk-0123456789"])),
            chunks(&["x [REDACTED]", " y [REDACTED]"])
        );
        // The longer secret wins where both begin; empty chunks are kept; a near miss is not cut.
        assert_eq!(
            secrets.scrub_chunks(chunks(&["Bearer sk-0123", "", "456789 sk-012345678"])),
            chunks(&["[REDACTED]", "", " sk-012345678"])
        );
        assert_eq!(
            secrets.scrub_chunks(chunks(&["sk-0123456789"])),
            chunks(&["[REDACTED]"])
        );
    }

    #[test]
    fn headers_kept_and_redacted_as_configured() {
        let rules = HeaderRules {
            keep: vec!["x-team".into()],
            redact: vec!["x-session".into()],
        };
        let mut request = reqwest::Request::new(reqwest::Method::POST, "http://h/v1".parse().unwrap());
        let headers = request.headers_mut();
        headers.insert("x-team", HeaderValue::from_static("search"));
        headers.insert("x-session", HeaderValue::from_static("session-0123456789"));
        let (recorded, secrets) = rules.request(&request);
        assert_eq!(recorded.headers["x-team"], "search");
        assert_eq!(recorded.headers["x-session"], REDACTED);
        let mut response = HeaderMap::new();
        response.insert("x-session", HeaderValue::from_static("other"));
        response.insert("x-echo", HeaderValue::from_static("was session-0123456789"));
        response.insert("set-cookie", HeaderValue::from_static("a=b"));
        response.insert("date", HeaderValue::from_static("today"));
        let written = rules.response(&response, &secrets);
        assert_eq!(written.get("x-session").map(String::as_str), Some(REDACTED));
        assert_eq!(written.get("x-echo").map(String::as_str), Some("was [REDACTED]"));
        assert_eq!(written.get("set-cookie").map(String::as_str), Some(REDACTED));
        assert!(!written.contains_key("date"));
    }
}
