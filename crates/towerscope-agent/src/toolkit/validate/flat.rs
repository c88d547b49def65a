//! The shape most tool schemas have, recognised once when a schema is compiled: an object of
//! named scalar properties, some of them required (what `schemars` derives for a struct of
//! strings, numbers and booleans).
//!
//! An input that already has the right types needs neither coercion nor the full validator: a
//! [`FlatObject`] checks it in one pass over its members. Anything else (a missing property, a
//! value of another type, an unknown key where none is allowed) takes the general path, which
//! coerces and validates as before and words the error; so this check only ever skips work whose
//! outcome it knows.
//!
//! [`FlatObject::accepts_text`] gives the same answer for a call's text, read once without
//! making a [`Value`] of it: a tool that reads its arguments from text then needs no parse at
//! all (see `Tool::call_text`).

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

/// A scalar JSON-Schema type, checked strictly: an `integer` is a number written without a
/// fraction, so `5.0` is left to the general path, which turns it into `5`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scalar {
    String,
    Integer,
    Number,
    Boolean,
}

impl Scalar {
    fn of(name: &str) -> Option<Self> {
        match name {
            "string" => Some(Self::String),
            "integer" => Some(Self::Integer),
            "number" => Some(Self::Number),
            "boolean" => Some(Self::Boolean),
            _ => None,
        }
    }

    fn admits(self, value: &Value) -> bool {
        match (self, value) {
            (Self::String, Value::String(_)) | (Self::Number, Value::Number(_)) | (Self::Boolean, Value::Bool(_)) => {
                true
            }
            (Self::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
            _ => false,
        }
    }
}

/// Keys that only annotate a schema: the validator and coercion ignore them. Anything not
/// listed here (or a vendor `x-` key) makes a schema take the general path.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "format",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
];

/// What the root may hold besides its own keywords: annotations, and the document's identity.
const ROOT_ANNOTATIONS: &[&str] = &["$schema", "$id"];

fn is_annotation(key: &str) -> bool {
    ANNOTATIONS.contains(&key) || key.starts_with("x-")
}

/// Past this many properties a schema takes the general path: a member is found by a scan of
/// the properties, which stays short.
const MAX_PROPERTIES: usize = 32;

/// One property of a [`FlatObject`]: its name, its type and whether it is required.
#[derive(Debug, Clone)]
struct Property {
    name: Box<str>,
    scalar: Scalar,
    /// The values an integer `format` allows (see `keywords::integer_range`).
    range: Option<(i128, i128)>,
    required: bool,
}

impl Property {
    fn admits(&self, value: &Value) -> bool {
        self.scalar.admits(value)
            && match (self.range, value) {
                (Some(range), Value::Number(n)) => super::keywords::in_range(n, range),
                _ => true,
            }
    }
}

/// An object schema whose properties are all single scalar types. See the [module docs](self).
#[derive(Debug, Clone)]
pub(super) struct FlatObject {
    /// The schema's properties.
    properties: Box<[Property]>,
    /// How many properties are required.
    required: usize,
    /// Whether keys outside `properties` are allowed (`additionalProperties` absent or `true`).
    open: bool,
}

