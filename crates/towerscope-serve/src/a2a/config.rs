//! [`A2aConfig`]: the agent card's contents and the server's limits.

use super::tasks::Limits;
use std::collections::BTreeMap;

use super::wire::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, PROTOCOL_VERSION, SecurityRequirement, SecurityScheme,
    StringList,
};

/// The name of the bearer scheme in the card's `securitySchemes`.
const BEARER_SCHEME: &str = "bearer";

/// The path of the JSON-RPC endpoint, relative to where the routes are mounted.
pub const RPC_PATH: &str = "/a2a";

/// The path of the agent card.
pub const CARD_PATH: &str = "/.well-known/agent-card.json";

/// What the agent card says, and how much the server keeps in memory.
///
/// Without a [`url`](Self::url) the card names the endpoint from the request's `Host` header
/// (`http://<host>/a2a`); set it behind a proxy, under TLS, or when the routes are nested.
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use towerscope_agent::Agent;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
/// use towerscope_serve::a2a::{A2aConfig, wire::AgentSkill};
///
/// let factory = |_: &str| Agent::builder("weather").model(ScriptedModel::new("m", [ScriptedResponse::text("Sunny.")])).build();
/// let app = A2aConfig::new("weather")
///     .description("Tells the weather of a city.")
///     .url("https://agents.example.com/a2a")
///     .skill(AgentSkill::new("weather", "Weather", "The weather of a city, today."))
///     .routes(Arc::new(factory));
/// # let _: axum::Router = app;
/// ```
#[derive(Debug, Clone)]
pub struct A2aConfig {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) version: String,
    pub(crate) url: Option<String>,
    pub(crate) skills: Vec<AgentSkill>,
    pub(crate) limits: Limits,
    pub(crate) keep_alive: Option<std::time::Duration>,
    pub(crate) bearer: bool,
}

impl Default for A2aConfig {
    fn default() -> Self {
        Self::new("towerscope agent")
    }
}

impl A2aConfig {
    /// A card for the agent `name`, with one chat skill, and the default [`Limits`].
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: "An agent built with towerscope.".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            url: None,
            skills: Vec::new(),
            limits: Limits::default(),
            keep_alive: Some(crate::DEFAULT_KEEP_ALIVE),
            bearer: false,
        }
    }

    /// What the agent does.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// The agent's own version (default: this crate's).
    #[must_use]
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// The absolute URL of the JSON-RPC endpoint, as clients must reach it.
    #[must_use]
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// Adds a skill (without any, the card lists one `chat` skill).
    #[must_use]
    pub fn skill(mut self, skill: AgentSkill) -> Self {
        self.skills.push(skill);
        self
    }

    /// Says on the card that clients must send `Authorization: Bearer <token>` (its
    /// `securitySchemes` and requirements, in the shapes of protocols 1.0 and 0.3). A
    /// [`RouterBuilder`](crate::RouterBuilder) with a
    /// [`bearer_token`](crate::RouterBuilder::bearer_token) sets it; set it yourself when the
    /// routes sit behind your own token check. It checks nothing itself.
    #[must_use]
    pub fn bearer_auth(mut self) -> Self {
        self.bearer = true;
        self
    }

    /// Memory and body limits. Served by a [`RouterBuilder`](crate::RouterBuilder), a body
    /// is held to the smaller of [`Limits::max_body_bytes`] and the router's
    /// [`body_limit`](crate::RouterBuilder::body_limit).
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// How long a streamed answer may stay silent before a `: keep-alive` comment goes out
    /// (default 15 s, [`DEFAULT_KEEP_ALIVE`](crate::DEFAULT_KEEP_ALIVE); `None` sends none).
    /// A [`RouterBuilder`](crate::RouterBuilder) sets its own
    /// [`keep_alive`](crate::RouterBuilder::keep_alive) here.
    #[must_use]
    pub fn keep_alive(mut self, period: Option<std::time::Duration>) -> Self {
        self.keep_alive = period;
        self
    }

    /// The card, with `host` (the request's `Host` header) naming the endpoint when no URL is set.
    pub(crate) fn card(&self, host: Option<&str>) -> AgentCard {
        let url = match (&self.url, host) {
            (Some(url), _) => url.clone(),
            (None, Some(host)) => format!("http://{host}{RPC_PATH}"),
            (None, None) => format!("http://127.0.0.1{RPC_PATH}"),
        };
        let skills = if self.skills.is_empty() {
            let mut chat = AgentSkill::new("chat", "Chat", self.description.clone());
            chat.tags = vec!["chat".to_owned()];
            vec![chat]
        } else {
            self.skills.clone()
        };
        AgentCard {
            name: self.name.clone(),
            description: self.description.clone(),
            supported_interfaces: vec![AgentInterface {
                url: url.clone(),
                protocol_binding: "JSONRPC".to_owned(),
                protocol_version: PROTOCOL_VERSION.to_owned(),
            }],
            version: self.version.clone(),
            capabilities: AgentCapabilities {
                streaming: true,
                push_notifications: false,
            },
            default_input_modes: vec!["text/plain".to_owned(), "application/json".to_owned()],
            default_output_modes: vec!["text/plain".to_owned()],
            skills,
            security_schemes: self
                .bearer
                .then(|| (BEARER_SCHEME.to_owned(), SecurityScheme::bearer()))
                .into_iter()
                .collect(),
            security_requirements: self
                .bearer
                .then(|| SecurityRequirement {
                    schemes: BTreeMap::from([(BEARER_SCHEME.to_owned(), StringList::default())]),
                })
                .into_iter()
                .collect(),
            security: self
                .bearer
                .then(|| vec![BTreeMap::from([(BEARER_SCHEME.to_owned(), Vec::new())])]),
            url: Some(url),
            preferred_transport: Some("JSONRPC".to_owned()),
            protocol_version: Some("0.3.0".to_owned()),
        }
    }
}
