//! Embedded schema resources: a subschema with a `$id` of its own is a resource, and the
//! `$ref`s inside it resolve against it (`#/$defs/x` there is its own `$defs`). The validator
//! resolves every `$ref` against the document's root, so [`CompiledSchema::new`] refuses a
//! `$ref` inside such a subschema ([`SchemaError::EmbeddedResource`]) rather than check the
//! value against another schema than the one named.
//!
//! [`CompiledSchema::new`]: super::CompiledSchema::new

use serde_json::Value;

use super::SchemaError;
use super::compile::{Key, Keyword, Trail};

/// A schema to visit: itself, its place, and the embedded resource it is in (the nearest
/// subschema below the root with a `$id`: that `$id` and its place).
type Visit<'s> = (&'s Value, Option<usize>, Option<(&'s str, Option<usize>)>);

/// Refuses a `$ref` inside a subschema below the root that has a `$id` of its own. A `$id` that
/// is a fragment (`#name`, an anchor in draft 7) changes no base and does not count. One pass
/// over the schema's keywords: `$ref`s are not followed (where a `$ref` resolves depends on
/// where it is written).
pub(super) fn refuse_refs_in_embedded_resources(root: &Value) -> Result<(), SchemaError> {
    let mut trail = Trail::default();
    let mut stack: Vec<Visit<'_>> = vec![(root, None, None)];
    while let Some((schema, at, resource)) = stack.pop() {
        let Value::Object(obj) = schema else { continue };
        let resource = match obj.get("$id") {
            Some(Value::String(id)) if at.is_some() && !id.starts_with('#') => Some((id.as_str(), at)),
            _ => resource,
        };
        if let (Some((id, place)), Some(Value::String(_))) = (resource, obj.get("$ref")) {
            return Err(SchemaError::EmbeddedResource {
                id: id.to_owned(),
                at: trail.pointer(place),
            });
        }
        for (keyword, value) in obj {
            let k = keyword.as_str();
            match (Keyword::of(k), value) {
                (Keyword::List | Keyword::Items, Value::Array(list)) => {
                    let here = trail.push(at, Key::Name(k));
                    for (i, sub) in list.iter().enumerate() {
                        stack.push((sub, Some(trail.push(Some(here), Key::Index(i))), resource));
                    }
                }
                (Keyword::Map, Value::Object(map)) => {
                    let here = trail.push(at, Key::Name(k));
                    for (name, sub) in map {
                        stack.push((sub, Some(trail.push(Some(here), Key::Name(name))), resource));
                    }
                }
                (Keyword::One | Keyword::Items, sub) => stack.push((sub, Some(trail.push(at, Key::Name(k))), resource)),
                _ => {}
            }
        }
    }
    Ok(())
}
