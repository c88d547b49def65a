//! A small JSON-Schema validator for tool inputs.
//!
//! It enforces what `schemars` emits and what hand-written tool schemas use: `type` (a name or a
//! list of names, `"null"` included), `enum`, `const`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum` (numbers, or booleans in the draft-4 style), `multipleOf`, `minLength`,
//! `maxLength`, `pattern`, `properties`, `patternProperties`, `additionalProperties`,
//! `propertyNames`, `required`, `dependentRequired`, `dependentSchemas`, `dependencies`,
//! `min/maxProperties`, `items`, `prefixItems`, `additionalItems`, `min/maxItems`, `uniqueItems`,
//! `contains`, `min/maxContains`, `anyOf`, `oneOf`, `allOf`, `not`, `if`/`then`/`else` and `$ref`
//! to a JSON pointer in the same document (`#/$defs/...`, `#/definitions/...`).
//!
//! [`CompiledSchema::new`] refuses a schema with a keyword that constrains instances but is not
//! enforced (`unevaluatedProperties`, `unevaluatedItems`, `$dynamicRef`, …), and a `$ref` inside
//! a subschema with its own `$id` (an embedded resource, against which that `$ref` resolves:
//! here every `$ref` resolves against the root); the free [`validate`] ignores them. Annotations (`description`, `default`, …) change nothing, and
//! neither does `format`, except the integer formats `schemars` writes for Rust's integer types
//! (`int8` to `int64`, `uint8` to `uint64`, `int`, `uint`): a number out of the type's range is
//! refused, as it would not decode into it (Python's `jsonschema` does not check them).
//! `multipleOf` is decided in decimal on the numbers as written, so `19.99` is a multiple of
//! `0.01` (`jsonschema` divides binary floats and refuses it).
//!
//! Messages are shaped like those of Python's `jsonschema`, which the model may have seen in its
//! training data, and the error picked is the shallowest one, as `jsonschema.validate` does.
//! A value quoted in a message is cut to a few hundred bytes (`…[truncated, N bytes total]`).
//!
//! Validation is bounded by construction: every subschema is applied to an instance at most once
//! per place it is reached from (the branches of `anyOf`/`oneOf` included), `uniqueItems` hashes
//! its items, and a run gives up with an error past `MAX_DEPTH` (256) nested schemas or
//! `MAX_STEPS` (4 million) schema applications. One application may cost as much as the value
//! it checks (a string's length, a `pattern` over it, compiled to at most 1 MiB), so a schema
//! that reaches one big value from many places costs that many times its size.

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;

use regex_lite::Regex;
use serde_json::Value;

use canonical::{first_duplicate, json_eq};
use path::{Path, Seg};
pub(crate) use path::{Step, value_at};
use repr::{py_str, repr};

pub use compile::{CompiledSchema, SchemaError};
pub(crate) use repr::truncate;

mod canonical;
mod compile;
mod embedded;
mod flat;
mod keywords;
mod objects;
mod path;
mod repr;
#[cfg(test)]
mod tests;

/// How deep schemas may nest (through `$ref`s and into the instance) before validation gives up.
pub(crate) const MAX_DEPTH: u32 = 256;

/// How many times a run may apply a (sub)schema to a value before it gives up: a bound on the
/// work of one validation whatever the schema's shape.
pub(crate) const MAX_STEPS: u64 = 4_000_000;

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
/// Keywords that are not enforced are ignored here, and patterns that do not compile are not
/// checked; use [`CompiledSchema`] to refuse such schemas and to compile a schema once for many
/// validations.
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
    let patterns = compile::lenient_patterns(schema);
    Validator::run(schema, &patterns, instance, MAX_STEPS).0
}

/// The patterns of `schema` as [`validate`] compiles them, for code that validates against the
/// same schema more than once.
pub(crate) fn lenient_patterns(schema: &Value) -> HashMap<String, Regex> {
    compile::lenient_patterns(schema)
}

/// [`validate`] with the schema's compiled patterns, the error coming with its place in the
/// instance.
pub(crate) fn check_placed(
    root: &Value,
    patterns: &HashMap<String, Regex>,
    instance: &Value,
) -> Result<(), (ValidationError, Vec<Step>)> {
    Validator::run_under(root, root, patterns, instance, MAX_STEPS, false).0
}

/// Whether `instance` is valid under `schema`, a subschema of `root` (its `$ref`s resolve
/// against `root`), within `max_steps` schema applications; and how many it took. The check stops
/// at the first error and renders none; giving up counts as invalid.
pub(crate) fn passes<'s>(
    root: &'s Value,
    schema: &'s Value,
    patterns: &'s HashMap<String, Regex>,
    instance: &Value,
    max_steps: u64,
) -> (bool, u64) {
    let (result, steps) = Validator::run_under(root, schema, patterns, instance, max_steps, true);
    (result.is_ok(), steps)
}

