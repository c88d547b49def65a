//! [`StateModules`]: named modules saved and loaded together, nested as deep as needed.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::StateModule;
use crate::{AgentError, Id};

/// Named [`StateModule`]s saved as one JSON object (`{name: module state}`) and loaded back.
/// It is a module itself, so registries nest. See the [module docs](super) for an example.
///
/// Cloning gives another handle on the same modules.
#[derive(Clone, Default)]
pub struct StateModules {
    modules: Vec<(String, Arc<dyn StateModule>)>,
}

impl StateModules {
    /// No modules.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `module` under `name`.
    ///
    /// Fails, before anything is saved, when the name is empty, holds a `.` (the separator of
    /// the paths in error messages) or is taken, and when the module's
    /// [`check`](StateModule::check) fails (its state cannot be saved as JSON).
    pub fn register(&mut self, name: impl Into<String>, module: impl StateModule) -> Result<&mut Self, AgentError> {
        let name = name.into();
        if name.is_empty() || name.contains('.') {
            return Err(AgentError::validation(format!(
                "state name `{name}` is not allowed: use a non-empty name without `.`"
            )));
        }
        if self.get(&name).is_some() {
            return Err(AgentError::validation(format!(
                "a state named `{name}` is already registered; pick another name"
            )));
        }
        module.check().map_err(|e| {
            AgentError::validation(format!(
                "state `{name}` cannot be registered: it cannot be saved as JSON ({e})"
            ))
        })?;
        self.modules.push((name, Arc::new(module)));
        Ok(self)
    }

    /// Registers `module` under `name` and returns `self` (see [`register`](Self::register)).
    pub fn with(mut self, name: impl Into<String>, module: impl StateModule) -> Result<Self, AgentError> {
        self.register(name, module)?;
        Ok(self)
    }

    /// The module registered under `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn StateModule>> {
        self.modules.iter().find(|(n, _)| n == name).map(|(_, m)| m)
    }

    /// The registered names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.modules.iter().map(|(n, _)| n.as_str())
    }

    /// How many modules are registered.
    pub fn len(&self) -> usize {
        self.modules.len()
    }

    /// Whether no module is registered.
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }
}

impl StateModule for StateModules {
    fn state_dict(&self, session: &Id) -> Result<Value, AgentError> {
        let mut out = Map::new();
        for (name, module) in &self.modules {
            out.insert(name.clone(), module.state_dict(session)?);
        }
        Ok(Value::Object(out))
    }

    /// Loads each registered module from the key of its name; keys nobody registered are
    /// ignored (as the reference loads only the names it knows).
    fn load_state_dict(&self, session: &Id, state: Value, strict: bool) -> Result<(), AgentError> {
        let mut map = match state {
            Value::Object(map) => map,
            Value::Null if !strict => Map::new(),
            other => {
                return Err(AgentError::decode(
                    "saved state",
                    format!("expected an object of named states, found {}", kind(&other)),
                ));
            }
        };
        for (name, module) in &self.modules {
            match map.remove(name) {
                Some(value) => module.load_state_dict(session, value, strict).map_err(|e| match e {
                    AgentError::MissingState { key } => AgentError::MissingState {
                        key: format!("{name}.{key}"),
                    },
                    other => other,
                })?,
                None if strict => return Err(AgentError::MissingState { key: name.clone() }),
                None => {}
            }
        }
        Ok(())
    }

    fn check(&self) -> Result<(), AgentError> {
        // Each module was checked when it was registered.
        Ok(())
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl fmt::Debug for StateModules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::HashMap;

    use super::*;
    use crate::state::SharedState;

    #[test]
    fn a_state_that_cannot_be_json_fails_at_registration() {
        // JSON object keys are strings: a map keyed by tuples cannot be saved.
        let bad = SharedState::new(HashMap::from([((1u8, 2u8), "x".to_owned())]));
        let err = StateModules::new().register("pairs", bad).unwrap_err();
        assert!(matches!(err, AgentError::Validation(_)), "{err:?}");
        assert!(err.to_string().contains("state `pairs` cannot be registered"), "{err}");
    }

    #[test]
    fn names_must_be_unique_and_plain() {
        let mut modules = StateModules::new();
        modules.register("a", SharedState::new(1u32)).unwrap();
        assert!(modules.register("a", SharedState::new(2u32)).is_err());
        assert!(modules.register("a.b", SharedState::new(2u32)).is_err());
        assert!(modules.register("", SharedState::new(2u32)).is_err());
        assert_eq!(modules.names().collect::<Vec<_>>(), ["a"]);
    }

    #[test]
    fn lenient_loading_keeps_what_is_missing_and_ignores_unknown_keys() {
        let a = SharedState::new(1u32);
        let b = SharedState::new(2u32);
        let modules = StateModules::new()
            .with("a", a.clone())
            .unwrap()
            .with("b", b.clone())
            .unwrap();
        let s = Id::from("s");
        modules
            .load_state_dict(&s, serde_json::json!({"a": 10, "zzz": true}), false)
            .unwrap();
        assert_eq!((a.get(), b.get()), (10, 2));
        let err = modules
            .load_state_dict(&s, serde_json::json!({"a": 10}), true)
            .unwrap_err();
        assert!(
            matches!(&err, AgentError::MissingState { key } if key == "b"),
            "{err:?}"
        );
        let err = modules.load_state_dict(&s, serde_json::json!([1]), true).unwrap_err();
        assert!(err.to_string().contains("found an array"), "{err}");
    }
}
