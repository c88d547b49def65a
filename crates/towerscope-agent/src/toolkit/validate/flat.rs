//! The shape most tool schemas have, recognised once when a schema is compiled: an object of
//! named scalar properties, some of them required (what `schemars` derives for a struct of
//! strings, numbers and booleans).
//!
//! An input that already has the right types needs neither coercion nor the full validator: a
//! [`FlatObject`] checks it in one pass over its members. Anything else (a missing property, a
//! value of another type, an unknown key where none is allowed) takes the general path, which
//! coerces and validates as before and words the error; so this check only ever skips work whose
//! outcome it knows.

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

/// One property of a [`FlatObject`]: its type and whether it is required.
#[derive(Debug, Clone, Copy)]
struct Property {
    scalar: Scalar,
    required: bool,
}

/// An object schema whose properties are all single scalar types. See the [module docs](self).
///
/// It keeps no names (an agent holds one per tool, so it stays one small allocation): the
/// properties are in the order of the schema's own `properties` map, which the check reads.
#[derive(Debug, Clone)]
pub(super) struct FlatObject {
    /// The schema's properties, in its `properties` map's order.
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
                Some(Property {
                    scalar: scalar_of(schema)?,
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

    /// Whether `input` already is what `schema` (the one this was made from) asks for, with
    /// nothing to coerce: then the validator would accept it as it is.
    pub(super) fn accepts(&self, schema: &Value, input: &Value) -> bool {
        let (Value::Object(members), Some(Value::Object(props))) = (input, schema.get("properties")) else {
            return matches!(input, Value::Object(m) if m.is_empty() || self.open) && self.required == 0;
        };
        let mut required_seen = 0;
        for (key, value) in members {
            let found = props
                .keys()
                .position(|name| name == key)
                .and_then(|i| self.properties.get(i));
            match found {
                Some(property) => {
                    if !property.scalar.admits(value) {
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
}

/// The type of a property schema that is a single scalar type with annotations only.
fn scalar_of(schema: &Value) -> Option<Scalar> {
    let mut scalar = None;
    for (key, value) in schema.as_object()? {
        match (key.as_str(), value) {
            ("type", Value::String(t)) => scalar = Some(Scalar::of(t)?),
            (key, _) if is_annotation(key) => {}
            _ => return None,
        }
    }
    scalar
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::super::super::coerce::coerce_to_schema;
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
                if !flat.accepts(&schema, input) {
                    continue;
                }
                accepted += 1;
                let mut coerced = input.clone();
                coerce_to_schema(&mut coerced, &schema);
                assert_eq!(&coerced, input, "coercion changed {input}");
                assert!(validate(input, &schema).is_ok(), "{input} does not validate");
            }
        }
        assert_eq!(accepted, 9, "open: 5 inputs, closed: 4");
    }

    #[test]
    fn the_check_refuses_what_the_general_path_must_see() {
        let schema = add();
        let flat = FlatObject::of(&schema).unwrap();
        assert!(flat.accepts(&schema, &json!({"a": 1, "b": 2})));
        assert!(
            !flat.accepts(&schema, &json!({"a": 1})),
            "a required property is missing"
        );
        assert!(!flat.accepts(&schema, &json!({"a": "1", "b": 2})), "a string to coerce");
        assert!(
            !flat.accepts(&schema, &json!({"a": 1.0, "b": 2})),
            "an integral float to coerce"
        );
        let mut closed = add();
        closed["additionalProperties"] = json!(false);
        let flat = FlatObject::of(&closed).unwrap();
        assert!(
            !flat.accepts(&closed, &json!({"a": 1, "b": 2, "c": 3})),
            "an unknown key"
        );
        let empty = json!({"type": "object"});
        let flat = FlatObject::of(&empty).unwrap();
        assert!(flat.accepts(&empty, &json!({})));
        assert!(flat.accepts(&empty, &json!({"any": [1]})), "no properties, open");
        assert!(!flat.accepts(&empty, &json!([])));
    }
}
