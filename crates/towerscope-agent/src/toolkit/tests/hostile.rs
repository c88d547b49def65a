//! What the toolkit does with input meant to hurt: huge, deep, or aimed at the validator; and
//! with schemas it cannot enforce.

use serde_json::{Value, json};

use super::{call, echo};
use crate::toolkit::{AddToolError, FunctionTool, InputLimits, SchemaError, Toolkit};

fn tool_with(schema: Value) -> FunctionTool {
    FunctionTool::with_schema("strict", "A tool.", schema, |input: Value| async move { input })
}

fn counter() -> Toolkit {
    let mut toolkit = Toolkit::new();
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    toolkit.add(tool_with(schema));
    toolkit
}

#[test]
fn an_unknown_tool_name_is_repeated_truncated() {
    let name = "x".repeat(1024 * 1024);
    let err = counter().prepare(&call(&name, "{}"), &[]).unwrap_err();
    assert!(err.len() < 400, "{} bytes", err.len());
    assert!(err.starts_with("ToolNotFoundError: The tool named 'xxx"));
    assert!(
        err.ends_with("x…[truncated, 1048576 bytes total]' doesn't exist."),
        "{err}"
    );
}

#[test]
fn a_huge_string_for_an_integer_comes_back_truncated() {
    let mut toolkit = counter();
    toolkit.set_input_limits(InputLimits::new().with_max_bytes(16 * 1024 * 1024));
    let input = format!(r#"{{"n": "{}"}}"#, "9x".repeat(5 * 1024 * 1024));
    let err = toolkit.prepare(&call("strict", &input), &[]).unwrap_err();
    assert!(err.len() < 500, "{} bytes", err.len());
    assert!(
        err.starts_with("Input validation failed for tool 'strict': '9x9x"),
        "{err}"
    );
    assert!(
        err.ends_with("…[truncated, 10485762 bytes total] is not of type 'integer' (at $.n)"),
        "{err}"
    );
}

#[test]
fn an_input_over_the_size_limit_is_refused_before_parsing() {
    let input = format!(r#"{{"n": 1, "pad": "{}"}}"#, " ".repeat(1024 * 1024));
    let err = counter().prepare(&call("strict", &input), &[]).unwrap_err();
    assert_eq!(
        err,
        format!(
            "Input validation failed for tool 'strict': the input is {} bytes, more than the limit of 1048576 \
             bytes; send a smaller input (at $)",
            input.len()
        )
    );
}

#[test]
fn deeply_nested_input_is_refused_before_parsing() {
    let too_deep = "the input nests arrays and objects more than 64 levels deep; send a flatter input";
    // Complete, and cut short (the repair path): both refused before any parser recurses.
    for input in [
        format!(r#"{{"n": 1, "x": {}{}}}"#, "[".repeat(100_000), "]".repeat(100_000)),
        format!(r#"{{"n": 1, "x": {}"#, "[{\"a\": ".repeat(100_000)),
    ] {
        let err = counter().prepare(&call("strict", &input), &[]).unwrap_err();
        assert_eq!(
            err,
            format!("Input validation failed for tool 'strict': {too_deep} (at $)")
        );
    }
    // At the limit it parses (and is repaired).
    let at_limit = format!(r#"{{"n": 1, "x": {}"#, "[".repeat(63));
    let prepared = counter().prepare(&call("strict", &at_limit), &[]).unwrap();
    assert_eq!(prepared.input["n"], 1);
}

#[test]
fn input_limits_are_configurable() {
    let mut toolkit = counter();
    toolkit.set_input_limits(InputLimits::new().with_max_bytes(10).with_max_depth(1));
    let err = toolkit.prepare(&call("strict", r#"{"n": [1]}"#), &[]).unwrap_err();
    assert!(
        err.contains("the input is 10 bytes") || err.contains("more than 1 levels deep"),
        "{err}"
    );
    let err = toolkit.prepare(&call("strict", r#"{"n": 12345}"#), &[]).unwrap_err();
    assert!(
        err.contains("the input is 12 bytes, more than the limit of 10 bytes"),
        "{err}"
    );
    assert!(toolkit.prepare(&call("strict", r#"{"n": 1}"#), &[]).is_ok());
}

#[test]
fn a_schema_with_an_unenforced_keyword_is_refused_when_the_tool_is_added() {
    for keyword in ["unevaluatedProperties", "unevaluatedItems", "$dynamicRef"] {
        let schema = json!({"type": "object", "properties": {"a": {keyword: false}}});
        let err = Toolkit::new().try_add(tool_with(schema)).unwrap_err();
        assert_eq!(err.tool(), "strict");
        assert_eq!(
            err.error(),
            &SchemaError::UnsupportedKeyword {
                keyword: keyword.to_owned(),
                at: "/properties/a".to_owned()
            }
        );
        assert!(
            err.to_string()
                .contains(&format!("the keyword '{keyword}' (at '/properties/a')"))
        );
    }
    let mut toolkit = Toolkit::new();
    toolkit.create_group("g", "A group.", "");
    let schema = json!({"unevaluatedItems": false});
    let err = toolkit.add_to_group("g", tool_with(schema)).unwrap_err();
    assert!(matches!(err, AddToolError::Schema(_)), "{err}");
    assert!(toolkit.get("strict").is_none());
    // Annotations are fine.
    let annotated = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "urn:x", "$comment": "c",
        "title": "T", "description": "D", "examples": [{}], "default": {}, "deprecated": false,
        "properties": {"when": {"type": "string", "format": "date-time", "x-vendor": {"unevaluatedItems": 1}}}
    });
    assert!(Toolkit::new().try_add(tool_with(annotated)).is_ok());
}

#[test]
fn unresolved_refs_and_foreign_patterns_are_refused() {
    let err = Toolkit::new()
        .try_add(tool_with(json!({"$ref": "https://example.org/other.json"})))
        .unwrap_err();
    assert!(matches!(err.error(), SchemaError::UnresolvedRef { .. }), "{err}");
    let err = Toolkit::new()
        .try_add(tool_with(json!({"properties": {"a": {"$ref": "#/$defs/Missing"}}})))
        .unwrap_err();
    assert!(
        err.to_string().contains("'#/$defs/Missing' (at '/properties/a/$ref')"),
        "{err}"
    );
    // Lookahead is not in regex-lite: refused rather than never checked.
    let err = Toolkit::new()
        .try_add(tool_with(json!({"patternProperties": {"^(?=a)": {}}})))
        .unwrap_err();
    assert!(matches!(err.error(), SchemaError::InvalidPattern { .. }), "{err}");
}

#[test]
#[should_panic(
    expected = "the input schema of the tool 'strict' cannot be enforced: the keyword 'unevaluatedProperties'"
)]
fn add_panics_on_a_schema_it_cannot_enforce() {
    Toolkit::new().add(tool_with(json!({"unevaluatedProperties": false})));
}

#[test]
fn a_pattern_in_a_tool_schema_is_enforced() {
    let mut toolkit = Toolkit::new();
    toolkit.add(tool_with(
        json!({"properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}}),
    ));
    assert!(toolkit.prepare(&call("strict", r#"{"code": "CDG"}"#), &[]).is_ok());
    assert_eq!(
        toolkit.prepare(&call("strict", r#"{"code": "cdg"}"#), &[]).unwrap_err(),
        "Input validation failed for tool 'strict': 'cdg' does not match '^[A-Z]{3}$' (at $.code)"
    );
    let _ = echo("unused");
}

/// A tool that says its patterns are not checked (a client's schema, as AG-UI's front-end
/// tools): a pattern too large to compile is not refused, arguments are checked against every
/// other keyword, and a property a pattern would cover passes as `additionalProperties` allows.
#[test]
fn a_tool_that_checks_no_patterns_compiles_none_and_checks_the_rest() {
    use crate::toolkit::{Tool, ToolChunkStream};

    struct ClientTool(Value);
    impl Tool for ClientTool {
        fn name(&self) -> &str {
            "client"
        }
        fn description(&self) -> &str {
            "Run by the client."
        }
        fn input_schema(&self) -> &Value {
            &self.0
        }
        fn external(&self) -> bool {
            true
        }
        fn checks_patterns(&self) -> bool {
            false
        }
        fn call(&self, _input: Value) -> ToolChunkStream {
            Box::pin(futures_util::stream::empty())
        }
    }

    let schema = json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "^.{0,100000}$"}},
        "patternProperties": {"^x.{0,100000}$": {"type": "integer"}}, "additionalProperties": false, "required": ["s"]});
    let err = Toolkit::new().try_add(tool_with(schema.clone())).unwrap_err();
    assert!(matches!(err.error, SchemaError::InvalidPattern { .. }), "{err}");
    let mut toolkit = Toolkit::new();
    toolkit.try_add(ClientTool(schema)).unwrap();
    assert!(
        toolkit
            .prepare(&call("client", r#"{"s": "any", "xy": "text"}"#), &[])
            .is_ok()
    );
    let err = toolkit.prepare(&call("client", r#"{"t": "no s"}"#), &[]).unwrap_err();
    assert!(err.contains("'s' is a required property"), "{err}");
}
