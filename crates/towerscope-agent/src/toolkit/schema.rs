//! Input schemas taken from Rust types, cleaned as the reference cleans them.

use std::any::TypeId;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

/// Keywords whose values are data, not schemas: `title` keys inside them are left alone.
const DATA_KEYWORDS: [&str; 4] = ["enum", "const", "default", "examples"];

/// Keywords whose values map names to schemas: the names are not keywords.
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Removes every `title` keyword from a JSON schema, recursively, as the reference does before a
/// schema is offered to a model.
///
/// Only the keyword is removed: a property *named* `title` stays.
///
/// ```
/// use serde_json::json;
/// use towerscope_agent::toolkit::strip_titles;
///
/// let mut schema = json!({
///     "title": "Book",
///     "type": "object",
///     "properties": {"title": {"title": "Title", "type": "string"}}
/// });
/// strip_titles(&mut schema);
/// assert_eq!(schema, json!({"type": "object", "properties": {"title": {"type": "string"}}}));
/// ```
pub fn strip_titles(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if map.get("title").is_some_and(Value::is_string) {
        map.remove("title");
    }
    for (keyword, value) in map.iter_mut() {
        if DATA_KEYWORDS.contains(&keyword.as_str()) {
            continue;
        }
        match value {
            Value::Object(inner) if SCHEMA_MAPS.contains(&keyword.as_str()) => {
                inner.values_mut().for_each(strip_titles)
            }
            Value::Object(_) => strip_titles(value),
            Value::Array(items) => items.iter_mut().for_each(strip_titles),
            _ => {}
        }
    }
}

/// The input schema of `T` for a tool, and the description found in it.
///
/// The schema comes from `schemars` (field doc comments become property descriptions); titles
/// and `$schema` are removed, and the top-level `description` (the type's doc comment) is taken
/// out to become the tool's description.
pub(crate) fn args_schema<T: schemars::JsonSchema + 'static>() -> (Arc<Value>, Option<String>) {
    type Cached = (Arc<Value>, Option<String>);
    static CACHE: Mutex<Vec<(TypeId, Cached)>> = Mutex::new(Vec::new());
    let id = TypeId::of::<T>();
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, cached)) = cache.iter().find(|(t, _)| *t == id) {
        return cached.clone();
    }
    let (schema, description) = generate_args_schema::<T>();
    let cached = (Arc::new(schema), description);
    cache.push((id, cached.clone()));
    cached
}

/// The argument schema of `T`, generated (what [`args_schema`] caches per type: a service
/// building an agent per conversation generates each tool's schema once, not per agent).
fn generate_args_schema<T: schemars::JsonSchema>() -> (Value, Option<String>) {
    let mut schema = schemars::schema_for!(T).to_value();
    strip_titles(&mut schema);
    let description = match &mut schema {
        Value::Object(map) => {
            map.remove("$schema");
            match map.remove("description") {
                Some(Value::String(d)) => Some(d),
                _ => None,
            }
        }
        _ => None,
    };
    (schema, description)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, dead_code)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Get the weather of a city.
    #[derive(schemars::JsonSchema)]
    struct Weather {
        /// The city, in English.
        city: String,
        /// How many days to forecast.
        days: Option<u8>,
        unit: Unit,
    }

    /// A temperature unit.
    #[derive(schemars::JsonSchema)]
    enum Unit {
        Celsius,
        Fahrenheit,
    }

    #[test]
    fn doc_comments_become_descriptions_without_titles() {
        let (schema, description) = args_schema::<Weather>();
        assert_eq!(description.as_deref(), Some("Get the weather of a city."));
        assert_eq!(
            schema["properties"]["city"],
            json!({"type": "string", "description": "The city, in English."})
        );
        assert_eq!(
            schema["properties"]["days"]["description"],
            "How many days to forecast."
        );
        assert_eq!(schema["required"], json!(["city", "unit"]));
        let text = schema.to_string();
        assert!(!text.contains("\"title\""), "{text}");
        assert!(!text.contains("$schema"), "{text}");
        assert!(schema.get("description").is_none());
        // The nested enum stays reachable through its `$ref`.
        let unit = &schema["properties"]["unit"]["$ref"];
        let target = super::super::validate::resolve_ref(&schema, unit.as_str().unwrap()).unwrap();
        assert_eq!(target["enum"], json!(["Celsius", "Fahrenheit"]));
    }

    #[test]
    fn titles_inside_data_and_property_names_survive() {
        let mut schema = json!({
            "title": "T",
            "properties": {"title": {"type": "string", "title": "Title"}},
            "default": {"title": "kept"},
            "anyOf": [{"title": "A", "type": "null"}]
        });
        strip_titles(&mut schema);
        assert_eq!(
            schema,
            json!({
                "properties": {"title": {"type": "string"}},
                "default": {"title": "kept"},
                "anyOf": [{"type": "null"}]
            })
        );
    }
}
