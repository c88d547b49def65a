//! Durable towerscope agents on [Restate](https://restate.dev): a reply that survives its
//! process, resumes in another, and runs no tool twice.
//!
//! A [`DurableAgent`] is served as a Restate virtual object `Agent` keyed by session id. Each
//! `reply` invocation runs one reply; Restate queues the invocations of one key (one reply at a
//! time per session), and runs keys in parallel. The agent's [`AgentState`](towerscope_agent::AgentState)
//! lives in the object's state.
//!
//! Durability is two layers, installed outermost by [`DurableContext::agent_builder`]:
//!
//! ```text
//! on_model_call ─ JournalModelLayer ─ (retry, fallback, ...) ─ model     one step per call
//! on_acting     ─ JournalToolLayer  ─ (...)                  ─ toolkit   one step per call
//! ```
//!
//! Each step is a Restate `ctx.run`: the first run does the work and journals its result (the
//! model's complete response, the tool's final response); a replay after a crash reads the
//! journal and calls no model and runs no tool. Ids and timestamps inside a reply come from the
//! journal ([`replay`]), so a replay rebuilds the same messages and events. A journal written
//! by a different agent (a tool removed, a schema changed) ends the reply with
//! [`DurableError::JournalMismatch`]: nothing is replayed wrongly. Prompts and message
//! content are not compared: a changed system prompt replays the answers recorded for the old
//! one (see the error's docs).
//!
//! Retries divide the work: a `RetryLayer`/`FallbackLayer` inside the step retries attempts
//! within one step (journaled once, when one succeeds); a step whose work still fails with a
//! retryable error is retried by Restate ([`DurableAgent::step_retry_policy`]); a
//! non-retryable error, or retries run out, is journaled as the step's failure and the agent
//! sees it (a model error ends the reply with an error message, a tool's becomes its error
//! result). A process that dies mid-step re-runs that step.
//!
//! Steps of one reply are journaled one after another (concurrency-safe tools too), so the
//! journal's order is the same on every attempt.
//!
//! A reply that asks for confirmation or external execution parks on a Restate awakeable
//! ([`hitl`]); while it waits, later replies of its session wait in Restate's queue. Events go to an [`EventSink`] as they happen, numbered per invocation; a
//! resumed invocation sends them again, equal, with the same numbers.
//!
//! Callers reach it through Restate's ingress (`POST /Agent/{session}/reply`, see [`handler`]),
//! from another Restate handler with [`AgentObjectClient`] (`ctx.object_client`), or from Rust
//! outside Restate with [`AgentObjectIngressClient`] over a `restate_sdk::ingress` executor.
//!
//! # Example
//!
//! ```
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//! use towerscope_restate::DurableAgent;
//!
//! let durable = DurableAgent::new(|ctx| {
//!     ctx.agent_builder("assistant")
//!         .model(ScriptedModel::new("m", [ScriptedResponse::text("hi")]))
//!         .build()
//! });
//! let _endpoint = durable.endpoint(); // serve with HttpServer, or DurableAgent::serve
//! ```

// Modules import only modules below them. Top to bottom: object > handler > agent >
// acting, model_call > step_future > step, hitl > error; replay stands alone.
pub mod acting;
mod agent;
mod error;
pub mod handler;
pub mod hitl;
pub mod model_call;
// The SDK's macro generates the clients' handler methods without docs.
#[allow(missing_docs)]
mod object;
pub mod replay;
pub mod step;
pub mod step_future;

pub use acting::JournalToolLayer;
pub use agent::{AgentFactory, DurableAgent, DurableContext, EventSink};
pub use error::{DurableError, StepKind};
pub use handler::{DurableReply, ReplyBody};
pub use model_call::JournalModelLayer;
pub use object::{AgentObject, AgentObjectClient, AgentObjectIngressClient};
