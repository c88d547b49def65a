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
    fn state_dict(&self, _session: &Id) -> Result<Value, AgentError> {
        serde_json::to_value(&*self.lock())
            .map_err(|e| AgentError::validation(format!("{} cannot be saved as JSON: {e}", std::any::type_name::<T>())))
    }

    fn load_state_dict(&self, _session: &Id, state: Value, _strict: bool) -> Result<(), AgentError> {
        let value = T::deserialize(state).map_err(|e| AgentError::decode(std::any::type_name::<T>(), e))?;
        self.set(value);
        Ok(())
    }

    /// Saves the value and reads the JSON back as a `T` (without changing the value), so a type
    /// whose JSON does not read back fails at registration too.
    fn check(&self) -> Result<(), AgentError> {
        let json = self.state_dict(&Id::from(""))?;
        T::deserialize(json)
            .map(drop)
            .map_err(|e| AgentError::decode(std::any::type_name::<T>(), e))
    }
}
