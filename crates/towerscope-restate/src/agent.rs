//! [`DurableAgent`]: how a durable agent is built for each reply, and what its endpoint serves.
//!
//! # Example
//!
//! ```no_run
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//! use towerscope_restate::DurableAgent;
//!
//! # #[tokio::main]
//! # async fn main() -> std::io::Result<()> {
//! let durable = DurableAgent::new(|ctx| {
//!     ctx.agent_builder("assistant")
//!         .model(ScriptedModel::new("m", [ScriptedResponse::text("hi")]))
//!         .build()
//! });
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:9080").await?;
//! durable.serve(listener).await;
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use restate_sdk::prelude::{Endpoint, HttpServer, RunRetryPolicy};
use towerscope_agent::clock::Clock;
use towerscope_agent::{Agent, AgentBuilder, HintConfig};
use towerscope_core::{AgentError, AgentEvent, Timestamp};

use crate::acting::JournalToolLayer;
use crate::model_call::JournalModelLayer;
use crate::replay;
use crate::step::Steps;

/// Builds the agent of one durable reply.
pub type AgentFactory = dyn Fn(&DurableContext) -> Result<Agent, AgentError> + Send + Sync;

/// Receives a durable reply's events as they happen (see [`DurableAgent::event_sink`]).
pub trait EventSink: Send + Sync + 'static {
    /// The `seq`th event (from 0) of the invocation `invocation` on the session `session`.
    ///
    /// An invocation that resumes after a crash runs again from its start and sends its events
    /// again, equal to the first attempt's (same ids, same timestamps, same `seq`): a reader
    /// keeps the first event of each `(invocation, seq)`.
    fn event(&self, session: &str, invocation: &str, seq: u64, event: &AgentEvent);
}

impl<F> EventSink for F
where
    F: Fn(&str, &str, u64, &AgentEvent) + Send + Sync + 'static,
{
    fn event(&self, session: &str, invocation: &str, seq: u64, event: &AgentEvent) {
        self(session, invocation, seq, event)
    }
}

/// What a factory gets to build the agent of one reply.
#[derive(Debug)]
pub struct DurableContext {
    pub(crate) session: String,
    pub(crate) steps: Steps,
    pub(crate) start: Timestamp,
}

impl DurableContext {
    /// The session (the virtual object's key).
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The channel the journal layers hand their steps to.
    pub fn steps(&self) -> Steps {
        self.steps.clone()
    }

    /// The reply's start time, read from the journal (the same on every attempt).
    pub fn start(&self) -> Timestamp {
        self.start
    }

    /// A clock standing at the reply's start time, for the runtime-state hints (the system
    /// clock would write another time into a replayed prompt).
    pub fn clock(&self) -> Clock {
        let micros = u64::try_from(self.start.as_micros()).unwrap_or(0);
        Clock::fixed(UNIX_EPOCH + Duration::from_micros(micros))
    }

    /// `Agent::builder(name)` with the journal layers installed first (outermost) on
    /// `on_model_call` and `on_acting`, and hints that read [`clock`](Self::clock). Layers
    /// added after run inside the steps: a replay skips them. Replacing the hints, give them
    /// this clock.
    pub fn agent_builder(&self, name: impl Into<String>) -> AgentBuilder {
        Agent::builder(name)
            .on_model_call(JournalModelLayer::new(self.steps()))
            .on_acting(JournalToolLayer::new(self.steps()))
            .hints(HintConfig::new().clock(self.clock()))
    }
}

/// An agent served as a Restate virtual object (see the [crate docs](crate)).
#[derive(Clone)]
pub struct DurableAgent {
    pub(crate) factory: Arc<AgentFactory>,
    pub(crate) step_retry: RunRetryPolicy,
    pub(crate) events: Option<Arc<dyn EventSink>>,
    pub(crate) max_parks: u32,
}

impl fmt::Debug for DurableAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurableAgent")
            .field("step_retry", &self.step_retry)
            .field("events", &self.events.is_some())
            .field("max_parks", &self.max_parks)
            .finish_non_exhaustive()
    }
}

impl DurableAgent {
    /// A durable agent whose replies run on agents built by `factory` (once per reply
    /// attempt). Build it from [`DurableContext::agent_builder`] so its steps are journaled.
    pub fn new<F>(factory: F) -> Self
    where
        F: Fn(&DurableContext) -> Result<Agent, AgentError> + Send + Sync + 'static,
    {
        replay::install();
        Self {
            factory: Arc::new(factory),
            step_retry: RunRetryPolicy::default()
                .initial_delay(Duration::from_millis(200))
                .exponentiation_factor(2.0)
                .max_delay(Duration::from_secs(10))
                .max_attempts(5),
            events: None,
            max_parks: 64,
        }
    }

    /// How Restate retries a failed step (a step whose work failed with a retryable error,
    /// after any `RetryLayer` inside it gave up). Default: 5 attempts, 200 ms doubling to 10 s;
    /// then the step fails for good and the agent sees the error.
    pub fn step_retry_policy(mut self, policy: RunRetryPolicy) -> Self {
        self.step_retry = policy;
        self
    }

    /// Sends every event of every reply to `sink` as it happens (in this process).
    pub fn event_sink(mut self, sink: impl EventSink) -> Self {
        self.events = Some(Arc::new(sink));
        self
    }

    /// How many times one reply may park for confirmation or external execution (default 64);
    /// an answer the agent refuses (a result for a call the reply does not wait on) parks it
    /// again, and counts. Also how many malformed answers (not JSON, not an answer to the
    /// request) one park takes: the last of them gives up. A reply that parks once more than
    /// this, or gives up, is closed as interrupted (its waiting calls get interrupted results,
    /// and the session takes new messages), and the handler fails with
    /// [`DurableError::TooManyParks`](crate::DurableError::TooManyParks).
    pub fn max_parks(mut self, n: u32) -> Self {
        self.max_parks = n;
        self
    }

    /// A Restate endpoint serving the object `Agent`.
    pub fn endpoint(self) -> Endpoint {
        Endpoint::builder().bind(crate::object::AgentObject::new(self)).build()
    }

    /// Serves the endpoint on `listener` (HTTP/2 cleartext, as the Restate server calls it)
    /// until the process ends.
    pub async fn serve(self, listener: tokio::net::TcpListener) {
        HttpServer::new(self.endpoint()).serve(listener).await;
    }
}

/// The system time, for what runs inside a journaled step.
pub(crate) fn system_now() -> Timestamp {
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros();
    Timestamp::from_micros(i64::try_from(micros).unwrap_or(i64::MAX))
}
