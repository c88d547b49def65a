//! Credential keys (`api_key`, `Authorization`, `password`) and the values after them in text:
//! `key=value`, `"key": "value"`, `Authorization: Bearer value`, `password is value`.

use std::ops::Range;

/// The endings that make a word a credential's, whole or run together with others
/// (`PGPASSWORD`, `APIToken`, `JWTSecret`, ngrok's `authtoken`).
const CREDENTIAL_ENDINGS: [&str; 6] = ["apikey", "apikeys", "password", "passwd", "secret", "token"];

/// Whether a word (lower case) makes a key a credential's key, wherever it appears in it, besides
/// the words ending in one of [`CREDENTIAL_ENDINGS`].
fn is_credential_word(word: &[u8]) -> bool {
    matches!(
        word,
        b"passwords"
            | b"secrets"
            | b"pwd"
            | b"passphrase"
            | b"passcode"
            | b"authorization"
            | b"auth"
            | b"cookie"
            | b"credential"
            | b"credentials"
            | b"creds"
            | b"bearer"
            | b"jwt"
    )
}

/// Whether a word (lower case) makes a key a credential's key when `key` follows it
/// (`api_key`, `private-key`).
fn qualifies_key(word: &[u8]) -> bool {
    matches!(
        word,
        b"api" | b"access" | b"private" | b"secret" | b"signing" | b"encryption" | b"session"
    ) || word.ends_with(b"api")
}

/// `word` in lower case, in `buf`; `None` if it is longer than any word looked for.
fn lower<'b>(word: &str, buf: &'b mut [u8; 16]) -> Option<&'b [u8]> {
    let lower = buf.get_mut(..word.len())?;
    lower.copy_from_slice(word.as_bytes());
    lower.make_ascii_lowercase();
    Some(lower)
}

/// Words whose value may be given in prose: `my password is hunter2`.
const PASSWORD_WORDS: &[&str] = &["password", "passwd", "passphrase", "passcode"];

/// Unquoted values that are words, not secrets (`password: required`, `token: none`,
/// `the password is incorrect`): left as they are.
const STOP_WORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "my",
    "your",
    "its",
    "their",
    "this",
    "that",
    "not",
    "no",
    "now",
    "too",
    "very",
    "still",
    "also",
    "being",
    "required",
    "optional",
    "needed",
    "missing",
    "empty",
    "set",
    "unset",
    "correct",
    "incorrect",
    "wrong",
    "invalid",
    "valid",
    "expired",
    "revoked",
    "weak",
    "strong",
    "changed",
    "reset",
    "hidden",
    "stored",
    "encrypted",
    "hashed",
    "null",
    "none",
    "nil",
    "true",
    "false",
    "undefined",
];

/// Values after `=` that say a setting is unset: kept.
const UNSET_WORDS: &[&str] = &["none", "null", "nil", "undefined", "true", "false", "empty", "unset"];

/// Whether an object key (or a `key=` in text) names a credential.
pub fn is_sensitive_key(key: &str) -> bool {
    let mut previous_qualifies = false;
    for word in KeyWords::new(key) {
        if CREDENTIAL_ENDINGS.iter().any(|ending| ends_with(word, ending)) {
            return true;
        }
        let mut buf = [0; 16];
        let Some(word) = lower(word, &mut buf) else {
            // Longer than any credential word.
            previous_qualifies = ends_with(word, "api");
            continue;
        };
        if is_credential_word(word) || ((word == b"key" || word == b"keys") && previous_qualifies) {
            return true;
        }
        previous_qualifies = qualifies_key(word);
    }
    false
}

/// Whether `word` at `start` is a signed URL's signature parameter (`?sig=`, `&X-Amz-Signature=`,
/// `&X-Goog-Signature=`): the signature is the URL's credential. Only in a query string: a
/// `signature` elsewhere (a function's, an email's, a thinking block's) is not a secret.
fn signs_url(text: &str, start: usize, word: &str) -> bool {
    let after_query = start > 0 && matches!(text.as_bytes()[start - 1], b'?' | b'&');
    after_query
        && ["sig", "signature", "x-amz-signature", "x-goog-signature"]
            .iter()
            .any(|name| word.eq_ignore_ascii_case(name))
}

