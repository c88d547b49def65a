//! The keywords that take more than a line: numbers, items, additional properties, choices and
//! sizes.

use serde_json::{Map, Number, Value};

use super::repr::{py_str, repr};
use super::{MAX_DEPTH, Path, Seg, Validator, is_type, resolve_ref};

impl<'s> Validator<'s> {
    pub(super) fn check_number(
        &mut self,
        n: &Number,
        keyword: &str,
        limit: &Number,
        obj: &Map<String, Value>,
        path: &Path<'_>,
    ) {
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

    pub(super) fn check_items(
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

    pub(super) fn check_additional(
        &mut self,
        inst: &Value,
        sv: &'s Value,
        obj: &Map<String, Value>,
        path: &Path<'_>,
        depth: u32,
    ) {
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

    pub(super) fn check_choice(&mut self, inst: &Value, one_of: bool, sv: &'s Value, path: &Path<'_>, depth: u32) {
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
    pub(super) fn admits_type(&self, inst: &Value, schema: &'s Value, depth: u32) -> bool {
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
pub(super) fn check_size(
    v: &mut Validator<'_>,
    inst: &Value,
    len: usize,
    min: bool,
    limit: u64,
    path: &Path<'_>,
    noun: &str,
) {
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
pub(super) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| json_eq(a, b)))
        }
        _ => a == b,
    }
}