/// Resolves a `$ref` that points into `root` (`#`, `#/$defs/Name`, `#/definitions/Name`), with
/// the percent-encoding of URI fragments undone.
pub(crate) fn resolve_ref<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        Some(root)
    } else if pointer.contains('%') {
        root.pointer(&percent_decode(pointer)?)
    } else {
        root.pointer(pointer)
    }
}

fn percent_decode(s: &str) -> Option<String> {
    String::from_utf8(crate::session::percent_decode(s)?).ok()
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

struct Found {
    depth: usize,
    /// `anyOf`/`oneOf` errors lose against others of the same depth, as in `jsonschema`.
    weak: bool,
    error: ValidationError,
    /// Where, as steps into the instance.
    place: Vec<Step>,
}

impl Found {
    fn rank(&self) -> (usize, bool) {
        (self.depth, self.weak)
    }
}

/// Why a run gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Abort {
    Depth,
    Steps,
}

/// What the validators of one run share: the schema and the budget.
struct Run<'s> {
    root: &'s Value,
    patterns: &'s HashMap<String, Regex>,
    steps: Cell<u64>,
    max_steps: u64,
    abort: Cell<Option<Abort>>,
}

/// Applies schemas to values. In `fail_fast` mode (for `not`, `if`, `contains` and the branches
/// of a choice whose message is not needed) it stops at the first error and renders none;
/// otherwise it keeps the best error only, rendering a message only when it becomes the best.
struct Validator<'r, 's> {
    run: &'r Run<'s>,
    fail_fast: bool,
    failed: bool,
    best: Option<Found>,
}

impl<'r, 's> Validator<'r, 's> {
    /// Validates `instance` and says how many schema applications it took.
    fn run(
        root: &'s Value,
        patterns: &'s HashMap<String, Regex>,
        instance: &Value,
        max_steps: u64,
    ) -> (Result<(), ValidationError>, u64) {
        let (result, steps) = Self::run_under(root, root, patterns, instance, max_steps, false);
        (result.map_err(|(error, _)| error), steps)
    }

    /// Validates `instance` against `schema`, a subschema of `root`, and says how many schema
    /// applications it took; the error comes with its place in the instance.
    fn run_under(
        root: &'s Value,
        schema: &'s Value,
        patterns: &'s HashMap<String, Regex>,
        instance: &Value,
        max_steps: u64,
        fail_fast: bool,
    ) -> (Result<(), (ValidationError, Vec<Step>)>, u64) {
        let run = Run {
            root,
            patterns,
            steps: Cell::new(0),
            max_steps,
            abort: Cell::new(None),
        };
        let mut v = Validator {
            run: &run,
            fail_fast,
            failed: false,
            best: None,
        };
        v.check(instance, schema, &Path::ROOT, 0);
        let steps = run.steps.get();
        let result = match (run.abort.get(), v.best) {
            (Some(abort), _) => Err((
                ValidationError {
                    message: match abort {
                        Abort::Depth => format!("the schema nests more than {MAX_DEPTH} levels deep for this input"),
                        Abort::Steps => {
                            let max = run.max_steps;
                            format!("validation gave up after {max} steps; the schema is too costly for this input")
                        }
                    },
                    json_path: "$".to_owned(),
                },
                Vec::new(),
            )),
            (None, None) if v.failed => Err((
                ValidationError {
                    message: "the input is not valid".to_owned(),
                    json_path: "$".to_owned(),
                },
                Vec::new(),
            )),
            (None, None) => Ok(()),
            (None, Some(found)) => Err((found.error, found.place)),
        };
        (result, steps)
    }

    fn sub(&self, fail_fast: bool) -> Validator<'r, 's> {
        Validator {
            run: self.run,
            fail_fast,
            failed: false,
            best: None,
        }
    }

    /// Whether nothing more needs checking.
    fn stopped(&self) -> bool {
        (self.fail_fast && self.failed) || self.run.abort.get().is_some()
    }

    fn error(&mut self, path: &Path<'_>, message: impl FnOnce() -> String) {
        self.push(path, false, message);
    }

    fn push(&mut self, path: &Path<'_>, weak: bool, message: impl FnOnce() -> String) {
        self.failed = true;
        if self.fail_fast || self.best.as_ref().is_some_and(|b| b.rank() <= (path.len, weak)) {
            return;
        }
        self.best = Some(Found {
            depth: path.len,
            weak,
            error: ValidationError {
                message: message(),
                json_path: path.render(),
            },
            place: path.steps(),
        });
    }

    /// Takes an error found by a sub-validator.
    fn offer(&mut self, found: Found) {
        self.failed = true;
        if !self.fail_fast && self.best.as_ref().is_none_or(|b| b.rank() > found.rank()) {
            self.best = Some(found);
        }
    }

    fn is_valid(&self, inst: &Value, schema: &'s Value, depth: u32) -> bool {
        let mut sub = self.sub(true);
        sub.check(inst, schema, &Path::ROOT, depth);
        !sub.failed
    }

