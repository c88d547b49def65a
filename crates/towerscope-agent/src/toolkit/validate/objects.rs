//! The keywords of objects: properties by name and by pattern, the others, names, and
//! dependencies between properties.

use serde_json::{Map, Value};

use super::repr::{py_str, py_str_list};
use super::{Path, Seg, Validator};

impl<'s> Validator<'_, 's> {
    /// `properties`, `patternProperties` and `additionalProperties`.
    pub(super) fn check_properties(
        &mut self,
        inst: &Value,
        keyword: &str,
        sv: &'s Value,
        obj: &'s Map<String, Value>,
        path: &Path<'_>,
        depth: u32,
    ) {
        let Value::Object(m) = inst else { return };
        match (keyword, sv) {
            ("properties", Value::Object(props)) => {
                for (key, sub) in props {
                    if self.stopped() {
                        return;
                    }
                    if let Some(child) = m.get(key) {
                        self.check(child, sub, &path.child(Seg::Key(key)), depth + 1);
                    }
                }
            }
            ("patternProperties", Value::Object(patterns)) => {
                for (pattern, sub) in patterns {
                    let Some(re) = self.run.patterns.get(pattern) else {
                        continue;
                    };
                    for (key, child) in m.iter().filter(|(k, _)| re.is_match(k)) {
                        if self.stopped() {
                            return;
                        }
                        self.check(child, sub, &path.child(Seg::Key(key)), depth + 1);
                    }
                }
            }
            ("additionalProperties", _) => self.check_additional(m, sv, obj, path, depth),
            _ => {}
        }
    }

    fn check_additional(
        &mut self,
        m: &Map<String, Value>,
        sv: &'s Value,
        obj: &'s Map<String, Value>,
        path: &Path<'_>,
        depth: u32,
    ) {
        let props = obj.get("properties").and_then(Value::as_object);
        let patterns = obj.get("patternProperties").and_then(Value::as_object);
        let mut regexes = Vec::new();
        for pattern in patterns.into_iter().flat_map(Map::keys) {
            match self.run.patterns.get(pattern) {
                Some(re) => regexes.push(re),
                // A pattern that did not compile (lenient mode): which keys it covers is unknown.
                None => return,
            }
        }
        let mut extras = m.iter().filter(|(k, _)| {
            !props.is_some_and(|p| p.contains_key(k.as_str())) && !regexes.iter().any(|re| re.is_match(k))
        });
        match sv {
            Value::Bool(false) => {
                if extras.next().is_none() {
                    return;
                }
                let extras = m.keys().filter(|k| {
                    !props.is_some_and(|p| p.contains_key(k.as_str())) && !regexes.iter().any(|re| re.is_match(k))
                });
                let count = extras.clone().count();
                self.error(path, || match patterns {
                    // As `jsonschema`: with patterns, the keys and the patterns they miss.
                    Some(patterns) => {
                        let verb = if count == 1 { "does" } else { "do" };
                        let names = py_str_list(extras.map(String::as_str));
                        let regexes = py_str_list(patterns.keys().map(String::as_str));
                        format!("{names} {verb} not match any of the regexes: {regexes}")
                    }
                    None => {
                        let verb = if count == 1 { "was" } else { "were" };
                        let names = py_str_list(extras.map(String::as_str));
                        format!("Additional properties are not allowed ({names} {verb} unexpected)")
                    }
                });
            }
            Value::Object(_) => {
                for (key, child) in extras {
                    if self.stopped() {
                        return;
                    }
                    self.check(child, sv, &path.child(Seg::Key(key)), depth + 1);
                }
            }
            _ => {}
        }
    }

    /// `required`, `dependentRequired`, `dependentSchemas`, `dependencies` and `propertyNames`.
    pub(super) fn check_object_keyword(
        &mut self,
        inst: &Value,
        keyword: &str,
        sv: &'s Value,
        path: &Path<'_>,
        depth: u32,
    ) {
        let (Value::Object(m), Value::Object(_) | Value::Array(_)) = (inst, sv) else {
            // `propertyNames` may be a boolean schema.
            if let (Value::Object(m), "propertyNames") = (inst, keyword) {
                self.check_names(m, sv, path, depth);
            }
            return;
        };
        match (keyword, sv) {
            ("required", Value::Array(names)) => {
                for name in names.iter().filter_map(Value::as_str) {
                    if !m.contains_key(name) {
                        self.error(path, || format!("{} is a required property", py_str(name)));
                    }
                }
            }
            ("propertyNames", _) => self.check_names(m, sv, path, depth),
            ("dependentRequired" | "dependentSchemas" | "dependencies", Value::Object(deps)) => {
                for (property, dependency) in deps {
                    if self.stopped() {
                        return;
                    }
                    if !m.contains_key(property) {
                        continue;
                    }
                    match dependency {
                        Value::Array(names) if keyword != "dependentSchemas" => {
                            for name in names.iter().filter_map(Value::as_str) {
                                if !m.contains_key(name) {
                                    self.error(path, || {
                                        format!("{} is a dependency of {}", py_str(name), py_str(property))
                                    });
                                }
                            }
                        }
                        Value::Object(_) | Value::Bool(_) if keyword != "dependentRequired" => {
                            self.check(inst, dependency, path, depth + 1);
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    fn check_names(&mut self, m: &Map<String, Value>, sv: &'s Value, path: &Path<'_>, depth: u32) {
        for key in m.keys() {
            if self.stopped() {
                return;
            }
            self.check(&Value::String(key.clone()), sv, path, depth + 1);
        }
    }
}
