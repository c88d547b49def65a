//! [`TeamPipeline`]: a leader assigns tasks to members through an external tool (the
//! reference's 2.x team pipeline).

mod run;

use std::fmt;
use std::sync::Arc;

use futures_util::StreamExt;
use towerscope_agent::{Agent, AgentBuilder};
use towerscope_core::{AgentError, EventStream, Msg, ReplyInput, ReplyItem, StructuredSchema};

use self::run::{Parked, TeamRun};
use super::assign::AssignTool;
use super::merge::{MergedStream, Tagged};
use super::{Runs, Waiting};
use crate::Participant;

/// A member of a team: a participant, and what the leader reads to decide when to give it a
/// task.
#[derive(Clone)]
pub struct TeamMember {
    pub(super) participant: Arc<dyn Participant>,
    pub(super) description: String,
}

impl TeamMember {
    /// `participant`, described to the leader as `description` (what it is good at, what it
    /// returns).
    pub fn new(participant: impl Participant, description: impl Into<String>) -> Self {
        Self::shared(Arc::new(participant), description)
    }

    /// A shared participant.
    pub fn shared(participant: Arc<dyn Participant>, description: impl Into<String>) -> Self {
        Self {
            participant,
            description: description.into(),
        }
    }
}

impl fmt::Debug for TeamMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TeamMember")
            .field("name", &self.participant.name())
            .field("description", &self.description)
            .finish()
    }
}

/// A leader agent that gives tasks to members by calling the external tool
/// [`TeamAssign`](super::ASSIGN_TOOL) `{"member": .., "prompt": ..}`.
///
/// The leader's reply parks on its assignments (`REQUIRE_EXTERNAL_EXECUTION`, which the
/// pipeline keeps to itself); the pipeline runs each assigned member on its prompt, in the
/// member's own context (it sees only the prompt), concurrently across members and one after
/// another for one member; each member's final reply comes back to the leader as the result
/// of its call (`success`, or `interrupted`/`error` as the reply ended), in the order the
/// leader called, and the leader goes on. Members never hear each other.
///
/// The stream carries the leader's and the members' events; [`stream`](Self::stream) tags
/// them with the speaker. [`interrupt`](Participant::interrupt) stops the whole team: the
/// running members are interrupted, tasks not started yet never start, and the leader's reply
/// ends interrupted (its open assignments get interrupted results) without another model call.
///
/// A member that parks for the user (a confirmation, a tool run outside) parks the team: the
/// members still working finish, the member's `REQUIRE_*` event is in the stream, and the
/// stream ends with its waiting message (whose id is the member's parked reply, as
/// [`parked_reply`](Participant::parked_reply) says). The member's later tasks wait with it.
/// The resuming input, addressed to the member's reply, goes to the member, and once every
/// assignment has its result the leader goes on; with several members parked, each answer
/// resumes its member and the team waits on the next. A pipeline member that fails with a
/// question of its own waiting ends the call with its error, and the question still waits. A
/// leader that asks the user in the turn it assigns is answered first (its question alone ends
/// the stream); its members start once its reply waits on nothing but them. While a member
/// waits, a new message is
/// refused with [`AgentError::State`] (as a parked agent refuses one) and loses nothing; a
/// `UserInterruptEvent` naming the member's reply or the leader's closes the whole reply: the
/// waiting members' calls and the leader's assignments get interrupted results, without
/// another model call (one naming the leader's reply while another run answers a member is
/// refused: interrupt the team itself to stop that run). Otherwise a resume is the leader's: one naming a reply nobody in the
/// team waits on is refused, and the leader's question still waits.
///
/// Dropping the stream while members work stops them and leaves the leader parked on its
/// assignments (as does loading a state saved then); the team's next run, unless it resumes
/// that reply itself or another run's stream is still held, first closes it as interrupted,
/// without a model call and without its items in the new run's stream. A stream dropped after
/// a member asked keeps its question waiting: the members cut off get interrupted results, and
/// the answer goes on from there. A question whose leader reply was ended or replaced directly
/// (through [`leader`](Self::leader)) no longer holds the team. What a parked team waits with is
/// kept in memory: a team
/// built anew (another process) closes its leader's assignments on its next run, and a member
/// left parked refuses new tasks until it is resumed or interrupted directly.
///
/// Differences from the reference: members keep their context across the leader's replies
/// (the reference clears it by default), and a member's question reaches the team's caller
/// (the reference's team has no such path).
///
/// # Example
///
/// ```
/// use towerscope_agent::Agent;
/// use towerscope_core::Msg;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
/// use towerscope_team::pipeline::{TeamMember, TeamPipeline};
/// use towerscope_team::Participant;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), towerscope_core::AgentError> {
/// let leader_model = ScriptedModel::new("m", [
///     ScriptedResponse::tool_call("a1", "TeamAssign", r#"{"member": "poet", "prompt": "A haiku on rain."}"#),
///     ScriptedResponse::text("Here is the poet's haiku."),
/// ]);
/// let poet = Agent::builder("poet")
///     .model(ScriptedModel::new("m", [ScriptedResponse::text("Soft rain on the roof")]))
///     .build()?;
/// let team = TeamPipeline::new(
///     Agent::builder("lead").model(leader_model.clone()),
///     [TeamMember::new(poet, "Writes short poems.")],
/// )?;
/// let answer = team.reply(Msg::user("user", "I want a haiku.").into()).await?;
/// assert_eq!(answer.text_content().as_deref(), Some("Here is the poet's haiku."));
/// // The poet's reply came back to the leader as the result of its call.
/// let result = leader_model.requests()[1].messages.last().cloned().unwrap();
/// assert_eq!(result.tool_results().next().and_then(|r| r.output.text_content()).as_deref(), Some("Soft rain on the roof"));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct TeamPipeline {
    leader: Agent,
    members: Arc<[TeamMember]>,
    runs: Arc<Runs>,
    /// What a run that parked on its members' questions left, until they are answered.
    waiting: Waiting<Parked>,
}

