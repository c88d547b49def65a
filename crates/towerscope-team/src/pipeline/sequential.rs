//! [`SequentialPipeline`]: each participant answers the previous one's reply.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use futures_util::StreamExt;
use towerscope_core::event::UserInterruptEvent;
use towerscope_core::{AgentError, EventStream, Id, Msg, ReplyFinishedReason, ReplyInput, ReplyItem};

use super::merge::{MergedStream, Tagged};
use super::{Asked, Runs, Waiting, stopped};
use crate::Participant;
use crate::share::shared_copy;

/// Where a sequence stopped for the user: the member, and the reply it parked.
#[derive(Debug, Clone)]
struct Parked {
    reply_id: Id,
    member: usize,
}

impl Parked {
    /// Whether a resume naming `reply` is for this park: it is the reply recorded, or the
    /// member (a pipeline) still waits on that one and on `reply` too (a member that left this
    /// park and parked elsewhere since is not the row's any more).
    fn waits_on(&self, members: &[Arc<dyn Participant>], reply: &Id) -> bool {
        let member = &members[self.member];
        &self.reply_id == reply || (member.waits_on(&self.reply_id) && member.waits_on(reply))
    }
}

/// The record of a parked member while a resume runs: put back unless the member accepts the
/// resume (its first item), so a resume the member refused (a confirmation naming an unknown
/// call: an error before any event) or a stream dropped before the member's first item leaves
/// the pipeline waiting, and the user can resume it again. A member that accepted is no longer
/// parked, even if its reply fails later.
struct Resuming {
    slot: Waiting<Parked>,
    parked: Option<Parked>,
}

impl Resuming {
    /// The member accepted the resume: the record is done with.
    fn accepted(mut self) {
        self.parked = None;
    }
}

impl Drop for Resuming {
    fn drop(&mut self) {
        if let Some(parked) = self.parked.take() {
            self.slot.put_back(parked);
        }
    }
}

/// Participants in a row: the first answers the input, each next one answers the previous
/// one's reply (its [`shared_copy`](crate::shared_copy)), and the last reply is the pipeline's
/// (the reference's `sequential_pipeline`).
///
/// As a [`Participant`], its stream carries every member's events and ends with the last
/// member's final message. A member that parks for the user parks the pipeline: its final
/// message ends the stream, and the resuming input (a confirmation or external results for
/// that reply) resumes that member, after which the rest of the row runs. An interrupted member
/// ([`interrupt`](Participant::interrupt), or a `UserInterruptEvent` for its parked reply) ends
/// the row: its interrupted message is the pipeline's, and the members after it do not run; so
/// does a member whose reply ended with an error (a call limit reached: its message holds the
/// error, which the next member is never handed as what was said). An
/// interrupt between two members ends the row there too: the pipeline's message is the last
/// reply, marked interrupted. A member that parks although the row was interrupted (the
/// interrupt came after its reply decided to wait) does not park the row: the member closes
/// its parked reply at once (as a `UserInterruptEvent` would; its calls get interrupted
/// results, and its events are streamed), its interrupted message is the pipeline's, and the
/// pipeline waits for nothing (a resume is refused; a new message starts a new run).
/// [`stream`](Self::stream) tags every item, members' final messages included, with the
/// speaker's name.
///
/// # Example
///
/// ```
/// use towerscope_agent::Agent;
/// use towerscope_core::Msg;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
/// use towerscope_team::pipeline::SequentialPipeline;
/// use towerscope_team::Participant;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), towerscope_core::AgentError> {
/// let writer_model = ScriptedModel::new("m", [ScriptedResponse::text("Roses are red.")]);
/// let critic_model = ScriptedModel::new("m", [ScriptedResponse::text("Too short.")]);
/// let writer = Agent::builder("writer").model(writer_model).build()?;
/// let critic = Agent::builder("critic").model(critic_model.clone()).build()?;
/// let row = SequentialPipeline::new([writer, critic]);
/// let verdict = row.reply(Msg::user("user", "Write a poem.").into()).await?;
/// assert_eq!(verdict.text_content().as_deref(), Some("Too short."));
/// // The critic was given the writer's reply.
/// let requests = critic_model.requests();
/// let seen = requests[0].messages.iter().find(|m| &*m.name == "writer");
/// let seen = seen.and_then(|m| m.text_content());
/// assert_eq!(seen.as_deref(), Some("Roses are red."));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SequentialPipeline {
    name: Arc<str>,
    members: Arc<[Arc<dyn Participant>]>,
    parked: Waiting<Parked>,
    runs: Arc<Runs>,
}

