//! [`AgentFactory`]: how the server gets the agent that serves one session.
//!
//! ```
//! use towerscope_agent::Agent;
//! use towerscope_agent::session::JsonFileStore;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//! use towerscope_serve::AgentFactory;
//!
//! let store = JsonFileStore::new(std::env::temp_dir().join("towerscope-doc-factory"));
//! let factory = move |session: &str| {
//!     Agent::builder("assistant")
//!         .model(ScriptedModel::cycle("scripted", [ScriptedResponse::text("Hello!")]))
//!         .session(store.clone(), "web", session)
//!         .build()
//! };
//! let agent = factory.agent("thread-1").expect("a valid agent");
//! assert_eq!(agent.name(), "assistant");
//! ```

use towerscope_agent::Agent;
use towerscope_core::AgentError;

/// Builds the agent serving one session: an AG-UI thread id or an A2A context id.
///
/// The server calls it for every request, so the agent it returns should keep its state in a
/// `SessionStore` configured with [`AgentBuilder::session`](towerscope_agent::AgentBuilder::session)
/// (a file store for one process, Redis for several): the store carries the conversation from
/// one request to the next, and a reply parked for a confirmation or an external tool is resumed
/// by a later request, possibly in another process. An error fails the request with a JSON body
/// naming it.
pub trait AgentFactory: Send + Sync + 'static {
    /// The agent for `session`.
    fn agent(&self, session: &str) -> Result<Agent, AgentError>;
}

impl<F> AgentFactory for F
where
    F: Fn(&str) -> Result<Agent, AgentError> + Send + Sync + 'static,
{
    fn agent(&self, session: &str) -> Result<Agent, AgentError> {
        self(session)
    }
}
