//! A small JSON-Schema validator for tool inputs.
//!
//! It covers what `schemars` emits and what hand-written tool schemas use: `type` (a name or a
//! list of names, `"null"` included), `properties`, `required`, `additionalProperties`,
//! `min/maxProperties`, `items`, `prefixItems`, `min/maxItems`, `uniqueItems`, `contains`, `enum`,
//! `const`, `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (numbers, or booleans in
//! the draft-4 style), `multipleOf`, `minLength`, `maxLength`, `anyOf`, `oneOf`, `allOf`, `not`,
//! `if`/`then`/`else` and `$ref` to a JSON pointer in the same document (`#/$defs/...`,
//! `#/definitions/...`). `pattern`, `format` and unknown keywords are ignored.
//!
//! Messages are shaped like those of Python's `jsonschema`, which the model may have seen in its
//! training data, and the error picked is the shallowest one, as `jsonschema.validate` does.

use std::fmt;

use serde_json::{Map, Number, Value};

/// How deep schemas may nest (through `$ref`s included) before validation gives up.
const MAX_DEPTH: u32 = 256;

/// The first (shallowest) way an instance does not match its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    /// What is wrong, shaped like Python's `jsonschema`: `'city' is a required property`.
    pub message: String,
    /// Where, as a JSON path: `$`, `$.city`, `$.items[2]`.
    pub json_path: String,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at {})", self.message, self.json_path)
    }
}

impl std::error::Error for ValidationError {}

/// Validates `instance` against `schema`, returning the most relevant error.
///
/// ```
/// use serde_json::json;
/// use towerscope_agent::toolkit::validate;
///
/// let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
/// assert!(validate(&json!({"city": "Paris"}), &schema).is_ok());
/// let err = validate(&json!({}), &schema).unwrap_err();
/// assert_eq!(err.message, "'city' is a required property");
/// assert_eq!(err.json_path, "$");
/// ```
pub fn validate(instance: &Value, schema: &Value) -> Result<(), ValidationError> {
    let mut v = Validator {
        root: schema,
        found: Vec::new(),
    };
    v.check(instance, schema, &Path::ROOT, 0);
    let best = v
        .found
        .into_iter()
        .reduce(|best, e| if e.rank() < best.rank() { e } else { best });
    match best {
        None => Ok(()),
        Some(found) => Err(found.error),
    }
}

/// Resolves a `$ref` that points into `root` (`#`, `#/$defs/Name`, `#/definitions/Name`).
pub(crate) fn resolve_ref<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        Some(root)
    } else {
        root.pointer(pointer)
    }
}

/// Whether `value` is of the JSON-Schema type `name` (`5.0` is an integer, as in the spec).
pub(crate) fn is_type(value: &Value, name: &str) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => match value {
            Value::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0),
            _ => false,
        },
        _ => false,
    }
}

/// One step of a JSON path, kept on the stack and rendered only for an error.
#[derive(Clone, Copy)]
enum Seg<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

#[derive(Clone, Copy)]
struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    seg: Seg<'a>,
    len: usize,
}

impl<'a> Path<'a> {
    const ROOT: Path<'static> = Path {
        parent: None,
        seg: Seg::Root,
        len: 0,
    };

    fn child(&'a self, seg: Seg<'a>) -> Path<'a> {
        Path {
            parent: Some(self),
            seg,
            len: self.len + 1,
        }
    }

    fn render(&self) -> String {
        let mut segs = Vec::with_capacity(self.len);
        let mut cur = Some(self);
        while let Some(p) = cur {
            segs.push(p.seg);
            cur = p.parent;
        }
        let mut out = String::from("$");
        for seg in segs.iter().rev() {
            match seg {
                Seg::Root => {}
                Seg::Key(k) => {
                    out.push('.');
                    out.push_str(k);
                }
                Seg::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        out
    }
}

struct Found {
    depth: usize,
    /// `anyOf`/`oneOf` errors lose against others of the same depth, as in `jsonschema`.
    weak: bool,
    error: ValidationError,
}

impl Found {
    fn rank(&self) -> (usize, bool) {
        (self.depth, self.weak)
    }
}

struct Validator<'s> {
    root: &'s Value,
    found: Vec<Found>,
}

