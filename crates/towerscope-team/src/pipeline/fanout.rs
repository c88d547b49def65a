//! [`FanoutPipeline`]: one input, every participant answers at once.

use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_util::StreamExt;
use towerscope_core::event::UserInterruptEvent;
use towerscope_core::id::now_timestamp;
use towerscope_core::{
    AgentError, ContentBlock, ErrorInfo, EventStream, Id, Msg, ReplyFinishedReason, ReplyInput, ReplyItem, TextBlock,
};

use super::merge::{MergedStream, merge};
use super::{Asked, Runs, stopped, waiting_note};
use crate::Participant;
use crate::share::shared_copy;

/// The replies of a round so far, while a member is parked for the user.
#[derive(Debug, Default)]
struct Round {
    finals: Vec<Option<Msg>>,
    /// Members parked, with their waiting message (whose id is the parked reply's).
    parked: Vec<(usize, Msg)>,
    /// Whether a call of the round was dropped while members still replied (their replies
    /// were interrupted): its combined message says it was interrupted.
    cut: bool,
}

/// The rounds of a fan-out that wait for members parked for the user, shared by the
/// pipeline's clones. A round whose call failed or was dropped waits too, so there may be
/// more than one; a member is parked in one reply at a time, so there are at most as many as
/// members.
#[derive(Clone, Default)]
struct Rounds(Arc<Mutex<Vec<Round>>>);

impl Rounds {
    fn lock(&self) -> MutexGuard<'_, Vec<Round>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes out the round in which a member of `members` waits on reply `reply_id` (parked
    /// in it, or, a pipeline, with a member of its own parked in it), and that member with its
    /// waiting message.
    fn take(&self, reply_id: &Id, members: &[Arc<dyn Participant>]) -> Option<(Round, (usize, Msg))> {
        let mut rounds = self.lock();
        let (at, position) = rounds.iter().enumerate().find_map(|(at, round)| {
            let position = round.parked.iter().position(|(m, w)| waits(members, *m, w, reply_id))?;
            Some((at, position))
        })?;
        let mut round = rounds.remove(at);
        let member = round.parked.remove(position);
        Some((round, member))
    }

    /// The reply the newest waiting round's first parked member waits in (the one its call's
    /// waiting message named; rounds are kept in the order they came to wait).
    fn first_waiting(&self) -> Option<Id> {
        let rounds = self.lock();
        let round = rounds.last()?;
        round.parked.iter().min_by_key(|(m, _)| *m).map(|(_, w)| w.id.clone())
    }

    /// Whether a member of `members` waits on reply `reply_id` in a round.
    fn waits_on(&self, reply_id: &Id, members: &[Arc<dyn Participant>]) -> bool {
        let rounds = self.lock();
        rounds
            .iter()
            .any(|round| round.parked.iter().any(|(m, w)| waits(members, *m, w, reply_id)))
    }

    /// Keeps `round`, which has members parked. A member parked in it is parked in no other
    /// reply: an older round still naming it (the member was resumed directly, not through the
    /// pipeline) no longer waits on it.
    fn keep(&self, round: Round) {
        let mut rounds = self.lock();
        for older in rounds.iter_mut() {
            older.parked.retain(|(m, _)| round.parked.iter().all(|(n, _)| n != m));
        }
        rounds.retain(|r| !r.parked.is_empty());
        rounds.push(round);
    }
}

/// Whether member `m` of `members`, parked in a round with `waiting`, waits on `reply_id`: it
/// is that park, or the member (a pipeline) still waits on that park and on `reply_id` too (a
/// member that left that park and parked elsewhere since is not this round's any more).
fn waits(members: &[Arc<dyn Participant>], m: usize, waiting: &Msg, reply_id: &Id) -> bool {
    &waiting.id == reply_id
        || members
            .get(m)
            .is_some_and(|member| member.waits_on(&waiting.id) && member.waits_on(reply_id))
}

