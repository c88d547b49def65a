//! Pipelines: participants composed into one participant.
//!
//! | Pipeline                | What it does                                                        | Reference |
//! |-------------------------|---------------------------------------------------------------------|-----------|
//! | [`SequentialPipeline`]  | each member answers the previous member's reply                     | 1.x `sequential_pipeline` |
//! | [`FanoutPipeline`]      | every member answers the same input concurrently; replies in order  | 1.x `fanout_pipeline` |
//! | [`merge`]               | several reply streams as one, each item tagged with its speaker     | 1.x `stream_printing_messages` |
//! | [`TeamPipeline`]        | a leader assigns tasks to members through an external tool          | 2.x `TeamPipeline` |
//! | [`GoalPipeline`]        | an executor works on a goal until a verifier passes its report      | 2.x `GoalPipeline` |
//!
//! Every pipeline is a [`Participant`]: it streams its members' events and
//! ends with one final message, observes by passing messages to its members, and interrupts
//! them. So pipelines nest (a fan-out inside a sequence) and render in a
//! [`console`](crate::console) like any agent. A pipeline has no broadcaster of its own, so it
//! joins a hub only with `auto_broadcast(false)` (its members' replies are not shared there
//! then): listening in on a hub whose agents broadcast is not possible yet. A member parked for the user parks the
//! pipeline; the resuming input, addressed to the parked reply, reaches that member. A member
//! that parks in a call after its pipeline was interrupted closes its parked reply instead, and
//! the pipeline's reply ends interrupted (a fan-out's, unless another member waits from
//! before).
//!
//! # Example
//!
//! A panel answers at once, then an editor sums up what the panel said:
//!
//! ```
//! use std::sync::Arc;
//! use towerscope_agent::Agent;
//! use towerscope_core::Msg;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//! use towerscope_team::pipeline::{FanoutPipeline, SequentialPipeline};
//! use towerscope_team::Participant;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let says = |text: &str| ScriptedModel::new("m", [ScriptedResponse::text(text)]);
//! let editor_model = says("Two votes, one each.");
//! let ann = Agent::builder("ann").model(says("Tea.")).build()?;
//! let bo = Agent::builder("bo").model(says("Coffee.")).build()?;
//! let editor = Agent::builder("editor").model(editor_model.clone()).build()?;
//!
//! let panel: Arc<dyn Participant> = Arc::new(FanoutPipeline::new([ann, bo]).named("panel"));
//! let row = SequentialPipeline::from_shared([panel, Arc::new(editor)]);
//! let summary = row.reply(Msg::user("host", "Tea or coffee?").into()).await?;
//! assert_eq!(summary.text_content().as_deref(), Some("Two votes, one each."));
//! // The newest message not the editor's own (its reply in progress holds a runtime-state hint).
//! let requests = editor_model.requests();
//! let given = requests[0].messages.iter().rev().find(|m| &*m.name != "editor");
//! let given = given.and_then(|m| m.text_content());
//! assert_eq!(given.as_deref(), Some("ann: Tea.\nbo: Coffee."));
//! # Ok(()) }
//! ```

mod assign;
mod fanout;
mod goal;
mod merge;
mod sequential;
mod team;

pub use assign::ASSIGN_TOOL;
pub use fanout::{COMBINED_REPLIES, FanoutPipeline};
pub use goal::{GOAL_VERIFICATION, GoalOutcome, GoalPipeline, Verdict};
pub use merge::{MergedStream, Tagged, merge, tag};
pub use sequential::SequentialPipeline;
pub use team::{TeamMember, TeamPipeline};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use towerscope_core::{AgentEvent, Id};

use crate::Participant;

