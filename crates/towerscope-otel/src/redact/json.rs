//! Redaction of raw JSON text (a model's tool arguments) in one pass over the text, without
//! building a tree and keeping its layout.

use std::borrow::Cow;
use std::ops::Range;

use super::{is_sensitive_key, redact_text};
use crate::json::push_string;

/// Redacts a raw JSON text (tool arguments). Valid JSON keeps its layout, with the values of
/// credential keys and the credentials in strings replaced, and is borrowed when nothing was;
/// anything else is redacted as text.
pub fn redact_json_text(raw: &str) -> Cow<'_, str> {
    redact_nested(raw, 0)
}

/// [`redact_json_text`] of JSON found `nested` strings deep in another JSON text.
fn redact_nested(raw: &str, nested: usize) -> Cow<'_, str> {
    match edits(raw, nested) {
        Some(edits) if edits.is_empty() => Cow::Borrowed(raw),
        Some(edits) => {
            let mut out = String::with_capacity(raw.len());
            apply(raw, &edits, &mut out);
            Cow::Owned(out)
        }
        // Not one JSON document: JSON Lines, or JSON after a prefix (`Result: {...}`), each
        // line read as JSON from its first bracket (a sensitive key holding an object is not
        // found by the text rules), then the whole as text (a private key spans lines).
        None => match json_lines(raw, nested) {
            Some(redacted) => Cow::Owned(redact_text(&redacted).into_owned()),
            None => redact_text(raw),
        },
    }
}

/// `raw` with each line that holds JSON from its first `{` or `[` to its end redacted as
/// JSON; `None` when no line changed. Each line is parsed at most once.
fn json_lines(raw: &str, nested: usize) -> Option<String> {
    let mut out = String::new();
    let mut copied = 0;
    let mut start = 0;
    for line in raw.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        if let Some(at) = body.find(['{', '['])
            && let Some(edits) = edits(&body[at..], nested)
            && !edits.is_empty()
        {
            let json_start = start + at;
            out.reserve(raw.len() - copied);
            out.push_str(&raw[copied..json_start]);
            apply(&body[at..], &edits, &mut out);
            copied = start + body.len();
        }
        start += line.len();
    }
    if copied == 0 && out.is_empty() {
        return None;
    }
    out.push_str(&raw[copied..]);
    Some(out)
}

/// Appends `raw` redacted as by [`redact_json_text`] if it is valid JSON and returns `true`;
/// appends nothing and returns `false` otherwise.
pub(crate) fn redacted_json(raw: &str, out: &mut String) -> bool {
    match edits(raw, 0) {
        Some(edits) => {
            apply(raw, &edits, out);
            true
        }
        None => false,
    }
}

/// One replacement in a raw JSON text: `range` becomes the JSON text `with`.
#[derive(Debug)]
struct Edit {
    range: Range<usize>,
    with: Cow<'static, str>,
}

/// The replacements that redact `raw`, in order; `None` if `raw` is not valid JSON.
fn edits(raw: &str, nested: usize) -> Option<Vec<Edit>> {
    let mut scanner = Scanner {
        raw,
        bytes: raw.as_bytes(),
        at: 0,
        edits: Vec::new(),
        nested,
    };
    scanner.value(0)?;
    scanner.blanks();
    (scanner.at == raw.len()).then_some(scanner.edits)
}

fn apply(raw: &str, edits: &[Edit], out: &mut String) {
    let mut copied = 0;
    for edit in edits {
        out.push_str(&raw[copied..edit.range.start]);
        out.push_str(&edit.with);
        copied = edit.range.end;
    }
    out.push_str(&raw[copied..]);
}

/// Deeper nesting than this is not parsed (as in `serde_json`): the text is redacted as text.
const MAX_DEPTH: usize = 128;

/// How many strings deep JSON inside a string (`{"payload": "{\"token\": ...}"}`) is read as
/// JSON; deeper, as text. Each level is read once more, so the work stays a small multiple of
/// the text's length.
const MAX_NESTED: usize = 3;

/// A validating JSON scanner collecting [`Edit`]s.
struct Scanner<'a> {
    raw: &'a str,
    bytes: &'a [u8],
    at: usize,
    edits: Vec<Edit>,
    /// How many strings deep this text was found (0: the text given).
    nested: usize,
}