impl FlatObject {
    /// The flat form of `schema`, or `None` when it has any other keyword or shape.
    pub(super) fn of(schema: &Value) -> Option<Self> {
        let root = schema.as_object()?;
        let mut names: Option<&Map<String, Value>> = None;
        let mut required: &[Value] = &[];
        let mut open = true;
        let mut is_object = false;
        for (key, value) in root {
            match (key.as_str(), value) {
                ("type", Value::String(t)) if t == "object" => is_object = true,
                ("properties", Value::Object(props)) if props.len() <= MAX_PROPERTIES => names = Some(props),
                ("required", Value::Array(list)) => required = list,
                ("additionalProperties", Value::Bool(allowed)) => open = *allowed,
                (key, _) if is_annotation(key) || ROOT_ANNOTATIONS.contains(&key) => {}
                _ => return None,
            }
        }
        if !is_object {
            return None;
        }
        let empty = Map::new();
        let props = names.unwrap_or(&empty);
        let is_required = |name: &str| required.iter().any(|r| r.as_str() == Some(name));
        let properties = props
            .iter()
            .map(|(name, schema)| {
                let (scalar, range) = scalar_of(schema)?;
                Some(Property {
                    name: name.as_str().into(),
                    scalar,
                    range,
                    required: is_required(name),
                })
            })
            .collect::<Option<Box<[Property]>>>()?;
        // Every required name a property, each named once: then counting the required members
        // of an input tells whether all are there.
        let names_ok = required.iter().enumerate().all(|(i, r)| {
            r.as_str()
                .is_some_and(|name| props.contains_key(name) && !required[..i].contains(r))
        });
        if !names_ok {
            return None;
        }
        Some(Self {
            properties,
            required: required.len(),
            open,
        })
    }

    /// The property named `key`, and its place.
    fn property(&self, key: &str) -> Option<(usize, &Property)> {
        self.properties.iter().enumerate().find(|(_, p)| *p.name == *key)
    }

    /// Whether `input` already is what the schema this was made from asks for, with nothing
    /// to coerce: then the validator would accept it as it is.
    pub(super) fn accepts(&self, input: &Value) -> bool {
        let Value::Object(members) = input else {
            return false;
        };
        let mut required_seen = 0;
        for (key, value) in members {
            match self.property(key).map(|(_, p)| p) {
                Some(property) => {
                    if !property.admits(value) {
                        return false;
                    }
                    required_seen += usize::from(property.required);
                }
                None if self.open => {}
                None => return false,
            }
        }
        required_seen == self.required
    }

    /// Whether [`accepts`](Self::accepts) accepts the parse of `text`, found without making
    /// the parse: the text is read once and keys without escapes are not copied. Refused as
    /// well, for the general path to decide: a text that names a property twice (its parse
    /// keeps the last value), a key outside the properties whose value is an array or an
    /// object (so an accepted text nests one level: the input limits' depth holds), and a text
    /// that is not a single JSON value. So `true` means the text parses, as it is, to an input
    /// `accepts` accepts.
    pub(super) fn accepts_text(&self, text: &str) -> bool {
        let mut de = serde_json::Deserializer::from_str(text);
        matches!(Members(self).deserialize(&mut de), Ok(true)) && de.end().is_ok()
    }
}

/// The check of [`FlatObject::accepts_text`]: an object's members against the properties.
struct Members<'a>(&'a FlatObject);

impl<'de> DeserializeSeed<'de> for Members<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Members<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        // At most `MAX_PROPERTIES` (32) properties: one bit each.
        let mut seen = 0u64;
        let mut required_seen = 0;
        while let Some(key) = map.next_key_seed(Key)? {
            match self.0.property(&key) {
                Some((i, property)) => {
                    let bit = 1u64.checked_shl(u32::try_from(i).unwrap_or(u32::MAX)).unwrap_or(0);
                    if bit == 0 || seen & bit != 0 {
                        return Ok(false);
                    }
                    seen |= bit;
                    if !map.next_value_seed(Admits(Some(property.scalar), property.range))? {
                        return Ok(false);
                    }
                    required_seen += usize::from(property.required);
                }
                None if self.0.open => {
                    if !map.next_value_seed(Admits(None, None))? {
                        return Ok(false);
                    }
                }
                None => return Ok(false),
            }
        }
        Ok(required_seen == self.0.required)
    }
}

/// An object's key, borrowed from the text when it has no escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(key))
    }

    fn visit_str<E>(self, key: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(key.to_owned()))
    }

    fn visit_string<E>(self, key: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(key))
    }
}

/// A member's value against the type it must have: a property's (as [`Scalar::admits`] says
/// of its parse), or, for a key outside the properties (`None`), any scalar, `null` included.
/// Arrays and objects are not scalars: their visit fails, which refuses the text.
struct Admits(Option<Scalar>, Option<(i128, i128)>);