    fn check(&mut self, inst: &Value, schema: &'s Value, path: &Path<'_>, depth: u32) {
        if self.stopped() {
            return;
        }
        // No error at this depth or deeper can beat the one already found.
        if self.best.as_ref().is_some_and(|b| b.rank() <= (path.len, false)) {
            return;
        }
        let steps = self.run.steps.get() + 1;
        self.run.steps.set(steps);
        if steps > self.run.max_steps {
            return self.run.abort.set(Some(Abort::Steps));
        }
        if depth > MAX_DEPTH {
            return self.run.abort.set(Some(Abort::Depth));
        }
        let obj = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => return self.error(path, || format!("False schema does not allow {}", repr(inst))),
            Value::Object(obj) => obj,
            _ => return,
        };
        for (keyword, sv) in obj {
            if self.stopped() {
                return;
            }
            match keyword.as_str() {
                "$ref" => self.check_ref(inst, sv, path, depth),
                "type" => self.check_type(inst, sv, path),
                "enum" => {
                    if let Value::Array(options) = sv
                        && !options.iter().any(|o| json_eq(o, inst))
                    {
                        self.error(path, || format!("{} is not one of {}", repr(inst), repr(sv)));
                    }
                }
                "const" if !json_eq(sv, inst) => self.error(path, || format!("{} was expected", repr(sv))),
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
                    if let (Value::Number(n), Value::Number(limit)) = (inst, sv) {
                        self.check_number(n, keyword, limit, obj, path);
                    }
                }
                "format" => {
                    if let (Value::Number(n), Value::String(format)) = (inst, sv) {
                        self.check_format(n, format, obj, path);
                    }
                }
                "minLength" | "maxLength" => {
                    if let (Value::String(s), Some(limit)) = (inst, keywords::as_count(sv)) {
                        self.check_size(inst, s.chars().count(), keyword == "minLength", limit, path, "");
                    }
                }
                "pattern" => {
                    if let (Value::String(s), Value::String(p)) = (inst, sv)
                        && let Some(re) = self.run.patterns.get(p)
                        && !re.is_match(s)
                    {
                        self.error(path, || format!("{} does not match {}", repr(inst), py_str(p)));
                    }
                }
                "minItems" | "maxItems" => {
                    if let (Value::Array(a), Some(limit)) = (inst, keywords::as_count(sv)) {
                        self.check_size(inst, a.len(), keyword == "minItems", limit, path, "");
                    }
                }
                "minProperties" | "maxProperties" => {
                    if let (Value::Object(m), Some(limit)) = (inst, keywords::as_count(sv)) {
                        let min = keyword == "minProperties";
                        self.check_size(inst, m.len(), min, limit, path, "properties");
                    }
                }
                "uniqueItems" => {
                    if let (Value::Array(a), Value::Bool(true)) = (inst, sv)
                        && first_duplicate(a).is_some()
                    {
                        self.error(path, || format!("{} has non-unique elements", repr(inst)));
                    }
                }
                "items" | "prefixItems" | "additionalItems" => self.check_items(inst, keyword, sv, obj, path, depth),
                "contains" => self.check_contains(inst, sv, obj, path, depth),
                "required" | "dependentRequired" | "dependentSchemas" | "dependencies" | "propertyNames" => {
                    self.check_object_keyword(inst, keyword, sv, path, depth)
                }
                "properties" | "patternProperties" | "additionalProperties" => {
                    self.check_properties(inst, keyword, sv, obj, path, depth)
                }
                "allOf" => {
                    if let Value::Array(branches) = sv {
                        for branch in branches {
                            self.check(inst, branch, path, depth + 1);
                        }
                    }
                }
                "anyOf" | "oneOf" => self.check_choice(inst, keyword == "oneOf", sv, path, depth),
                "not" if self.is_valid(inst, sv, depth + 1) => {
                    self.error(path, || {
                        format!("{} should not be valid under {}", repr(inst), repr(sv))
                    });
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
        match resolve_ref(self.run.root, reference) {
            Some(target) => self.check(inst, target, path, depth + 1),
            None => self.error(path, || {
                format!("could not resolve the schema reference {}", py_str(reference))
            }),
        }
    }

    fn check_type(&mut self, inst: &Value, types: &Value, path: &Path<'_>) {
        let ok = match types {
            Value::String(t) => is_type(inst, t),
            Value::Array(ts) => ts.iter().any(|t| t.as_str().is_some_and(|t| is_type(inst, t))),
            _ => true,
        };
        if !ok {
            self.error(path, || {
                let names = match types {
                    Value::Array(ts) => repr::repr_list(ts),
                    other => repr(other),
                };
                format!("{} is not of type {names}", repr(inst))
            });
        }
    }
}

/// Validates within a budget of schema applications and says how many it took, for tests that
/// bound the work.
#[cfg(test)]
pub(crate) fn validate_counting(
    instance: &Value,
    schema: &Value,
    max_steps: u64,
) -> (Result<(), ValidationError>, u64) {
    let patterns = compile::lenient_patterns(schema);
    Validator::run(schema, &patterns, instance, max_steps)
}