impl SequentialPipeline {
    /// The participants, in order; the pipeline is named `sequential`.
    pub fn new<P: Participant>(members: impl IntoIterator<Item = P>) -> Self {
        Self::from_shared(members.into_iter().map(|p| Arc::new(p) as Arc<dyn Participant>))
    }

    /// Shared participants, in order.
    pub fn from_shared(members: impl IntoIterator<Item = Arc<dyn Participant>>) -> Self {
        Self {
            name: Arc::from("sequential"),
            members: members.into_iter().collect(),
            parked: Waiting::default(),
            runs: Arc::default(),
        }
    }

    /// Names the pipeline (its name as a participant).
    #[must_use]
    pub fn named(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = name.into();
        self
    }

    /// The members' names, in order.
    pub fn members(&self) -> Vec<String> {
        self.members.iter().map(|m| m.name().to_owned()).collect()
    }

    /// Runs the row and streams every member's items, tagged with the member's name, final
    /// messages included.
    pub fn stream(&self, input: ReplyInput) -> MergedStream {
        Box::pin(self.run(input).map(|(tagged, _)| tagged))
    }

    /// Items tagged with their member, and whether the item is the pipeline's own final item.
    fn run(&self, input: ReplyInput) -> impl futures_core::Stream<Item = (Tagged, bool)> + Send + 'static {
        let resumed = input.resumed_reply().cloned();
        let start = self.start(input);
        let mut run = Run {
            members: Arc::clone(&self.members),
            parked: self.parked.clone(),
            stop: Some(self.runs.start()),
            current: None,
            handover: None,
            index: 0,
            done: false,
            pending_error: None,
            resuming: None,
            closing: false,
            asked: Asked::default(),
        };
        match start {
            Ok((index, stream, resuming)) => {
                run.index = index;
                run.current = Some(stream);
                run.asked = Asked::new(resumed.filter(|_| resuming.is_some()));
                run.resuming = resuming;
            }
            Err(e) => run.pending_error = Some(Tagged::new(Arc::clone(&self.name), Err(e))),
        }
        futures_util::stream::unfold(run, Run::next)
    }

    /// The member that answers `input`, its stream, and the record to put back if it is a
    /// resume that fails.
    fn start(&self, input: ReplyInput) -> Result<(usize, EventStream, Option<Resuming>), AgentError> {
        if self.members.is_empty() {
            return Err(AgentError::validation(format!(
                "pipeline '{}' has no participants",
                self.name
            )));
        }
        let Some(reply_id) = input.resumed_reply() else {
            return Ok((0, self.members[0].reply_stream(input), None));
        };
        let members = &self.members;
        let waits = |p: &mut Parked| p.waits_on(members, reply_id);
        let Some(parked) = self.parked.take_if(waits) else {
            return Err(AgentError::State(format!(
                "no participant of pipeline '{}' is waiting on reply {reply_id}",
                self.name
            )));
        };
        let member = parked.member;
        let resuming = Resuming {
            slot: self.parked.clone(),
            parked: Some(parked),
        };
        Ok((member, self.members[member].reply_stream(input), Some(resuming)))
    }
}

