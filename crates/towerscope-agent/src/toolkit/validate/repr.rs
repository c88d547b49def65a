//! Values printed as Python's `repr` prints them, for messages shaped like `jsonschema`'s, and
//! cut short so that a huge value never travels back to the model whole.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::Value;

/// How many bytes of one value (or one list of names) an error message shows.
pub(crate) const MAX_SHOWN_BYTES: usize = 256;

/// Text kept up to a limit (at a character boundary) while the full length is still counted, so
/// that a cut can say how much there was: `'aaaa…[truncated, 10485762 bytes total]'`.
pub(crate) struct Bounded {
    out: String,
    total: usize,
    limit: usize,
}

impl Bounded {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            out: String::new(),
            total: 0,
            limit,
        }
    }

    pub(crate) fn push_str(&mut self, s: &str) {
        self.total += s.len();
        let room = self.limit.saturating_sub(self.out.len());
        if room == 0 {
            return;
        }
        if s.len() <= room {
            self.out.push_str(s);
        } else {
            let mut end = room;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            self.out.push_str(&s[..end]);
            // Nothing more fits: a later short piece must not slip in after the cut.
            self.limit = self.out.len();
        }
    }

    pub(crate) fn push(&mut self, c: char) {
        self.push_str(c.encode_utf8(&mut [0; 4]));
    }

    /// Whether nothing more will be kept (later text is only counted).
    fn full(&self) -> bool {
        self.out.len() >= self.limit
    }

    /// The kept text, with `…[truncated, N bytes total]` when some was cut.
    pub(crate) fn finish(mut self) -> String {
        if self.total > self.out.len() {
            let total = self.total;
            let _ = write!(self.out, "…[truncated, {total} bytes total]");
        }
        self.out
    }
}

/// `text` cut to `limit` bytes with the truncation marker, or as it is when it fits.
pub(crate) fn truncate(text: &str, limit: usize) -> Cow<'_, str> {
    if text.len() <= limit {
        return Cow::Borrowed(text);
    }
    let mut b = Bounded::new(limit);
    b.push_str(text);
    Cow::Owned(b.finish())
}

/// A value as Python's `repr` prints the equivalent object (`'a'`, `True`, `None`, `{'k': 1}`),
/// cut to [`MAX_SHOWN_BYTES`].
pub(super) fn repr(value: &Value) -> String {
    let mut out = Bounded::new(MAX_SHOWN_BYTES);
    write_repr(value, &mut out);
    out.finish()
}

/// Several values' `repr`s joined by `", "`, cut to [`MAX_SHOWN_BYTES`] as a whole.
pub(super) fn repr_list<'v>(values: impl IntoIterator<Item = &'v Value>) -> String {
    let mut out = Bounded::new(MAX_SHOWN_BYTES);
    for (i, value) in values.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_repr(value, &mut out);
    }
    out.finish()
}

/// Several strings quoted as Python quotes them, joined by `", "`, cut as a whole.
pub(super) fn py_str_list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = Bounded::new(MAX_SHOWN_BYTES);
    for (i, name) in names.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_py_str(name, &mut out);
    }
    out.finish()
}

fn write_repr(value: &Value, out: &mut Bounded) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_py_str(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_py_str(k, out);
                out.push_str(": ");
                write_repr(v, out);
            }
            out.push('}');
        }
    }
}

/// A string quoted as Python quotes it, cut to [`MAX_SHOWN_BYTES`].
pub(super) fn py_str(s: &str) -> String {
    let mut out = Bounded::new(MAX_SHOWN_BYTES);
    write_py_str(s, &mut out);
    out.finish()
}

fn write_py_str(s: &str, out: &mut Bounded) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for (i, c) in s.char_indices() {
        if out.full() {
            // Only counting from here on: the length the full text would have.
            out.total += escaped_len(&s[i..], quote);
            break;
        }
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// The length of `s` quoted as [`write_py_str`] quotes it, without the quotes; byte by byte, as
/// every character escaped is ASCII.
fn escaped_len(s: &str, quote: char) -> usize {
    let quote = quote as u8;
    s.len()
        + s.bytes()
            .map(|b| match b {
                b'\\' | b'\n' | b'\r' | b'\t' => 1,
                b if b == quote => 1,
                b if b < 0x20 || b == 0x7f => 3,
                _ => 0,
            })
            .sum::<usize>()
}
