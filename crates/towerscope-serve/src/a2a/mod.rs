//! A2A: serve an agent to other agents, and use agents served elsewhere.
//!
//! The Agent2Agent protocol v1.0 over its JSON-RPC binding, as the official `a2a-sdk` 1.3
//! client speaks it by default:
//!
//! | route | what |
//! | --- | --- |
//! | `GET /.well-known/agent-card.json` | the [`AgentCard`](wire::AgentCard): name, skills, the endpoint's URL, `streaming: true` |
//! | `POST /a2a` | JSON-RPC 2.0: `SendMessage`, `SendStreamingMessage` and `SubscribeToTask` (answered with Server-Sent Events), `GetTask`, `CancelTask` |
//!
//! The same endpoint answers protocol 0.3's method names (`message/send`, `message/stream`,
//! `tasks/get`, `tasks/cancel`, `tasks/resubscribe`) in 0.3's shapes, and the card carries
//! 0.3's `url`, `preferredTransport` and `protocolVersion`, for clients that still speak it.
//!
//! A context id is a session: the [`AgentFactory`] builds the agent serving it the first time
//! the context is seen, and it keeps the conversation (in memory, and in the factory's session
//! store). Each message starts a task, one reply of the agent:
//!
//! ```text
//! SendMessage{message}  ─▶ task SUBMITTED ─▶ WORKING ──▶ COMPLETED (artifact: the answer)
//!                                              │    └──▶ FAILED | CANCELED (CancelTask interrupts)
//!                                              └──▶ INPUT_REQUIRED (a tool call waits for confirmation)
//! SendMessage{message, taskId (or the same contextId)} ─▶ WORKING ─▶ ...   (the answer resumes it)
//! ```
//!
//! `SendMessage` answers when the task stops (completed, failed, canceled, or waiting for
//! input), or at once with `configuration.returnImmediately`. `SendStreamingMessage` sends the
//! task, then status and artifact updates (the answer as it streams) until it stops; the task
//! goes on if the client disconnects (`GetTask` finds it, `SubscribeToTask` follows it again;
//! on a task that ended, `SubscribeToTask` is UnsupportedOperationError). An input-required
//! task is answered by a message with its `taskId` (`yes` or `{"approved": true}` approves,
//! anything else denies), or by one on its context that says yes or no; another message on the
//! context is refused while the task waits.
//!
//! A message's parts reach the agent in order: text parts as text, data parts as their JSON,
//! file parts (`raw` base64 bytes or a `url`, with `mediaType` and `filename`): images, PDF,
//! WAV and MP3 as data blocks the model reads, text files as text; a file of another type is
//! refused, as no provider takes it. The data blocks of the answer come back as file parts of
//! its artifact.
//!
//! Every failure is a JSON-RPC error object ([`RpcError`]) with the protocol's code, answered
//! with HTTP 200 as the SDK's own server does, except a body over
//! [`Limits::max_body_bytes`] (HTTP 413). Error messages never carry an agent's or a
//! provider's error text.
//!
//! The other direction: [`A2aClient`] speaks the same protocol to any A2A agent;
//! [`RemoteAgent`] makes one a [`Participant`](towerscope_team::Participant) (in a `MsgHub`, a
//! pipeline) and [`RemoteAgentTool`] a tool of our agent.
//!
//! # Example
//!
//! Serve an agent on loopback and talk to it with the client:
//!
//! ```
//! use std::sync::Arc;
//! use towerscope_agent::Agent;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//! use towerscope_serve::a2a::{self, A2aClient, wire::TaskState};
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let factory = |_context: &str| {
//!     Agent::builder("echo").model(ScriptedModel::new("m", [ScriptedResponse::text("Hello from Rust.")])).build()
//! };
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let base = format!("http://{}", listener.local_addr()?);
//! let app = a2a::A2aConfig::new("echo").description("Says hello.").routes(Arc::new(factory));
//! tokio::spawn(async move { axum::serve(listener, app).await });
//!
//! let client = A2aClient::connect(&base).await?;
//! assert_eq!(client.card().name, "echo");
//! let answer = client.send_text("Hi", None, None).await?;
//! assert_eq!(answer.task().map(|t| t.status.state), Some(TaskState::Completed));
//! assert_eq!(answer.answer_text(), "Hello from Rust.");
//! # Ok(()) }
//! ```

mod answer;
mod client;
mod config;
mod error;
mod legacy;
mod methods;
mod remote;
mod routes;
mod rpc;
mod run;
mod tasks;
mod tool;
pub mod wire;

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};

pub use client::{A2aClient, CLIENT_CONNECT_TIMEOUT, CLIENT_READ_TIMEOUT, ClientError, UpdateStream};
pub use config::{A2aConfig, CARD_PATH, RPC_PATH};
pub use error::RpcError;
pub use remote::RemoteAgent;
pub use tasks::Limits;
pub use tool::RemoteAgentTool;

use crate::AgentFactory;

/// The A2A routes for the agents `factory` builds, with a default card (named after the
/// crate's default; use [`A2aConfig::routes`] to name the agent and list its skills).
pub fn routes(factory: Arc<dyn AgentFactory>) -> Router {
    A2aConfig::default().routes(factory)
}

impl A2aConfig {
    /// The A2A routes (card and JSON-RPC endpoint) for the agents `factory` builds, described
    /// by this config. Merge them into an app, or nest them under a prefix (then set
    /// [`url`](Self::url)).
    pub fn routes(self, factory: Arc<dyn AgentFactory>) -> Router {
        self.routes_sharing(factory, crate::busy::Busy::default())
    }

    /// [`routes`](Self::routes), seeing the replies `busy` says are running (the router's AG-UI
    /// endpoint's, on the same sessions).
    pub(crate) fn routes_sharing(self, factory: Arc<dyn AgentFactory>, busy: crate::busy::Busy) -> Router {
        let mut tasks = tasks::Tasks::new(factory, self.limits);
        tasks.keep_alive = self.keep_alive;
        tasks.busy = busy;
        let shared = routes::Shared {
            tasks: Arc::new(tasks),
            config: Arc::new(self),
        };
        Router::new()
            .route(CARD_PATH, get(routes::card))
            .route(RPC_PATH, post(routes::rpc))
            .with_state(shared)
    }
}