impl Scanner<'_> {
    fn blanks(&mut self) {
        while self.at < self.bytes.len() && matches!(self.bytes[self.at], b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.bytes.get(self.at) == Some(&b)).then(|| self.at += 1)
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.blanks();
        match *self.bytes.get(self.at)? {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => {
                let (range, escaped) = self.string()?;
                let text = self.contents(range.clone(), escaped)?;
                // A string holding JSON (a payload encoded twice) is read as JSON: a sensitive
                // key in it holding an object or an array is not found by reading it as text.
                let json = self.nested < MAX_NESTED && text.trim_start().starts_with(['{', '[']);
                let redacted = if json {
                    redact_nested(&text, self.nested + 1)
                } else {
                    redact_text(&text)
                };
                if let Cow::Owned(redacted) = redacted {
                    let mut with = String::with_capacity(redacted.len() + 2);
                    push_string(&mut with, &redacted);
                    self.edits.push(Edit {
                        range,
                        with: Cow::Owned(with),
                    });
                }
                Some(())
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number(),
        }
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        self.at += 1;
        self.blanks();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            self.blanks();
            let (range, escaped) = self.string()?;
            let sensitive = is_sensitive_key(&self.contents(range, escaped)?);
            self.blanks();
            self.eat(b':')?;
            self.blanks();
            let start = self.at;
            let edits = self.edits.len();
            self.value(depth + 1)?;
            if sensitive {
                self.edits.truncate(edits);
                let value = start..self.at;
                if self.raw[value.clone()] != *QUOTED_REDACTED {
                    self.edits.push(Edit {
                        range: value,
                        with: Cow::Borrowed(QUOTED_REDACTED),
                    });
                }
            }
            self.blanks();
            if self.eat(b',').is_none() {
                return self.eat(b'}');
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        self.at += 1;
        self.blanks();
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            self.value(depth + 1)?;
            self.blanks();
            if self.eat(b',').is_none() {
                return self.eat(b']');
            }
        }
    }

    /// A string literal: its range (quotes included) and whether it holds escapes.
    fn string(&mut self) -> Option<(Range<usize>, bool)> {
        let start = self.at;
        self.eat(b'"')?;
        let mut escaped = false;
        loop {
            match *self.bytes.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some((start..self.at, escaped));
                }
                b'\\' => {
                    escaped = true;
                    match *self.bytes.get(self.at + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 2,
                        b'u' => {
                            let hex = self.bytes.get(self.at + 2..self.at + 6)?;
                            hex.iter().all(u8::is_ascii_hexdigit).then_some(())?;
                            self.at += 6;
                        }
                        _ => return None,
                    }
                }
                0..=0x1f => return None,
                _ => self.at += 1,
            }
        }
    }

    /// The text of a string literal: borrowed unless it holds escapes.
    fn contents(&self, literal: Range<usize>, escaped: bool) -> Option<Cow<'_, str>> {
        if escaped {
            serde_json::from_str::<String>(&self.raw[literal]).ok().map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(&self.raw[literal.start + 1..literal.end - 1]))
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.bytes[self.at..].starts_with(word).then(|| self.at += word.len())
    }

    fn number(&mut self) -> Option<()> {
        let _ = self.eat(b'-');
        let digits = |s: &mut Self| {
            let start = s.at;
            while s.bytes.get(s.at).is_some_and(u8::is_ascii_digit) {
                s.at += 1;
            }
            (s.at > start).then_some(())
        };
        if self.eat(b'0').is_none() {
            digits(self)?;
        }
        if self.eat(b'.').is_some() {
            digits(self)?;
        }
        if matches!(self.bytes.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.bytes.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            digits(self)?;
        }
        Some(())
    }
}