fn is_one_of(word: &str, list: &[&str]) -> bool {
    list.iter().any(|w| word.eq_ignore_ascii_case(w))
}

fn ends_with(word: &str, suffix: &str) -> bool {
    word.len() >= suffix.len() && word.as_bytes()[word.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
}

/// The words of `x-api-key`, `apiKey`, `ACCESS_TOKEN`: split at anything but letters and digits,
/// and where an upper-case letter follows a lower-case one or a digit. Borrowed, no allocation.
struct KeyWords<'a> {
    key: &'a str,
    at: usize,
}

impl<'a> KeyWords<'a> {
    fn new(key: &'a str) -> Self {
        Self { key, at: 0 }
    }
}

impl<'a> Iterator for KeyWords<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let bytes = self.key.as_bytes();
        while self.at < bytes.len() && !bytes[self.at].is_ascii_alphanumeric() {
            self.at += 1;
        }
        if self.at >= bytes.len() {
            return None;
        }
        let start = self.at;
        let mut prev_lower = false;
        while self.at < bytes.len() {
            let b = bytes[self.at];
            if !b.is_ascii_alphanumeric() || (b.is_ascii_uppercase() && prev_lower) {
                break;
            }
            prev_lower = b.is_ascii_lowercase() || b.is_ascii_digit();
            self.at += 1;
        }
        Some(&self.key[start..self.at])
    }
}

fn skip_blanks(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
        i += 1;
    }
    i
}

/// The value after the word `text[start..end]` if the word names a credential: after `=`, `:`,
/// `:=` or `=>` (a closing quote of the key and blanks allowed around it), or, for a password
/// word, after `is` / `was`.
pub(super) fn value_after_key(text: &str, start: usize, end: usize) -> Option<Range<usize>> {
    let bytes = text.as_bytes();
    let mut i = end;
    if i < bytes.len() && matches!(bytes[i], b'"' | b'\'') {
        i += 1;
    } else if bytes.get(i) == Some(&b'\\') && matches!(bytes.get(i + 1), Some(b'"' | b'\'')) {
        // JSON escaped inside a string (a tool's `body` argument): `{\"password\": \"…\"}`.
        i += 2;
    }
    i = skip_blanks(bytes, i);
    let separator = match bytes.get(i) {
        Some(b'=') if bytes.get(i + 1) != Some(&b'=') => {
            Some((if bytes.get(i + 1) == Some(&b'>') { 2 } else { 1 }, Form::Assignment))
        }
        Some(b':') if bytes.get(i + 1) != Some(&b':') => {
            Some((if bytes.get(i + 1) == Some(&b'=') { 2 } else { 1 }, Form::Colon))
        }
        _ => None,
    };
    let word = &text[start..end];
    match separator {
        Some((len, form))
            if is_sensitive_key(word) || qualified_key(text, start, word) || signs_url(text, start, word) =>
        {
            // `Cookie: theme=dark; session=…`: the header's value is every pair, up to the line's
            // end (a `;` ended it after the first pair, and the session cookie after it showed).
            let form = if form == Form::Colon && KeyWords::new(word).last().is_some_and(|w| ends_with(w, "cookie")) {
                Form::Header(enclosing_quote(bytes, start))
            } else {
                form
            };
            value_at(text, skip_blanks(bytes, i + len), form)
        }
        Some(_) => None,
        None if is_one_of(word, PASSWORD_WORDS) => {
            // `password is hunter2`: blanks, `is` or `was`, blanks.
            let verb = skip_blanks(bytes, end);
            if verb == end {
                return None;
            }
            let rest = &bytes[verb..];
            let len = if starts_with_word(rest, b"is") {
                2
            } else if starts_with_word(rest, b"was") {
                3
            } else {
                return None;
            };
            let value = skip_blanks(bytes, verb + len);
            (value > verb + len)
                .then(|| value_at(text, value, Form::Prose))
                .flatten()
        }
        None => None,
    }
}

