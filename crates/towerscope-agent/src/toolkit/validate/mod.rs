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

use serde_json::Value;

use keywords::{check_size, json_eq};
use repr::{py_str, repr};

mod keywords;
mod repr;
#[cfg(test)]
mod tests;

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
                "const" if !json_eq(sv, inst) => self.error(path, format!("{} was expected", repr(sv))),
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
                "not" if self.is_valid(inst, sv, depth + 1) => {
                    self.error(path, format!("{} should not be valid under {}", repr(inst), repr(sv)));
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
}
