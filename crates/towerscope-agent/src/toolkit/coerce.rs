//! Coercion of parsed arguments to the types their schema asks for, as the reference does after
//! repairing them (probe: `{"x": 5}` for a string parameter gives `"5"`).

use std::collections::HashMap;

use regex_lite::Regex;
use serde_json::{Map, Value};

use super::validate::{is_type, passes, resolve_ref};

/// How deep coercion follows a schema before it stops (guards against `$ref` cycles).
const MAX_DEPTH: u32 = 128;

/// How many times coercion may apply a (sub)schema to a value, check a value against a branch
/// of a choice (each schema application of the check counting) or copy a value's node to try it
/// under a branch: past that it stops and leaves the rest as it is (validation still judges it),
/// whatever the schema's shape.
const MAX_STEPS: u64 = 1_000_000;

/// The schema coercion follows: its root (for `$ref`s) and its compiled patterns (for
/// `patternProperties`, and to check a value against a branch).
#[derive(Clone, Copy)]
pub(crate) struct Target<'s> {
    pub(crate) root: &'s Value,
    pub(crate) patterns: &'s HashMap<String, Regex>,
}

/// Coerces `value` in place to the types `schema` asks for (see
/// [`parse_with_repair`](super::parse_with_repair) for the rules), when it does not already
/// validate; then only its integral floats become integers where integers are wanted.
pub(crate) fn fit_to_schema(value: &mut Value, schema: Target<'_>) {
    if passes(schema.root, schema.root, schema.patterns, value, MAX_STEPS).0 {
        integers_to_schema(value, schema);
    } else {
        coerce_to_schema(value, schema);
    }
}

/// Coerces `value`, which does not validate against `schema`, in place to the types it asks
/// for; says whether anything changed. A value under a choice (`anyOf`, `oneOf`) that is valid
/// under one of its branches is left as it is; otherwise it is coerced into the first branch
/// under which the coerced value is valid, and left as it is if there is none (an object or
/// an array that one branch alone admits is coerced under it).
pub(crate) fn coerce_to_schema(value: &mut Value, schema: Target<'_>) -> bool {
    run(value, schema, Mode::Coerce)
}

/// Turns the integral floats of `value`, which validates against `schema`, into integers where
/// the schema wants integers (`5.0` into `5`, so that it decodes into an integer type); nothing
/// else changes. A value without such floats is not walked with the schema.
pub(crate) fn integers_to_schema(value: &mut Value, schema: Target<'_>) {
    if holds_integral_float(value) {
        run(value, schema, Mode::IntegersOnly);
    }
}

fn run(value: &mut Value, schema: Target<'_>, mode: Mode) -> bool {
    let mut steps = MAX_STEPS;
    let mut cx = Ctx {
        schema,
        steps: &mut steps,
        mode,
        changed: false,
    };
    coerce(value, schema.root, &mut cx, 0);
    cx.changed
}

/// What coercion changes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Types, where the schema asks for another one.
    Coerce,
    /// Integral floats into integers only, in a value that is valid as it is.
    IntegersOnly,
}

/// What one coercion shares: the schema, the steps left, what it changes and whether it did.
struct Ctx<'s, 'b> {
    schema: Target<'s>,
    steps: &'b mut u64,
    mode: Mode,
    changed: bool,
}

impl<'s> Ctx<'s, '_> {
    /// Whether `value` is valid under `schema`, within the steps left (and counted in them).
    fn passes(&mut self, value: &Value, schema: &'s Value) -> bool {
        let (ok, used) = passes(self.schema.root, schema, self.schema.patterns, value, *self.steps);
        *self.steps = self.steps.saturating_sub(used);
        ok
    }

    /// Counts the nodes of `value` (a string's bytes by the 64) in the steps left, before it is
    /// copied; `false` when they run out.
    fn charge_copy(&mut self, value: &Value) -> bool {
        let mut stack = vec![value];
        while let Some(v) = stack.pop() {
            let cost = match v {
                Value::String(s) => 1 + s.len() as u64 / 64,
                Value::Array(items) => {
                    stack.extend(items);
                    1
                }
                Value::Object(map) => {
                    stack.extend(map.values());
                    1
                }
                _ => 1,
            };
            if *self.steps < cost {
                *self.steps = 0;
                return false;
            }
            *self.steps -= cost;
        }
        true
    }
}

