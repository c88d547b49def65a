//! Each keyword and its message.

#![allow(clippy::unwrap_used)]

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
fn integer_limits_past_two_to_the_53_are_compared_exactly() {
    // In f64, i64::MAX and i64::MAX + 1 are the same number.
    let schema = json!({"type": "integer", "maximum": i64::MAX});
    assert_eq!(
        err(json!(9_223_372_036_854_775_808_u64), schema.clone()),
        s(
            "9223372036854775808 is greater than the maximum of 9223372036854775807",
            "$"
        )
    );
    assert!(validate(&json!(i64::MAX), &schema).is_ok());
    assert!(
        validate(
            &json!(9_007_199_254_740_993_u64),
            &json!({"exclusiveMaximum": 9_007_199_254_740_993_u64})
        )
        .is_err()
    );
    assert!(
        validate(
            &json!(9_007_199_254_740_992_u64),
            &json!({"exclusiveMaximum": 9_007_199_254_740_993_u64})
        )
        .is_ok()
    );
    assert!(validate(&json!(i64::MIN + 1), &json!({"minimum": i64::MIN + 2})).is_err());
    // An integer against a float, and a float against an integer, exactly too.
    assert!(validate(&json!(2f64.powi(63)), &schema).is_err());
    assert!(validate(&json!(u64::MAX), &json!({"maximum": 2f64.powi(64)})).is_ok());
    assert!(validate(&json!(u64::MAX), &json!({"exclusiveMaximum": 2f64.powi(64)})).is_ok());
    assert!(validate(&json!(2.5), &json!({"minimum": 2, "maximum": 3})).is_ok());
    assert!(validate(&json!(2), &json!({"exclusiveMinimum": 1.5, "exclusiveMaximum": 2.5})).is_ok());
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
fn boolean_schemas_and_annotations() {
    assert!(validate(&json!(1), &json!(true)).is_ok());
    assert_eq!(err(json!(1), json!(false)).0, "False schema does not allow 1");
    assert!(
        validate(
            &json!("abc"),
            &json!({"format": "email", "x-vendor": {"pattern": "^z"}})
        )
        .is_ok()
    );
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

#[test]
fn pattern_is_enforced() {
    let schema = json!({"properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}});
    assert!(validate(&json!({"code": "CDG"}), &schema).is_ok());
    assert_eq!(
        err(json!({"code": "cdg"}), schema),
        s("'cdg' does not match '^[A-Z]{3}$'", "$.code")
    );
    // Not anchored unless the pattern says so, as in ECMA-262.
    assert!(validate(&json!("xxabcxx"), &json!({"pattern": "abc"})).is_ok());
    assert!(validate(&json!(12), &json!({"pattern": "abc"})).is_ok());
}

/// A pattern whose compiled program is huge (a server's schema, matched in time proportional
/// to its size times the text's) is refused like an invalid one: `a{1000}{150}b` compiles to
/// about 150,000 states under regex-lite's default 10 MiB bound.
#[test]
fn a_pattern_too_large_to_match_cheaply_is_refused() {
    let err = CompiledSchema::new(json!({"type": "string", "pattern": "a{1000}{150}b"})).unwrap_err();
    assert!(matches!(err, SchemaError::InvalidPattern { .. }), "{err}");
    for ordinary in ["^[a-z]{1,64}$", "^.{0,1000}$", r"^[a-z0-9-]{1,1000}$", r"^\S{1,2000}$"] {
        assert!(
            CompiledSchema::new(json!({"type": "string", "pattern": ordinary})).is_ok(),
            "{ordinary}"
        );
    }
}

#[test]
fn pattern_properties_and_property_names() {
    let schema = json!({
        "properties": {"id": {"type": "integer"}},
        "patternProperties": {"^x-": {"type": "string"}},
        "additionalProperties": false
    });
    assert!(validate(&json!({"id": 1, "x-a": "b"}), &schema).is_ok());
    assert_eq!(
        err(json!({"x-a": 1}), schema.clone()),
        s("1 is not of type 'string'", "$.x-a")
    );
    assert_eq!(
        err(json!({"id": 1, "zz": 2}), schema),
        s("'zz' does not match any of the regexes: '^x-'", "$")
    );
    let names = json!({"propertyNames": {"maxLength": 3}});
    assert_eq!(err(json!({"abcd": 1}), names), s("'abcd' is too long", "$"));
    assert_eq!(
        err(json!({"a": 1}), json!({"propertyNames": false})).0,
        "False schema does not allow 'a'"
    );
}

#[test]
fn dependencies_between_properties() {
    let required = json!({"dependentRequired": {"card": ["billing"]}});
    assert!(validate(&json!({"billing": 1}), &required).is_ok());
    assert_eq!(
        err(json!({"card": 1}), required),
        s("'billing' is a dependency of 'card'", "$")
    );
    let schemas = json!({"dependentSchemas": {"card": {"required": ["billing"]}}});
    assert_eq!(
        err(json!({"card": 1}), schemas),
        s("'billing' is a required property", "$")
    );
    let legacy = json!({"dependencies": {"a": ["b"], "c": {"maxProperties": 1}}});
    assert_eq!(
        err(json!({"a": 1}), legacy.clone()),
        s("'b' is a dependency of 'a'", "$")
    );
    assert_eq!(
        err(json!({"c": 1, "d": 2}), legacy),
        s("{'c': 1, 'd': 2} has too many properties", "$")
    );
}

#[test]
fn contains_counts() {
    let schema = json!({"contains": {"type": "integer"}, "minContains": 2, "maxContains": 3});
    assert!(validate(&json!([1, "a", 2]), &schema).is_ok());
    assert_eq!(
        err(json!(["a"]), schema.clone()).0,
        "['a'] does not contain items matching the given schema"
    );
    assert_eq!(
        err(json!([1]), schema.clone()).0,
        "Too few items match the given schema (expected at least 2 but only 1 matched)"
    );
    assert_eq!(
        err(json!([1, 2, 3, 4]), schema).0,
        "Too many items match the given schema (expected at most 3)"
    );
    assert!(validate(&json!([]), &json!({"contains": false, "minContains": 0})).is_ok());
}

#[test]
fn additional_items_after_a_tuple() {
    let schema = json!({"items": [{"type": "integer"}], "additionalItems": false});
    assert!(validate(&json!([1]), &schema).is_ok());
    assert_eq!(
        err(json!([1, "a", "b"]), schema).0,
        "Additional items are not allowed ('a', 'b' were unexpected)"
    );
}

/// `struct Node { v: i32, next: Option<Box<Node>> }`, as schemars writes it.
fn node_schema() -> Value {
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Node {
        v: i32,
        next: Option<Box<Node>>,
    }
    schemars::schema_for!(Node).to_value()
}

/// `{"v": 0, "next": {"v": 1, "next": … {"v": "bad"}}}`, `levels` objects deep.
fn nested_nodes(levels: usize) -> Value {
    let mut node = json!({"v": "bad"});
    for i in (0..levels - 1).rev() {
        node = json!({"v": i, "next": node});
    }
    node
}

#[test]
fn recursive_schema_validation_is_linear_in_input_depth() {
    let schema = node_schema();
    let (result, steps_12) = validate_counting(&nested_nodes(12), &schema, MAX_STEPS);
    assert!(result.is_err());
    let (result, steps_24) = validate_counting(&nested_nodes(24), &schema, MAX_STEPS);
    let e = result.unwrap_err();
    assert_eq!(e.message, "'bad' is not of type 'integer'");
    assert_eq!(e.json_path, format!("${}.v", ".next".repeat(23)));
    // Twice the depth, about twice the work (it used to be 4096 times).
    assert!(
        steps_24 <= 2 * steps_12 + 20,
        "{steps_12} steps for 12 levels, {steps_24} for 24"
    );
    assert!(steps_24 < 40 * 24, "{steps_24} steps for 24 levels");
}

#[test]
fn costly_schemas_give_up_with_an_error_instead_of_running_on() {
    // Each level applies the next one twice to the same value: 2^40 applications unbounded.
    let mut defs = serde_json::Map::new();
    for i in 0..40 {
        defs.insert(
            format!("d{i}"),
            json!({"allOf": [{"$ref": format!("#/$defs/d{}", i + 1)}, {"$ref": format!("#/$defs/d{}", i + 1)}]}),
        );
    }
    defs.insert("d40".to_owned(), json!({"type": "integer"}));
    let schema = json!({"$ref": "#/$defs/d0", "$defs": defs});
    let (result, steps) = validate_counting(&json!(1), &schema, 10_000);
    assert_eq!(
        result.unwrap_err().message,
        "validation gave up after 10000 steps; the schema is too costly for this input"
    );
    assert_eq!(steps, 10_001);
}

#[test]
fn unique_items_hashes_instead_of_comparing_every_pair() {
    let mut items: Vec<Value> = (0..40_000).map(|i| json!({"id": i, "tags": [i % 7]})).collect();
    let schema = json!({"uniqueItems": true});
    let before = canonical::comparisons();
    assert!(validate(&Value::Array(items.clone()), &schema).is_ok());
    // Only values of the same canonical hash are compared: none here (it used to be 8e8).
    assert!(canonical::comparisons() - before < 100);
    items.push(serde_json::from_str(r#"{"tags": [0.0], "id": 35.0}"#).unwrap());
    assert!(err(Value::Array(items), schema).0.ends_with("has non-unique elements"));
}

#[test]
fn a_huge_bad_value_is_quoted_truncated() {
    let huge = "7".repeat(10 * 1024 * 1024);
    let e = validate(&json!({"n": huge}), &json!({"properties": {"n": {"type": "integer"}}})).unwrap_err();
    assert!(e.message.len() < 400, "{} bytes", e.message.len());
    assert!(e.message.starts_with("'7777"), "{}", e.message);
    assert!(
        e.message
            .ends_with("…[truncated, 10485762 bytes total] is not of type 'integer'"),
        "{}",
        &e.message[e.message.len() - 80..]
    );
    // Keys in the path and lists of names too.
    let key = "k".repeat(100_000);
    let e = validate(
        &json!({&key: {"x": 1}}),
        &json!({"additionalProperties": {"type": "string"}}),
    )
    .unwrap_err();
    assert!(e.json_path.len() < 400 && e.json_path.contains("…[truncated, 100002 bytes total]"));
    let many: serde_json::Map<String, Value> = (0..50_000).map(|i| (format!("extra{i}"), json!(i))).collect();
    let e = validate(&Value::Object(many), &json!({"additionalProperties": false})).unwrap_err();
    assert!(e.message.len() < 400, "{}", e.message);
}

#[test]
fn multiple_of_is_exact_when_the_quotient_overflows() {
    assert!(validate(&json!(1e308), &json!({"multipleOf": 0.5})).is_ok());
    assert!(validate(&json!(1e308), &json!({"multipleOf": 0.123456789})).is_err());
    assert!(validate(&json!(0.0075), &json!({"multipleOf": 0.0001})).is_ok());
    assert!(validate(&json!(9_007_199_254_740_993_u64), &json!({"multipleOf": 3})).is_ok());
}

#[test]
fn multiple_of_a_decimal_step_accepts_the_numbers_written_in_that_step() {
    // 19.99 / 0.01 is 1998.9999999999998 in binary floating point.
    let cents = json!({"type": "number", "multipleOf": 0.01});
    for price in [json!(19.99), json!(0.07), json!(-4.35), json!(1e300), json!(12)] {
        assert!(validate(&price, &cents).is_ok(), "{price}");
    }
    assert_eq!(err(json!(19.999), cents), s("19.999 is not a multiple of 0.01", "$"));
    assert!(validate(&json!(0.3), &json!({"multipleOf": 0.1})).is_ok());
    assert!(validate(&json!(0.35), &json!({"multipleOf": 0.1})).is_err());
    assert!(validate(&json!(7), &json!({"multipleOf": 0.7})).is_ok());
    assert!(validate(&json!(1e-300), &json!({"multipleOf": 1e-301})).is_ok());
    assert!(validate(&json!(1.5e-300), &json!({"multipleOf": 1e-300})).is_err());
    assert!(validate(&json!(u64::MAX), &json!({"multipleOf": 0.5})).is_ok());
}

#[test]
fn patterns_follow_ecma_262_white_space_and_control_escapes() {
    let space = json!({"pattern": "^\\s$"});
    for ws in ["\u{a0}", "\u{feff}", "\u{2029}", "\u{2003}", " ", "\t"] {
        assert!(validate(&json!(ws), &space).is_ok(), "{ws:?}");
    }
    assert!(validate(&json!("x"), &space).is_err());
    let not_space = json!({"pattern": "^\\S$"});
    assert!(validate(&json!("\u{a0}"), &not_space).is_err());
    assert!(validate(&json!("x"), &not_space).is_ok());
    assert!(validate(&json!("\u{3}"), &json!({"pattern": "^\\cC$"})).is_ok());
    assert!(validate(&json!("a b"), &json!({"pattern": "^a[\\s]b$"})).is_ok());
    assert!(validate(&json!("]"), &json!({"pattern": "^[]a]$"})).is_ok());
}

#[test]
fn unique_big_integers_that_share_a_float_are_not_compared_pairwise() {
    // 2^60 + k all round to the same f64: hashed by their exact value, they do not collide.
    let items: Vec<Value> = (0..10_000u64).map(|k| json!((1u64 << 60) + k)).collect();
    let before = canonical::comparisons();
    assert!(validate(&Value::Array(items), &json!({"uniqueItems": true})).is_ok());
    assert!(canonical::comparisons() - before < 100);
    // Mathematical equality: 2^60 + 1 is not the float 2^60.
    assert!(
        validate(
            &json!((1u64 << 60) + 1),
            &json!({"const": 1_152_921_504_606_846_976_f64})
        )
        .is_err()
    );
    assert!(validate(&json!(1u64 << 60), &json!({"const": 1_152_921_504_606_846_976_f64})).is_ok());
}

#[test]
fn a_ref_inside_a_subschema_with_its_own_id_is_refused_rather_than_resolved_against_the_root() {
    // The inner `#/$defs/x` means the inner resource's integer, not the root's string.
    let embedded = json!({
        "type": "object",
        "$defs": {"x": {"type": "string"}},
        "properties": {"p": {"$id": "http://example.com/inner", "$defs": {"x": {"type": "integer"}}, "$ref": "#/$defs/x"}}
    });
    assert_eq!(
        CompiledSchema::new(embedded.clone()).unwrap_err(),
        SchemaError::EmbeddedResource {
            id: "http://example.com/inner".to_owned(),
            at: "/properties/p".to_owned()
        }
    );
    // Deeper inside the resource, reached through a list.
    let deeper = json!({"anyOf": [{"$id": "inner.json", "items": {"$ref": "#"}}]});
    assert!(matches!(
        CompiledSchema::new(deeper),
        Err(SchemaError::EmbeddedResource { at, .. }) if at == "/anyOf/0"
    ));
    // An inner `$id` with no `$ref` inside, a fragment `$id` (an anchor in draft 7), and the
    // root's own `$id` change nothing here: they compile.
    for fine in [
        json!({"properties": {"p": {"$id": "http://example.com/p", "type": "integer"}}}),
        json!({"$defs": {"a": {"$id": "#a", "$ref": "#/$defs/b"}, "b": {"type": "string"}}}),
        json!({"$id": "http://example.com/root", "$defs": {"x": {}}, "properties": {"p": {"$ref": "#/$defs/x"}}}),
    ] {
        assert!(CompiledSchema::new(fine.clone()).is_ok(), "{fine}");
    }
    // The free `validate` ignores what it does not support, this too.
    assert!(validate(&json!({"p": "s"}), &embedded).is_ok());
}

/// Where a refused schema is refused: a JSON pointer through lists, escaped property names and
/// `$ref` targets (written only for the error: compiling a schema builds no path).
#[test]
fn refusals_say_where_as_a_json_pointer() {
    let at = |schema: Value| match CompiledSchema::new(schema) {
        Err(SchemaError::UnsupportedKeyword { at, .. } | SchemaError::UnresolvedRef { at, .. }) => at,
        other => panic!("refused for its keyword or reference, got {other:?}"),
    };
    assert_eq!(at(json!({"unevaluatedItems": false})), "");
    assert_eq!(
        at(json!({"anyOf": [{"type": "string"}, {"items": {"unevaluatedItems": false}}]})),
        "/anyOf/1/items"
    );
    assert_eq!(
        at(json!({"properties": {"a/b~c": {"properties": {"x": {"$dynamicRef": "#n"}}}}})),
        "/properties/a~1b~0c/properties/x"
    );
    assert_eq!(
        at(json!({"$ref": "#/$defs/A", "$defs": {"A": {"not": {"$ref": "#/$defs/Gone"}}}})),
        "/$defs/A/not/$ref"
    );
    assert_eq!(
        at(json!({"additionalProperties": {"$ref": "#/$defs/A"}, "$defs": {"A": {"unevaluatedProperties": false}}})),
        "/$defs/A"
    );
    // Annotations are not walked, whatever they hold; a schema reached twice is checked once.
    let fine = json!({
        "description": {"unevaluatedItems": false},
        "properties": {"a": {"$ref": "#"}, "b": {"$ref": "#/properties/a"}},
        "items": [{"pattern": "^a$"}, {"pattern": "^a$"}]
    });
    assert!(CompiledSchema::new(fine).is_ok());
}

#[test]
fn integer_formats_bound_their_values() {
    let int32 = json!({"type": "integer", "format": "int32"});
    assert!(validate(&json!(2_147_483_647), &int32).is_ok());
    assert_eq!(
        err(json!(2_147_483_648u64), int32.clone()),
        s("2147483648 is greater than the maximum of 2147483647 (int32)", "$")
    );
    assert_eq!(
        err(json!(-2_147_483_649i64), int32),
        s("-2147483649 is less than the minimum of -2147483648 (int32)", "$")
    );
    assert_eq!(
        err(json!(-1), json!({"type": "integer", "format": "uint"})),
        s("-1 is less than the minimum of 0 (uint)", "$")
    );
    assert!(validate(&json!(u64::MAX), &json!({"format": "uint64"})).is_ok());
    assert!(validate(&json!(u64::MAX), &json!({"format": "int64"})).is_err());
    assert!(validate(&json!(300), &json!({"format": "uint8"})).is_err());
    // A float is in range only when it converts exactly: 2^64 is no u64.
    assert!(
        validate(
            &json!(18_446_744_073_709_551_616.0),
            &json!({"format": "uint64", "minimum": 0})
        )
        .is_err()
    );
    // Nor past a schema's own bound at the type's edge, which the float rounds to.
    let own_edge = json!({"format": "uint64", "maximum": 18_446_744_073_709_551_615u64});
    assert!(validate(&json!(18_446_744_073_709_551_616.0), &own_edge).is_err());
    assert!(validate(&json!(5.0), &json!({"format": "uint8"})).is_ok());
    // A fraction is `type`'s to refuse, with its message.
    assert_eq!(
        err(json!(5.5), json!({"type": "integer", "format": "int32"})),
        s("5.5 is not of type 'integer'", "$")
    );
    // A schema's own bound looser than the type's does not let an out-of-range value through.
    assert_eq!(
        err(json!(5_000_000_000u64), json!({"format": "int32", "maximum": 1e10})),
        s("5000000000 is greater than the maximum of 2147483647 (int32)", "$")
    );
    // Other formats only annotate.
    assert!(validate(&json!(1e300), &json!({"type": "number", "format": "double"})).is_ok());
    assert!(validate(&json!("x"), &json!({"type": "string", "format": "date-time"})).is_ok());
}