impl<'s> Validator<'s> {
    fn error(&mut self, path: &Path<'_>, message: String) {
        self.push(path, message, false);
    }

    fn push(&mut self, path: &Path<'_>, message: String, weak: bool) {
        self.found.push(Found {
            depth: path.len,
            weak,
            error: ValidationError {
                message,
                json_path: path.render(),
            },
        });
    }

    fn is_valid(&self, inst: &Value, schema: &'s Value, depth: u32) -> bool {
        let mut sub = Validator {
            root: self.root,
            found: Vec::new(),
        };
        sub.check(inst, schema, &Path::ROOT, depth);
        sub.found.is_empty()
    }

    /// The best error of `schema` for `inst`, found as if `inst` sat at `path`.
    fn best_in(&self, inst: &Value, schema: &'s Value, path: &Path<'_>, depth: u32) -> Option<Found> {
        let mut sub = Validator {
            root: self.root,
            found: Vec::new(),
        };
        sub.check(inst, schema, path, depth);
        sub.found
            .into_iter()
            .reduce(|best, e| if e.rank() < best.rank() { e } else { best })
    }

    fn check(&mut self, inst: &Value, schema: &'s Value, path: &Path<'_>, depth: u32) {
        if depth > MAX_DEPTH {
            self.error(path, format!("the schema nests more than {MAX_DEPTH} levels deep"));
            return;
        }
        let obj = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => return self.error(path, format!("False schema does not allow {}", repr(inst))),
            Value::Object(obj) => obj,
            _ => return,
        };
        for (keyword, sv) in obj {
            match keyword.as_str() {
                "$ref" => self.check_ref(inst, sv, path, depth),
                "type" => self.check_type(inst, sv, path),
                "enum" => {
                    if let Value::Array(options) = sv
                        && !options.iter().any(|o| json_eq(o, inst))
                    {
                        self.error(path, format!("{} is not one of {}", repr(inst), repr(sv)));
                    }
                }
                "const" => {
                    if !json_eq(sv, inst) {
                        self.error(path, format!("{} was expected", repr(sv)));
                    }
                }
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
                    if let (Value::Number(n), Value::Number(limit)) = (inst, sv) {
                        self.check_number(n, keyword, limit, obj, path);
                    }
                }
                "minLength" | "maxLength" => {
                    if let (Value::String(s), Some(limit)) = (inst, sv.as_u64()) {
                        check_size(self, inst, s.chars().count(), keyword == "minLength", limit, path, "");
                    }
                }
                "minItems" | "maxItems" => {
                    if let (Value::Array(a), Some(limit)) = (inst, sv.as_u64()) {
                        check_size(self, inst, a.len(), keyword == "minItems", limit, path, "");
                    }
                }
                "minProperties" | "maxProperties" => {
                    if let (Value::Object(m), Some(limit)) = (inst, sv.as_u64()) {
                        check_size(
                            self,
                            inst,
                            m.len(),
                            keyword == "minProperties",
                            limit,
                            path,
                            "properties",
                        );
                    }
                }
                "uniqueItems" => {
                    if let (Value::Array(a), Value::Bool(true)) = (inst, sv)
                        && a.iter()
                            .enumerate()
                            .any(|(i, x)| a[i + 1..].iter().any(|y| json_eq(x, y)))
                    {
                        self.error(path, format!("{} has non-unique elements", repr(inst)));
                    }
                }
                "items" | "prefixItems" => self.check_items(inst, keyword, sv, obj, path, depth),
                "contains" => {
                    if let Value::Array(a) = inst
                        && !a.iter().any(|x| self.is_valid(x, sv, depth + 1))
                    {
                        self.error(
                            path,
                            format!("{} does not contain items matching the given schema", repr(inst)),
                        );
                    }
                }
                "required" => {
                    if let (Value::Object(m), Value::Array(names)) = (inst, sv) {
                        for name in names.iter().filter_map(Value::as_str) {
                            if !m.contains_key(name) {
                                self.error(path, format!("{} is a required property", py_str(name)));
                            }
                        }
                    }
                }
                "properties" => {
                    if let (Value::Object(m), Value::Object(props)) = (inst, sv) {
                        for (key, sub) in props {
                            if let Some(child) = m.get(key) {
                                self.check(child, sub, &path.child(Seg::Key(key)), depth + 1);
                            }
                        }
                    }
                }
                "additionalProperties" => self.check_additional(inst, sv, obj, path, depth),
                "allOf" => {
                    if let Value::Array(branches) = sv {
                        for branch in branches {
                            self.check(inst, branch, path, depth + 1);
                        }
                    }
                }
                "anyOf" | "oneOf" => self.check_choice(inst, keyword == "oneOf", sv, path, depth),
                "not" => {
                    if self.is_valid(inst, sv, depth + 1) {
                        self.error(path, format!("{} should not be valid under {}", repr(inst), repr(sv)));
                    }
                }
                "if" => {
                    let branch = if self.is_valid(inst, sv, depth + 1) {
                        obj.get("then")
                    } else {
                        obj.get("else")
                    };
                    if let Some(branch) = branch {
                        self.check(inst, branch, path, depth + 1);
                    }
                }
                _ => {}
            }
        }
    }

    fn check_ref(&mut self, inst: &Value, reference: &'s Value, path: &Path<'_>, depth: u32) {
        let Value::String(reference) = reference else { return };
        match resolve_ref(self.root, reference) {
            Some(target) => self.check(inst, target, path, depth + 1),
            None => self.error(
                path,
                format!("could not resolve the schema reference {}", py_str(reference)),
            ),
        }
    }

    fn check_type(&mut self, inst: &Value, types: &Value, path: &Path<'_>) {
        let ok = match types {
            Value::String(t) => is_type(inst, t),
            Value::Array(ts) => ts.iter().any(|t| t.as_str().is_some_and(|t| is_type(inst, t))),
            _ => true,
        };
        if !ok {
            let names: Vec<String> = match types {
                Value::Array(ts) => ts.iter().map(repr).collect(),
                other => vec![repr(other)],
            };
            self.error(path, format!("{} is not of type {}", repr(inst), names.join(", ")));
        }
    }

    fn check_number(&mut self, n: &Number, keyword: &str, limit: &Number, obj: &Map<String, Value>, path: &Path<'_>) {
        let (Some(x), Some(l)) = (n.as_f64(), limit.as_f64()) else {
            return;
        };
        let draft4_exclusive = |key: &str| obj.get(key).and_then(Value::as_bool).unwrap_or(false);
        let failed = match keyword {
            "minimum" if draft4_exclusive("exclusiveMinimum") => {
                (x <= l).then_some("less than or equal to the minimum")
            }
            "minimum" => (x < l).then_some("less than the minimum"),
            "maximum" if draft4_exclusive("exclusiveMaximum") => {
                (x >= l).then_some("greater than or equal to the maximum")
            }
            "maximum" => (x > l).then_some("greater than the maximum"),
            "exclusiveMinimum" => (x <= l).then_some("less than or equal to the minimum"),
            "exclusiveMaximum" => (x >= l).then_some("greater than or equal to the maximum"),
            _ => {
                // multipleOf
                let q = x / l;
                if l != 0.0 && q.is_finite() && q.fract() != 0.0 {
                    self.error(path, format!("{n} is not a multiple of {limit}"));
                }
                None
            }
        };
        if let Some(what) = failed {
            self.error(path, format!("{n} is {what} of {limit}"));
        }
    }

    fn check_items(
        &mut self,
        inst: &Value,
        keyword: &str,
        sv: &'s Value,
        obj: &Map<String, Value>,
        path: &Path<'_>,
        depth: u32,
    ) {
        let Value::Array(items) = inst else { return };
        match (keyword, sv) {
            // A tuple: `prefixItems` (2020-12) or an array under `items` (drafts 4 to 7).
            ("prefixItems", Value::Array(schemas)) | ("items", Value::Array(schemas)) => {
                for (i, (item, sub)) in items.iter().zip(schemas).enumerate() {
                    self.check(item, sub, &path.child(Seg::Index(i)), depth + 1);
                }
            }
            ("items", sub) => {
                let skip = obj.get("prefixItems").and_then(Value::as_array).map_or(0, Vec::len);
                for (i, item) in items.iter().enumerate().skip(skip) {
                    self.check(item, sub, &path.child(Seg::Index(i)), depth + 1);
                }
            }
            _ => {}
        }
    }

    fn check_additional(&mut self, inst: &Value, sv: &'s Value, obj: &Map<String, Value>, path: &Path<'_>, depth: u32) {
        // Without a regex engine, keys that `patternProperties` might cover cannot be judged.
        let (Value::Object(m), false) = (inst, obj.contains_key("patternProperties")) else {
            return;
        };
        let props = obj.get("properties").and_then(Value::as_object);
        let extras = m
            .iter()
            .filter(|(k, _)| !props.is_some_and(|p| p.contains_key(k.as_str())));
        match sv {
            Value::Bool(false) => {
                let names: Vec<String> = extras.map(|(k, _)| py_str(k)).collect();
                if !names.is_empty() {
                    let verb = if names.len() == 1 { "was" } else { "were" };
                    let message = format!(
                        "Additional properties are not allowed ({} {verb} unexpected)",
                        names.join(", ")
                    );
                    self.error(path, message);
                }
            }
            Value::Object(_) => {
                for (key, child) in extras {
                    self.check(child, sv, &path.child(Seg::Key(key)), depth + 1);
                }
            }
            _ => {}
        }
    }

    fn check_choice(&mut self, inst: &Value, one_of: bool, sv: &'s Value, path: &Path<'_>, depth: u32) {
        let Value::Array(branches) = sv else { return };
        let mut valid = branches.iter().filter(|b| self.is_valid(inst, b, depth + 1));
        if let Some(first) = valid.next() {
            if one_of {
                // As `jsonschema`: the other valid branches, then the first.
                let mut reprs: Vec<String> = valid.map(repr).collect();
                if !reprs.is_empty() {
                    reprs.push(repr(first));
                    self.error(
                        path,
                        format!("{} is valid under each of {}", repr(inst), reprs.join(", ")),
                    );
                }
            }
            return;
        }
        // When exactly one branch admits the instance's type, its own error says more.
        let mut typed = branches.iter().filter(|b| self.admits_type(inst, b, depth));
        if let (Some(only), None) = (typed.next(), typed.next())
            && let Some(found) = self.best_in(inst, only, path, depth + 1)
        {
            self.found.push(found);
            return;
        }
        self.push(
            path,
            format!("{} is not valid under any of the given schemas", repr(inst)),
            true,
        );
    }

    /// Whether a branch's declared type (through `$ref`s) admits the instance.
    fn admits_type(&self, inst: &Value, schema: &'s Value, depth: u32) -> bool {
        let Some(obj) = schema.as_object() else {
            return schema.as_bool().unwrap_or(true);
        };
        if let Some(types) = obj.get("type") {
            return match types {
                Value::String(t) => is_type(inst, t),
                Value::Array(ts) => ts.iter().any(|t| t.as_str().is_some_and(|t| is_type(inst, t))),
                _ => true,
            };
        }
        match obj
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| resolve_ref(self.root, r))
        {
            Some(target) if depth < MAX_DEPTH => self.admits_type(inst, target, depth + 1),
            _ => true,
        }
    }
}