/// The keywords coercion looks at, gathered in one pass over a schema object.
#[derive(Default)]
struct Keywords<'s> {
    reference: Option<&'s str>,
    types: Option<&'s Value>,
    properties: Option<&'s Map<String, Value>>,
    pattern_properties: Option<&'s Map<String, Value>>,
    additional: Option<&'s Value>,
    prefix_items: Option<&'s [Value]>,
    items: Option<&'s Value>,
    all_of: Option<&'s [Value]>,
    any_of: Option<&'s [Value]>,
    one_of: Option<&'s [Value]>,
}

impl<'s> Keywords<'s> {
    fn of(schema: &'s Map<String, Value>) -> Self {
        let mut k = Self::default();
        for (keyword, value) in schema {
            match (keyword.as_str(), value) {
                ("$ref", Value::String(r)) => k.reference = Some(r),
                ("type", _) => k.types = Some(value),
                ("properties", Value::Object(p)) => k.properties = Some(p),
                ("patternProperties", Value::Object(p)) => k.pattern_properties = Some(p),
                ("additionalProperties", Value::Object(_)) => k.additional = Some(value),
                ("prefixItems", Value::Array(p)) => k.prefix_items = Some(p),
                ("items", _) => k.items = Some(value),
                ("allOf", Value::Array(b)) => k.all_of = Some(b),
                ("anyOf", Value::Array(b)) => k.any_of = Some(b),
                ("oneOf", Value::Array(b)) => k.one_of = Some(b),
                _ => {}
            }
        }
        k
    }
}

/// Coerces `value` in place to the types `schema` asks for, as `cx.mode` allows.
fn coerce<'s>(value: &mut Value, schema: &'s Value, cx: &mut Ctx<'s, '_>, depth: u32) {
    let Some(obj) = schema.as_object() else { return };
    if depth > MAX_DEPTH || *cx.steps == 0 {
        return;
    }
    *cx.steps -= 1;
    let root = cx.schema.root;
    let k = Keywords::of(obj);
    if let Some(target) = k.reference.and_then(|r| resolve_ref(root, r)) {
        coerce(value, target, cx, depth + 1);
    }
    let coercing = cx.mode == Mode::Coerce;
    match k.types {
        Some(Value::String(t)) if !is_type(value, t) => cx.changed |= coercing && coerce_scalar(value, t),
        Some(Value::Array(types)) => {
            let mut names = types.iter().filter_map(Value::as_str);
            if !names.clone().any(|t| is_type(value, t)) {
                if coercing {
                    cx.changed |= names.any(|t| coerce_scalar(value, t));
                }
            } else if names.any(|t| t == "integer") {
                cx.changed |= integral_float_to_integer(value);
            }
        }
        Some(Value::String(t)) if t == "integer" => cx.changed |= integral_float_to_integer(value),
        _ => {}
    }
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                // `properties` and every matching pattern apply; `additionalProperties` only to
                // keys matched by neither.
                let mut matched = false;
                if let Some(sub) = k.properties.and_then(|p| p.get(key)) {
                    matched = true;
                    coerce(child, sub, cx, depth + 1);
                }
                for (pattern, sub) in k.pattern_properties.into_iter().flatten() {
                    match cx.schema.patterns.get(pattern) {
                        Some(re) if re.is_match(key) => {
                            matched = true;
                            coerce(child, sub, cx, depth + 1);
                        }
                        Some(_) => {}
                        // A pattern that did not compile: which keys it covers is unknown.
                        None => matched = true,
                    }
                }
                if let (false, Some(sub)) = (matched, k.additional) {
                    coerce(child, sub, cx, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            // A tuple is `prefixItems` (2020-12) or an array under `items` (drafts 4 to 7).
            let prefix = k
                .prefix_items
                .or_else(|| k.items.and_then(Value::as_array).map(Vec::as_slice));
            let rest = k.items.filter(|s| s.is_object());
            for (i, item) in items.iter_mut().enumerate() {
                if let Some(sub) = prefix.and_then(|p| p.get(i)).or(rest) {
                    coerce(item, sub, cx, depth + 1);
                }
            }
        }
        _ => {}
    }
    for branch in k.all_of.unwrap_or_default() {
        coerce(value, branch, cx, depth + 1);
    }
    for branches in [k.any_of, k.one_of].into_iter().flatten() {
        coerce_choice(value, branches, cx, depth);
    }
}

