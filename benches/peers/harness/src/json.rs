//! One flat JSON object per result line, without a serde dependency.

use std::fmt::Write;

/// A JSON object being written field by field.
#[derive(Debug, Default)]
pub struct Line(String);

impl Line {
    /// An empty object.
    pub fn new() -> Self {
        Self::default()
    }

    fn key(&mut self, key: &str) {
        self.0.push(if self.0.is_empty() { '{' } else { ',' });
        string(&mut self.0, key);
        self.0.push(':');
    }

    /// A string field.
    pub fn str(mut self, key: &str, value: &str) -> Self {
        self.key(key);
        string(&mut self.0, value);
        self
    }

    /// A number field; NaN and infinities become `null`.
    pub fn num(mut self, key: &str, value: f64) -> Self {
        self.key(key);
        if value.is_finite() {
            let _ = write!(self.0, "{value}");
        } else {
            self.0.push_str("null");
        }
        self
    }

    /// A number field rounded to `digits` decimals.
    pub fn fixed(mut self, key: &str, value: f64, digits: usize) -> Self {
        self.key(key);
        let _ = write!(self.0, "{value:.digits$}");
        self
    }

    /// A `null` field.
    pub fn null(mut self, key: &str) -> Self {
        self.key(key);
        self.0.push_str("null");
        self
    }

    /// The finished object, e.g. `{"a":1}`.
    pub fn finish(mut self) -> String {
        if self.0.is_empty() {
            self.0.push('{');
        }
        self.0.push('}');
        self.0
    }
}

fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::Line;

    #[test]
    fn writes_flat_objects() {
        let line = Line::new()
            .str("peer", "a\"b")
            .num("n", 3.0)
            .fixed("x", 1.23456, 2)
            .null("m")
            .finish();
        assert_eq!(line, r#"{"peer":"a\"b","n":3,"x":1.23,"m":null}"#);
        assert_eq!(Line::new().finish(), "{}");
    }
}
