//! Properties of tool-argument repair and validation on generated input: nothing panics, every
//! call returns, and what goes back to the model stays small.
//!
//! Each property runs 256 cases by default (`PROPTEST_CASES` overrides it);
//! `scripts/fuzz.sh` runs them for a fixed time at high counts.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use towerscope_agent::toolkit::{CompiledSchema, parse_with_repair, validate};

/// A JSON value of bounded depth and size; numbers are integers and halves, which print and
/// parse back exactly.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-1000i64..1000).prop_map(Value::from),
        (-1000i64..1000).prop_map(|n| json!(n as f64 / 2.0)),
        "[a-c\"\\\\ é\\n{}\\[\\]:,]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..5).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![Just("a"), Just("b"), Just("c"), Just("ab"), Just("x-1")].prop_map(str::to_owned)
}

/// A schema of bounded depth built from the keywords the validator enforces.
fn schema() -> impl Strategy<Value = Value> {
    let small = 0u64..4;
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        prop::sample::select(vec![
            "null", "boolean", "integer", "number", "string", "array", "object"
        ])
        .prop_map(|t| json!({"type": t})),
        Just(json!({"type": ["string", "null"]})),
        (-5i64..5).prop_map(|n| json!({"minimum": n})),
        (-5i64..5).prop_map(|n| json!({"exclusiveMaximum": n})),
        prop::sample::select(vec![json!(0.5), json!(2), json!(3)]).prop_map(|m| json!({"multipleOf": m})),
        small.clone().prop_map(|n| json!({"maxLength": n})),
        small.clone().prop_map(|n| json!({"minItems": n})),
        small.prop_map(|n| json!({"maxProperties": n})),
        prop::sample::select(vec!["^a", "b$", "^\\s*$", "[ac]{2}", "\\d"]).prop_map(|p| json!({"pattern": p})),
        prop::collection::vec(value(), 1..3).prop_map(|v| json!({"enum": v})),
        value().prop_map(|v| json!({"const": v})),
        Just(json!({"uniqueItems": true})),
        prop::collection::vec(key(), 1..3).prop_map(|r| json!({"required": r})),
        Just(json!({"dependentRequired": {"a": ["b"]}})),
        Just(json!({"$ref": "#"})),
        Just(json!({"$ref": "#/$defs/d"})),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        let two = (inner.clone(), inner.clone());
        prop_oneof![
            two.clone().prop_map(|(a, b)| json!({"properties": {"a": a, "b": b}})),
            two.clone().prop_map(|(a, b)| json!({"prefixItems": [a], "items": b})),
            two.clone().prop_map(|(a, b)| json!({"anyOf": [a, b]})),
            two.clone().prop_map(|(a, b)| json!({"oneOf": [a, b]})),
            two.clone().prop_map(|(a, b)| json!({"allOf": [a, b]})),
            (inner.clone(), inner.clone(), inner.clone()).prop_map(|(i, t, e)| json!({"if": i, "then": t, "else": e})),
            inner.clone().prop_map(|s| json!({"not": s})),
            (inner.clone(), 0u64..3).prop_map(|(s, n)| json!({"contains": s, "minContains": n, "maxContains": 3})),
            two.clone()
                .prop_map(|(a, b)| json!({"patternProperties": {"^a": a}, "additionalProperties": b})),
            inner.clone().prop_map(|s| json!({"propertyNames": s})),
            inner.prop_map(|s| json!({"dependentSchemas": {"a": s}})),
            two.prop_map(|(a, b)| json!({"type": "object", "properties": {"a": a}, "additionalProperties": b})),
        ]
    })
}

/// A root schema: `$defs/d` is there for the `$ref`s that point at it.
fn root_schema() -> impl Strategy<Value = Value> {
    (schema(), schema()).prop_map(|(root, d)| match root {
        Value::Object(mut m) => {
            m.insert("$defs".to_owned(), json!({"d": d}));
            Value::Object(m)
        }
        other => json!({"allOf": [other], "$defs": {"d": d}}),
    })
}

/// The longest message the validator may send back: values and paths are cut to 256 bytes, and
/// a message quotes at most a few.
const MAX_MESSAGE: usize = 2048;

proptest! {
    #[test]
    fn every_prefix_of_valid_json_repairs_or_fails_cleanly(v in value(), pretty in any::<bool>()) {
        let text = if pretty { serde_json::to_string_pretty(&v) } else { serde_json::to_string(&v) }.unwrap();
        let empty = json!({});
        for (cut, _) in text.char_indices().chain([(text.len(), ' ')]) {
            let prefix = &text[..cut];
            match parse_with_repair(prefix, &empty) {
                Ok(repaired) if cut == text.len() => prop_assert_eq!(&repaired, &v),
                Ok(_) => {}
                Err(e) => prop_assert!(e.len() < 512, "{} bytes of error for {:?}", e.len(), prefix),
            }
        }
    }

    #[test]
    fn arbitrary_text_repairs_or_fails_cleanly(text in "[\\[\\]{}\":,0-9eE.+\\-tfnrulas\\\\u \\n]{0,120}") {
        let _ = parse_with_repair(&text, &json!({}));
        let _ = parse_with_repair(&text, &json!({"type": "object", "properties": {"a": {"type": "string"}}}));
    }

    #[test]
    fn validation_of_random_values_against_random_schemas_terminates(s in root_schema(), v in value()) {
        let free = validate(&v, &s);
        if let Err(e) = &free {
            prop_assert!(e.message.len() < MAX_MESSAGE && e.json_path.len() < MAX_MESSAGE, "{e}");
        }
        let compiled = CompiledSchema::new(s).unwrap();
        prop_assert_eq!(compiled.validate(&v), free);
    }

    #[test]
    fn coercion_then_validation_terminates(s in root_schema(), v in value()) {
        let text = serde_json::to_string(&v).unwrap();
        if let Ok(coerced) = parse_with_repair(&text, &s) {
            let _ = validate(&coerced, &s);
        }
    }
}

#[test]
fn hostile_shapes_fail_cleanly() {
    let empty = json!({});
    let deep = "[".repeat(500_000);
    let unterminated = format!("{{\"a\": \"{}", "x\\\"".repeat(200_000));
    let huge_number = format!("{{\"a\": 1{}", "0".repeat(900_000));
    let huge_exponent = format!("[1e{}]", "9".repeat(100_000));
    for text in [&deep, &unterminated, &huge_number, &huge_exponent] {
        let _ = parse_with_repair(text, &empty);
    }
    assert!(
        parse_with_repair(&deep, &empty)
            .unwrap_err()
            .contains("more than 64 levels deep")
    );
    let mut m = Map::new();
    m.insert("a".to_owned(), Value::String("x\"".repeat(200_000)));
    assert_eq!(parse_with_repair(&unterminated, &empty).unwrap(), Value::Object(m));
}