/// `5.0` becomes `5` where an integer is wanted, so that it deserializes into an integer type;
/// says whether it did.
fn integral_float_to_integer(value: &mut Value) -> bool {
    if let Value::Number(n) = value
        && !n.is_i64()
        && !n.is_u64()
    {
        return coerce_scalar(value, "integer");
    }
    false
}

/// Whether `value` holds a float that [`integral_float_to_integer`] would change.
fn holds_integral_float(value: &Value) -> bool {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Number(n) if !n.is_i64() && !n.is_u64() && n.as_f64().is_some_and(is_integral) => return true,
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    false
}

/// Whether `f` is a whole number that `coerce_scalar` turns into an integer.
fn is_integral(f: f64) -> bool {
    f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15
}

/// A value valid under a branch as it is stays (its integral floats made integers under that
/// branch); otherwise it is coerced into the first branch under which the coerced value is
/// valid, each tried on a copy; under none, it stays as it is.
///
/// An object or an array keeps its type, so when one branch alone admits its type (an
/// `anyOf` of an integer and an array of the same choice), that branch is the one: it is
/// followed without checking the value against each branch first, which at every level of
/// nested choices costs the whole value below, so size × depth for a recursive schema. It is
/// coerced under that branch whether or not it then fits (the validation after judges it,
/// and a tool's error quotes what the model sent).
fn coerce_choice<'s>(value: &mut Value, branches: &'s [Value], cx: &mut Ctx<'s, '_>, depth: u32) {
    let mode = cx.mode;
    let root = cx.schema.root;
    if value.is_object() || value.is_array() {
        let mut admitting = branches.iter().filter(|b| admits(value, b, root, depth));
        if let (Some(only), None) = (admitting.next(), admitting.next()) {
            coerce(value, only, cx, depth + 1);
            return;
        }
    }
    for branch in branches {
        if *cx.steps == 0 {
            return;
        }
        if cx.passes(value, branch) {
            cx.mode = Mode::IntegersOnly;
            coerce(value, branch, cx, depth + 1);
            cx.mode = mode;
            return;
        }
    }
    if mode == Mode::IntegersOnly {
        return;
    }
    for branch in branches {
        // Coercion never turns an object or an array into another type.
        let container = value.is_object() || value.is_array();
        if container && !admits(value, branch, root, depth) {
            continue;
        }
        if !cx.charge_copy(value) {
            return;
        }
        let mut copy = value.clone();
        let changed = std::mem::replace(&mut cx.changed, false);
        coerce(&mut copy, branch, cx, depth + 1);
        let copy_changed = std::mem::replace(&mut cx.changed, changed);
        if copy_changed && cx.passes(&copy, branch) {
            *value = copy;
            cx.changed = true;
            return;
        }
    }
}

/// Whether the declared type of `schema` (through `$ref`s) admits `value`.
fn admits(value: &Value, schema: &Value, root: &Value, depth: u32) -> bool {
    let Some(obj) = schema.as_object() else {
        return schema.as_bool().unwrap_or(true);
    };
    match obj.get("type") {
        Some(Value::String(t)) => is_type(value, t),
        Some(Value::Array(ts)) => ts.iter().any(|t| t.as_str().is_some_and(|t| is_type(value, t))),
        _ => match obj
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| resolve_ref(root, r))
        {
            Some(target) if depth < MAX_DEPTH => admits(value, target, root, depth + 1),
            _ => true,
        },
    }
}