/// Participants that all answer the same input, concurrently, with the replies in participant
/// order (the reference's `fanout_pipeline`).
///
/// [`replies`](Self::replies) returns the messages; [`stream`](Self::stream) streams the
/// members' items as they arrive, tagged with their speaker. As a [`Participant`] the
/// pipeline streams the members' events and ends with one message under its own name that
/// holds each reply's text as `name: text` (and its data), in participant order, and lists
/// those replies' ids in its metadata under [`COMBINED_REPLIES`]; its finished
/// reason is `interrupted` when a member was interrupted, else `error` when a member's reply
/// ended with an error (a call limit: its text, the error's, is left out, and the message's
/// `error` names the member), `completed` otherwise. A member that
/// parks for the user parks the pipeline: the stream ends with that member's waiting message,
/// the resuming input goes to it, and the combined message comes once every member finished.
/// A member that fails does not cut the others off: the call goes on to their end, streaming
/// their events, and ends with the error. Members that parked meanwhile still wait; their
/// resume, sent to the fan-out (from the `REQUIRE_*` event the stream carried), completes the
/// round, whose combined message comes without the failed member's reply. A resumed member
/// whose reply fails is no longer waited on in the same way. A call dropped while members
/// still reply interrupts them (a member that was parking stays parked, and waits in the
/// round); if members wait in its round, its combined message says it was interrupted.
/// A member that parks in a call although the fan-out was interrupted (the interrupt came
/// after its reply decided to wait) closes its parked reply at once (its calls get interrupted
/// results, and its events are streamed), and the round goes on without it: it ends
/// interrupted, or parked on a member that waited from before (a pipeline member's older park
/// is left alone).
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use towerscope_agent::Agent;
/// use towerscope_core::Msg;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
/// use towerscope_team::pipeline::FanoutPipeline;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), towerscope_core::AgentError> {
/// let agent = |name: &str, ms: u64| {
///     let answer = ScriptedResponse::text(format!("{name} here")).delay(Duration::from_millis(ms));
///     Agent::builder(name).model(ScriptedModel::new("m", [answer])).build()
/// };
/// let panel = FanoutPipeline::new([agent("slow", 30)?, agent("quick", 10)?]);
/// let start = tokio::time::Instant::now();
/// let replies = panel.replies(Msg::user("host", "Roll call!").into()).await?;
/// assert_eq!(start.elapsed(), Duration::from_millis(30), "concurrently");
/// let texts: Vec<_> = replies.iter().filter_map(Msg::text_content).collect();
/// assert_eq!(texts, ["slow here", "quick here"], "in participant order");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct FanoutPipeline {
    name: Arc<str>,
    members: Arc<[Arc<dyn Participant>]>,
    rounds: Rounds,
    runs: Arc<Runs>,
}

impl FanoutPipeline {
    /// The participants; the pipeline is named `fanout`.
    pub fn new<P: Participant>(members: impl IntoIterator<Item = P>) -> Self {
        Self::from_shared(members.into_iter().map(|p| Arc::new(p) as Arc<dyn Participant>))
    }

    /// Shared participants.
    pub fn from_shared(members: impl IntoIterator<Item = Arc<dyn Participant>>) -> Self {
        Self {
            name: Arc::from("fanout"),
            members: members.into_iter().collect(),
            rounds: Rounds::default(),
            runs: Arc::default(),
        }
    }

    /// Names the pipeline (its name as a participant, and on its combined message).
    #[must_use]
    pub fn named(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = name.into();
        self
    }

    /// The members' names, in order.
    pub fn members(&self) -> Vec<String> {
        self.members.iter().map(|m| m.name().to_owned()).collect()
    }

    /// Every member replies to `input` concurrently; the replies in participant order, or the
    /// first failure in that order.
    pub async fn replies(&self, input: ReplyInput) -> Result<Vec<Msg>, AgentError> {
        let replies = futures_util::future::join_all(self.members.iter().map(|m| m.reply(input.clone()))).await;
        replies.into_iter().collect()
    }

