//! A2A: the agent card, messages and tasks for other agents.
//!
//! Placeholder on this branch: the A2A routes are built on the `serve-a2a` branch, which
//! replaces this file when the two are merged. Until then [`routes`] serves nothing.
//!
//! ```
//! use std::sync::Arc;
//! use towerscope_agent::Agent;
//! use towerscope_core::AgentError;
//! use towerscope_serve::AgentFactory;
//!
//! let factory: Arc<dyn AgentFactory> =
//!     Arc::new(|_: &str| -> Result<Agent, AgentError> { Err(AgentError::validation("no agent")) });
//! let _router: axum::Router = towerscope_serve::a2a::routes(factory);
//! ```

use std::sync::Arc;

use crate::factory::AgentFactory;

/// The A2A routes (none yet on this branch; see the module docs).
pub fn routes(factory: Arc<dyn AgentFactory>) -> axum::Router {
    let _ = factory;
    axum::Router::new()
}