struct Run {
    members: Arc<[Arc<dyn Participant>]>,
    parked: Waiting<Parked>,
    /// Raised by the pipeline's `interrupt`; `None` once the run is over.
    stop: Option<Arc<AtomicBool>>,
    current: Option<EventStream>,
    /// The reply the next member answers, until it starts.
    handover: Option<Msg>,
    index: usize,
    done: bool,
    pending_error: Option<Tagged>,
    /// The resumed member's record until its first item.
    resuming: Option<Resuming>,
    /// Whether the member is closing its parked reply (the row was interrupted).
    closing: bool,
    /// What the current member asked about in this run (see [`Asked`]).
    asked: Asked,
}

impl Run {
    async fn next(mut self) -> Option<((Tagged, bool), Self)> {
        if let Some(err) = self.pending_error.take() {
            self.finish();
            return Some(((err, true), self));
        }
        if self.done {
            return None;
        }
        if let Some(reply) = self.handover.take() {
            if stopped(self.stop.as_ref()) {
                return Some((self.interrupted(reply), self));
            }
            self.start_next(&reply);
        }
        let member = Arc::clone(&self.members[self.index]);
        let tag = |item| Tagged::new(member.name(), item);
        let item = loop {
            let item = match self.current.as_mut() {
                Some(stream) => stream.next().await,
                None => None,
            };
            if matches!(item, Some(Ok(_)))
                && let Some(resuming) = self.resuming.take()
            {
                resuming.accepted();
            }
            match item {
                Some(Ok(ReplyItem::Final(msg)))
                    if msg.finished_reason.is_none() && !self.closing && stopped(self.stop.as_ref()) =>
                {
                    if !self.asked.made(&msg.id) {
                        break Some(Ok(ReplyItem::Final(msg)));
                    }
                    self.close(&msg.id);
                }
                item => break item,
            }
        };
        match item {
            Some(Ok(ReplyItem::Final(msg))) => {
                let last = self.finish_member(&msg);
                Some(((tag(Ok(ReplyItem::Final(msg))), last), self))
            }
            Some(Err(e)) => {
                self.finish();
                if self.resuming.is_none() {
                    // A member that failed while parked in part (a fan-out whose other member
                    // failed) still waits: the resume naming its reply goes to it.
                    self.park_asked();
                }
                self.resuming = None; // before the member's first item: refused, it still waits
                Some(((tag(Err(e)), true), self))
            }
            Some(Ok(ReplyItem::Event(event))) => {
                self.asked.note(&event);
                Some(((tag(Ok(ReplyItem::Event(event))), false), self))
            }
            None => {
                self.finish();
                let err = AgentError::State(format!(
                    "participant '{}' ended its reply without a final message",
                    member.name()
                ));
                Some(((tag(Err(err)), true), self))
            }
        }
    }

    /// The row was interrupted, and the member's reply parked (it decided to wait after its
    /// last interrupt check): the member closes its parked reply (its calls get interrupted
    /// results), and its interrupted message ends the row, which waits for nothing.
    fn close(&mut self, parked: &Id) {
        // The parked reply's stream goes first: while it is held, the member counts as
        // replying and would refuse the closing.
        self.current = None;
        self.closing = true;
        let closing = UserInterruptEvent::new(parked.clone()).into();
        self.current = Some(self.members[self.index].reply_stream(closing));
    }

    /// Moves on after a member's final message; returns whether it ends the pipeline (the last
    /// member's, an interrupted one's, a failed one's, or a parked one's). The next member
    /// starts when the stream is polled again, unless the row was interrupted by then.
    fn finish_member(&mut self, msg: &Msg) -> bool {
        // The member's reply is over (it is free again).
        self.current = None;
        // A reply that ended with an error (a call limit reached) holds the error's text, not
        // the member's words: the row stops on it, as the reference's stops on the raised
        // error, and the next member is never handed it as what was said.
        if matches!(
            msg.finished_reason,
            Some(ReplyFinishedReason::Interrupted | ReplyFinishedReason::Error)
        ) {
            self.finish();
            return true;
        }
        if msg.finished_reason.is_none() {
            self.parked.park(Parked {
                reply_id: msg.id.clone(),
                member: self.index,
            });
            self.finish();
            return true;
        }
        if self.index + 1 == self.members.len() {
            self.finish();
            return true;
        }
        self.handover = Some(msg.clone());
        false
    }