impl TeamPipeline {
    /// Builds the leader with the assignment tool, for these members. Fails when two members
    /// share a name, or one has the leader's.
    pub fn new(leader: AgentBuilder, members: impl IntoIterator<Item = TeamMember>) -> Result<Self, AgentError> {
        let members: Arc<[TeamMember]> = members.into_iter().collect();
        let names: Vec<&str> = members.iter().map(|m| m.participant.name()).collect();
        for (i, name) in names.iter().enumerate() {
            if names[..i].contains(name) {
                return Err(AgentError::validation(format!(
                    "two team members are named '{name}'; the leader assigns tasks by name, so names must be distinct"
                )));
            }
        }
        let leader = leader.tool(AssignTool::new(&members)).build()?;
        if names.contains(&leader.name()) {
            return Err(AgentError::validation(format!(
                "a team member has the leader's name '{}'; give it another",
                leader.name()
            )));
        }
        Ok(Self {
            leader,
            members,
            runs: Arc::default(),
            waiting: Waiting::default(),
        })
    }

    /// The leader.
    pub fn leader(&self) -> &Agent {
        &self.leader
    }

    /// The members' names.
    pub fn members(&self) -> Vec<String> {
        self.members.iter().map(|m| m.participant.name().to_owned()).collect()
    }

    /// What `read` reads of the members' record, unless it is stale (its leader reply is no
    /// longer the one the leader waits on for its members: `run` drops such a record).
    fn record<R>(&self, read: impl FnOnce(&Parked) -> R) -> Option<R> {
        // The record first: with none (most calls), the leader's state is not read.
        self.waiting.get(|_| ())?;
        let leader_reply = super::parked_for_the_team(&self.leader)?;
        self.waiting
            .get(|p| (p.leader_reply() == &leader_reply).then(|| read(p)))
            .flatten()
    }

    /// Runs the team and streams the leader's and the members' items, tagged with the speaker
    /// (members' final messages included; a run that parks on its members ends with the first
    /// one's waiting message, the others' questions being in their events).
    pub fn stream(&self, input: ReplyInput) -> MergedStream {
        Box::pin(self.run(input, None).map(|(tagged, _)| tagged))
    }

    /// Runs the team as [`reply_stream`](Participant::reply_stream) does, with the leader's
    /// reply bound to produce structured output of `schema` (the final message carries it), as
    /// [`Agent::reply_stream_structured`] does; a resuming input keeps the parked reply's
    /// schema.
    pub fn reply_stream_structured(&self, input: ReplyInput, schema: StructuredSchema) -> EventStream {
        own_items(self.run(input, Some(schema)))
    }

