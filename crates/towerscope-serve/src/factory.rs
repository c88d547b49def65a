//! [`AgentFactory`]: builds the agent serving one session.

use towerscope_agent::Agent;
use towerscope_core::AgentError;

/// Builds the agent that serves one session: an AG-UI thread id or an A2A context id.
///
/// The factory decides the model, the tools and the layers, and where the session's state is
/// kept between requests: configure a `SessionStore` with
/// [`AgentBuilder::session`](towerscope_agent::AgentBuilder::session) (a file store by default,
/// Redis for several server processes). Any `Fn(&str) -> Result<Agent, AgentError>` closure is a
/// factory.
///
/// # Example
///
/// ```
/// use towerscope_agent::Agent;
/// use towerscope_agent::session::JsonFileStore;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
/// use towerscope_serve::AgentFactory;
///
/// let store = JsonFileStore::new(std::env::temp_dir().join("towerscope-doc-factory"));
/// let factory = move |session: &str| {
///     Agent::builder("assistant")
///         .model(ScriptedModel::new("m", [ScriptedResponse::text("Hello.")]))
///         .session(store.clone(), "", session)
///         .build()
/// };
/// let agent = factory.agent("ctx-1")?;
/// assert_eq!(agent.name(), "assistant");
/// # Ok::<(), towerscope_core::AgentError>(())
/// ```
pub trait AgentFactory: Send + Sync + 'static {
    /// The agent serving `session`. Called when a session is first seen by this process (and
    /// again after it was evicted from memory); a failure is answered as an internal error,
    /// without its text.
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