    /// Records the current member as parked when it is parked in a reply it asked about in
    /// this run, or this run resumed it (its stream ended without its waiting message: it
    /// failed, or was dropped).
    fn park_asked(&mut self) {
        if let Some(reply_id) = self.asked.parked(self.members[self.index].as_ref()) {
            self.parked.park(Parked {
                reply_id,
                member: self.index,
            });
        }
    }

    /// Starts the next member on `reply`. An interrupt that came after the caller looked (when
    /// the member was not replying yet) reaches the member's new reply.
    fn start_next(&mut self, reply: &Msg) {
        self.asked = Asked::default();
        self.index += 1;
        let member = &self.members[self.index];
        let next: Vec<Msg> = shared_copy(reply).into_iter().collect();
        self.current = Some(member.reply_stream(next.into()));
        if stopped(self.stop.as_ref()) {
            member.interrupt();
        }
    }

    /// The row was interrupted between two members: it ends with the last reply, marked
    /// interrupted.
    fn interrupted(&mut self, mut reply: Msg) -> (Tagged, bool) {
        self.finish();
        reply.finished_reason = Some(ReplyFinishedReason::Interrupted);
        let member = self.members[self.index].name();
        (Tagged::new(member, Ok(ReplyItem::Final(reply))), true)
    }

    /// The run is over: nothing more to stream, nothing left to interrupt.
    fn finish(&mut self) {
        self.done = true;
        self.stop = None;
    }
}

impl Drop for Run {
    /// A run dropped while its member replies: a member that was parking (its question
    /// streamed, its waiting message not read yet) is parked all the same, and the resume
    /// naming its reply goes to it.
    fn drop(&mut self) {
        // A member still closing its parked reply (the row was interrupted) is recorded too: a
        // close cut short leaves it parked, and only the row can reach it (a close that ended
        // leaves nothing parked, so nothing is recorded).
        if self.done || self.resuming.is_some() || self.current.take().is_none() {
            return;
        }
        self.park_asked();
    }
}

impl Participant for SequentialPipeline {
    fn name(&self) -> &str {
        &self.name
    }

    fn reply_stream(&self, input: ReplyInput) -> EventStream {
        Box::pin(self.run(input).filter_map(|(tagged, own)| {
            std::future::ready(match tagged.item {
                Ok(ReplyItem::Final(_)) if !own => None,
                item => Some(item),
            })
        }))
    }

    /// Every member observes the messages (a busy one when it is free).
    fn observe(&self, msgs: Vec<Msg>) -> Result<(), AgentError> {
        super::observe_all(&self.members, &msgs)
    }

    /// Stops the runs in progress (no further member starts), then interrupts every member
    /// that is replying.
    fn interrupt(&self) -> bool {
        let runs = self.runs.stop();
        // Every member, not only up to the first running one.
        let members = self.members.iter().filter(|m| m.interrupt()).count();
        runs || members > 0
    }

    fn parked_reply(&self) -> Option<Id> {
        self.parked.get(|p| p.reply_id.clone())
    }

    fn waits_on(&self, reply: &Id) -> bool {
        self.parked.get(|p| p.waits_on(&self.members, reply)).unwrap_or(false)
    }
}

