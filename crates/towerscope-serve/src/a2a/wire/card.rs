//! [`AgentCard`]: what an agent says about itself at `/.well-known/agent-card.json`.

use serde::{Deserialize, Serialize};

/// Where and how the agent is reached.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// The endpoint's absolute URL.
    pub url: String,
    /// The binding: `JSONRPC` here.
    pub protocol_binding: String,
    /// The protocol version (`1.0`).
    #[serde(default)]
    pub protocol_version: String,
}

/// What the agent supports beyond the basics.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `SendStreamingMessage` is served.
    #[serde(default)]
    pub streaming: bool,
    /// Push notifications are served (never, here).
    #[serde(default)]
    pub push_notifications: bool,
}

/// One thing the agent can do.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// A unique id.
    pub id: String,
    /// A name for people.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Keywords (required by the protocol: written even when empty).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Example requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

impl AgentSkill {
    /// A skill with an id, a name and a description.
    pub fn new(id: impl Into<String>, name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            description: description.into(),
            ..Self::default()
        }
    }
}

/// The agent card.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// The agent's name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Where to reach it, most preferred first.
    #[serde(default)]
    pub supported_interfaces: Vec<AgentInterface>,
    /// The agent's own version.
    #[serde(default)]
    pub version: String,
    /// Optional features.
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    /// Media types it accepts.
    #[serde(default)]
    pub default_input_modes: Vec<String>,
    /// Media types it answers with.
    #[serde(default)]
    pub default_output_modes: Vec<String>,
    /// What it can do.
    #[serde(default)]
    pub skills: Vec<AgentSkill>,
    /// The endpoint, for clients of protocol 0.3 (1.0 clients read `supportedInterfaces`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The binding at `url`, for clients of protocol 0.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_transport: Option<String>,
    /// The protocol version spoken at `url`, for clients of protocol 0.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
}

impl AgentCard {
    /// The URL of the first JSON-RPC interface of protocol 1.x, if the card has one.
    pub fn jsonrpc_url(&self) -> Option<&str> {
        self.supported_interfaces
            .iter()
            .find(|i| {
                i.protocol_binding.eq_ignore_ascii_case("JSONRPC")
                    && (i.protocol_version.is_empty() || i.protocol_version.starts_with('1'))
            })
            .map(|i| i.url.as_str())
    }
}