    /// Every member replies to `input` concurrently; their items as they arrive, tagged.
    pub fn stream(&self, input: ReplyInput) -> MergedStream {
        merge(
            self.members
                .iter()
                .map(|m| (m.name().to_owned(), m.reply_stream(input.clone()))),
        )
    }

    /// The streams of this call, by member index, the round they belong to, and the parked
    /// member a resume is for (with its waiting message).
    fn open(&self, input: ReplyInput) -> Result<Opened, AgentError> {
        let Some(reply_id) = input.resumed_reply() else {
            let streams = self
                .members
                .iter()
                .enumerate()
                .map(|(i, m)| (i, m.reply_stream(input.clone())))
                .collect();
            let round = Round {
                finals: vec![None; self.members.len()],
                ..Round::default()
            };
            return Ok((streams, round, None));
        };
        let Some((round, (member, waiting))) = self.rounds.take(reply_id, &self.members) else {
            return Err(AgentError::State(format!(
                "no participant of pipeline '{}' is waiting on reply {reply_id}",
                self.name
            )));
        };
        Ok((
            vec![(member, self.members[member].reply_stream(input))],
            round,
            Some((member, waiting)),
        ))
    }
}

/// What [`FanoutPipeline::open`] opens: the members' streams, their round, the parked member
/// being resumed.
type Opened = (Vec<(usize, EventStream)>, Round, Option<(usize, Msg)>);

/// The message of a finished round: each reply's shared text as `name: text`, and its data;
/// interrupted when a member's reply was, else failed when one ended with an error (its text
/// is the error's, left out of the content; the error, under the member's name, is the
/// message's `error`).
fn combine(name: &Arc<str>, finals: &[Msg], cut: bool) -> Msg {
    let mut content = Vec::new();
    let mut failed = None;
    for reply in finals {
        if reply.finished_reason == Some(ReplyFinishedReason::Error) {
            failed = failed.or_else(|| {
                let info = reply.error.as_ref();
                let kind = info.map_or("unknown", |e| e.kind.as_str());
                let text = info.map_or("its reply ended with an error", |e| e.message.as_str());
                Some(ErrorInfo::new(kind, format!("{}: {text}", reply.name)))
            });
        }
        // A failed reply's text is skipped when it is its error's (an agent's call limit); a
        // failed reply with words of its own (a fan-out inside, whose other members answered)
        // keeps them.
        if error_text_only(reply) {
            continue;
        }
        let Some(shared) = shared_copy(reply) else {
            continue;
        };
        for block in shared.content {
            match block {
                ContentBlock::Text(t) => {
                    content.push(TextBlock::new(format!("{}: {}", reply.name, t.text)).into());
                }
                other => content.push(other),
            }
        }
    }
    let interrupted = cut
        || finals
            .iter()
            .any(|m| m.finished_reason == Some(ReplyFinishedReason::Interrupted));
    let mut msg = Msg::assistant_blocks(Arc::clone(name), content);
    msg.finished_reason = Some(if interrupted {
        ReplyFinishedReason::Interrupted
    } else if failed.is_some() {
        ReplyFinishedReason::Error
    } else {
        ReplyFinishedReason::Completed
    });
    msg.error = failed;
    msg.finished_at = Some(now_timestamp());
    // The replies whose text it combines, so that a reader who showed those replies as they
    // streamed (the console) does not show them again (a reply without text, of data only, is
    // not listed: the reader shows the message's text, which holds nothing of it).
    // A member's own combined message (a fan-out inside) stands for the replies it lists.
    let combined: Vec<serde_json::Value> = finals
        .iter()
        .filter(|m| !error_text_only(m) && m.text_content().is_some_and(|t| !t.is_empty()))
        .flat_map(
            |m| match m.metadata.get(COMBINED_REPLIES).and_then(serde_json::Value::as_array) {
                Some(inner) => inner.clone(),
                None => vec![m.id.to_string().into()],
            },
        )
        .collect();
    msg.metadata.insert(COMBINED_REPLIES.to_owned(), combined.into());
    msg
}