impl fmt::Debug for SequentialPipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SequentialPipeline")
            .field("name", &self.name)
            .field("members", &self.members())
            .finish()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use towerscope_agent::Agent;
    use towerscope_models::{ScriptedModel, ScriptedResponse};

    use super::*;
    use crate::pipeline::asking::{
        allow_all, asking, assert_calls_closed, closed_after_asking, renaming_asker,
        resume_stopped_leaves_an_older_park,
    };

    /// The row was stopped after the member's last interrupt check, and its reply parked: the
    /// member closes its parked reply, the row ends interrupted and waits for nothing.
    #[tokio::test]
    async fn a_stop_raised_as_a_member_parks_closes_its_reply() {
        let asker = asking("asker", ScriptedResponse::text("Nothing to delete."));
        let next_model = ScriptedModel::new("m", [ScriptedResponse::text("Fine.")]);
        let next = Agent::builder("next").model(next_model.clone()).build().unwrap();
        let row = SequentialPipeline::new([asker.clone(), next]);

        let stream = row.reply_stream(Msg::user("user", "Clean up.").into());
        assert!(row.runs.stop(), "the run is in progress");
        let items: Vec<ReplyItem> = stream.map(Result::unwrap).collect().await;

        let (asked, last) = closed_after_asking(&items);
        assert_eq!(&*last.name, "asker");
        assert_calls_closed(&asker);
        assert_eq!(next_model.calls(), 0, "the next member does not start");
        assert!(!row.interrupt(), "nothing runs any more");

        // The row waits for nothing: the confirmation is refused, a new message runs.
        let err = row.reply(allow_all(asked)).await.unwrap_err();
        assert!(matches!(err, AgentError::State(_)), "{err}");
        let again = row.reply(Msg::user("user", "Again.").into()).await.unwrap();
        assert_eq!(again.text_content().as_deref(), Some("Fine."));
    }

    /// A layer replaced the parked member's waiting message with a new one (its id too), and
    /// the row was stopped as the member parked: the member's own parked reply is closed.
    #[tokio::test]
    async fn a_stop_closes_the_parked_reply_a_layer_renamed() {
        let asker = renaming_asker("asker", ScriptedResponse::text("unused"));
        let row = SequentialPipeline::new([asker.clone()]);

        let stream = row.reply_stream(Msg::user("user", "Clean up.").into());
        assert!(row.runs.stop(), "the run is in progress");
        let items: Vec<ReplyItem> = stream.map(Result::unwrap).collect().await;
        let Some(ReplyItem::Final(last)) = items.last() else {
            panic!("a final message ends the stream: {items:?}");
        };
        assert_eq!(last.finished_reason, Some(ReplyFinishedReason::Interrupted), "{last:?}");
        assert_calls_closed(&asker);
        assert_eq!(row.parked_reply(), None);
    }

    /// A layer replaced the parked member's waiting message with a new one: the row's waiting
    /// message names the parked reply all the same, and the answer to the `REQUIRE_*` event
    /// resumes it.
    #[tokio::test]
    async fn a_member_whose_waiting_message_a_layer_renamed_is_resumed_by_its_question() {
        use towerscope_core::AgentEvent;

        let asker = renaming_asker("asker", ScriptedResponse::text("Deleted."));
        let row = SequentialPipeline::new([asker.clone()]);
        let first: Vec<ReplyItem> = row
            .reply_stream(Msg::user("user", "Clean up.").into())
            .map(Result::unwrap)
            .collect()
            .await;
        let asked = first
            .iter()
            .find_map(|item| match item {
                ReplyItem::Event(AgentEvent::RequireUserConfirm(e)) => Some(e.clone()),
                _ => None,
            })
            .unwrap();
        let Some(ReplyItem::Final(waiting)) = first.last() else {
            panic!("the row ends with the waiting message")
        };
        assert_eq!(waiting.text_content().as_deref(), Some("Waiting, in other words."));
        assert_eq!(waiting.id, asked.reply_id, "it names the parked reply");
        let done = row.reply(allow_all(asked)).await.unwrap();
        assert_eq!(done.text_content().as_deref(), Some("Deleted."));
    }

    /// A row holding a fan-out with two members parked takes the answer to either question:
    /// the second member's first, then the first's, and the round completes.
    #[tokio::test]
    async fn a_row_holding_a_fanout_with_two_members_parked_takes_either_answer() {
        use towerscope_core::AgentEvent;

        let a = asking("a", ScriptedResponse::text("A done."));
        let b = asking("b", ScriptedResponse::text("B done."));
        let row = SequentialPipeline::new([crate::pipeline::FanoutPipeline::new([a.clone(), b.clone()])]);
        let first: Vec<ReplyItem> = row
            .reply_stream(Msg::user("user", "Clean up.").into())
            .map(Result::unwrap)
            .collect()
            .await;
        let question = |agent: &Agent| {
            let reply_id = agent.waiting_calls().unwrap().reply_id;
            first
                .iter()
                .find_map(|item| match item {
                    ReplyItem::Event(AgentEvent::RequireUserConfirm(e)) if e.reply_id == reply_id => Some(e.clone()),
                    _ => None,
                })
                .unwrap()
        };
        let (asked_a, asked_b) = (question(&a), question(&b));
        assert_eq!(
            row.parked_reply(),
            Some(asked_a.reply_id.clone()),
            "the row names the first"
        );

        let second = row.reply(allow_all(asked_b)).await.unwrap();
        assert_eq!(second.finished_reason, None, "a still waits: {second:?}");
        assert_eq!(second.id, asked_a.reply_id);
        assert_eq!(b.waiting_calls(), None, "b went on");
        let done = row.reply(allow_all(asked_a)).await.unwrap();
        assert_eq!(done.finished_reason, Some(ReplyFinishedReason::Completed));
        assert_eq!(done.text_content().as_deref(), Some("a: A done.\nb: B done."));
    }

    /// A row holding a fan-out with two members parked resumes one of them (the first, then in
    /// another run the second), and is stopped meanwhile: the fan-out ends the call with the
    /// other member's park, older than the stop, which still waits and is not closed.
    #[tokio::test]
    async fn a_stop_leaves_alone_a_park_older_than_the_call() {
        for first_answered in [true, false] {
            let a = asking("a", ScriptedResponse::text("A done."));
            let b = asking("b", ScriptedResponse::text("B done."));
            let panel = crate::pipeline::FanoutPipeline::new([a.clone(), b.clone()]);
            let row = SequentialPipeline::new([panel]);
            let (answered, waiting) = if first_answered { (&a, &b) } else { (&b, &a) };
            resume_stopped_leaves_an_older_park(&row, || row.runs.stop(), answered, waiting).await;
        }
    }

    /// A row's member parked through it, then was resumed directly and later parked again in
    /// another reply: the row's old record does not take the answer to the new question.
    #[tokio::test]
    async fn a_member_that_parked_elsewhere_since_is_not_the_rows() {
        use towerscope_core::AgentEvent;

        let a = crate::pipeline::asking::asking_with(
            "a",
            [
                ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/x"}"#),
                ScriptedResponse::text("One."),
                ScriptedResponse::tool_call("c2", "delete", r#"{"path": "/tmp/y"}"#),
                ScriptedResponse::text("Two."),
            ],
        );
        let next_model = ScriptedModel::new("m", [ScriptedResponse::text("Next.")]);
        let next = Agent::builder("next").model(next_model.clone()).build().unwrap();
        let row = SequentialPipeline::from_shared([
            Arc::new(a.clone()) as Arc<dyn Participant>,
            Arc::new(next) as Arc<dyn Participant>,
        ]);
        let question = |items: &[ReplyItem]| {
            items
                .iter()
                .find_map(|item| match item {
                    ReplyItem::Event(AgentEvent::RequireUserConfirm(e)) => Some(e.clone()),
                    _ => None,
                })
                .unwrap()
        };
        let first: Vec<ReplyItem> = row
            .reply_stream(Msg::user("user", "Clean up.").into())
            .map(Result::unwrap)
            .collect()
            .await;
        // Answered directly, and asked again directly.
        a.reply(allow_all(question(&first))).await.unwrap();
        let again: Vec<ReplyItem> = Participant::reply_stream(&a, Msg::user("user", "And y.").into())
            .map(Result::unwrap)
            .collect()
            .await;
        let asked = question(&again);

        assert!(!row.waits_on(&asked.reply_id));
        let err = row.reply(allow_all(asked)).await.unwrap_err();
        assert!(matches!(err, AgentError::State(_)), "{err}");
        assert_eq!(next_model.calls(), 0, "nothing reached the next member");
    }
}
