//! The virtual object `Agent`: one per session key, one reply at a time per key (Restate's
//! per-key queue), its state the agent's [`AgentState`].
//!
//! Handlers (through the ingress: `POST /Agent/{session}/{handler}`):
//!
//! - `reply` (exclusive): takes `{"text": "..."}` or `{"messages": [...]}`, answers a
//!   [`DurableReply`];
//! - `pending` (shared, runs beside a parked reply): the [`PendingInput`] a parked reply waits
//!   on, or `null`;
//! - `state` (shared): the stored [`AgentState`] (the conversation), or `null`.

use restate_sdk::prelude::*;
use towerscope_agent::AgentState;

use crate::agent::DurableAgent;
#[cfg(doc)]
use crate::handler::ReplyBody;
use crate::handler::{self, DurableReply, PENDING_KEY, STATE_KEY};
use crate::hitl::{PendingInput, shape_of};

/// The Restate virtual object serving a [`DurableAgent`].
#[derive(Debug)]
pub struct AgentObject(DurableAgent);

impl AgentObject {
    /// The object of `agent`.
    pub fn new(agent: DurableAgent) -> Self {
        Self(agent)
    }
}

#[restate_sdk::object(name = "Agent")]
impl AgentObject {
    /// One durable reply. The body (a [`ReplyBody`]) is read as JSON here and decoded inside
    /// the reply's replay scope: a message without an id or a time gets them from the journal's
    /// seed, the same at each attempt, not fresh ones that would differ from the journal.
    #[handler]
    async fn reply(
        &self,
        ctx: ObjectContext<'_>,
        body: Json<serde_json::Value>,
    ) -> Result<Json<DurableReply>, HandlerError> {
        match handler::reply(&self.0, &ctx, body.into_inner()).await {
            Ok(reply) => Ok(Json(reply)),
            Err(err) => Err(TerminalError::from(err).into()),
        }
    }

    /// What a parked reply of this session waits on.
    #[handler]
    async fn pending(&self, ctx: SharedObjectContext<'_>) -> Result<Json<Option<PendingInput>>, HandlerError> {
        // Bytes, parsed here: a record this version cannot read is a terminal error, where
        // Restate's own decoding would retry the call for good.
        let pending = ctx.get::<Vec<u8>>(PENDING_KEY).await?;
        let pending = pending
            .map(|bytes| serde_json::from_slice::<PendingInput>(&bytes))
            .transpose()
            .map_err(|e| TerminalError::new(format!("the pending request cannot be read: {}", shape_of(&e))))?;
        Ok(Json(pending))
    }

    /// The session's stored agent state.
    #[handler]
    async fn state(&self, ctx: SharedObjectContext<'_>) -> Result<Json<Option<AgentState>>, HandlerError> {
        let state = handler::read_state(ctx.get::<Vec<u8>>(STATE_KEY).await).map_err(TerminalError::from)?;
        Ok(Json(state))
    }
}