/// Whether `word` is `key` after a qualifier and one blank: `api key: ...`, `Secret Key = ...`.
fn qualified_key(text: &str, start: usize, word: &str) -> bool {
    if !word.eq_ignore_ascii_case("key") || start < 2 || !matches!(text.as_bytes()[start - 1], b' ' | b'\t') {
        return false;
    }
    let before = &text[..start - 1];
    let previous = before
        .rfind(|c: char| !c.is_ascii_alphanumeric())
        .map_or(before, |at| &before[at + 1..]);
    let mut buf = [0; 16];
    lower(previous, &mut buf).is_some_and(qualifies_key)
}

fn starts_with_word(bytes: &[u8], word: &[u8]) -> bool {
    bytes.len() > word.len()
        && bytes[..word.len()].eq_ignore_ascii_case(word)
        && !bytes[word.len()].is_ascii_alphanumeric()
}

/// How a value follows its key.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `key=value`, `key => value`: in a query string, `&` ends the value.
    Assignment,
    /// `key: value`, `key := value`.
    Colon,
    /// `password is value`.
    Prose,
    /// `Cookie: a=1; b="2"`: a header whose value holds blanks, `;` and quotes, up to the line's
    /// end, or to the quote that closes a string the header is written in (JSON, a shell
    /// argument).
    Header(Option<u8>),
}

/// The quote of the string that text at `at` is inside, on its line: `"`, `'` or `` ` `` when an
/// odd number of them (not escaped, no apostrophe inside a word) come before it. Only the 256 bytes before `at` are read, so
/// that a line of many cookie keys costs what its length does: a string opened farther back
/// is taken as none, and the value runs to the line's end (more is redacted, never less).
fn enclosing_quote(bytes: &[u8], at: usize) -> Option<u8> {
    const LOOK_BACK: usize = 256;
    let from = at.saturating_sub(LOOK_BACK);
    let line = bytes[from..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(from, |i| from + i + 1);
    if line == from && from > 0 {
        return None;
    }
    let before = &bytes[line..at];
    let counted = |quote: u8| {
        before
            .iter()
            .enumerate()
            .filter(|&(i, &b)| {
                let escaped = i > 0 && before[i - 1] == b'\\';
                // An apostrophe after a word (`Here's`, `Zoë's`, `the users' header`) opens no
                // string; a closing quote taken for one leaves the value to run to the line's
                // end (more is redacted, never less).
                let apostrophe = quote == b'\'' && i > 0 && in_word(before[i - 1]);
                b == quote && !escaped && !apostrophe
            })
            .count()
    };
    [b'"', b'\'', b'`'].into_iter().find(|&quote| counted(quote) % 2 == 1)
}

/// Whether `b` is part of a word: a letter or digit, ASCII or not.
fn in_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b >= 0x80
}

/// Whether `b` ends an unquoted value.
fn ends_value(b: u8, form: Form) -> bool {
    if let Form::Header(closing) = form {
        return matches!(b, b'\r' | b'\n') || Some(b) == closing;
    }
    b.is_ascii_whitespace()
        || matches!(b, b'"' | b'\'' | b'`' | b',' | b';' | b'}' | b')' | b']' | b'<' | b'>')
        || (b == b'&' && form == Form::Assignment)
}

