//! Parsing of tool-call arguments: repair of what a truncated stream leaves, then coercion of
//! types to the tool's schema.
//!
//! Models stream tool arguments as raw JSON text. A stream cut short (a length limit, a dropped
//! connection) leaves `{"city": "Par`; a model asked for a string sometimes writes a number. As in
//! the reference (`_json_loads_with_repair`), the arguments are repaired and coerced before they
//! are validated, so the tool gets the call the model meant.

use serde_json::{Map, Value};

use super::InputLimits;
use super::coerce::{Target, fit_to_schema};
use super::validate::lenient_patterns;

/// Parses a tool call's raw arguments, repairing truncated JSON and coercing types to `schema`.
///
/// * An empty (or blank) string means `{}`.
/// * Text that does not parse is repaired as a truncated stream: an open string is closed, a
///   dangling `,` or `:` or half-written key is dropped, `tru`/`fals`/`nul` are completed, a
///   half-written number loses its dangling `.`/`e`/`-`, a trailing comma before a closer is
///   dropped, and open arrays and objects are closed in order.
/// * The value is then coerced where the schema asks for another type (through `properties`,
///   `additionalProperties`, `items`, `prefixItems`, `$ref`, `anyOf`/`oneOf`/`allOf`): a number or
///   boolean becomes its JSON text where a string is wanted; a numeric string becomes a number
///   where an integer or number is wanted (and an integral float such as `5.0` becomes `5` for an
///   integer); `"true"`/`"false"` become booleans; a string holding a JSON object or array
///   becomes that value where one is wanted.
/// * A value that already validates against `schema` is not coerced: only its integral floats
///   become integers where an integer is wanted. Keys matched by `patternProperties` are
///   coerced by their pattern's schema, `additionalProperties` applies to keys matched by no
///   property and no pattern. A value under `anyOf`/`oneOf` that is valid under one of its
///   branches stays as it is (a serde tagged enum's later variant keeps its number); otherwise it
///   is coerced into the first branch under which the coerced value is valid, or left as it is;
///   an object or an array that one branch alone admits by its type is coerced under that
///   branch, whether or not it then fits (the validation after judges it).
///
/// The text must fit the default [`InputLimits`] (1 MiB, 64 levels of nesting), checked in one
/// pass before anything parses it; repair and parsing are then linear in the text.
///
/// The error (text that cannot be repaired, or over the limits) names the problem; it is meant
/// for the model.
///
/// ```
/// use serde_json::json;
/// use towerscope_agent::toolkit::parse_with_repair;
///
/// let schema = json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}});
/// assert_eq!(parse_with_repair(r#"{"city": "Par"#, &schema)?, json!({"city": "Par"}));
/// assert_eq!(parse_with_repair(r#"{"city": 75, "days": "3"}"#, &schema)?, json!({"city": "75", "days": 3}));
/// assert_eq!(parse_with_repair("", &schema)?, json!({}));
/// # Ok::<(), String>(())
/// ```
pub fn parse_with_repair(raw: &str, schema: &Value) -> Result<Value, String> {
    let mut value = parse_repaired(raw, &InputLimits::default())?;
    let patterns = lenient_patterns(schema);
    fit_to_schema(
        &mut value,
        Target {
            root: schema,
            patterns: &patterns,
        },
    );
    Ok(value)
}

/// The parsing half of [`parse_with_repair`]: the limits checked, the text parsed or repaired,
/// no coercion.
pub(crate) fn parse_repaired(raw: &str, limits: &InputLimits) -> Result<Value, String> {
    limits.check(raw)?;
    let text = raw.trim();
    if text.is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value) => Ok(value),
        Err(err) => match repair(text).and_then(|fixed| serde_json::from_str(&fixed).ok()) {
            Some(value) => Ok(value),
            None => Err(format!("the input is not valid JSON ({err})")),
        },
    }
}