/// [`REDACTED`] as a JSON string literal.
const QUOTED_REDACTED: &str = "\"[REDACTED]\"";

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::redact::{REDACTED, redact_value};
    use serde_json::{Value, json};

    /// JSON Lines, and JSON after a prefix, are read as JSON line by line: a sensitive key
    /// holding an object goes whole (the text rules skip an object value); what is around the
    /// JSON, and secrets over several lines, still go through the text rules.
    #[test]
    fn json_lines_and_json_after_a_prefix_are_read_as_json() {
        let secret = "abc123secretvalue";
        for raw in [
            "{\"n\": 1}\n{\"session\": {\"token\": {\"value\": \"abc123secretvalue\"}}}",
            "Result: {\"session\": {\"token\": {\"value\": \"abc123secretvalue\"}}}",
            "line one\r\nResult: [{\"token\": {\"v\": \"abc123secretvalue\"}}]\r\nthe end",
        ] {
            let redacted = redact_json_text(raw);
            assert!(!redacted.contains(secret), "{redacted}");
            assert!(redacted.contains(REDACTED), "{redacted}");
        }
        assert_eq!(
            redact_json_text("Result: {\"token\": {\"v\": \"x1\"}} and password=hunter2"),
            "Result: {\"token\": {\"v\": \"x1\"}} and password=[REDACTED]",
            "the line is not JSON from its bracket to its end: text rules only"
        );
        let key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----";
        let mixed = format!("{{\"token\": {{\"v\": \"{secret}\"}}}}\n{key}");
        let redacted = redact_json_text(&mixed);
        assert!(
            !redacted.contains(secret) && !redacted.contains("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"),
            "{redacted}"
        );
        assert!(matches!(redact_json_text("just text\n{not json"), Cow::Borrowed(_)));
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
    fn raw_json_keeps_its_layout_and_is_borrowed_unless_redacted() {
        for raw in [
            r#"{"city":  "Paris"}"#,
            "[1, -2.5e+3, true, false, null, \"\\u00e9\\n\", {}]",
            r#"  {"a": {"b": [0.5, "x"]}}  "#,
            r#""just a string""#,
            r#"{"password": "[REDACTED]"}"#,
        ] {
            assert!(matches!(redact_json_text(raw), Cow::Borrowed(r) if r == raw), "{raw}");
        }
        let cases = [
            (
                r#"{"password": "hunter2", "n": 1}"#,
                r#"{"password": "[REDACTED]", "n": 1}"#,
            ),
            (r#"{"token":{"a":[1,2]},"n":1}"#, r#"{"token":"[REDACTED]","n":1}"#),
            (r#"{ "api_key" : 12345 }"#, r#"{ "api_key" : "[REDACTED]" }"#),
            (r#"{"api\u005fkey": "x"}"#, r#"{"api\u005fkey": "[REDACTED]"}"#),
            (
                r#"{"note": "key sk-abcdefghijklmnop1234\n", "b": 2}"#,
                r#"{"note": "key [REDACTED]\n", "b": 2}"#,
            ),
        ];
        for (raw, expected) in cases {
            assert_eq!(redact_json_text(raw), expected, "{raw}");
            let _: Value = serde_json::from_str(&redact_json_text(raw)).unwrap();
        }
    }

    #[test]
    fn json_inside_a_string_is_read_as_json() {
        let cases = [
            (
                r#"{"payload": "{\"token\": {\"value\": \"abc123secretvalue\"}}"}"#,
                r#"{"payload": "{\"token\": \"[REDACTED]\"}"}"#,
            ),
            (
                r#"{"payload": "{\"api_key\": [\"k-abcdef-123456\"]}"}"#,
                r#"{"payload": "{\"api_key\": \"[REDACTED]\"}"}"#,
            ),
            // Not JSON inside: read as text, as before.
            (
                r#"{"note": "{not json, password=hunter2"}"#,
                r#"{"note": "{not json, password=[REDACTED]"}"#,
            ),
        ];
        for (raw, expected) in cases {
            assert_eq!(redact_json_text(raw), expected, "{raw}");
            let _: Value = serde_json::from_str(&redact_json_text(raw)).unwrap();
        }
        // Past MAX_NESTED strings deep, the innermost JSON is read as text.
        let mut raw = r#"{"token": {"v": "abc123secretvalue"}}"#.to_owned();
        for _ in 0..MAX_NESTED + 1 {
            raw = serde_json::to_string(&json!({ "payload": raw })).unwrap();
        }
        let _: Value = serde_json::from_str(&redact_json_text(&raw)).unwrap();
    }

    #[test]
    fn invalid_json_is_redacted_as_text() {
        for (raw, expected) in [
            (r#"{"password": "hunter2""#, r#"{"password": "[REDACTED]""#),
            (r#"{"a": 01}"#, r#"{"a": 01}"#),
            (r#"{"a": "tab	inside"}"#, r#"{"a": "tab	inside"}"#),
            (r#"{"a": 1,}"#, r#"{"a": 1,}"#),
            (r#"{"a": 1} x"#, r#"{"a": 1} x"#),
            (r#"{"a": "\x"}"#, r#"{"a": "\x"}"#),
            ("", ""),
        ] {
            assert_eq!(redact_json_text(raw), expected, "{raw}");
            let mut out = String::new();
            assert!(!redacted_json(raw, &mut out), "{raw}");
            assert!(out.is_empty());
        }
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 2), "]".repeat(MAX_DEPTH + 2));
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        assert!(!redacted_json(&deep, &mut String::new()));
    }

    #[test]
    fn the_scanner_accepts_what_serde_json_accepts() {
        for raw in [
            "0",
            "-0",
            "1.5",
            "1e5",
            "1E-5",
            "-12.25e+10",
            "\"\\ud83d\\ude00\"",
            "{\"a\":[{\"b\":null}],\"c\":\"d\"}",
            " [ ] ",
            "01",
            "1.",
            ".5",
            "-",
            "tru",
            "[1 2]",
            "{\"a\" 1}",
            "{1: 2}",
            "\"\\ud83d\"",
        ] {
            let serde_ok = serde_json::from_str::<Value>(raw).is_ok();
            assert_eq!(edits(raw, 0).is_some(), serde_ok, "{raw}");
        }
    }
}
