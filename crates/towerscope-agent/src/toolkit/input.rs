//! What a tool call's raw input must be before it is parsed: [`InputLimits`], and
//! [`parse_input`], which parses, repairs, coerces and validates it.

use serde_json::Value;

use super::coerce::{Target, coerce_to_schema, integers_to_schema};
use super::json_repair::parse_repaired;
use super::validate::{CompiledSchema, check_placed, lenient_patterns, value_at};

/// Bounds on a tool call's raw arguments, checked before anything parses them, so that a model's
/// output cannot make parsing, repair or validation run long or deep.
///
/// The defaults are 1 MiB and 64 levels of nesting. `serde_json` itself stops at 128 levels, so
/// a larger depth has no effect past that.
///
/// ```
/// use towerscope_agent::toolkit::{InputLimits, Toolkit};
///
/// let mut toolkit = Toolkit::new();
/// toolkit.set_input_limits(InputLimits::new().with_max_bytes(64 * 1024).with_max_depth(16));
/// assert_eq!(toolkit.input_limits().max_bytes(), 64 * 1024);
/// assert_eq!(InputLimits::default().max_depth(), 64);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputLimits {
    max_bytes: usize,
    max_depth: usize,
}

impl InputLimits {
    /// The default size limit: 1 MiB.
    pub const DEFAULT_MAX_BYTES: usize = 1024 * 1024;
    /// The default nesting limit: 64 levels of arrays and objects.
    pub const DEFAULT_MAX_DEPTH: usize = 64;

    /// The default limits.
    pub fn new() -> Self {
        Self {
            max_bytes: Self::DEFAULT_MAX_BYTES,
            max_depth: Self::DEFAULT_MAX_DEPTH,
        }
    }

    /// The largest input accepted, in bytes of UTF-8.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// How deep arrays and objects may nest (`[[1]]` is 2 levels).
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// The largest input accepted, in bytes.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// How deep arrays and objects may nest.
    pub fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// Checks `text` in one pass, without parsing it; the error is meant for the model.
    pub(crate) fn check(&self, text: &str) -> Result<(), String> {
        let max = self.max_bytes;
        if text.len() > max {
            return Err(format!(
                "the input is {} bytes, more than the limit of {max} bytes; send a smaller input",
                text.len()
            ));
        }
        let max = self.max_depth;
        let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
        for &c in text.as_bytes() {
            if in_string {
                match c {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match c {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > max {
                        return Err(format!(
                            "the input nests arrays and objects more than {max} levels deep; send a flatter input"
                        ));
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        Ok(())
    }
}

impl Default for InputLimits {
    fn default() -> Self {
        Self::new()
    }
}

/// Parses a tool call's raw input against `schema` (repairing truncated JSON and coercing types
/// as the reference does) and validates it, within the default [`InputLimits`]. The error is the
/// text the model gets back: `Input validation failed for tool '{name}': {message} (at {json_path})`.
///
/// Keywords the validator does not enforce are ignored here; the [`Toolkit`](super::Toolkit)
/// refuses them when a tool is added.
pub fn parse_input(name: &str, raw: &str, schema: &Value) -> Result<Value, String> {
    let patterns = lenient_patterns(schema);
    let target = Target {
        root: schema,
        patterns: &patterns,
    };
    parse_checked(name, raw, target, &InputLimits::default(), |_| false)
}

/// [`parse_input`] with a compiled schema and given limits, as the toolkit runs it. An input
/// that already matches a flat object schema (scalar properties, the usual tool) is returned
/// as parsed: coercion would change nothing and validation would pass.
pub(crate) fn parse_compiled(
    name: &str,
    raw: &str,
    schema: &CompiledSchema,
    limits: &InputLimits,
) -> Result<Value, String> {
    let target = Target {
        root: schema.schema(),
        patterns: &schema.patterns,
    };
    parse_checked(name, raw, target, limits, |input| schema.accepts_as_is(input))
}

/// Parses (and repairs) `raw`; unless `fits` says it is already what `schema` asks for,
/// validates it, and only if it is not valid as it is, coerces it and validates it again.
///
/// An input valid as sent is never coerced (its integral floats become integers where integers
/// are wanted, nothing else), so a valid call is validated once. The error of an input that is
/// still invalid once coerced quotes what the model sent: it is the coerced input's error when
/// coercion left its place as sent, else the error of the input as sent.
fn parse_checked(
    name: &str,
    raw: &str,
    schema: Target<'_>,
    limits: &InputLimits,
    fits: impl FnOnce(&Value) -> bool,
) -> Result<Value, String> {
    let failed = |e| format!("Input validation failed for tool '{name}': {e}");
    let mut input = parse_repaired(raw, limits).map_err(|message| failed(format!("{message} (at $)")))?;
    if fits(&input) {
        return Ok(input);
    }
    let Err((as_sent, _)) = check_placed(schema.root, schema.patterns, &input) else {
        integers_to_schema(&mut input, schema);
        return Ok(input);
    };
    let sent = input.clone();
    if !coerce_to_schema(&mut input, schema) {
        return Err(failed(as_sent.to_string()));
    }
    match check_placed(schema.root, schema.patterns, &input) {
        Ok(()) => Ok(input),
        Err((error, place)) if value_at(&sent, &place) == value_at(&input, &place) => Err(failed(error.to_string())),
        Err(_) => Err(failed(as_sent.to_string())),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_counted_outside_strings_only() {
        let limits = InputLimits::new().with_max_depth(2);
        assert!(limits.check(r#"[{"a": "[[[[{{{{\"[["}]"#).is_ok());
        assert!(limits.check("[[1]]").is_ok());
        let err = limits.check("[[[1]]]").unwrap_err();
        assert_eq!(
            err,
            "the input nests arrays and objects more than 2 levels deep; send a flatter input"
        );
        // An unterminated string hides what follows, and that is fine: it is a string.
        assert!(limits.check(r#"{"a": "[[[[[["#).is_ok());
    }

    #[test]
    fn size_is_checked_first() {
        let err = InputLimits::new().with_max_bytes(4).check("[1, 2]").unwrap_err();
        assert_eq!(
            err,
            "the input is 6 bytes, more than the limit of 4 bytes; send a smaller input"
        );
    }
}
