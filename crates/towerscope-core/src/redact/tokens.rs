//! Credentials recognised by their own shape, wherever they appear: provider keys by prefix,
//! JWTs, bearer tokens, private key blocks, and passwords in URLs.

use std::ops::Range;

/// How long a credential's body (after its prefix) must be.
#[derive(Clone, Copy)]
enum Len {
    /// At least this many characters.
    AtLeast(usize),
    /// Exactly this many characters, not followed by a letter or digit.
    Exactly(usize),
    /// At least this many characters that look random (two of lower case, upper case and
    /// digits), or at least 16 of any kind: `sk-abc123` but not `sk-learn`.
    Random(usize),
}

/// A credential format recognised by its prefix.
struct Format {
    prefix: &'static [u8],
    body: fn(u8) -> bool,
    len: Len,
}

const fn format(prefix: &'static str, body: fn(u8) -> bool, len: Len) -> Format {
    Format {
        prefix: prefix.as_bytes(),
        body,
        len,
    }
}

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn upper_alnum(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

fn alnum_underscore(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn url_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn url_safe_dot(b: u8) -> bool {
    url_safe(b) || b == b'.'
}

/// The formats, most specific prefix first (gitleaks rule ids in the comments).
const FORMATS: &[Format] = &[
    // anthropic-api-key, anthropic-admin-api-key
    format("sk-ant-", url_safe, Len::AtLeast(8)),
    // openai-api-key (project, service account, admin, legacy keys)
    format("sk-proj-", url_safe, Len::AtLeast(8)),
    format("sk-svcacct-", url_safe, Len::AtLeast(8)),
    format("sk-admin-", url_safe, Len::AtLeast(8)),
    format("sk-", url_safe, Len::Random(6)),
    // stripe-access-token
    format("sk_live_", alnum, Len::AtLeast(10)),
    format("sk_test_", alnum, Len::AtLeast(10)),
    format("sk_prod_", alnum, Len::AtLeast(10)),
    format("rk_live_", alnum, Len::AtLeast(10)),
    format("rk_test_", alnum, Len::AtLeast(10)),
    format("rk_prod_", alnum, Len::AtLeast(10)),
    format("whsec_", alnum, Len::AtLeast(20)),
    // github-pat, github-oauth, github-app-token, github-refresh-token, github-fine-grained-pat
    format("ghp_", alnum, Len::AtLeast(20)),
    format("gho_", alnum, Len::AtLeast(20)),
    format("ghu_", alnum, Len::AtLeast(20)),
    format("ghs_", alnum, Len::AtLeast(20)),
    format("ghr_", alnum, Len::AtLeast(20)),
    format("github_pat_", alnum_underscore, Len::AtLeast(20)),
    // gitlab-pat, gitlab-pat-routable and the other gitlab-*-token rules
    format("glpat-", url_safe_dot, Len::AtLeast(20)),
    format("gldt-", url_safe_dot, Len::AtLeast(20)),
    format("glrt-", url_safe_dot, Len::AtLeast(20)),
    format("glptt-", url_safe_dot, Len::AtLeast(20)),
    format("glft-", url_safe_dot, Len::AtLeast(20)),
    format("glimt-", url_safe_dot, Len::AtLeast(20)),
    format("glagent-", url_safe_dot, Len::AtLeast(20)),
    format("gloas-", url_safe_dot, Len::AtLeast(20)),
    format("glsoat-", url_safe_dot, Len::AtLeast(20)),
    format("glcbt-", url_safe_dot, Len::AtLeast(20)),
    // slack-bot-token, slack-user-token, slack-legacy-*, slack-app-token
    format("xoxb-", url_safe, Len::AtLeast(10)),
    format("xoxp-", url_safe, Len::AtLeast(10)),
    format("xoxa-", url_safe, Len::AtLeast(10)),
    format("xoxr-", url_safe, Len::AtLeast(10)),
    format("xoxs-", url_safe, Len::AtLeast(10)),
    format("xoxo-", url_safe, Len::AtLeast(10)),
    format("xoxe-", url_safe, Len::AtLeast(10)),
    format("xapp-", url_safe, Len::AtLeast(10)),
    // aws-access-token
    format("AKIA", upper_alnum, Len::Exactly(16)),
    format("ASIA", upper_alnum, Len::Exactly(16)),
    format("ABIA", upper_alnum, Len::Exactly(16)),
    format("ACCA", upper_alnum, Len::Exactly(16)),
    format("A3T", upper_alnum, Len::Exactly(17)),
    // gcp-api-key
    format("AIza", url_safe, Len::AtLeast(30)),
    // huggingface-access-token, perplexity-api-key
    format("hf_", alnum, Len::AtLeast(30)),
    format("pplx-", alnum, Len::AtLeast(40)),
];

/// Whether `rest` starts with the first two bytes of a prefix above: most words are skipped
/// at once.
fn may_start_a_format(rest: &[u8]) -> bool {
    matches!(
        rest,
        [b's' | b'r', b'k', ..]
            | [b'w', b'h', ..]
            | [b'g', b'h' | b'i' | b'l', ..]
            | [b'x', b'o' | b'a', ..]
            | [b'A', b'K' | b'S' | b'B' | b'C' | b'3' | b'I', ..]
            | [b'h', b'f', ..]
            | [b'p', b'p', ..]
    )
}

/// The end of the credential starting at `start` (the start of a word), if one does.
pub(super) fn credential(bytes: &[u8], start: usize) -> Option<usize> {
    let rest = &bytes[start..];
    if rest.starts_with(b"ey") {
        return jwt(bytes, start);
    }
    if !may_start_a_format(rest) {
        return None;
    }
    let format = FORMATS.iter().find(|f| rest.starts_with(f.prefix))?;
    let body_start = format.prefix.len();
    let mut body_end = body_start + rest[body_start..].iter().take_while(|&&b| (format.body)(b)).count();
    while body_end > body_start && rest[body_end - 1] == b'.' {
        body_end -= 1;
    }
    let body = &rest[body_start..body_end];
    let matched = match format.len {
        Len::AtLeast(min) => body.len() >= min,
        Len::Exactly(len) => body.len() == len && !rest.get(body_end).is_some_and(u8::is_ascii_alphanumeric),
        Len::Random(min) => body.len() >= 16 || (body.len() >= min && looks_random(body)),
    };
    matched.then_some(start + body_end)
}

/// Whether a short token mixes at least two of lower case, upper case and digits.
fn looks_random(body: &[u8]) -> bool {
    let lower = body.iter().any(u8::is_ascii_lowercase);
    let upper = body.iter().any(u8::is_ascii_uppercase);
    let digit = body.iter().any(u8::is_ascii_digit);
    u8::from(lower) + u8::from(upper) + u8::from(digit) >= 2
}

/// The end of a JWT (`eyJ...`.`eyJ...`.`signature`, the signature possibly empty) at `start`.
fn jwt(bytes: &[u8], start: usize) -> Option<usize> {
    let segment = |from: usize| from + bytes[from..].iter().take_while(|&&b| url_safe(b)).count();
    let header_end = segment(start);
    let claims = header_end + 1;
    let is_segment = |from: usize, to: usize| to >= from + 10 && bytes[from..].starts_with(b"ey");
    if !is_segment(start, header_end) || bytes.get(header_end) != Some(&b'.') {
        return None;
    }
    let claims_end = segment(claims);
    if !is_segment(claims, claims_end) || bytes.get(claims_end) != Some(&b'.') {
        return None;
    }
    let signature = claims_end + 1;
    Some(
        signature
            + bytes[signature..]
                .iter()
                .take_while(|&&b| url_safe(b) || b == b'=')
                .count(),
    )
}

/// Characters of a bearer token.
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'~' | b'+' | b'/' | b'=')
}