/// Every member observes `msgs`, even after one refused them (it is not to lose a message);
/// the first refusal is the answer.
fn observe_all(
    members: &[Arc<dyn Participant>],
    msgs: &[towerscope_core::Msg],
) -> Result<(), towerscope_core::AgentError> {
    let mut first = None;
    for member in members {
        if let Err(e) = member.observe(msgs.to_vec()) {
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}

/// What a pipeline keeps of its members parked for the user (`T`: a row's parked member and
/// its reply, a fan-out's round), shared by the pipeline's clones. A resume takes the record
/// out while it runs, and puts it back if the member refused the resume.
struct Waiting<T>(Arc<Mutex<Option<T>>>);

impl<T> Default for Waiting<T> {
    fn default() -> Self {
        Self(Arc::default())
    }
}

impl<T> Clone for Waiting<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T> Waiting<T> {
    fn lock(&self) -> MutexGuard<'_, Option<T>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the record out if `resumed` says the resume is for it (for a call that resumes
    /// it); otherwise leaves it.
    fn take_if(&self, resumed: impl FnOnce(&mut T) -> bool) -> Option<T> {
        self.lock().take_if(resumed)
    }

    /// What `read` reads of the record, if there is one.
    fn get<R>(&self, read: impl FnOnce(&T) -> R) -> Option<R> {
        self.lock().as_ref().map(read)
    }

    /// Records a member that parked now, in place of any earlier record.
    fn park(&self, record: T) {
        *self.lock() = Some(record);
    }

    /// Puts back a record taken for a resume that did not go through; a record stored since
    /// (the pipeline parked again meanwhile) is newer and stays.
    fn put_back(&self, record: T) {
        self.lock().get_or_insert(record);
    }
}

/// The stop flags of a pipeline's runs in progress, which the pipeline's `interrupt` raises.
/// Interrupting the members alone would not stop a run: between two members none is replying
/// (a team's leader is parked while its members work), and a member whose reply is past its
/// last interrupt check still completes; so a run checks its flag before it starts the next
/// member's reply.
#[derive(Default)]
struct Runs(Mutex<Vec<Weak<AtomicBool>>>);

impl Runs {
    /// The stop flag of a new run (its run holds it while it is in progress).
    fn start(&self) -> Arc<AtomicBool> {
        self.start_alone().0
    }

    /// The stop flag of a new run, and whether no other run was in progress.
    fn start_alone(&self) -> (Arc<AtomicBool>, bool) {
        let stop = Arc::new(AtomicBool::new(false));
        let mut runs = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        runs.retain(|run| run.strong_count() > 0);
        let alone = runs.is_empty();
        runs.push(Arc::downgrade(&stop));
        (stop, alone)
    }

    /// Stops every run in progress; whether there was one.
    fn stop(&self) -> bool {
        let runs = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let live: Vec<Arc<AtomicBool>> = runs.iter().filter_map(Weak::upgrade).collect();
        for stop in &live {
            stop.store(true, Ordering::SeqCst);
        }
        !live.is_empty()
    }
}

/// Whether a run's stop flag (`None` once the run is over) was raised.
fn stopped(stop: Option<&Arc<AtomicBool>>) -> bool {
    stop.is_some_and(|stop| stop.load(Ordering::SeqCst))
}

/// An agent whose tool asks the user, for the tests of a member that parks.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod asking {
    use towerscope_agent::Agent;
    use towerscope_agent::toolkit::FunctionTool;
    use towerscope_core::event::{ConfirmResult, RequireUserConfirmEvent, UserConfirmResultEvent};
    use towerscope_core::{
        AgentEvent, ContentBlock, Id, Msg, PermissionDecision, ReplyFinishedReason, ReplyInput, ReplyItem,
        ToolResultState,
    };
    use towerscope_models::{ScriptedModel, ScriptedResponse};

    /// Delete a file.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Delete {
        /// The path.
        path: String,
    }

    /// An agent that asks before it deletes a file (call `c1`), then answers with `after`.
    pub(crate) fn asking(name: &str, after: ScriptedResponse) -> Agent {
        asking_builder(name, after).build().unwrap()
    }

    /// An agent that asks before every delete, on a model that answers `responses`.
    pub(crate) fn asking_with(name: &str, responses: impl IntoIterator<Item = ScriptedResponse>) -> Agent {
        builder_on(name, ScriptedModel::new("m", responses)).build().unwrap()
    }

    fn asking_builder(name: &str, after: ScriptedResponse) -> towerscope_agent::AgentBuilder {
        let call = ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/x"}"#);
        builder_on(name, ScriptedModel::new("m", [call, after]))
    }

    fn builder_on(name: &str, model: ScriptedModel) -> towerscope_agent::AgentBuilder {
        Agent::builder(name)
            .model(model)
            .tool(FunctionTool::new("delete", |a: Delete| async move { a.path }))
            .default_permission(PermissionDecision::Ask {
                suggested_rules: vec![],
            })
    }

    /// [`asking`], with an `on_reply` layer that replaces a parked reply's waiting message with
    /// a new one (a new id too).
    pub(crate) fn renaming_asker(name: &str, after: ScriptedResponse) -> Agent {
        use futures_util::StreamExt;
        use towerscope_core::{AgentError, EventStream, ReplyNext, ReplyRequest, from_fn};

        fn renamed(
            req: ReplyRequest,
            next: ReplyNext,
        ) -> futures_util::future::BoxFuture<'static, Result<EventStream, AgentError>> {
            Box::pin(async move {
                let inner = next.run(req).await?;
                Ok(Box::pin(inner.map(|item| match item {
                    Ok(ReplyItem::Final(m)) if m.finished_reason.is_none() => {
                        Ok(ReplyItem::Final(Msg::assistant(m.name, "Waiting, in other words.")))
                    }
                    item => item,
                })) as EventStream)
            })
        }
        asking_builder(name, after).on_reply(from_fn(renamed)).build().unwrap()
    }

    /// Checks that every call in the agent's context has one result, interrupted.
    pub(crate) fn assert_calls_closed(agent: &Agent) {
        let context = agent.state().context;
        let blocks: Vec<&ContentBlock> = context.iter().flat_map(|m| m.content.iter()).collect();
        let calls = blocks.iter().filter_map(|b| match b {
            ContentBlock::ToolCall(c) => Some(&c.id),
            _ => None,
        });
        let results = |id: &Id| {
            let of_call = blocks.iter().filter_map(|b| match b {
                ContentBlock::ToolResult(r) if &r.id == id => Some(r.state),
                _ => None,
            });
            of_call.collect::<Vec<_>>()
        };
        let closed: Vec<_> = calls.map(|id| (id.to_string(), results(id))).collect();
        assert_eq!(closed, [("c1".to_owned(), vec![ToolResultState::Interrupted])]);
    }

    /// The user allows every call the agent asked for.
    pub(crate) fn allow_all(asked: RequireUserConfirmEvent) -> ReplyInput {
        let allow = asked
            .tool_calls
            .into_iter()
            .map(|c| ConfirmResult::new(true, c))
            .collect();
        UserConfirmResultEvent::new(asked.reply_id, allow).into()
    }

    /// Runs `pipeline`, in which the asking agents `a` and `b` both park, then answers `a`
    /// through it with the call stopped at once (`stop` raises the pipeline's stop flag), and
    /// checks that the call ends parked on `b`'s question, older than the call, which still
    /// waits.
    pub(crate) async fn resume_stopped_leaves_an_older_park(
        pipeline: &dyn crate::Participant,
        stop: impl FnOnce() -> bool,
        a: &Agent,
        b: &Agent,
    ) {
        use futures_util::StreamExt;

        let first: Vec<ReplyItem> = pipeline
            .reply_stream(Msg::user("user", "Clean up.").into())
            .map(Result::unwrap)
            .collect()
            .await;
        let parked_id = |agent: &Agent| agent.waiting_calls().unwrap().reply_id;
        let (a_reply, b_reply) = (parked_id(a), parked_id(b));
        let asked_a = first
            .iter()
            .find_map(|item| match item {
                ReplyItem::Event(AgentEvent::RequireUserConfirm(e)) if e.reply_id == a_reply => Some(e.clone()),
                _ => None,
            })
            .unwrap();

        let stream = pipeline.reply_stream(allow_all(asked_a));
        assert!(stop(), "the call is in progress");
        let items: Vec<ReplyItem> = stream.map(Result::unwrap).collect().await;
        let Some(ReplyItem::Final(last)) = items.last() else {
            panic!("a final message ends the stream: {items:?}");
        };
        assert_eq!(last.finished_reason, None, "still parked: {last:?}");
        assert_eq!(last.id, b_reply, "on b's question");
        assert_eq!(parked_id(b), b_reply, "b still waits");
        assert!(pipeline.waits_on(&b_reply));
    }

    /// The confirmation the agent asked for and the stream's final message, checking that the
    /// stream carries the closing of call `c1` and ends with one final message, interrupted.
    pub(crate) fn closed_after_asking(items: &[ReplyItem]) -> (RequireUserConfirmEvent, &Msg) {
        let asked = items.iter().find_map(|item| match item {
            ReplyItem::Event(AgentEvent::RequireUserConfirm(e)) => Some(e.clone()),
            _ => None,
        });
        let closed = items.iter().filter(|item| {
            matches!(item, ReplyItem::Event(AgentEvent::ToolResultEnd(e))
                if e.tool_call_id == "c1" && e.state == ToolResultState::Interrupted)
        });
        assert_eq!(closed.count(), 1, "the closing is streamed");
        let finals: Vec<&Msg> = items
            .iter()
            .filter_map(|item| match item {
                ReplyItem::Final(m) => Some(m),
                ReplyItem::Event(_) => None,
            })
            .collect();
        let [last] = finals[..] else {
            panic!("one final message, the parked one left out: {finals:?}");
        };
        assert!(
            matches!(items.last(), Some(ReplyItem::Final(_))),
            "the final message ends the stream"
        );
        assert_eq!(last.finished_reason, Some(ReplyFinishedReason::Interrupted));
        (asked.unwrap(), last)
    }
}