/// Whether `reply` ended with an error and its text is the error's.
fn error_text_only(reply: &Msg) -> bool {
    reply.finished_reason == Some(ReplyFinishedReason::Error)
        && reply
            .error
            .as_ref()
            .is_some_and(|e| reply.text_content().is_none_or(|t| t == e.message))
}

/// The metadata key of a fan-out's combined message that lists the ids of the replies whose
/// text it combines (a reply of data only, or one whose text is its error's, adds no text and is
/// not listed).
pub const COMBINED_REPLIES: &str = "combined_replies";

impl Participant for FanoutPipeline {
    fn name(&self) -> &str {
        &self.name
    }

    fn reply_stream(&self, input: ReplyInput) -> EventStream {
        let resumed_reply = input.resumed_reply().cloned();
        let (streams, round, resuming) = match self.open(input) {
            Ok(opened) => opened,
            Err(e) => return Box::pin(futures_util::stream::iter([Err(e)])),
        };
        // The reply the resume names (a pipeline member may be resumed for another of its
        // members' questions than the one its waiting message names).
        let resumed = |i: usize| {
            resuming
                .as_ref()
                .filter(|(member, _)| *member == i)
                .and_then(|_| resumed_reply.clone())
        };
        let asked: Vec<SharedAsked> = (0..self.members.len())
            .map(|i| Arc::new(Mutex::new(Asked::new(resumed(i)))))
            .collect();
        let stop = self.runs.start();
        let merged = futures_util::stream::select_all(streams.into_iter().map(|(i, stream)| {
            let member = Arc::clone(&self.members[i]);
            let closing = closing_if_stopped(member, stream, Arc::clone(&asked[i]), Arc::clone(&stop));
            closing.map(move |item| (i, item))
        }));
        let run = FanoutRun {
            name: Arc::clone(&self.name),
            members: Arc::clone(&self.members),
            rounds: self.rounds.clone(),
            merged: Some(Box::pin(merged)),
            round: Some(round),
            resuming,
            error: None,
            asked,
        };
        Box::pin(futures_util::stream::unfold(run, FanoutRun::next))
    }

    /// Every member observes the messages (a busy one when it is free).
    fn observe(&self, msgs: Vec<Msg>) -> Result<(), AgentError> {
        super::observe_all(&self.members, &msgs)
    }

    /// Stops the [`reply_stream`](Participant::reply_stream) calls in progress (a member that
    /// parks in one after this closes its reply; [`stream`](FanoutPipeline::stream) and
    /// [`replies`](FanoutPipeline::replies) keep no record), and interrupts every member that
    /// is replying.
    fn interrupt(&self) -> bool {
        let runs = self.runs.stop();
        // Every member, not only up to the first running one.
        let members = self.members.iter().filter(|m| m.interrupt()).count();
        runs || members > 0
    }

    fn parked_reply(&self) -> Option<Id> {
        self.rounds.first_waiting()
    }

    fn waits_on(&self, reply: &Id) -> bool {
        self.rounds.waits_on(reply, &self.members)
    }
}

/// A member's stream, in which a reply that parks in this call (see [`Asked::made`]) once the
/// call was stopped is closed at once (a `UserInterruptEvent` for it): its waiting message is
/// left out, and the closing's items, ending with its interrupted message, follow.
fn closing_if_stopped(
    member: Arc<dyn Participant>,
    stream: EventStream,
    asked: SharedAsked,
    stop: Arc<AtomicBool>,
) -> EventStream {
    Box::pin(futures_util::stream::unfold(
        (Some(stream), false),
        move |(mut current, mut closing)| {
            let (member, asked, stop) = (Arc::clone(&member), Arc::clone(&asked), Arc::clone(&stop));
            async move {
                loop {
                    match current.as_mut()?.next().await? {
                        Ok(ReplyItem::Final(msg))
                            if msg.finished_reason.is_none()
                                && !closing
                                && stopped(Some(&stop))
                                && lock(&asked).made(&msg.id) =>
                        {
                            // The parked reply's stream goes first: while it is held, the member
                            // counts as replying and would refuse the closing.
                            drop(current.take());
                            closing = true;
                            current = Some(member.reply_stream(UserInterruptEvent::new(msg.id.clone()).into()));
                        }
                        Ok(ReplyItem::Event(event)) => {
                            lock(&asked).note(&event);
                            return Some((Ok(ReplyItem::Event(event)), (current, closing)));
                        }
                        item => return Some((item, (current, closing))),
                    }
                }
            }
        },
    ))
}

