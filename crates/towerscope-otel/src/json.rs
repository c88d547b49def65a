//! Writing JSON string literals straight into a `String`: the captured content and redacted JSON
//! are built as text, without `serde_json::Value` trees in between.

use std::fmt::{self, Write as _};

/// Appends `s` as a JSON string literal (quotes, `\"`, `\\` and control characters escaped, as
/// `serde_json` writes them).
pub(crate) fn push_string(out: &mut String, s: &str) {
    out.push('"');
    push_escaped(out, s);
    out.push('"');
}

/// Appends a value's `Display` text as a JSON string literal, without formatting it into a
/// `String` first (ids, numbers).
pub(crate) fn push_display(out: &mut String, value: impl fmt::Display) {
    out.push('"');
    // Writing into a `String` cannot fail.
    let _ = write!(Escaped(out), "{value}");
    out.push('"');
}

/// A JSON array of strings: `["a","b"]`.
pub(crate) fn string_array<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::from("[");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_string(&mut out, item);
    }
    out.push(']');
    out
}

/// A `fmt::Write` that escapes what it is given.
struct Escaped<'a>(&'a mut String);

impl fmt::Write for Escaped<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        push_escaped(self.0, s);
        Ok(())
    }
}

/// Appends the escaped contents of a string literal (no quotes).
fn push_escaped(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    let mut copied = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[copied..i]);
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        } else {
            out.push_str(escape);
        }
        copied = i + 1;
    }
    out.push_str(&s[copied..]);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn literals_read_back_as_the_same_string() {
        for s in [
            "",
            "plain",
            "quote \" and backslash \\",
            "lines\nand\ttabs\r",
            "\u{0}\u{1}\u{8}\u{c}\u{1f}\u{7f}",
            "ünïcödé ☀ and / slash",
        ] {
            let mut out = String::new();
            push_string(&mut out, s);
            assert_eq!(out, serde_json::to_string(s).unwrap(), "{s:?}");
            let mut shown = String::new();
            push_display(&mut shown, s);
            assert_eq!(shown, out);
        }
    }

    #[test]
    fn string_arrays() {
        assert_eq!(string_array([]), "[]");
        assert_eq!(string_array(["add", "say \"hi\""]), r#"["add","say \"hi\""]"#);
    }
}