/// What one member asked the user or an outside executor about in a pipeline's call (the
/// replies its `REQUIRE_*` events named), and whether the call resumed it. A member whose
/// stream ended without its waiting message (it failed, or the call was dropped) is taken as
/// parked only in one of those replies, or, a member the call resumed, in any: a resumed reply
/// that parks again asks nothing again, and its park is this call's, not a stale one.
#[derive(Debug, Default)]
struct Asked {
    replies: Vec<Id>,
    /// The reply the call resumed the member in.
    resumed: Option<Id>,
}

impl Asked {
    /// The record of a member the call resumes in reply `resumed`, or starts (`None`).
    fn new(resumed: Option<Id>) -> Self {
        Self {
            replies: Vec::new(),
            resumed,
        }
    }

    /// Whether the member parked in `reply` in this call: it asked about that reply, or it is
    /// the reply the call resumed (which parks again without asking), or the call started the
    /// member and it asked nothing (a participant that parks without request events). A
    /// pipeline member resumed in one reply may end its stream with an older park of another
    /// of its own members, which is not this call's.
    fn made(&self, reply: &Id) -> bool {
        self.replies.contains(reply)
            || self.resumed.as_ref() == Some(reply)
            || (self.resumed.is_none() && self.replies.is_empty())
    }

    /// Notes the reply `event` asks about, if it is a `REQUIRE_*` event.
    fn note(&mut self, event: &AgentEvent) {
        if let Some(reply) = asks_about(event) {
            self.replies.push(reply.clone());
        }
    }

