//! Who does the work of a goal: one agent, or a team whose leader plans and assigns to its
//! members.

use towerscope_agent::Agent;
use towerscope_core::{AgentError, EventStream, Id, Msg, ReplyInput, StructuredSchema};

use crate::Participant;
use crate::pipeline::TeamPipeline;

#[derive(Clone)]
pub(super) enum Executor {
    Agent(Agent),
    Team(TeamPipeline),
}

impl Executor {
    /// The agent whose reply carries the report: the executor, or the team's leader.
    pub(super) fn agent(&self) -> &Agent {
        match self {
            Self::Agent(agent) => agent,
            Self::Team(team) => team.leader(),
        }
    }

    pub(super) fn reply_stream_structured(&self, input: ReplyInput, schema: StructuredSchema) -> EventStream {
        match self {
            Self::Agent(agent) => Box::pin(agent.reply_stream_structured(input, schema)),
            Self::Team(team) => team.reply_stream_structured(input, schema),
        }
    }

    /// A resume (an interrupt) passed through as it is.
    pub(super) fn reply_stream(&self, input: ReplyInput) -> EventStream {
        match self {
            Self::Agent(agent) => Participant::reply_stream(agent, input),
            Self::Team(team) => team.reply_stream(input),
        }
    }

    /// Gives a parked reply's waiting message the id a resume names: an agent's is its parked
    /// reply's (see `named_by_its_reply`); a team names its own (the leader's, or the member's
    /// whose question waits).
    pub(super) fn name_parked(&self, msg: &mut Msg) {
        if let Self::Agent(agent) = self {
            crate::participant::named_by_its_reply(agent, msg);
        }
    }

    /// Whether a resuming input naming `reply` is for the executor: the agent's reply (or the
    /// team leader's), or a question of one of the team's members.
    pub(super) fn waits_on(&self, reply: &Id) -> bool {
        self.agent().state().reply_context.reply_id == *reply
            || matches!(self, Self::Team(team) if team.waits_on(reply))
    }

    /// Whether a question of one of the team's members waits on `reply` (never, for an agent).
    pub(super) fn member_waits_on(&self, reply: &Id) -> bool {
        matches!(self, Self::Team(team) if team.waits_on(reply))
    }

    /// The reply the executor is parked in for the user: the agent's, or, a team, its
    /// leader's or a member's.
    pub(super) fn parked_reply(&self) -> Option<Id> {
        match self {
            Self::Agent(agent) => crate::pipeline::parked_for_the_user(agent),
            Self::Team(team) => team.parked_reply(),
        }
    }

    pub(super) fn observe(&self, msgs: Vec<Msg>) -> Result<(), AgentError> {
        match self {
            Self::Agent(agent) => Participant::observe(agent, msgs),
            Self::Team(team) => team.observe(msgs),
        }
    }

    pub(super) fn interrupt(&self) -> bool {
        match self {
            Self::Agent(agent) => Participant::interrupt(agent),
            Self::Team(team) => team.interrupt(),
        }
    }
}
