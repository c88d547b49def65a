//! Serve towerscope agents over HTTP: AG-UI for web front-ends, A2A for other agents, and a
//! chat page to try an agent in the browser.
//!
//! One [`router`] from an [`AgentFactory`] (the agent of one session, its state in a
//! `SessionStore`), mountable in your own axum app, or served by [`run`]:
//!
//! ```text
//! request ─▶ catch panics ─▶ CORS ─▶ bearer token ─▶ body limit ─▶ route
//!   GET  /                     the chat page (one inline HTML file, talks AG-UI)
//!   POST /agui                 AG-UI: RunAgentInput in, server-sent events out   (`agui`)
//!   GET  /.well-known/agent-card.json, POST /a2a
//!                              A2A: the agent card, JSON-RPC and SSE            (`a2a`)
//!   anything else              404, a JSON body
//!             │
//!             ▼
//!   factory.agent(session) ─▶ agent.reply_stream(..) ─▶ events ─▶ the protocol's events
//! ```
//!
//! [`a2a`] also goes the other way: a remote A2A agent as a
//! [`Participant`](towerscope_team::Participant) (a `MsgHub`, a pipeline) or as a tool of our
//! agent. The crate is an adapter around the agent: it depends on `towerscope-core`, `-agent`
//! and `-team`; none of them knows it.
//!
//! Every failure is an HTTP status with a JSON body `{"error": {"code", "message"}}`
//! ([`ServeError`]); a panic in a handler is a 500 with that body, never a stack trace.
//!
//! # Example
//!
//! ```no_run
//! use towerscope_agent::Agent;
//! use towerscope_agent::session::JsonFileStore;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! # #[tokio::main]
//! # async fn main() -> std::io::Result<()> {
//! let store = JsonFileStore::new("sessions");
//! let model = ScriptedModel::cycle("scripted", [ScriptedResponse::text("Hello!")]);
//! let router = towerscope_serve::router(move |session: &str| {
//!     Agent::builder("assistant").model(model.clone()).session(store.clone(), "web", session).build()
//! });
//! towerscope_serve::run("127.0.0.1:3000", router).await
//! # }
//! ```

// Modules import only modules below them. Top to bottom: router > agui, a2a > auth, run >
// trace_context, error, info, factory.
pub mod a2a;
pub mod agui;
mod auth;
mod busy;
mod content_type;
mod error;
mod factory;
mod info;
mod router;
mod run;
pub mod trace_context;

/// The axum this crate builds on, for mounting its router in your app with matching types.
pub use axum;
pub use error::ServeError;
pub use factory::AgentFactory;
pub use info::AgentInfo;
pub use router::{DEFAULT_BODY_LIMIT, DEFAULT_KEEP_ALIVE, RouterBuilder, router};
pub use run::{HEADER_TIMEOUT, SHUTDOWN_GRACE, Server, run, run_until};