    /// The reply `member` is parked in, if this call made that park.
    fn parked(&self, member: &dyn Participant) -> Option<Id> {
        member
            .parked_reply()
            .filter(|reply_id| self.resumed.is_some() || self.replies.contains(reply_id))
    }
}

/// The reply a `REQUIRE_*` event asks about.
fn asks_about(event: &AgentEvent) -> Option<&Id> {
    match event {
        AgentEvent::RequireUserConfirm(e) => Some(&e.reply_id),
        AgentEvent::RequireExternalExecution(e) => Some(&e.reply_id),
        _ => None,
    }
}

/// The waiting message of a member found parked without its own reaching the pipeline (its
/// stream was dropped before it was read, or it failed): under the parked reply's id, which a
/// resume names.
fn waiting_note(name: &str, reply_id: Id) -> towerscope_core::Msg {
    towerscope_core::Msg::assistant(name, "Waiting for the user or for a result from outside.").with_id(reply_id)
}

/// The reply `agent` is parked in for the user or an outside executor: a team leader waiting
/// only on its `TeamAssign` calls waits for its team's own members, not for them.
fn parked_for_the_user(agent: &towerscope_agent::Agent) -> Option<Id> {
    let waiting = agent.waiting_calls()?;
    (!for_the_team(&waiting)).then_some(waiting.reply_id)
}

/// The reply a team leader is parked in on nothing but its `TeamAssign` calls, which only a
/// run of its team carries out.
fn parked_for_the_team(agent: &towerscope_agent::Agent) -> Option<Id> {
    let waiting = agent.waiting_calls()?;
    for_the_team(&waiting).then_some(waiting.reply_id)
}

/// Whether the calls a reply waits on are all `TeamAssign` calls.
fn for_the_team(waiting: &towerscope_agent::WaitingCalls) -> bool {
    waiting.confirm.is_empty() && waiting.external.iter().all(|c| c.name == ASSIGN_TOOL)
}