/// What a container expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// After `{`: a key or `}`.
    KeyOrClose,
    /// After `,` in an object.
    Key,
    /// After a key.
    Colon,
    /// After `:` in an object, or `,` in an array.
    Value,
    /// After `[`: a value or `]`.
    ValueOrClose,
    /// After a member or element.
    CommaOrClose,
}

struct Frame {
    closer: u8,
    expect: Expect,
    /// Output length before the member being written (before its `,`, or just after the opener).
    cut: usize,
}

/// Completes JSON text that a stream left unfinished; `None` if it is broken in another way.
pub(crate) fn repair(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let n = b.len();
    let mut out: Vec<u8> = Vec::with_capacity(n + 8);
    let mut stack: Vec<Frame> = Vec::new();
    let mut top_done = false;
    let mut i = 0;
    'scan: while i < n {
        let c = b[i];
        if c.is_ascii_whitespace() {
            out.push(c);
            i += 1;
            continue;
        }
        if top_done && stack.is_empty() {
            // Stray closers after a complete value are dropped; anything else is not truncation.
            if c == b'}' || c == b']' {
                i += 1;
                continue;
            }
            return None;
        }
        match c {
            b'{' | b'[' => {
                expect_value(&stack, top_done)?;
                out.push(c);
                let (closer, expect) = if c == b'{' {
                    (b'}', Expect::KeyOrClose)
                } else {
                    (b']', Expect::ValueOrClose)
                };
                stack.push(Frame {
                    closer,
                    expect,
                    cut: out.len(),
                });
                i += 1;
            }
            b'}' | b']' => {
                let frame = stack.last()?;
                if frame.closer != c {
                    return None;
                }
                match frame.expect {
                    Expect::KeyOrClose | Expect::ValueOrClose | Expect::CommaOrClose => {}
                    // A trailing comma: `[1, ]`, `{"a": 1, }`.
                    Expect::Key if c == b'}' => out.truncate(frame.cut),
                    Expect::Value if c == b']' => out.truncate(frame.cut),
                    _ => return None,
                }
                out.push(c);
                stack.pop();
                value_done(&mut stack, &mut top_done);
                i += 1;
            }
            b',' => {
                let frame = stack.last_mut()?;
                if frame.expect != Expect::CommaOrClose {
                    return None;
                }
                frame.cut = out.len();
                frame.expect = if frame.closer == b'}' {
                    Expect::Key
                } else {
                    Expect::Value
                };
                out.push(c);
                i += 1;
            }
            b':' => {
                let frame = stack.last_mut()?;
                if frame.expect != Expect::Colon {
                    return None;
                }
                frame.expect = Expect::Value;
                out.push(c);
                i += 1;
            }
            b'"' => {
                let is_key = stack
                    .last()
                    .is_some_and(|f| matches!(f.expect, Expect::KeyOrClose | Expect::Key));
                if !is_key {
                    expect_value(&stack, top_done)?;
                }
                match scan_string(b, i + 1) {
                    StringEnd::Closed(end) => {
                        out.extend_from_slice(&b[i..=end]);
                        if is_key {
                            if let Some(frame) = stack.last_mut() {
                                frame.expect = Expect::Colon;
                            }
                        } else {
                            value_done(&mut stack, &mut top_done);
                        }
                        i = end + 1;
                    }
                    StringEnd::Truncated(keep) if !is_key => {
                        out.extend_from_slice(&b[i..keep]);
                        out.push(b'"');
                        value_done(&mut stack, &mut top_done);
                        break 'scan;
                    }
                    StringEnd::Truncated(_) => {
                        drop_member(&mut stack, &mut out);
                        break 'scan;
                    }
                }
            }
            _ => {
                let start = i;
                while i < n && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'.' | b'+' | b'-')) {
                    i += 1;
                }
                if i == start {
                    return None;
                }
                expect_value(&stack, top_done)?;
                let token = &b[start..i];
                if i < n {
                    out.extend_from_slice(token);
                } else if let Some(full) = [&b"true"[..], b"false", b"null"]
                    .into_iter()
                    .find(|l| l.starts_with(token))
                {
                    out.extend_from_slice(full);
                } else {
                    // A number cut short: `1.`, `2e`, `3e-`, `-`.
                    let mut end = token.len();
                    while end > 0 && matches!(token[end - 1], b'.' | b'e' | b'E' | b'+' | b'-') {
                        end -= 1;
                    }
                    if end == 0 {
                        drop_member(&mut stack, &mut out);
                        break 'scan;
                    }
                    out.extend_from_slice(&token[..end]);
                }
                value_done(&mut stack, &mut top_done);
            }
        }
    }
    // Close what is open, innermost first.
    while let Some(frame) = stack.last() {
        if !matches!(
            frame.expect,
            Expect::KeyOrClose | Expect::ValueOrClose | Expect::CommaOrClose
        ) {
            drop_member(&mut stack, &mut out);
            continue;
        }
        out.push(frame.closer);
        stack.pop();
        value_done(&mut stack, &mut top_done);
    }
    if !top_done {
        return None;
    }
    String::from_utf8(out).ok()
}

