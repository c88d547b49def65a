//! [`StateModule`]: something whose state a session saves and loads.

use std::sync::Arc;

use serde_json::Value;

use crate::{AgentError, Id};

/// Something whose state a session saves as JSON and loads back (see the [module docs](super)).
///
/// Methods take `&self`: a module is shared (a layer and its clones, an object the user keeps a
/// handle on), so it keeps its state behind a lock. Every call names the session, so one module
/// can hold the state of many sessions (a layer installed once in a web service) and save only
/// the session at hand; a module holding one object ignores it.
pub trait StateModule: Send + Sync + 'static {
    /// The state of `session`, as JSON.
    fn state_dict(&self, session: &Id) -> Result<Value, AgentError>;

    /// Replaces the state of `session` with `state` (what [`state_dict`](Self::state_dict)
    /// returned, possibly in another process). With `strict`, a key the module needs but
    /// `state` lacks fails with [`AgentError::MissingState`]; otherwise it keeps its value.
    fn load_state_dict(&self, session: &Id, state: Value, strict: bool) -> Result<(), AgentError>;

    /// Checks that the state can be saved and loaded as JSON; called once, when the module is
    /// registered, so that a module that cannot be saved fails there and not at save time.
    ///
    /// The default saves the state of an empty session id and drops it.
    fn check(&self) -> Result<(), AgentError> {
        self.state_dict(&Id::from("")).map(drop)
    }
}

impl<T: StateModule + ?Sized> StateModule for Arc<T> {
    fn state_dict(&self, session: &Id) -> Result<Value, AgentError> {
        (**self).state_dict(session)
    }

    fn load_state_dict(&self, session: &Id, state: Value, strict: bool) -> Result<(), AgentError> {
        (**self).load_state_dict(session, state, strict)
    }

    fn check(&self) -> Result<(), AgentError> {
        (**self).check()
    }
}