/// Length limits, with the messages of `jsonschema` 4.21+.
fn check_size(v: &mut Validator<'_>, inst: &Value, len: usize, min: bool, limit: u64, path: &Path<'_>, noun: &str) {
    let len = len as u64;
    let message = match (min, noun.is_empty()) {
        (true, _) if len >= limit => return,
        (false, _) if len <= limit => return,
        (true, _) if limit == 1 => "should be non-empty".to_owned(),
        (false, _) if limit == 0 => "is expected to be empty".to_owned(),
        (true, true) => "is too short".to_owned(),
        (false, true) => "is too long".to_owned(),
        (true, false) => format!("does not have enough {noun}"),
        (false, false) => format!("has too many {noun}"),
    };
    v.error(path, format!("{} {message}", repr(inst)));
}

/// JSON equality where `1` equals `1.0`, as in JSON Schema.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| json_eq(a, b)))
        }
        _ => a == b,
    }
}

/// A value as Python's `repr` prints the equivalent object: `'a'`, `True`, `None`, `{'k': 1}`.
pub(crate) fn repr(value: &Value) -> String {
    let mut out = String::new();
    write_repr(value, &mut out);
    out
}

fn write_repr(value: &Value, out: &mut String) {
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

fn py_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_py_str(s, &mut out);
    out
}

