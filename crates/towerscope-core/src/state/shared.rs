//! [`SharedState`]: one value of the user's, saved and loaded with serde.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::StateModule;
use crate::{AgentError, Id};

/// A value of the user's (preferences, a plan, a scratchpad) shared between the code that uses
/// it and the session that saves it. Cloning gives another handle on the same value.
///
/// The value is the same for every session (it belongs to the agent it is registered with);
/// build one per agent. Its missing fields follow its serde attributes (`#[serde(default)]`).
///
/// See the [module docs](super) for an example.
pub struct SharedState<T> {
    value: Arc<Mutex<T>>,
}

impl<T> SharedState<T> {
    /// Shares `value`.
    pub fn new(value: T) -> Self {
        Self {
            value: Arc::new(Mutex::new(value)),
        }
    }

    /// Locks the value. Do not hold the guard across an `.await`.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.value.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy of the value.
    pub fn get(&self) -> T
    where
        T: Clone,
    {
        self.lock().clone()
    }

    /// Replaces the value.
    pub fn set(&self, value: T) {
        *self.lock() = value;
    }
}

impl<T> Clone for SharedState<T> {
    fn clone(&self) -> Self {
        Self {
            value: Arc::clone(&self.value),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for SharedState<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SharedState").field(&*self.lock()).finish()
    }
}

impl<T> StateModule for SharedState<T>
where
    T: Serialize + DeserializeOwned + Send + 'static,
{
    /// The value as JSON, read back as a `T` first: a value whose JSON does not load (a float
    /// that is NaN or infinite is written `null`) fails here, at its save, not every later load
    /// of the session.
    fn state_dict(&self, _session: &Id) -> Result<Value, AgentError> {
        let name = std::any::type_name::<T>;
        let value = serde_json::to_value(&*self.lock())
            .map_err(|e| AgentError::validation(format!("{} cannot be saved as JSON: {e}", name())))?;
        T::deserialize(&value).map_err(|e| {
            AgentError::validation(format!(
                "{} cannot be saved: its JSON does not load back ({e}; a NaN or infinite float is written null)",
                name()
            ))
        })?;
        Ok(value)
    }

    fn load_state_dict(&self, _session: &Id, state: Value, _strict: bool) -> Result<(), AgentError> {
        let value = T::deserialize(state).map_err(|e| AgentError::decode(std::any::type_name::<T>(), e))?;
        self.set(value);
        Ok(())
    }

    /// Saves the value and reads the JSON back as a `T` (without changing the value), so a type
    /// whose JSON does not read back fails at registration too.
    fn check(&self) -> Result<(), AgentError> {
        self.state_dict(&Id::from("")).map(drop)
    }
}

#[cfg(test)]
mod float_tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A float saved and loaded comes back to the bit (about one in ten came back one unit in
    /// the last place off, and drifted at each save and load).
    #[test]
    fn a_float_comes_back_exactly() {
        let session = Id::from("s");
        for cost in [985.690_694_632_869_5_f64, 0.1 + 0.2, 1e-300, 123_456.789_012_345_67] {
            let saved = SharedState::new(cost).state_dict(&session).unwrap();
            let text = serde_json::to_string(&saved).unwrap();
            let loaded = SharedState::new(0.0f64);
            loaded
                .load_state_dict(&session, serde_json::from_str(&text).unwrap(), true)
                .unwrap();
            assert_eq!(
                loaded.get().to_bits(),
                cost.to_bits(),
                "{cost:?} came back {:?}",
                loaded.get()
            );
        }
    }
}
