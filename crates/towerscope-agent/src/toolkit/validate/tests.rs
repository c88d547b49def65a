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
