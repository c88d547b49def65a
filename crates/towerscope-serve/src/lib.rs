//! Serve an agent over HTTP, and call agents served elsewhere.
//!
//! - [`a2a`]: the Agent2Agent protocol (v1.0, as the official `a2a-sdk` 1.3 client speaks it):
//!   an agent card at `/.well-known/agent-card.json` and a JSON-RPC endpoint with
//!   `SendMessage`, `SendStreamingMessage` (Server-Sent Events), `GetTask` and `CancelTask`;
//!   and the other direction, a remote A2A agent as a
//!   [`Participant`](towerscope_team::Participant) or as a tool of our agent.
//! - [`AgentFactory`]: how every endpoint gets the agent serving a session (an A2A context id):
//!   a closure building it, with its `SessionStore` configured through
//!   `AgentBuilder::session`.
//!
//! The crate is an adapter around the agent: it depends on `towerscope-core`, `-agent` and
//! `-team`; none of them knows it.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use towerscope_agent::Agent;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//! use towerscope_serve::{AgentFactory, a2a};
//!
//! let factory = |_session: &str| {
//!     Agent::builder("echo").model(ScriptedModel::new("m", [ScriptedResponse::text("Hi!")])).build()
//! };
//! let app: axum::Router = a2a::routes(Arc::new(factory));
//! # let _ = app;
//! ```

pub mod a2a;
mod factory;

pub use factory::AgentFactory;
