//! [`AgentInfo`]: how the server presents its agent (the chat page's title, the A2A card).

/// The served agent's name, description and version. The router adds it to every request's
/// extensions, where the A2A routes read it for the agent card.
///
/// ```
/// let info = towerscope_serve::AgentInfo::new("Friday").description("A weather assistant");
/// assert_eq!(info.name, "Friday");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentInfo {
    /// The agent's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its version (the crate's by default).
    pub version: String,
}

impl AgentInfo {
    /// An agent named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: String::new(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the version.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }
}

impl Default for AgentInfo {
    fn default() -> Self {
        Self::new("towerscope agent")
    }
}