    fn run(
        &self,
        input: ReplyInput,
        schema: Option<StructuredSchema>,
    ) -> impl futures_core::Stream<Item = (Tagged, bool)> + Send + 'static {
        // Registered first: a run that takes the members' record out, or finds none, is seen by
        // every run starting after it.
        let (stop, alone) = self.runs.start_alone();
        // A record whose leader reply is no longer parked on the members (the leader was
        // answered or reloaded directly) is stale: the team is free, and the member is left as
        // it is, as a member parked outside the team.
        let stale = self
            .waiting
            .take_if(|p| super::parked_for_the_team(&self.leader).as_ref() != Some(p.leader_reply()));
        if stale.is_some() {
            tracing::warn!(team = %self.leader.name(), "the leader's reply a member's question waited for is over; the question is dropped");
        }
        let named = input.resumed_reply().cloned();
        // A member's question: the member gets the answer, and the run goes on from where it
        // parked. An interrupt closes the whole reply (the member's and the leader's), as the
        // team's `interrupt` does; one naming the leader's reply closes the waiting members too.
        if let Some(named) = &named {
            let interrupt = matches!(input, ReplyInput::Interrupt(_));
            let mut at = None;
            let record = self.waiting.take_if(|parked| {
                at = parked.position(named, &self.members);
                at.is_some() || (interrupt && parked.leader_reply() == named)
            });
            if let Some(record) = record {
                if interrupt {
                    stop.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                let (leader, members, waiting) = (self.leader.clone(), Arc::clone(&self.members), self.waiting.clone());
                let run = TeamRun::resumed(leader, members, (record, at), input, stop, waiting);
                return futures_util::stream::unfold(run, TeamRun::next);
            }
        }
        let refused = match (&named, self.waiting.get(|p| p.first_waiting().cloned()).flatten()) {
            // Members wait for the user: the leader's reply waits on them.
            (_, Some(waiting)) => Some(format!(
                "team '{}' is waiting on its member '{}' (reply {}); answer or interrupt that first",
                self.leader.name(),
                waiting.name,
                waiting.id
            )),
            // The leader's reply while another run carries out its assignments (members are
            // answering a question): closing it there would leave that run's results nowhere.
            (Some(named), None) if super::parked_for_the_team(&self.leader).as_ref() == Some(named) && !alone => {
                Some(format!(
                    "team '{}' is carrying out its leader's assignments of reply {named} in another run; interrupt the \
                     team to stop it",
                    self.leader.name()
                ))
            }
            // Otherwise a resume is the leader's: one naming another reply would answer or close
            // the leader's parked reply.
            (Some(named), None) => self
                .leader
                .waiting_calls()
                .filter(|parked| *named != parked.reply_id)
                .map(|parked| {
                    format!(
                        "team '{}' is waiting on its leader's reply {}, not on reply {named}",
                        self.leader.name(),
                        parked.reply_id
                    )
                }),
            (None, None) => None,
        };
        if let Some(refused) = refused {
            let failed: EventStream = Box::pin(futures_util::stream::iter([Err(AgentError::State(refused))]));
            let (leader, members) = (self.leader.clone(), Arc::clone(&self.members));
            let run = TeamRun::new(leader, members, failed, stop, self.waiting.clone());
            return futures_util::stream::unfold(run, TeamRun::next);
        }
        // A leader parked on its assignments with no other run in progress was left so by a
        // dropped run (or restored so from a saved state): nothing will carry them out.
        let orphan = (alone && !input.is_resume())
            .then(|| super::parked_for_the_team(&self.leader))
            .flatten();
        let leader = self.leader.clone();
        let start = move || -> EventStream {
            match schema {
                Some(schema) => Box::pin(leader.reply_stream_structured(input, schema)),
                None => Box::pin(leader.reply_stream(input)),
            }
        };
        let (leader, members) = (self.leader.clone(), Arc::clone(&self.members));
        let run = match orphan {
            Some(orphan) => {
                TeamRun::closing_first(leader, members, orphan, Box::new(start), stop, self.waiting.clone())
            }
            None => {
                let stream = start();
                // An interrupt of the team since it registered the run reaches the new reply.
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    self.leader.interrupt();
                }
                TeamRun::new(leader, members, stream, stop, self.waiting.clone())
            }
        };
        futures_util::stream::unfold(run, TeamRun::next)
    }
}

/// The leader's and the members' events, and only the leader's final message.
fn own_items(run: impl futures_core::Stream<Item = (Tagged, bool)> + Send + 'static) -> EventStream {
    Box::pin(run.filter_map(|(tagged, own)| {
        std::future::ready(match tagged.item {
            Ok(ReplyItem::Final(_)) if !own => None,
            item => Some(item),
        })
    }))
}

impl Participant for TeamPipeline {
    fn name(&self) -> &str {
        self.leader.name()
    }

    fn reply_stream(&self, input: ReplyInput) -> EventStream {
        own_items(self.run(input, None))
    }

    /// The leader observes (members only ever see their tasks).
    fn observe(&self, msgs: Vec<Msg>) -> Result<(), AgentError> {
        self.leader.observe_when_free(msgs).map(|_| ())
    }

    /// Stops the runs in progress (no task starts and the leader is not called again; see
    /// [`TeamPipeline`]), then interrupts every member that is replying, and the leader. A
    /// member's question that waits with no run in progress is left waiting (as an agent's
    /// parked reply is): a `UserInterruptEvent` naming it, or the leader's reply, closes it.
    fn interrupt(&self) -> bool {
        let runs = self.runs.stop();
        // Every member, not only up to the first running one.
        let members = self.members.iter().filter(|m| m.participant.interrupt()).count();
        let leader = self.leader.interrupt();
        runs || members > 0 || leader
    }

    /// The leader's parked reply, when it waits for the user or an outside executor, else the
    /// reply of the member parked in the leader's first assignment still waiting (a leader
    /// waiting on its `TeamAssign` calls waits for the team's own members).
    fn parked_reply(&self) -> Option<towerscope_core::Id> {
        super::parked_for_the_user(&self.leader)
            .or_else(|| self.record(|p| p.first_waiting().map(|w| w.id.clone())).flatten())
    }

    /// The leader's parked reply, or any member's question the team waits on, or, while one
    /// does, the leader's reply (an interrupt naming it closes the whole reply).
    fn waits_on(&self, reply: &towerscope_core::Id) -> bool {
        super::parked_for_the_user(&self.leader).as_ref() == Some(reply)
            || self.record(|p| p.waits_on(reply, &self.members) || p.leader_reply() == reply) == Some(true)
    }
}

impl fmt::Debug for TeamPipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TeamPipeline")
            .field("leader", &self.leader.name())
            .field("members", &self.members())
            .finish()
    }
}