/// Checks that a value may start here.
fn expect_value(stack: &[Frame], top_done: bool) -> Option<()> {
    let ok = match stack.last() {
        Some(frame) => matches!(frame.expect, Expect::Value | Expect::ValueOrClose),
        None => !top_done,
    };
    ok.then_some(())
}

fn value_done(stack: &mut [Frame], top_done: &mut bool) {
    match stack.last_mut() {
        Some(frame) => frame.expect = Expect::CommaOrClose,
        None => *top_done = true,
    }
}

/// Drops the unfinished member of the innermost container (with its comma).
fn drop_member(stack: &mut [Frame], out: &mut Vec<u8>) {
    if let Some(frame) = stack.last_mut() {
        out.truncate(frame.cut);
        frame.expect = if out.last().is_some_and(|&c| c == b'{' || c == b'[') {
            if frame.closer == b'}' {
                Expect::KeyOrClose
            } else {
                Expect::ValueOrClose
            }
        } else {
            Expect::CommaOrClose
        };
    }
}

enum StringEnd {
    /// The index of the closing quote.
    Closed(usize),
    /// The input ended inside the string; keep the bytes before this index.
    Truncated(usize),
}

/// Scans a string body from `start` (just after the opening quote).
fn scan_string(b: &[u8], start: usize) -> StringEnd {
    let n = b.len();
    let mut k = start;
    // The start of a `\uD800`-`\uDBFF` escape that ends at `k`: its pair may be cut off.
    let mut high_surrogate_at = None;
    while k < n {
        match b[k] {
            b'"' => return StringEnd::Closed(k),
            b'\\' => {
                if k + 1 >= n {
                    break;
                }
                if b[k + 1] != b'u' {
                    high_surrogate_at = None;
                    k += 2;
                    continue;
                }
                if k + 6 > n || !b[k + 2..k + 6].iter().all(u8::is_ascii_hexdigit) {
                    break;
                }
                let high =
                    matches!(b[k + 2], b'd' | b'D') && matches!(b[k + 3], b'8'..=b'9' | b'a'..=b'b' | b'A'..=b'B');
                high_surrogate_at = high.then_some(k);
                k += 6;
            }
            _ => {
                high_surrogate_at = None;
                k += 1;
            }
        }
    }
    // Cut at `k`: a dangling escape is dropped, and so is a high surrogate left without its pair.
    StringEnd::Truncated(high_surrogate_at.unwrap_or(k))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fixed(text: &str) -> Value {
        parse_with_repair(text, &json!({})).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    #[test]
    fn valid_and_empty_input() {
        assert_eq!(fixed(r#"{"a": [1, {"b": null}]}"#), json!({"a": [1, {"b": null}]}));
        assert_eq!(fixed(""), json!({}));
        assert_eq!(fixed("  \n"), json!({}));
    }

    #[test]
    fn truncated_strings() {
        assert_eq!(fixed(r#"{"city": "Par"#), json!({"city": "Par"}));
        assert_eq!(fixed(r#"{"city": ""#), json!({"city": ""}));
        assert_eq!(fixed(r#"{"q": "a\"b"#), json!({"q": "a\"b"}));
        assert_eq!(fixed(r#"{"q": "ab\"#), json!({"q": "ab"}));
        assert_eq!(fixed(r#"{"q": "ab\u00"#), json!({"q": "ab"}));
        assert_eq!(fixed(r#"{"q": "x\u00e9"#), json!({"q": "xé"}));
        assert_eq!(fixed(r#"{"q": "x\ud83d\ude0"#), json!({"q": "x"}));
        assert_eq!(fixed(r#"{"q": "x\ud83d"#), json!({"q": "x"}));
        assert_eq!(fixed(r#"{"q": "日本"#), json!({"q": "日本"}));
        assert_eq!(fixed(r#""abc"#), json!("abc"));
    }

    #[test]
    fn dangling_keys_commas_and_colons() {
        assert_eq!(fixed(r#"{"a": 1,"#), json!({"a": 1}));
        assert_eq!(fixed(r#"{"a": 1, "#), json!({"a": 1}));
        assert_eq!(fixed(r#"{"a": 1, "b"#), json!({"a": 1}));
        assert_eq!(fixed(r#"{"a": 1, "b""#), json!({"a": 1}));
        assert_eq!(fixed(r#"{"a": 1, "b":"#), json!({"a": 1}));
        assert_eq!(fixed(r#"{"a": 1, "b": "#), json!({"a": 1}));
        assert_eq!(fixed(r#"{"b":"#), json!({}));
        assert_eq!(fixed("{"), json!({}));
        assert_eq!(fixed("[1, 2,"), json!([1, 2]));
        assert_eq!(fixed("["), json!([]));
    }

    #[test]
    fn nested_containers_close_in_order() {
        assert_eq!(fixed(r#"{"a": [1, {"b": [true"#), json!({"a": [1, {"b": [true]}]}));
        assert_eq!(fixed(r#"{"a": {"b": {"c": "d"#), json!({"a": {"b": {"c": "d"}}}));
        assert_eq!(fixed(r#"[{"a": 1}, {"#), json!([{"a": 1}, {}]));
        assert_eq!(fixed(r#"{"a": [], "b": {"#), json!({"a": [], "b": {}}));
    }

    #[test]
    fn literals_and_numbers() {
        assert_eq!(fixed(r#"{"a": tru"#), json!({"a": true}));
        assert_eq!(fixed(r#"{"a": fals"#), json!({"a": false}));
        assert_eq!(fixed(r#"{"a": n"#), json!({"a": null}));
        assert_eq!(fixed(r#"{"a": 12"#), json!({"a": 12}));
        assert_eq!(fixed(r#"{"a": 1.5"#), json!({"a": 1.5}));
        assert_eq!(fixed(r#"{"a": 1."#), json!({"a": 1}));
        assert_eq!(fixed(r#"{"a": 2e"#), json!({"a": 2}));
        assert_eq!(fixed(r#"{"a": 2e-"#), json!({"a": 2}));
        assert_eq!(fixed(r#"{"x": 0, "a": -"#), json!({"x": 0}));
        assert_eq!(fixed("[1, -"), json!([1]));
    }

    #[test]
    fn trailing_commas_and_stray_closers() {
        assert_eq!(fixed(r#"{"a": 1,}"#), json!({"a": 1}));
        assert_eq!(fixed("[1, 2, ]"), json!([1, 2]));
        assert_eq!(fixed(r#"{"a": 1}}"#), json!({"a": 1}));
    }

    #[test]
    fn unrepairable_input_names_the_error() {
        for bad in [
            r#"{"a" 1}"#,
            "{'a': 1}",
            r#"{"a": 1} x"#,
            "{a: 1}",
            r#"{"a": 1]"#,
            "nope",
            "{,}",
            "-",
        ] {
            let err = parse_with_repair(bad, &json!({})).unwrap_err();
            assert!(err.starts_with("the input is not valid JSON ("), "{bad}: {err}");
        }
    }
}