/// Converts a scalar to `ty` if it has an unambiguous form of that type; says whether it did.
fn coerce_scalar(value: &mut Value, ty: &str) -> bool {
    let new = match (ty, &*value) {
        ("string", Value::Number(n)) => Value::String(n.to_string()),
        ("string", Value::Bool(b)) => Value::String(b.to_string()),
        ("integer", Value::Number(n)) if !n.is_i64() && !n.is_u64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 => Value::from(f as i64),
            _ => return false,
        },
        ("integer", Value::String(s)) => match parse_number(s.trim()) {
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Value::Number(n),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 => Value::from(f as i64),
                _ => return false,
            },
            _ => return false,
        },
        ("number", Value::String(s)) => match parse_number(s.trim()) {
            Some(n) => n,
            None => return false,
        },
        ("boolean", Value::String(s)) => match s.trim() {
            "true" | "True" => Value::Bool(true),
            "false" | "False" => Value::Bool(false),
            _ => return false,
        },
        ("object", Value::String(s)) | ("array", Value::String(s)) => match serde_json::from_str::<Value>(s.trim()) {
            Ok(v) if is_type(&v, ty) => v,
            _ => return false,
        },
        _ => return false,
    };
    *value = new;
    true
}

/// A finite number written as JSON (or with a leading `+`), as an integer when it is one.
fn parse_number(s: &str) -> Option<Value> {
    let s = s.strip_prefix('+').unwrap_or(s);
    if let Ok(i) = s.parse::<i64>() {
        return Some(Value::from(i));
    }
    if let Ok(u) = s.parse::<u64>() {
        return Some(Value::from(u));
    }
    let f = s.parse::<f64>().ok().filter(|f| f.is_finite())?;
    serde_json::Number::from_f64(f).map(Value::Number)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::super::parse_with_repair;

    #[test]
    fn coercion_to_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "s": {"type": "string"},
                "i": {"type": "integer"},
                "f": {"type": "number"},
                "b": {"type": "boolean"},
                "o": {"type": ["integer", "null"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "nested": {"$ref": "#/$defs/Inner"},
                "maybe": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]},
                "obj": {"type": "object"}
            },
            "$defs": {"Inner": {"type": "object", "properties": {"n": {"type": "integer"}}}}
        });
        let parse = |text: &str| parse_with_repair(text, &schema).unwrap();
        assert_eq!(parse(r#"{"s": 5}"#), json!({"s": "5"}));
        assert_eq!(parse(r#"{"s": 2.5, "b": "true"}"#), json!({"s": "2.5", "b": true}));
        assert_eq!(parse(r#"{"s": false}"#), json!({"s": "false"}));
        assert_eq!(parse(r#"{"i": "42", "f": "3.5"}"#), json!({"i": 42, "f": 3.5}));
        assert_eq!(parse(r#"{"i": 7.0, "f": "-2"}"#), json!({"i": 7, "f": -2}));
        assert_eq!(parse(r#"{"i": "x", "f": "nan"}"#), json!({"i": "x", "f": "nan"}));
        assert_eq!(parse(r#"{"o": "3"}"#), json!({"o": 3}));
        assert_eq!(parse(r#"{"o": null}"#), json!({"o": null}));
        assert_eq!(
            parse(r#"{"tags": [1, true, "x"]}"#),
            json!({"tags": ["1", "true", "x"]})
        );
        assert_eq!(
            parse(r#"{"nested": {"n": "9"}, "maybe": {"n": "8"}}"#),
            json!({"nested": {"n": 9}, "maybe": {"n": 8}})
        );
        assert_eq!(parse(r#"{"obj": "{\"k\": 1}"}"#), json!({"obj": {"k": 1}}));
        assert_eq!(parse(r#"{"extra": 5}"#), json!({"extra": 5}));
        // Repair and coercion together.
        assert_eq!(parse(r#"{"s": 12, "i": "4"#), json!({"s": "12", "i": 4}));
        assert_eq!(
            parse(r#"{"s": 12, "i": 4, "b": tr"#),
            json!({"s": "12", "i": 4, "b": true})
        );
    }

    #[test]
    fn a_value_that_fits_one_of_its_types_stays() {
        let schema = json!({"properties": {"x": {"type": ["string", "integer"]}, "n": {"type": ["integer", "null"]}}});
        assert_eq!(
            parse_with_repair(r#"{"x": "5", "n": 4.0}"#, &schema).unwrap(),
            json!({"x": "5", "n": 4})
        );
        assert_eq!(
            parse_with_repair(r#"{"x": 5.5, "n": 4.5}"#, &schema).unwrap(),
            json!({"x": "5.5", "n": 4.5})
        );
        let tuple = json!({"items": [{"type": "string"}, {"type": "integer"}]});
        assert_eq!(parse_with_repair(r#"[1, "2", 3]"#, &tuple).unwrap(), json!(["1", 2, 3]));
    }

    #[test]
    fn keys_matched_by_a_pattern_are_coerced_by_its_schema_not_by_additional_properties() {
        let schema = json!({"type": "object",
            "properties": {"label": {"type": "string"}},
            "patternProperties": {"^n_": {"type": "integer"}},
            "additionalProperties": {"type": "string"}});
        assert_eq!(
            parse_with_repair(r#"{"n_count": "5", "n_max": 6, "label": 1, "other": 2}"#, &schema).unwrap(),
            json!({"n_count": 5, "n_max": 6, "label": "1", "other": "2"})
        );
    }

    #[test]
    fn coercion_of_a_costly_schema_stops_within_its_budget() {
        // Each level applies the next one twice to the same value: 2^40 applications unbounded.
        let mut defs = serde_json::Map::new();
        for i in 0..40 {
            let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
            defs.insert(format!("d{i}"), json!({"allOf": [next, next]}));
        }
        defs.insert("d40".to_owned(), json!({"type": "string"}));
        let schema = json!({"properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs});
        // The first applications coerce; the budget ends the rest.
        assert_eq!(parse_with_repair(r#"{"x": 5}"#, &schema).unwrap(), json!({"x": "5"}));
    }

    /// A value `depth` arrays deep with `width` integers at each level, as JSON text.
    fn deep_tree(depth: usize, width: usize) -> String {
        let level = format!("[{}", "1,".repeat(width));
        format!("{}1{}", level.repeat(depth), "]".repeat(depth))
    }

    /// A tree of integers under a recursive choice (an integer, or an array of the choice),
    /// and an integer `z` after it.
    fn tree_schema() -> serde_json::Value {
        json!({
            "$defs": {"N": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/N"}}]}},
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/N"}, "z": {"type": "integer"}}
        })
    }

    /// A large value under a recursive choice (50 levels of 800 integers, 80 KB) and a value
    /// after it: `5.0` still becomes `5` (a valid call), and `"5"` still becomes `5` (an
    /// invalid one). Each level's choice checked the whole value below it against each branch,
    /// so the walk cost size × depth, ran out of its budget, and stopped before `z`.
    #[test]
    fn a_large_value_under_a_recursive_choice_leaves_the_conversions_after_it_in_reach() {
        let tree = deep_tree(50, 800);
        let valid = format!(r#"{{"tree": {tree}, "z": 5.0}}"#);
        assert!(super::super::validate::validate(&serde_json::from_str(&valid).unwrap(), &tree_schema()).is_ok());
        assert_eq!(parse_with_repair(&valid, &tree_schema()).unwrap()["z"], json!(5));
        let invalid = format!(r#"{{"tree": {tree}, "z": "5"}}"#);
        assert_eq!(parse_with_repair(&invalid, &tree_schema()).unwrap()["z"], json!(5));
    }
}
