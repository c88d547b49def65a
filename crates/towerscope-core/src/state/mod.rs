//! State saved with a session and loaded back: the reference's `StateModule`, typed.
//!
//! An agent's own state (its context, the reply in progress, activated tool groups, permission
//! rules) is `AgentState` in `towerscope-agent`. Everything else a conversation needs to resume
//! in another process registers here as a [`StateModule`]: a layer's counters (the call limit's
//! per-session counts), the user's own objects ([`SharedState`]), and registries of modules
//! ([`StateModules`]), nested as deep as needed. A session saves them all as one JSON document
//! and loads them back before the next reply.
//!
//! Differences from the reference's 1.x `StateModule`:
//!
//! - registration is explicit ([`StateModules::register`]; Rust has no `__setattr__`), and it
//!   fails *at registration* when the state cannot be saved as JSON, not at save time;
//! - every call gets the session id, so one module shared by every agent of a web service (a
//!   layer installed once) saves and loads the state of the session at hand;
//! - `strict` is passed down to nested modules (the reference loads them with their default);
//!   a missing key is [`AgentError::MissingState`](crate::AgentError::MissingState) naming the
//!   dotted path.
//!
//! # Example
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use towerscope_core::state::{SharedState, StateModule, StateModules};
//! use towerscope_core::{AgentError, Id};
//!
//! #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
//! struct Preferences {
//!     language: String,
//! }
//!
//! # fn main() -> Result<(), AgentError> {
//! let prefs = SharedState::new(Preferences { language: "fr".into() });
//! let mut inner = StateModules::new();
//! inner.register("prefs", prefs.clone())?;
//! let mut modules = StateModules::new();
//! modules.register("user", inner)?;
//!
//! let session = Id::from("conv-1");
//! let saved = modules.state_dict(&session)?;
//! assert_eq!(saved, serde_json::json!({"user": {"prefs": {"language": "fr"}}}));
//!
//! prefs.set(Preferences::default());
//! modules.load_state_dict(&session, saved, true)?;
//! assert_eq!(prefs.get().language, "fr");
//!
//! // Strict loading names what is missing.
//! let err = modules.load_state_dict(&session, serde_json::json!({"user": {}}), true).unwrap_err();
//! assert!(matches!(&err, AgentError::MissingState { key } if key == "user.prefs"), "{err}");
//! # Ok(()) }
//! ```

mod module;
mod registry;
mod shared;

pub use module::StateModule;
pub use registry::StateModules;
pub use shared::SharedState;