impl Admits {
    fn is(&self, scalar: Scalar) -> bool {
        self.0.is_none_or(|wanted| wanted == scalar)
    }

    /// Whether an integer is a number of the property's type, in its range.
    fn integer(&self, n: i128) -> bool {
        (self.is(Scalar::Integer) || self.is(Scalar::Number))
            && self.1.is_none_or(|(min, max)| (min..=max).contains(&n))
    }
}

impl<'de> DeserializeSeed<'de> for Admits {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Admits {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar")
    }

    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(self.is(Scalar::Boolean))
    }

    fn visit_i64<E>(self, n: i64) -> Result<bool, E> {
        Ok(self.integer(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<bool, E> {
        Ok(self.integer(n.into()))
    }

    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        // A float under an integer format is left to the general path.
        Ok(self.is(Scalar::Number) && self.1.is_none())
    }

    // `visit_borrowed_str` and `visit_string` forward here.
    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(self.is(Scalar::String))
    }

    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(self.0.is_none())
    }
}

/// The type of a property schema that is a single scalar type with annotations only, and the
/// range its integer `format` allows, if it has one.
fn scalar_of(schema: &Value) -> Option<(Scalar, Option<(i128, i128)>)> {
    let mut scalar = None;
    let mut range = None;
    for (key, value) in schema.as_object()? {
        match (key.as_str(), value) {
            ("type", Value::String(t)) => scalar = Some(Scalar::of(t)?),
            ("format", Value::String(format)) => range = super::keywords::integer_range(format),
            (key, _) if is_annotation(key) => {}
            _ => return None,
        }
    }
    Some((scalar?, range))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::super::super::coerce::{Target, fit_to_schema};
    use super::super::lenient_patterns;
    use super::super::validate;
    use super::*;

    fn add() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Add",
            "description": "Add two integers.",
            "type": "object",
            "properties": {
                "a": {"description": "First operand.", "type": "integer", "format": "int64"},
                "b": {"type": "integer"},
                "note": {"type": "string"},
                "x": {"type": "number"},
                "on": {"type": "boolean"}
            },
            "required": ["a", "b"]
        })
    }

    #[test]
    fn a_struct_of_scalars_is_flat_and_anything_else_is_not() {
        assert!(FlatObject::of(&add()).is_some());
        assert!(FlatObject::of(&json!({"type": "object", "properties": {}})).is_some());
        for schema in [
            json!({"properties": {"a": {"type": "integer"}}}),
            json!({"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}}),
            json!({"type": "object", "properties": {"a": {"type": ["integer", "null"]}}}),
            json!({"type": "object", "properties": {"a": {"type": "object"}}}),
            json!({"type": "object", "properties": {"a": {"enum": [1, 2]}}}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "string"}}}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "a"]}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "minProperties": 1}),
            json!({"type": "object", "anyOf": [{"required": ["a"]}]}),
            json!({"type": "object", "required": ["a"]}),
        ] {
            assert!(FlatObject::of(&schema).is_none(), "{schema}");
        }
    }

    /// The fast path may only skip work whose outcome it knows: whatever it accepts, coercion
    /// leaves unchanged and the full validator accepts.
    #[test]
    fn what_the_flat_check_accepts_needs_no_coercion_and_validates() {
        let closed = {
            let mut s = add();
            s["additionalProperties"] = json!(false);
            s
        };
        let inputs = [
            json!({"a": 1, "b": 2}),
            json!({"a": 1, "b": -2, "note": "n", "x": 1.5, "on": true}),
            json!({"a": 1, "b": 2, "x": 3}),
            json!({"a": 1, "b": 2, "extra": [1]}),
            json!({"a": 1.0, "b": 2}),
            json!({"a": "1", "b": 2}),
            json!({"a": 1}),
            json!({"a": 1, "b": 2, "note": 3}),
            json!({"a": 1, "b": 2, "on": "true"}),
            json!({"a": null, "b": 2}),
            json!([1, 2]),
            json!("a"),
            json!({"a": 18_446_744_073_709_551_615_u64, "b": 2}),
        ];
        let mut accepted = 0;
        for schema in [add(), closed] {
            let flat = FlatObject::of(&schema).unwrap();
            for input in &inputs {
                if !flat.accepts(input) {
                    continue;
                }
                accepted += 1;
                let mut coerced = input.clone();
                let patterns = lenient_patterns(&schema);
                fit_to_schema(
                    &mut coerced,
                    Target {
                        root: &schema,
                        patterns: &patterns,
                    },
                );
                assert_eq!(&coerced, input, "coercion changed {input}");
                assert!(validate(input, &schema).is_ok(), "{input} does not validate");
            }
        }
        // Not `u64::MAX` for `a` (`"format": "int64"`): it would not decode into an `i64`.
        assert_eq!(accepted, 7, "open: 4 inputs, closed: 3");
    }

    #[test]
    fn the_check_refuses_what_the_general_path_must_see() {
        let schema = add();
        let flat = FlatObject::of(&schema).unwrap();
        assert!(flat.accepts(&json!({"a": 1, "b": 2})));
        assert!(!flat.accepts(&json!({"a": 1})), "a required property is missing");
        assert!(!flat.accepts(&json!({"a": "1", "b": 2})), "a string to coerce");
        assert!(!flat.accepts(&json!({"a": 1.0, "b": 2})), "an integral float to coerce");
        let mut closed = add();
        closed["additionalProperties"] = json!(false);
        let flat = FlatObject::of(&closed).unwrap();
        assert!(!flat.accepts(&json!({"a": 1, "b": 2, "c": 3})), "an unknown key");
        let empty = json!({"type": "object"});
        let flat = FlatObject::of(&empty).unwrap();
        assert!(flat.accepts(&json!({})));
        assert!(flat.accepts(&json!({"any": [1]})), "no properties, open");
        assert!(!flat.accepts(&json!([])));
    }

    /// The text check answers what the value check answers of the text's parse, except where
    /// it leaves the decision to the general path on purpose (a property named twice, an
    /// array or object under an unknown key).
    #[test]
    fn the_text_check_agrees_with_the_check_of_the_parse() {
        let closed = {
            let mut s = add();
            s["additionalProperties"] = json!(false);
            s
        };
        let texts = [
            r#"{"a": 1, "b": 2}"#,
            r#"  {"b":2,"a":1}  "#,
            r#"{"a": 1, "b": -2, "note": "n", "x": 1.5, "on": true}"#,
            r#"{"a": 1, "b": 2, "x": 3}"#,
            r#"{"a": 1, "b": 2, "extra": "e", "more": null}"#,
            r#"{"\u0061": 1, "b": 2}"#,
            r#"{"a": 1, "b": 2, "note": "with \"quotes\" and \u00e9"}"#,
            r#"{"a": 1.0, "b": 2}"#,
            r#"{"a": 1e2, "b": 2}"#,
            r#"{"a": "1", "b": 2}"#,
            r#"{"a": 1}"#,
            r#"{"a": 1, "b": 2, "note": 3}"#,
            r#"{"a": 1, "b": 2, "on": "true"}"#,
            r#"{"a": null, "b": 2}"#,
            r#"{"a": 18446744073709551615, "b": 2}"#,
            r#"{"a": 18446744073709551616, "b": 2}"#,
            r#"{"a": -9223372036854775808, "b": 2}"#,
            r#"[1, 2]"#,
            r#""a""#,
            "",
            "{}",
            r#"{"a": 1, "b": 2} {"a": 1}"#,
            r#"{"a": 1, "b": 2"#,
            r#"{"a": 1, "b": 2,}"#,
            r#"{"a": [1], "b": 2}"#,
            r#"{"a": {"b": 1}, "b": 2}"#,
        ];
        let mut accepted = 0;
        for schema in [add(), closed] {
            let flat = FlatObject::of(&schema).unwrap();
            for text in texts {
                let parsed = serde_json::from_str::<Value>(text).ok();
                let expected = parsed.as_ref().is_some_and(|input| flat.accepts(input));
                assert_eq!(flat.accepts_text(text), expected, "{text} against {schema}");
                accepted += usize::from(expected);
            }
        }
        assert_eq!(accepted, 15, "open: 8 texts, closed: 7 (not u64::MAX for an int64)");

        // Left to the general path: a property named twice (the parse keeps the last value),
        // and an unknown key holding an array or an object (which may nest past the limits).
        let open = add();
        let flat = FlatObject::of(&open).unwrap();
        for text in [
            r#"{"a": 1, "b": 2, "a": 3}"#,
            r#"{"a": "x", "b": 2, "a": 3}"#,
            r#"{"a": 1, "b": 2, "extra": [1]}"#,
            r#"{"a": 1, "b": 2, "extra": {"deep": [[[]]]}}"#,
        ] {
            assert!(!flat.accepts_text(text), "{text}");
        }
        let input = serde_json::from_str::<Value>(r#"{"a": 1, "b": 2, "extra": [1]}"#).unwrap();
        assert!(
            flat.accepts(&input),
            "the value check takes it; the general path will too"
        );
    }

    proptest::proptest! {
        /// Objects of the schema's keys and others, with values of every type, in any order
        /// and with repeats: the text check never accepts what the check of the parse refuses,
        /// and accepts everything it accepts that names no key twice and nests nothing under an
        /// unknown key.
        #[test]
        fn the_text_check_never_accepts_what_the_parse_check_refuses(
            members in proptest::collection::vec(
                (
                    proptest::sample::select(vec!["a", "b", "note", "x", "on", "extra"]),
                    proptest::sample::select(vec![
                        "1", "-7", "2.5", "1.0", "1e3", "true", "false", "null", r#""s""#, r#""1""#,
                        "[]", "[1]", r#"{"k": 1}"#, "18446744073709551615",
                    ]),
                ),
                0..8,
            ),
            closed in proptest::bool::ANY,
        ) {
            let mut schema = add();
            if closed {
                schema["additionalProperties"] = json!(false);
            }
            let flat = FlatObject::of(&schema).unwrap();
            let text = format!(
                "{{{}}}",
                members.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect::<Vec<_>>().join(", ")
            );
            let parsed: Value = serde_json::from_str(&text).unwrap();
            let by_value = flat.accepts(&parsed);
            let by_text = flat.accepts_text(&text);
            proptest::prop_assert!(!by_text || by_value, "{} accepted as text only", text);
            let mut keys: Vec<&str> = members.iter().map(|(k, _)| *k).collect();
            keys.sort_unstable();
            let repeats = keys.windows(2).any(|w| w[0] == w[1]);
            let nested_unknown = members.iter().any(|(k, v)| *k == "extra" && (v.starts_with('[') || v.starts_with('{')));
            if !repeats && !nested_unknown {
                proptest::prop_assert_eq!(by_text, by_value, "{}", text);
            }
        }
    }

    /// An integer `format` bounds what the fast path takes: out of range, the value and its
    /// text go to the general path, which refuses it.
    #[test]
    fn an_integer_format_bounds_the_fast_path() {
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer", "format": "int32"}}, "required": ["n"]});
        let flat = FlatObject::of(&schema).unwrap();
        assert!(flat.accepts(&json!({"n": 5})) && flat.accepts_text(r#"{"n": 5}"#));
        assert!(!flat.accepts(&json!({"n": 3_000_000_000u64})));
        assert!(!flat.accepts_text(r#"{"n": 3000000000}"#));
        assert!(!flat.accepts_text(r#"{"n": -3000000000}"#));
        assert!(validate(&json!({"n": 3_000_000_000u64}), &schema).is_err());
    }
}