/// The value starting at `i`: the inside of a quoted value; else, after an optional
/// `Bearer`/`Basic`/`Token` scheme (not in prose), the run up to a blank or a delimiter.
/// `None` for an empty value, an object or array, or a stop word.
fn value_at(text: &str, mut i: usize, form: Form) -> Option<Range<usize>> {
    let bytes = text.as_bytes();
    if bytes.get(i) == Some(&b'\\')
        && let Some(&quote @ (b'"' | b'\'')) = bytes.get(i + 1)
    {
        // An escaped quote opens the value: it ends at the next escaped quote of its kind.
        let start = i + 2;
        let mut j = start;
        while j < bytes.len() && bytes[j] != b'\n' && !(bytes[j] == b'\\' && bytes.get(j + 1) == Some(&quote)) {
            j += 1;
        }
        return (j > start).then_some(start..j);
    }
    if let Some(&quote @ (b'"' | b'\'' | b'`')) = bytes.get(i) {
        let start = i + 1;
        // A private key as the value: its body, over its lines (as the key's own rule takes it).
        if let Some(body) = super::tokens::private_key_body(text, start) {
            return Some(body);
        }
        let mut j = start;
        while j < bytes.len() && bytes[j] != quote && bytes[j] != b'\n' {
            j += if bytes[j] == b'\\' { 2 } else { 1 };
        }
        let end = j.min(bytes.len());
        return (end > start).then_some(start..end);
    }
    if form != Form::Prose {
        for scheme in [&b"bearer"[..], b"basic", b"token"] {
            let rest = &bytes[i..];
            if starts_with_word(rest, scheme) && matches!(rest[scheme.len()], b' ' | b'\t') {
                i = skip_blanks(bytes, i + scheme.len());
                break;
            }
        }
    }
    // An object or array (its own keys are looked at), or a value already redacted.
    if matches!(bytes.get(i), None | Some(b'{' | b'[')) {
        return None;
    }
    if let Some(body) = super::tokens::private_key_body(text, i) {
        return Some(body);
    }
    let start = i;
    while i < bytes.len() && !ends_value(bytes[i], form) {
        // In a header written inside a string, an escaped quote (`\"`) is part of the value.
        let escaped_quote = match form {
            Form::Header(Some(quote)) => {
                bytes[i] == b'\\' && matches!(bytes.get(i + 1), Some(&b) if b == quote || b == b'\\')
            }
            _ => false,
        };
        i += if escaped_quote { 2 } else { 1 };
    }
    i = i.min(bytes.len());
    while i > start && matches!(bytes[i - 1], b'.' | b':' | b' ' | b'\t') {
        i -= 1;
    }
    let value = &text[start..i];
    // After `=`, a stop word is a setting's value (`password=correct horse`), not prose; an
    // unset one (`api_key=None`) is kept, which is what a trace is read for.
    let kept = if form == Form::Assignment {
        is_one_of(value, UNSET_WORDS)
    } else {
        is_one_of(value, STOP_WORDS)
    };
    (i > start && !kept).then_some(start..i)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A private key as the value of a credential key: its body is redacted over its lines,
    /// quoted or not (the key's value used to end at the first blank or line).
    #[test]
    fn a_private_key_under_a_credential_key_loses_its_body() {
        let key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\nhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----";
        for text in [
            format!("PRIVATE_KEY={key}"),
            format!("PRIVATE_KEY=\"{key}\""),
            format!("secret: {key}"),
        ] {
            let out = super::super::redact_text(&text);
            assert!(
                !out.contains("MIIEvQIBADANBgkq") && !out.contains("hkiG9w0BAQEFAASC"),
                "{out}"
            );
        }
    }

    /// curl's `-u user:password`, a stop word after `=`, and `api key:` with a blank: redacted
    /// (each was left as it was).
    #[test]
    fn curl_users_settings_and_spaced_keys_are_redacted() {
        for (text, redacted) in [
            (
                "curl -u admin:hunter2Pass https://x",
                "curl -u admin:[REDACTED] https://x",
            ),
            ("curl --user 'admin:hunter 2' x", "curl --user 'admin:[REDACTED]' x"),
            ("curl --user=admin:pw x", "curl --user=admin:[REDACTED] x"),
            (
                "password=correct horse battery staple",
                "password=[REDACTED] horse battery staple",
            ),
            ("api key: 7f9c2ba4e88f827d", "api key: [REDACTED]"),
            (
                "curl https://api.example.com/v1 \\\n  -u admin:s3cretPassw0rd",
                "curl https://api.example.com/v1 \\\n  -u admin:[REDACTED]",
            ),
            (
                "Cookie: sessionid=abc \\\nThe weather is nice today.",
                "Cookie: [REDACTED]\nThe weather is nice today.",
            ),
            (
                "Send `Cookie: sessionid=abc123` with every request.",
                "Send `Cookie: [REDACTED]` with every request.",
            ),
            ("Secret Key = 7f9c2ba4e88f827d", "Secret Key = [REDACTED]"),
        ] {
            assert_eq!(super::super::redact_text(text), redacted);
        }
        for kept in [
            "sort -u a.txt",
            "curl -u admin x",
            "the key: a door",
            "password: required",
            "docker run -u 1000:1000 alpine id",
            "date -u +%H:%M:%S",
            "pip install --user git+https://github.com/org/repo",
            "Client(api_key=None, timeout=30)",
            "token=null&x=1",
        ] {
            assert_eq!(super::super::redact_text(kept), kept);
        }
    }

    /// A cookie header's every pair is redacted, up to the line's end (the value ended at the
    /// first `;`, and the session cookie after it was left).
    #[test]
    fn a_cookie_header_loses_every_pair() {
        for text in [
            "Cookie: theme=dark; sessionid=abc123SECRETxyz\nnext line",
            "set-cookie: sessionid=abc123SECRETxyz; Path=/; HttpOnly",
            "{\"headers\": \"Cookie: a=1; sessionid=abc123SECRETxyz\", \"x\": 1}",
            "Cookie: theme=\"dark\"; sessionid=abc123SECRETxyz\nnext line",
            "curl -H 'Cookie: theme=\"dark\"; sessionid=abc123SECRETxyz' https://x",
            r#"{"headers": "Cookie: theme=\"dark\"; sessionid=abc123SECRETxyz"}"#,
            "Here's the header: Cookie: theme='dark'; sessionid=abc123SECRETxyz",
            "Zoë's header: Cookie: theme='dark'; sessionid=abc123SECRETxyz",
            "The users' header: Cookie: theme='dark'; sessionid=abc123SECRETxyz",
        ] {
            let out = super::super::redact_text(text);
            assert!(!out.contains("abc123SECRETxyz"), "{out}");
        }
        let out = super::super::redact_text("Cookie: theme=dark; sessionid=abc123SECRETxyz\nnext line");
        assert!(out.ends_with("\nnext line"), "{out}");
    }

    /// JSON escaped inside a string (an HTTP tool's `body` argument, a JSON log line a tool
    /// read): its credential keys are found, and the rest is left as it is.
    #[test]
    fn credential_keys_in_escaped_json_are_redacted() {
        let out = super::super::redact_text(r#"{\"password\": \"hunter2\", \"name\": \"ann\"}"#);
        assert!(!out.contains("hunter2"), "{out}");
        assert!(out.contains(r#"\"name\": \"ann\""#), "{out}");
        let plain = r#"{\"name\": \"ann\"}"#;
        assert_eq!(super::super::redact_text(plain), plain);
    }

    /// Names written together, in one case or in capitals, are one word: their ending names the
    /// credential.
    #[test]
    fn run_together_credential_names_are_sensitive() {
        for key in [
            "PGPASSWORD",
            "APIToken",
            "JWTSecret",
            "DBPassword",
            "authtoken",
            "identitytoken",
            "MYSQL_PWD",
        ] {
            assert!(is_sensitive_key(key), "{key}");
        }
        for key in ["max_tokens", "tokens", "secretary", "passport", "tokenizer"] {
            assert!(!is_sensitive_key(key), "{key}");
        }
    }

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
            "OpenAIApiKey",
            "auth",
            "x-goog-apikey",
            "aws_secret_access_key",
            "AWS_SECRET_ACCESS_KEY",
            "db.password",
            "my_very_long_service_api_key",
            "averyveryverylongserviceapi_key",
            "averyveryverylongserviceapikey",
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
            "public_key",
            "primary_key",
            "",
        ] {
            assert!(!is_sensitive_key(key), "{key}");
        }
    }

    #[test]
    fn key_words_are_borrowed_slices() {
        let words: Vec<&str> = KeyWords::new("x-apiKey__ACCESS_token2Go").collect();
        assert_eq!(words, ["x", "api", "Key", "ACCESS", "token2", "Go"]);
    }
}
