//! [`router`] and [`RouterBuilder`]: the server's routes and what guards them.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::CorsLayer;

use crate::a2a::A2aConfig;
use crate::error::ServeError;
use crate::factory::AgentFactory;
use crate::info::AgentInfo;

/// The default request body limit: 1 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 1 << 20;

/// The default idle period after which an event stream sends a keep-alive comment: 15 s.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The chat page: one file, everything inline.
const PAGE: &str = include_str!("page.html");

/// The router for `factory` with the defaults: AG-UI at `POST /agui`, the A2A routes, the chat
/// page at `GET /`, a 1 MiB body limit, no CORS, no token. Mount it in your own axum app
/// with [`Router::merge`] or [`Router::nest`], or serve it with [`run`](crate::run).
pub fn router(factory: impl AgentFactory) -> Router {
    RouterBuilder::new(factory).build()
}

/// A router with options.
///
/// ```text
/// request ─▶ catch panics (500 JSON) ─▶ CORS ─▶ bearer token ─▶ body limit ─▶ route
///                                                                            ├─ GET  /        the chat page
///                                                                            ├─ POST /agui    AG-UI
///                                                                            ├─ A2A routes
///                                                                            └─ else 404 JSON
/// ```
///
/// ```
/// use towerscope_agent::Agent;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
/// use towerscope_serve::{AgentInfo, RouterBuilder};
/// use tower_http::cors::CorsLayer;
///
/// let model = ScriptedModel::cycle("scripted", [ScriptedResponse::text("Hello!")]);
/// let router: axum::Router = RouterBuilder::new(move |_: &str| Agent::builder("assistant").model(model.clone()).build())
///     .body_limit(64 * 1024)
///     .bearer_token("s3cret")
///     .cors(CorsLayer::permissive())
///     .agent_info(AgentInfo::new("assistant").description("Says hello"))
///     .build();
/// # let _ = router;
/// ```
#[derive(Clone)]
pub struct RouterBuilder {
    factory: Arc<dyn AgentFactory>,
    body_limit: usize,
    token: Option<Arc<str>>,
    cors: Option<CorsLayer>,
    info: AgentInfo,
    a2a: Option<A2aConfig>,
    page: bool,
    keep_alive: Option<Duration>,
}

impl std::fmt::Debug for RouterBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouterBuilder")
            .field("body_limit", &self.body_limit)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("cors", &self.cors)
            .field("info", &self.info)
            .field("a2a", &self.a2a)
            .field("page", &self.page)
            .field("keep_alive", &self.keep_alive)
            .finish_non_exhaustive()
    }
}

impl RouterBuilder {
    /// Options for a router serving the agents `factory` builds.
    pub fn new(factory: impl AgentFactory) -> Self {
        Self {
            factory: Arc::new(factory),
            body_limit: DEFAULT_BODY_LIMIT,
            token: None,
            cors: None,
            info: AgentInfo::default(),
            a2a: None,
            page: true,
            keep_alive: Some(DEFAULT_KEEP_ALIVE),
        }
    }

    /// The largest request body accepted on every route, A2A's included, in bytes (default
    /// 1 MiB); larger ones get 413.
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Requires `Authorization: Bearer <token>` on every route but the chat page and
    /// `/.well-known/` (401 otherwise). The A2A card says so (see
    /// [`A2aConfig::bearer_auth`]), and [`A2aClient::with_bearer_token`](crate::a2a::A2aClient::with_bearer_token)
    /// sends it.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(Arc::from(token.into()));
        self
    }

    /// Answers cross-origin requests as `cors` says (default: no CORS headers, so browsers
    /// let only the page's own origin read the answers; and as the endpoints take only bodies
    /// sent as `application/json`, which a browser sends cross-site only after asking, no other
    /// site can make a visitor's browser run an agent either).
    pub fn cors(mut self, cors: CorsLayer) -> Self {
        self.cors = Some(cors);
        self
    }

    /// How the agent presents itself (the A2A card reads it).
    pub fn agent_info(mut self, info: AgentInfo) -> Self {
        self.info = info;
        self
    }

    /// The A2A card and limits (default: the card names the agent as [`agent_info`] does, with
    /// the default [`Limits`](crate::a2a::Limits)).
    ///
    /// [`agent_info`]: Self::agent_info
    pub fn a2a(mut self, config: A2aConfig) -> Self {
        self.a2a = Some(config);
        self
    }

    /// How long an event stream (AG-UI's or A2A's) may stay silent before a `: keep-alive`
    /// comment goes out (default 15 s; `None` sends none). Proxies close connections idle for longer than their
    /// timeout, which a long model call or tool would otherwise reach.
    pub fn keep_alive(mut self, period: Option<Duration>) -> Self {
        self.keep_alive = period;
        self
    }

    /// Whether to serve the chat page at `GET /` (default `true`).
    pub fn chat_page(mut self, page: bool) -> Self {
        self.page = page;
        self
    }

    /// The A2A configuration: the one given, or a card made from the agent's info.
    fn a2a_config(&self) -> A2aConfig {
        self.a2a.clone().unwrap_or_else(|| {
            let config = A2aConfig::new(self.info.name.clone()).version(self.info.version.clone());
            if self.info.description.is_empty() {
                config
            } else {
                config.description(self.info.description.clone())
            }
        })
    }

    /// The router.
    pub fn build(self) -> Router {
        // The router's limit and keep-alive hold for A2A too (its endpoint reads the body
        // itself, past `DefaultBodyLimit`).
        let mut a2a = self.a2a_config().keep_alive(self.keep_alive);
        a2a.bearer |= self.token.is_some();
        a2a.limits.max_body_bytes = a2a.limits.max_body_bytes.min(self.body_limit);
        // One factory makes a thread id and a context id one session: the two protocols see
        // each other's replies running.
        let busy = crate::busy::Busy::default();
        let agui = crate::agui::routes(
            Arc::clone(&self.factory),
            self.body_limit,
            self.keep_alive,
            busy.clone(),
        );
        let mut router = agui.merge(a2a.routes_sharing(Arc::clone(&self.factory), busy));
        if self.page {
            router = router.route("/", get(|| async { Html(PAGE) }));
        }
        let mut router = router
            .fallback(|| async { ServeError::not_found() })
            .method_not_allowed_fallback(|| async { ServeError::method_not_allowed() })
            .layer(DefaultBodyLimit::max(self.body_limit))
            .layer(Extension(self.info));
        if let Some(token) = self.token {
            router = router.layer(axum::middleware::from_fn_with_state(token, crate::auth::check));
        }
        if let Some(cors) = self.cors {
            router = router.layer(cors);
        }
        router.layer(CatchPanicLayer::custom(
            |_panic: Box<dyn std::any::Any + Send>| -> Response { ServeError::panicked().into_response() },
        ))
    }
}