/// What a member asked about in a call: noted by its stream, read by the call.
type SharedAsked = Arc<Mutex<Asked>>;

fn lock(asked: &SharedAsked) -> MutexGuard<'_, Asked> {
    asked.lock().unwrap_or_else(PoisonError::into_inner)
}

type Indexed = std::pin::Pin<Box<dyn futures_core::Stream<Item = (usize, Result<ReplyItem, AgentError>)> + Send>>;

/// One call of the pipeline as a participant: the members' merged streams, then its final item.
struct FanoutRun {
    name: Arc<str>,
    members: Arc<[Arc<dyn Participant>]>,
    rounds: Rounds,
    merged: Option<Indexed>,
    round: Option<Round>,
    /// The parked member this call resumes, with its waiting message, until its first item (it
    /// accepted the resume).
    resuming: Option<(usize, Msg)>,
    /// The first member's error: it ends the call once the other members' replies ended.
    error: Option<AgentError>,
    /// What each member asked about in this call (see [`Asked`]), noted by its stream.
    asked: Vec<SharedAsked>,
}

impl FanoutRun {
    async fn next(mut self) -> Option<(Result<ReplyItem, AgentError>, Self)> {
        while let Some(merged) = self.merged.as_mut() {
            let Some((i, item)) = merged.next().await else {
                self.merged = None;
                break;
            };
            if item.is_ok() {
                // The member accepted the resume: it is no longer parked (a refused resume
                // emits nothing before its error).
                self.resuming = None;
            }
            let round = self.round.as_mut()?;
            match item {
                Ok(ReplyItem::Final(msg)) if msg.finished_reason.is_none() => round.parked.push((i, msg)),
                Ok(ReplyItem::Final(msg)) => round.finals[i] = Some(msg),
                Ok(ReplyItem::Event(event)) => return Some((Ok(ReplyItem::Event(event)), self)),
                Err(e) => {
                    // The others go on to their end (their answers, and the calls they park
                    // on, are kept in the round); the error ends the call after them.
                    if self.error.is_none() {
                        self.error = Some(e);
                    } else {
                        // By kind: an error's text may quote the conversation.
                        tracing::warn!(pipeline = %self.name, error.kind = e.kind(), "another fan-out member failed");
                    }
                }
            }
        }
        if let Some(e) = self.error.take() {
            self.put_back();
            return Some((Err(e), self));
        }
        let round = self.round.take()?;
        if round.parked.is_empty() {
            let finals: Vec<Msg> = round.finals.into_iter().flatten().collect();
            let combined = combine(&self.name, &finals, round.cut);
            return Some((Ok(ReplyItem::Final(combined)), self));
        }
        // Parked: the first waiting member's message ends the stream, whether it parked now or
        // still waits from before while another member was resumed.
        let waiting = round.parked.iter().min_by_key(|(m, _)| *m).map(|(_, w)| w.clone())?;
        self.rounds.keep(round);
        Some((Ok(ReplyItem::Final(waiting)), self))
    }