/// The token after `Bearer` (ending at `i`) and blanks: at least 8 token characters, with a
/// digit or a symbol, or 20 characters of anything, so that "the bearer of bad news" stays.
pub(super) fn after_bearer(bytes: &[u8], mut i: usize) -> Option<Range<usize>> {
    let blanks = i;
    while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
        i += 1;
    }
    if i == blanks {
        return None;
    }
    let start = i;
    while i < bytes.len() && is_token(bytes[i]) {
        i += 1;
    }
    let token = &bytes[start..i];
    let looks_like_token = token.len() >= 20 || token.iter().any(|b| !b.is_ascii_alphabetic());
    (token.len() >= 8 && looks_like_token).then_some(start..i)
}

/// The password of curl's `-u user:password` / `--user=user:password` (the flag ending at `i`):
/// what follows the first `:` of the value, up to a blank or the value's closing quote. `None`
/// when the value has no `:` (curl then asks for the password) or nothing after it, and for
/// other commands' `-u` values (numbers, a `+` format, a URL). Whatever the command (a curl
/// command may run over several lines): more is redacted, never less.
pub(super) fn curl_user_password(bytes: &[u8], mut i: usize) -> Option<Range<usize>> {
    let flag_end = i;
    if bytes.get(i) == Some(&b'=') {
        i += 1;
    } else {
        while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
            i += 1;
        }
        if i == flag_end {
            return None;
        }
    }
    let quote = match bytes.get(i) {
        Some(&q @ (b'"' | b'\'')) => {
            i += 1;
            Some(q)
        }
        _ => None,
    };
    let ends = |b: u8| match quote {
        Some(q) => b == q || b == b'\n',
        None => b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'`'),
    };
    let value = i;
    while i < bytes.len() && !ends(bytes[i]) {
        i += 1;
    }
    let found = &bytes[value..i];
    // Not a user and password: `1000:1000` (a uid and gid: `docker run -u`), `+%H:%M` (a
    // format: `date -u`), a URL (`pip install --user git+https://…`).
    let numbers = found.iter().all(|&b| b.is_ascii_digit() || b == b':');
    if numbers || found.first() == Some(&b'+') || found.windows(3).any(|w| w == b"://") {
        return None;
    }
    let colon = value + found.iter().position(|&b| b == b':')?;
    (colon + 1 < i).then_some(colon + 1..i)
}