fn write_py_str(s: &str, out: &mut String) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn err(instance: Value, schema: Value) -> (String, String) {
        let e = validate(&instance, &schema).unwrap_err();
        (e.message, e.json_path)
    }

    fn s(message: &str, path: &str) -> (String, String) {
        (message.to_owned(), path.to_owned())
    }

    #[test]
    fn required_and_type() {
        let schema = json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"]
        });
        assert_eq!(err(json!({}), schema.clone()), s("'city' is a required property", "$"));
        assert_eq!(
            err(json!({"city": 5}), schema.clone()),
            s("5 is not of type 'string'", "$.city")
        );
        assert_eq!(
            err(json!({"city": "x", "days": 1.5}), schema.clone()),
            s("1.5 is not of type 'integer'", "$.days")
        );
        assert!(validate(&json!({"city": "x", "days": 2.0}), &schema).is_ok());
        assert_eq!(err(json!([1]), schema), s("[1] is not of type 'object'", "$"));
    }

    #[test]
    fn shallowest_error_wins() {
        let schema = json!({"properties": {"a": {"type": "string"}}, "required": ["b"]});
        assert_eq!(err(json!({"a": 1}), schema), s("'b' is a required property", "$"));
    }

    #[test]
    fn type_lists_and_null() {
        let schema = json!({"type": ["string", "null"]});
        assert!(validate(&json!(null), &schema).is_ok());
        assert!(validate(&json!("x"), &schema).is_ok());
        assert_eq!(err(json!(true), schema), s("True is not of type 'string', 'null'", "$"));
    }

    #[test]
    fn enum_and_const() {
        assert_eq!(
            err(json!("x"), json!({"enum": ["a", "b"]})),
            s("'x' is not one of ['a', 'b']", "$")
        );
        assert_eq!(err(json!("x"), json!({"const": "a"})), s("'a' was expected", "$"));
        assert!(validate(&json!(1.0), &json!({"enum": [1]})).is_ok());
    }

    #[test]
    fn additional_properties() {
        let schema = json!({"properties": {"a": {}}, "additionalProperties": false});
        assert_eq!(
            err(json!({"a": 1, "z": 2}), schema.clone()),
            s("Additional properties are not allowed ('z' was unexpected)", "$")
        );
        assert_eq!(
            err(json!({"y": 1, "z": 2}), schema),
            s("Additional properties are not allowed ('y', 'z' were unexpected)", "$")
        );
        let typed = json!({"additionalProperties": {"type": "integer"}});
        assert_eq!(err(json!({"k": "v"}), typed), s("'v' is not of type 'integer'", "$.k"));
    }

    #[test]
    fn numeric_limits() {
        assert_eq!(
            err(json!(3), json!({"minimum": 5})),
            s("3 is less than the minimum of 5", "$")
        );
        assert_eq!(
            err(json!(9), json!({"maximum": 5})),
            s("9 is greater than the maximum of 5", "$")
        );
        assert_eq!(
            err(json!(5), json!({"exclusiveMinimum": 5})),
            s("5 is less than or equal to the minimum of 5", "$")
        );
        assert_eq!(
            err(json!(5), json!({"exclusiveMaximum": 5})),
            s("5 is greater than or equal to the maximum of 5", "$")
        );
        assert_eq!(
            err(json!(5), json!({"maximum": 5, "exclusiveMaximum": true})),
            s("5 is greater than or equal to the maximum of 5", "$")
        );
        assert_eq!(
            err(json!(7), json!({"multipleOf": 2})),
            s("7 is not a multiple of 2", "$")
        );
        assert!(validate(&json!(5), &json!({"minimum": 5, "maximum": 5})).is_ok());
    }

    #[test]
    fn lengths() {
        assert_eq!(err(json!("ab"), json!({"minLength": 3})), s("'ab' is too short", "$"));
        assert_eq!(
            err(json!(""), json!({"minLength": 1})),
            s("'' should be non-empty", "$")
        );
        assert_eq!(err(json!("abc"), json!({"maxLength": 2})), s("'abc' is too long", "$"));
        assert!(validate(&json!("ééé"), &json!({"maxLength": 3})).is_ok());
        assert_eq!(err(json!([1]), json!({"minItems": 2})), s("[1] is too short", "$"));
        assert_eq!(err(json!([]), json!({"minItems": 1})), s("[] should be non-empty", "$"));
        assert_eq!(err(json!([1, 2]), json!({"maxItems": 1})), s("[1, 2] is too long", "$"));
        assert_eq!(
            err(json!([1]), json!({"maxItems": 0})),
            s("[1] is expected to be empty", "$")
        );
        assert_eq!(
            err(json!([1, 1]), json!({"uniqueItems": true})),
            s("[1, 1] has non-unique elements", "$")
        );
    }

    #[test]
    fn items_paths() {
        let schema = json!({"properties": {"items": {"type": "array", "items": {"type": "string"}}}});
        assert_eq!(
            err(json!({"items": ["a", "b", 3]}), schema),
            s("3 is not of type 'string'", "$.items[2]")
        );
        let tuple = json!({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}});
        assert!(validate(&json!(["a", 1, 2]), &tuple).is_ok());
        assert_eq!(err(json!(["a", "b"]), tuple), s("'b' is not of type 'integer'", "$[1]"));
    }

    #[test]
    fn refs_and_combinators() {
        let schema = json!({
            "type": "object",
            "properties": {
                "home": {"$ref": "#/$defs/Address"},
                "work": {"anyOf": [{"$ref": "#/definitions/Address"}, {"type": "null"}]}
            },
            "$defs": {"Address": {"type": "object", "properties": {"zip": {"type": "string"}}, "required": ["zip"]}},
            "definitions": {"Address": {"$ref": "#/$defs/Address"}}
        });
        assert!(validate(&json!({"home": {"zip": "1"}, "work": null}), &schema).is_ok());
        assert_eq!(
            err(json!({"home": {}}), schema.clone()),
            s("'zip' is a required property", "$.home")
        );
        // The only branch whose type fits explains the failure.
        assert_eq!(
            err(json!({"work": {"zip": 1}}), schema.clone()),
            s("1 is not of type 'string'", "$.work.zip")
        );
        assert_eq!(
            err(json!({"work": 5}), schema),
            s("5 is not valid under any of the given schemas", "$.work")
        );
        let one_of = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
        assert!(err(json!(1), one_of.clone()).0.starts_with("1 is valid under each of"));
        assert!(validate(&json!(1.5), &one_of).is_ok());
        let all_of = json!({"allOf": [{"type": "integer"}, {"minimum": 2}]});
        assert_eq!(err(json!(1), all_of), s("1 is less than the minimum of 2", "$"));
        assert_eq!(
            err(json!(1), json!({"not": {"type": "integer"}})).0,
            "1 should not be valid under {'type': 'integer'}"
        );
        assert_eq!(
            err(json!(1), json!({"$ref": "#/$defs/Nope"})).0,
            "could not resolve the schema reference '#/$defs/Nope'"
        );
    }

    #[test]
    fn boolean_schemas_and_ignored_keywords() {
        assert!(validate(&json!(1), &json!(true)).is_ok());
        assert_eq!(err(json!(1), json!(false)).0, "False schema does not allow 1");
        assert!(validate(&json!("abc"), &json!({"pattern": "^z", "format": "email"})).is_ok());
    }

    #[test]
    fn recursive_ref_terminates() {
        let e = validate(&json!(1), &json!({"$ref": "#"})).unwrap_err();
        assert!(e.message.contains("nests more than"));
    }

    #[test]
    fn python_repr() {
        assert_eq!(
            repr(&json!({"a": [true, null, "it's"]})),
            r#"{'a': [True, None, "it's"]}"#
        );
        assert_eq!(repr(&json!("a\nb'\"")), r#"'a\nb\'"'"#);
    }
}