    /// A call that failed or was dropped: its round goes to the pipeline while members wait in
    /// it, whether the call resumed the round or started it (a member parked in it still
    /// waits for the user, and only the pipeline can pass it the answer). The resumed member
    /// waits again if the failure came before its first item (it refused the resume); one
    /// that accepted is no longer parked, so the round waits only on the others, and its
    /// combined message comes without the failed member's reply. A call dropped while members
    /// still replied interrupted them: the round's combined message says so.
    fn put_back(&mut self) {
        let Some(mut round) = self.round.take() else {
            return;
        };
        if let Some(resumed) = self.resuming.take() {
            // Dropped before the resumed member's first item (or refused): it waits again, and
            // nothing was cut off.
            round.parked.push(resumed);
        } else if self.merged.take().is_some() {
            round.cut = true;
        }
        // A member whose stream ended without its waiting message (dropped, or failed: a
        // pipeline member that failed with one of its own members parked) is parked all the
        // same when this call made that park (see `Asked`): it waits in this round.
        for (i, (member, asked)) in self.members.iter().zip(&self.asked).enumerate() {
            let known = round.finals[i].is_some() || round.parked.iter().any(|(m, _)| *m == i);
            if !known && let Some(reply_id) = lock(asked).parked(member.as_ref()) {
                round.parked.push((i, waiting_note(member.name(), reply_id)));
            }
        }
        if !round.parked.is_empty() {
            self.rounds.keep(round);
        }
    }
}

impl Drop for FanoutRun {
    fn drop(&mut self) {
        self.put_back();
    }
}

impl fmt::Debug for FanoutPipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FanoutPipeline")
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
        allow_all, asking, assert_calls_closed, closed_after_asking, resume_stopped_leaves_an_older_park,
    };

    /// The fan-out was stopped after a member's last interrupt check, and that member's reply
    /// parked: the member closes its parked reply, the combined message says the round was
    /// interrupted, and the fan-out waits for nothing.
    #[tokio::test]
    async fn a_stop_raised_as_a_member_parks_closes_its_reply() {
        let asker = asking("asker", ScriptedResponse::text("Nothing to delete."));
        let other_model = ScriptedModel::new("m", [ScriptedResponse::text("Fine."), ScriptedResponse::text("Again.")]);
        let other = Agent::builder("other").model(other_model).build().unwrap();
        let asker_shared: Arc<dyn Participant> = Arc::new(asker.clone());
        let panel = FanoutPipeline::from_shared([asker_shared, Arc::new(other) as Arc<dyn Participant>]);

        let stream = panel.reply_stream(Msg::user("user", "Clean up.").into());
        assert!(panel.runs.stop(), "the call is in progress");
        let items: Vec<ReplyItem> = stream.map(Result::unwrap).collect().await;

        let (asked, last) = closed_after_asking(&items);
        assert_eq!(&*last.name, "fanout");
        let text = last.text_content().unwrap_or_default();
        assert!(
            text.ends_with("\nother: Fine."),
            "the others' replies are combined: {text}"
        );
        assert_calls_closed(&asker);
        assert!(!panel.interrupt(), "nothing runs any more");
        assert_eq!(panel.parked_reply(), None);

        // The fan-out waits for nothing: the confirmation is refused, a new message runs.
        let err = panel.reply(allow_all(asked)).await.unwrap_err();
        assert!(matches!(err, AgentError::State(_)), "{err}");
    }

    /// A fan-out inside a fan-out, with two members parked: the outer one resumes one of them
    /// (the first, then in another run the second), and is stopped meanwhile. The inner one
    /// ends its call with the other member's park, which is older than the stop: it still
    /// waits, and is not closed.
    #[tokio::test]
    async fn a_stop_leaves_alone_a_park_older_than_the_call() {
        for first_answered in [true, false] {
            let a = asking("a", ScriptedResponse::text("A done."));
            let b = asking("b", ScriptedResponse::text("B done."));
            let inner = FanoutPipeline::from_shared([
                Arc::new(a.clone()) as Arc<dyn Participant>,
                Arc::new(b.clone()) as Arc<dyn Participant>,
            ])
            .named("inner");
            let c = Agent::builder("c")
                .model(ScriptedModel::new("m", [ScriptedResponse::text("C here.")]))
                .build()
                .unwrap();
            let outer = FanoutPipeline::from_shared([Arc::new(inner) as Arc<dyn Participant>, Arc::new(c)]);
            let (answered, waiting) = if first_answered { (&a, &b) } else { (&b, &a) };
            resume_stopped_leaves_an_older_park(&outer, || outer.runs.stop(), answered, waiting).await;
        }
    }
}