/// The body of a private key block starting at `start` (`-----BEGIN ... PRIVATE KEY-----`), up
/// to its `-----END` line or, when it has none (a truncated text), to the end of the text.
pub(super) fn private_key_body(text: &str, start: usize) -> Option<Range<usize>> {
    const BEGIN: &str = "-----BEGIN ";
    let rest = text[start..].strip_prefix(BEGIN)?;
    let label_len = rest.find("-----").filter(|&len| len <= 100)?;
    let label = &rest[..label_len];
    let is_label = label
        .bytes()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || matches!(b, b' ' | b'_' | b'-'));
    if !is_label || !(label.ends_with("PRIVATE KEY") || label.ends_with("PRIVATE KEY BLOCK")) {
        return None;
    }
    let body = start + BEGIN.len() + label_len + "-----".len();
    let end = text[body..].find("-----END").map_or(text.len(), |len| body + len);
    (end > body).then_some(body..end)
}

/// The password of `scheme://user:password@host`, the `:` of `://` being at `colon`. The user
/// information ends at the authority's last `@` (as URL parsers split it), so a password
/// holding `@` is taken whole.
pub(super) fn url_password(bytes: &[u8], colon: usize) -> Option<Range<usize>> {
    if !bytes[colon..].starts_with(b"://") {
        return None;
    }
    let authority = colon + 3;
    let mut password = None;
    let mut last_at = None;
    for (i, &b) in bytes.iter().enumerate().skip(authority) {
        match b {
            b':' if password.is_none() => password = Some(i + 1),
            b'@' => last_at = Some(i),
            b'/' | b'?' | b'#' | b'"' | b'\'' | b'`' | b'<' | b'>' => break,
            _ if b.is_ascii_whitespace() => break,
            _ => {}
        }
    }
    let (start, end) = (password?, last_at?);
    (end > start).then_some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A password holding `@`: the user information ends at the last `@` of the authority.
    #[test]
    fn a_url_password_holding_an_at_sign_is_redacted_whole() {
        use crate::redact::redact_text;
        assert_eq!(
            redact_text("postgres://app:p@ssw0rd@db/app"),
            "postgres://app:[REDACTED]@db/app"
        );
        assert_eq!(redact_text("https://host:8080/path"), "https://host:8080/path");
        assert_eq!(redact_text("https://me@host:8080/a@b"), "https://me@host:8080/a@b");
    }

    #[test]
    fn the_quick_check_lets_every_prefix_through() {
        for format in FORMATS {
            assert!(
                may_start_a_format(format.prefix),
                "{}",
                String::from_utf8_lossy(format.prefix)
            );
        }
    }
}
