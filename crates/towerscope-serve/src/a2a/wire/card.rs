//! [`AgentCard`]: what an agent says about itself at `/.well-known/agent-card.json`.

use std::collections::BTreeMap;

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

/// HTTP authentication: the 1.0 shape of a scheme's settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    /// The `Authorization` scheme (`Bearer`).
    pub scheme: String,
    /// How the token is formatted (`JWT`, ...), a hint only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_format: Option<String>,
    /// What the scheme is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One way for a client to authenticate: a value of the card's `securitySchemes`.
///
/// Written in the shapes of both protocol versions at once, as the card's endpoint fields
/// are: 1.0 clients read [`http_auth_security_scheme`](Self::http_auth_security_scheme),
/// 0.3 clients read [`kind`](Self::kind) and [`scheme`](Self::scheme), and each ignores the
/// other's fields. Only HTTP authentication is modelled; a remote card's other schemes
/// (API keys, OAuth 2) read back as a value with every field empty.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecurityScheme {
    /// HTTP authentication (1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_auth_security_scheme: Option<HttpAuthSecurityScheme>,
    /// The scheme's type, `http` here (0.3's `type`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The `Authorization` scheme (0.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
}

impl SecurityScheme {
    /// `Authorization: Bearer <token>`.
    pub fn bearer() -> Self {
        Self {
            http_auth_security_scheme: Some(HttpAuthSecurityScheme {
                scheme: "Bearer".to_owned(),
                ..HttpAuthSecurityScheme::default()
            }),
            kind: Some("http".to_owned()),
            scheme: Some("Bearer".to_owned()),
        }
    }

    /// Whether this scheme is a bearer token in the `Authorization` header (in either shape).
    pub fn is_bearer(&self) -> bool {
        let http = |scheme: &str| scheme.eq_ignore_ascii_case("bearer");
        self.http_auth_security_scheme.as_ref().is_some_and(|h| http(&h.scheme))
            || (self.kind.as_deref() == Some("http") && self.scheme.as_deref().is_some_and(http))
    }
}

/// Scopes, as 1.0 wraps a list in a map's value.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StringList {
    /// The scopes (none for a bearer token).
    #[serde(default)]
    pub list: Vec<String>,
}

/// Schemes a client must satisfy together (1.0: one entry of `securityRequirements`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SecurityRequirement {
    /// The schemes, by their name in `securitySchemes`, with the scopes each needs.
    #[serde(default)]
    pub schemes: BTreeMap<String, StringList>,
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
    /// How clients authenticate, by a name the requirements use (none: no authentication).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Which schemes a client must satisfy: any one entry, all the schemes of an entry (1.0).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
    /// [`security_requirements`](Self::security_requirements) for clients of protocol 0.3: each
    /// entry maps a scheme's name to its scopes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<Vec<BTreeMap<String, Vec<String>>>>,
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
    /// Whether the card says clients must send a bearer token: some requirement (of either
    /// protocol version) names a bearer scheme.
    pub fn wants_bearer_token(&self) -> bool {
        let bearer = |name: &String| self.security_schemes.get(name).is_some_and(SecurityScheme::is_bearer);
        self.security_requirements.iter().any(|r| r.schemes.keys().any(bearer))
            || self.security.iter().flatten().any(|r| r.keys().any(bearer))
    }

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
