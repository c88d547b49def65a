//! One run of the team pipeline: the leader replies, the members work on its assignments,
//! their answers go back to the leader, until the leader's reply ends (or the team is
//! interrupted). A member that parks for the user parks the run: what the run holds waits in
//! the pipeline ([`Parked`]) until the member's resume comes.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_core::event::{ExternalExecutionResultEvent, UserInterruptEvent};
use towerscope_core::{
    AgentError, AgentEvent, EventStream, Id, Msg, ReplyInput, ReplyItem, ToolCallBlock, ToolResultBlock,
    ToolResultState,
};

use super::TeamMember;
use crate::Participant;
use crate::pipeline::Waiting;
use crate::pipeline::assign::{ASSIGN_TOOL, interrupted, parse_assignment, result_of};
use crate::pipeline::merge::Tagged;
use crate::pipeline::{asks_about, waiting_note};

type Assigned = std::pin::Pin<Box<dyn futures_core::Stream<Item = (usize, Result<ReplyItem, AgentError>)> + Send>>;

/// Starts the leader's reply of a run.
pub(super) type Start = Box<dyn FnOnce() -> EventStream + Send>;

/// A member's tasks of one run, in call order: each call's index and prompt.
type Tasks = Vec<(usize, String)>;

/// What a run that parked on its members keeps until they are answered: the leader's
/// assignments, the results so far, and the members waiting for the user.
pub(super) struct Parked {
    leader_reply: Id,
    calls: Vec<(ToolCallBlock, Option<usize>)>,
    results: Vec<Option<ToolResultBlock>>,
    members: Vec<ParkedMember>,
}

/// A member parked for the user in one of the leader's assignments.
#[derive(Clone)]
pub(super) struct ParkedMember {
    member: usize,
    /// The assignment (its index in the run's calls).
    call: usize,
    /// The member's waiting message, whose id is the parked reply's.
    waiting: Msg,
    /// The member's later tasks of the run, which wait with it.
    queued: Tasks,
}

impl Parked {
    /// The member (its index in the record) waiting on reply `reply`: parked in it, or, a
    /// pipeline, still parked there with a member of its own waiting on `reply`.
    pub(super) fn position(&self, reply: &Id, members: &[TeamMember]) -> Option<usize> {
        self.members.iter().position(|p| {
            let member = &members[p.member].participant;
            &p.waiting.id == reply || (member.waits_on(&p.waiting.id) && member.waits_on(reply))
        })
    }

    /// Whether a member waits on reply `reply` (see [`position`](Self::position)).
    pub(super) fn waits_on(&self, reply: &Id, members: &[TeamMember]) -> bool {
        self.position(reply, members).is_some()
    }

    /// The waiting message of the member parked in the leader's first assignment.
    pub(super) fn first_waiting(&self) -> Option<&Msg> {
        self.members.iter().min_by_key(|p| p.call).map(|p| &p.waiting)
    }

    /// The reply the leader's parked reply is (its assignments wait on the members).
    pub(super) fn leader_reply(&self) -> &Id {
        &self.leader_reply
    }
}

enum Phase {
    /// The leader closes a reply whose run was dropped while its members worked (nobody reads
    /// that reply any more: its items are not the run's), then starts the run's own.
    Closing(EventStream, Option<Start>),
    Leader(EventStream),
    Members(Box<Working>),
    Done,
}

/// The members at work on the leader's assignments.
struct Working {
    merged: Assigned,
    calls: Vec<(ToolCallBlock, Option<usize>)>,
    results: Vec<Option<ToolResultBlock>>,
    leader_reply: Id,
    /// Each working member's tasks (a member that parks keeps those after its call waiting).
    tasks: Vec<(usize, Tasks)>,
    /// Members that parked for the user in this run, or wait from an earlier one.
    parked: Vec<ParkedMember>,
    /// The parked member this run resumes, until its first item (a run dropped before it puts
    /// the member back in the record).
    resuming: Option<ParkedMember>,
    /// The replies members asked the user or an outside executor about (their `REQUIRE_*`
    /// events), by call: a member whose stream is dropped before its waiting message is read
    /// is parked all the same if it parked in one of them.
    asked: Vec<(usize, Id)>,
    /// The call whose member this run resumed: any park of that member is this run's (it may
    /// park again without asking, on a call it asked about before; a pipeline member may still
    /// wait on another of its members' questions).
    resumed: Option<usize>,
    /// The first error of a member that failed with a question of its own waiting (a
    /// pipeline): it ends the run once the others are done, and the question still waits.
    error: Option<(Arc<str>, AgentError)>,
    /// The parked members the interrupted run is closing (each is closed once): a run dropped
    /// before a closing ran leaves that member waiting in the record.
    closing: Vec<ParkedMember>,
}

impl Working {
    /// The tasks of `member` after call `k`.
    fn queued_after(&self, member: usize, k: usize) -> Tasks {
        let tasks = self.tasks.iter().find(|(m, _)| *m == member);
        let later = tasks
            .into_iter()
            .flat_map(|(_, tasks)| tasks.iter().filter(|(q, _)| *q > k));
        later.cloned().collect()
    }
}

/// The state of one run, from which [`TeamRun::next`] unfolds the run's stream.
pub(super) struct TeamRun {
    leader: Agent,
    members: Arc<[TeamMember]>,
    phase: Phase,
    /// Raised by the pipeline's `interrupt`; `None` once the run is over.
    stop: Option<Arc<AtomicBool>>,
    /// Where the run leaves what it holds when members park (the pipeline's record).
    waiting: Waiting<Parked>,
}

impl TeamRun {
    /// A run of `leader`'s reply `stream` with `members`, stopped when `stop` is raised.
    pub(super) fn new(
        leader: Agent,
        members: Arc<[TeamMember]>,
        stream: EventStream,
        stop: Arc<AtomicBool>,
        waiting: Waiting<Parked>,
    ) -> Self {
        Self::in_phase(leader, members, Phase::Leader(stream), stop, waiting)
    }

    /// A run that first closes the leader's parked reply `orphan`, whose assignments no run
    /// carries out any more, then starts its own reply with `start`.
    pub(super) fn closing_first(
        leader: Agent,
        members: Arc<[TeamMember]>,
        orphan: Id,
        start: Start,
        stop: Arc<AtomicBool>,
        waiting: Waiting<Parked>,
    ) -> Self {
        let close = Box::pin(leader.reply_stream(UserInterruptEvent::new(orphan)));
        Self::in_phase(leader, members, Phase::Closing(close, Some(start)), stop, waiting)
    }

    /// A run that goes on from `record`: its member at `at` (the one waiting on the reply
    /// `input` names, found as the record was taken) gets `input` and then its queued tasks;
    /// the other parked members still wait. With none (an interrupt naming the leader's
    /// reply), nobody is resumed.
    pub(super) fn resumed(
        leader: Agent,
        members: Arc<[TeamMember]>,
        (mut record, at): (Parked, Option<usize>),
        input: ReplyInput,
        stop: Arc<AtomicBool>,
        waiting: Waiting<Parked>,
    ) -> Self {
        let resuming = at.map(|at| record.members.remove(at));
        let leader_name: Arc<str> = Arc::from(leader.name());
        let streams = resuming.iter().map(|p| {
            let participant = Arc::clone(&members[p.member].participant);
            let first = (p.call, participant.reply_stream(input.clone()));
            // An interrupt of the team since it was checked reaches the resumed reply.
            if stop.load(Ordering::SeqCst) {
                participant.interrupt();
            }
            member_tasks(
                participant,
                Arc::clone(&leader_name),
                Some(first),
                p.queued.clone(),
                Arc::clone(&stop),
            )
        });
        let work = Working {
            merged: Box::pin(futures_util::stream::select_all(streams.collect::<Vec<_>>())),
            calls: record.calls,
            results: record.results,
            leader_reply: record.leader_reply,
            tasks: resuming.iter().map(|p| (p.member, p.queued.clone())).collect(),
            parked: record.members,
            asked: Vec::new(),
            resumed: resuming.as_ref().map(|p| p.call),
            resuming,
            error: None,
            closing: Vec::new(),
        };
        Self::in_phase(leader, members, Phase::Members(Box::new(work)), stop, waiting)
    }

    fn in_phase(
        leader: Agent,
        members: Arc<[TeamMember]>,
        phase: Phase,
        stop: Arc<AtomicBool>,
        waiting: Waiting<Parked>,
    ) -> Self {
        Self {
            leader,
            members,
            phase,
            stop: Some(stop),
            waiting,
        }
    }

    /// The run's next item, tagged with its speaker, and whether it is the run's own final
    /// item (the leader's last, or the waiting message of a member that parked the run).
    pub(super) async fn next(mut self) -> Option<((Tagged, bool), Self)> {
        loop {
            match &mut self.phase {
                Phase::Done => return None,
                Phase::Closing(close, start) => {
                    // The closing reply's failure shows in the run's own reply, which the
                    // still parked leader then refuses.
                    while close.next().await.is_some() {}
                    let start = start.take();
                    self.phase = Phase::Done;
                    if let Some(start) = start {
                        let stream = start();
                        if self.stopped() {
                            self.leader.interrupt();
                        }
                        self.phase = Phase::Leader(stream);
                    }
                }
                Phase::Leader(stream) => {
                    let leader = Arc::<str>::from(self.leader.name());
                    let mut item = stream.next().await;
                    if let Some(Ok(ReplyItem::Final(msg))) = &mut item {
                        crate::participant::named_by_its_reply(&self.leader, msg);
                    }
                    // Parked on nothing but its assignments, which the team carries out (a leader
                    // that also waits for the user is answered first: its reply parks again on
                    // the assignments alone, and they run then).
                    if let Some(Ok(ReplyItem::Final(msg))) = &item
                        && msg.finished_reason.is_none()
                        && let Some(waiting) = self.leader.waiting_calls()
                        && crate::pipeline::for_the_team(&waiting)
                    {
                        // The parked reply's stream goes first: while it is held, the leader
                        // counts as replying and a resume of it would be refused.
                        drop(std::mem::replace(&mut self.phase, Phase::Done));
                        self.phase = if self.stopped() {
                            self.resume_leader(UserInterruptEvent::new(waiting.reply_id).into())
                        } else {
                            self.assign(waiting.reply_id, waiting.external)
                        };
                        continue;
                    }
                    if let Some(Ok(ReplyItem::Final(msg))) = &item
                        && msg.finished_reason.is_none()
                        && self.stopped()
                    {
                        // Parked for the user although the team was interrupted (the interrupt
                        // came after its reply decided to wait): the reply is closed.
                        let reply = msg.id.clone();
                        drop(std::mem::replace(&mut self.phase, Phase::Done));
                        self.phase = self.resume_leader(UserInterruptEvent::new(reply).into());
                        continue;
                    }
                    match item {
                        // The team's own business, not the caller's.
                        Some(Ok(ReplyItem::Event(AgentEvent::RequireExternalExecution(e))))
                            if e.tool_calls.iter().all(|c| c.name == ASSIGN_TOOL) => {}
                        Some(Ok(item @ ReplyItem::Final(_))) => {
                            self.finish();
                            return Some(((Tagged::new(leader, Ok(item)), true), self));
                        }
                        Some(Ok(event)) => return Some(((Tagged::new(leader, Ok(event)), false), self)),
                        Some(Err(e)) => {
                            self.finish();
                            return Some(((Tagged::new(leader, Err(e)), true), self));
                        }
                        None => self.finish(),
                    }
                }
                Phase::Members(work) => {
                    let Some((k, item)) = work.merged.next().await else {
                        if let Some(own) = self.members_done() {
                            return Some((own, self));
                        }
                        continue;
                    };
                    // The resumed member's first item: it took the resume, or refused it while
                    // still waiting (then `member_tasks` sent its waiting message first), or no
                    // longer waits on that question (resumed directly, say: its error is the
                    // call's result).
                    if work.resuming.as_ref().is_some_and(|p| p.call == k) {
                        work.resuming = None;
                    }
                    let name = speaker(&self.members, &work.calls, k);
                    let call = &work.calls[k];
                    match item {
                        Ok(ReplyItem::Final(msg)) if msg.finished_reason.is_none() => {
                            // Parked for the user: the member's question goes to the team's caller
                            // once the others are done (see `members_done`).
                            if let Some(member) = call.1 {
                                let queued = work.queued_after(member, k);
                                work.parked.push(ParkedMember {
                                    member,
                                    call: k,
                                    waiting: msg,
                                    queued,
                                });
                            }
                        }
                        Ok(ReplyItem::Final(msg)) => {
                            work.results[k] = Some(result_of(&call.0, &msg));
                            return Some(((Tagged::new(name, Ok(ReplyItem::Final(msg))), false), self));
                        }
                        Ok(ReplyItem::Event(event)) => {
                            if let Some(reply) = asks_about(&event) {
                                work.asked.push((k, reply.clone()));
                            }
                            return Some(((Tagged::new(name, Ok(ReplyItem::Event(event))), false), self));
                        }
                        Err(e) => {
                            if work.parked.iter().any(|p| p.call == k) {
                                // A pipeline that failed with a member of its own parked (its
                                // waiting message came first): the question still waits, and the
                                // error ends the run (as a fan-out's call ends with its member's
                                // error).
                                if work.error.is_none() {
                                    work.error = Some((name, e));
                                } else {
                                    // By kind: an error's text may quote the conversation.
                                    tracing::warn!(member = %name, error.kind = e.kind(), "another team member failed");
                                }
                                continue;
                            }
                            let text = format!("The member '{name}' failed: {e}");
                            work.results[k] = Some(ToolResultBlock::new(
                                &call.0.id,
                                ASSIGN_TOOL,
                                text,
                                ToolResultState::Error,
                            ));
                        }
                    }
                }
            }
        }
    }

    /// Every member stream of the run ended. Members that parked although the team was
    /// interrupted are closed first; members parked for the user park the run (its own final
    /// item is the first one's waiting message, and the pipeline keeps the rest); otherwise the
    /// leader goes on with the results (or, interrupted, closes its assignments).
    fn members_done(&mut self) -> Option<(Tagged, bool)> {
        let Phase::Members(mut work) = std::mem::replace(&mut self.phase, Phase::Done) else {
            return None;
        };
        if self.stopped() && !work.parked.is_empty() {
            // Each parked member is closed once: one that waits again after its closing (it
            // refused it) is left as it is, its call interrupted for the leader.
            let mut closings = Vec::new();
            for p in std::mem::take(&mut work.parked) {
                if work.closing.iter().any(|c| c.call == p.call) {
                    tracing::warn!(member = %self.members[p.member].participant.name(), "a team member still waits after its question was closed");
                    work.results[p.call] = Some(interrupted(&work.calls[p.call].0.id));
                    continue;
                }
                let participant = &self.members[p.member].participant;
                let call = p.call;
                let closing = participant.reply_stream(UserInterruptEvent::new(p.waiting.id.clone()).into());
                closings.push(closing.map(move |item| (call, item)));
                work.closing.push(p);
            }
            work.merged = Box::pin(futures_util::stream::select_all(closings));
            self.phase = Phase::Members(work);
            return None;
        }
        if let Some(first) = work.parked.iter().min_by_key(|p| p.call) {
            let (name, waiting) = (speaker(&self.members, &work.calls, first.call), first.waiting.clone());
            let own = match work.error.take() {
                Some((failed, e)) => Tagged::new(failed, Err(e)),
                None => Tagged::new(name, Ok(ReplyItem::Final(waiting))),
            };
            self.waiting.park(Parked {
                leader_reply: work.leader_reply,
                calls: work.calls,
                results: work.results,
                members: work.parked,
            });
            self.finish();
            return Some((own, true));
        }
        if let Some((failed, e)) = work.error.take() {
            // Interrupted since: the leader's interrupted reply ends the run (by kind: an
            // error's text may quote the conversation).
            tracing::warn!(member = %failed, error.kind = e.kind(), "a team member failed as the team was interrupted");
        }
        let results: Vec<ToolResultBlock> = work.results.into_iter().flatten().collect();
        // Interrupted: the leader's reply ends, its assignments interrupted.
        let resume: ReplyInput = if self.stopped() {
            UserInterruptEvent::new(work.leader_reply).into()
        } else {
            ExternalExecutionResultEvent::new(work.leader_reply, results).into()
        };
        self.phase = self.resume_leader(resume);
        None
    }

    /// A run dropped while members wait for the user: the
    /// pipeline keeps them and the results so far; the calls that were neither answered nor
    /// waiting behind a parked member were cut off with the run. A run whose members are all
    /// answered or cut off leaves the leader parked on its assignments, and the team's next
    /// run closes them.
    fn keep_parked(&mut self) {
        let Phase::Members(mut work) = std::mem::replace(&mut self.phase, Phase::Done) else {
            return;
        };
        work.parked.extend(work.resuming.take());
        // The members still replying are stopped first; one that had parked before (its waiting
        // message unread) stays parked, and so does one whose closing had not run yet.
        work.merged = Box::pin(futures_util::stream::empty());
        for c in std::mem::take(&mut work.closing) {
            let member = &self.members[c.member].participant;
            if work.results[c.call].is_none() && member.waits_on(&c.waiting.id) {
                work.parked.push(c);
            }
        }
        for k in 0..work.calls.len() {
            let known = work.results[k].is_some() || work.parked.iter().any(|p| p.call == k);
            if let (false, Some(parked)) = (known, found_parked(&self.members, &work, k)) {
                work.parked.push(parked);
            }
        }
        if work.parked.is_empty() {
            return;
        }
        for (k, (call, _)) in work.calls.iter().enumerate() {
            let waits = |p: &ParkedMember| p.call == k || p.queued.iter().any(|(q, _)| *q == k);
            if work.results[k].is_none() && !work.parked.iter().any(waits) {
                work.results[k] = Some(interrupted(&call.id));
            }
        }
        self.waiting.put_back(Parked {
            leader_reply: work.leader_reply,
            calls: work.calls,
            results: work.results,
            members: work.parked,
        });
    }

    /// Whether the team was interrupted during this run.
    fn stopped(&self) -> bool {
        crate::pipeline::stopped(self.stop.as_ref())
    }

    /// The run is over: nothing more to stream, nothing left to interrupt.
    fn finish(&mut self) {
        self.phase = Phase::Done;
        self.stop = None;
    }

    /// Resumes the parked leader with `input`. An interrupt that came after the caller looked
    /// (when the leader was not replying yet) reaches the leader's new reply (closing a parked
    /// reply, the agent shields its ending: the interrupt changes nothing there).
    fn resume_leader(&self, input: ReplyInput) -> Phase {
        let stream = self.leader.reply_stream(input);
        if self.stopped() {
            self.leader.interrupt();
        }
        Phase::Leader(Box::pin(stream))
    }

    /// Starts the members on the leader's assignments: concurrently across members, in call
    /// order for one member. An assignment naming no member gets an error result at once. Once
    /// the team is interrupted, no further task starts.
    fn assign(&mut self, leader_reply: Id, assignments: Vec<ToolCallBlock>) -> Phase {
        let mut calls = Vec::new();
        let mut results = Vec::new();
        let mut groups: Vec<(usize, Tasks)> = Vec::new();
        for call in assignments {
            let k = calls.len();
            match parse_assignment(&call, &self.members) {
                Ok((member, prompt)) => {
                    match groups.iter_mut().find(|(m, _)| *m == member) {
                        Some((_, group)) => group.push((k, prompt)),
                        None => groups.push((member, vec![(k, prompt)])),
                    }
                    calls.push((call, Some(member)));
                    results.push(None);
                }
                Err(text) => {
                    results.push(Some(ToolResultBlock::new(
                        &call.id,
                        ASSIGN_TOOL,
                        text,
                        ToolResultState::Error,
                    )));
                    calls.push((call, None));
                }
            }
        }
        let leader: Arc<str> = Arc::from(self.leader.name());
        let stop = self.stop.clone().unwrap_or_default();
        let streams: Vec<Assigned> = groups
            .iter()
            .map(|(member, group)| {
                let participant = Arc::clone(&self.members[*member].participant);
                member_tasks(participant, Arc::clone(&leader), None, group.clone(), Arc::clone(&stop))
            })
            .collect();
        Phase::Members(Box::new(Working {
            merged: Box::pin(futures_util::stream::select_all(streams)),
            calls,
            results,
            leader_reply,
            tasks: groups,
            parked: Vec::new(),
            resuming: None,
            asked: Vec::new(),
            resumed: None,
            error: None,
            closing: Vec::new(),
        }))
    }
}

/// The member of call `k`, parked in a reply it asked about in this run (or in any, the member
/// this run resumed), though its waiting message never reached the run: the run was dropped.
fn found_parked(members: &[TeamMember], work: &Working, k: usize) -> Option<ParkedMember> {
    let member = work.calls.get(k)?.1?;
    let participant = &members[member].participant;
    let reply = participant.parked_reply()?;
    let asked = work.asked.iter().any(|(q, asked)| *q == k && *asked == reply);
    (asked || work.resumed == Some(k)).then(|| ParkedMember {
        member,
        call: k,
        waiting: waiting_note(participant.name(), reply),
        queued: work.queued_after(member, k),
    })
}

/// The name of the member of call `k` (`team` for a call that named no member).
fn speaker(members: &[TeamMember], calls: &[(ToolCallBlock, Option<usize>)], k: usize) -> Arc<str> {
    let member = calls.get(k).and_then(|(_, m)| *m);
    member.map_or(Arc::from("team"), |m| Arc::from(members[m].participant.name()))
}

impl Drop for TeamRun {
    /// A run dropped while members wait for the user leaves them to the pipeline.
    fn drop(&mut self) {
        self.keep_parked();
    }
}

/// One member's tasks of a run, one after another: `first` (a resumed task already started),
/// then `tasks`, each as a reply to a message from the leader. The member's items come with
/// their call's index. A reply that parks for the user ends the stream (the tasks after it
/// wait with it; one that parked although the team was interrupted is closed by the run, see
/// `members_done`). So does a reply that fails while the member is parked in a reply it asked
/// about in that task (or in any, the resumed one: it may park again without asking): a
/// pipeline member failing with a question of its own waiting. Its waiting message (under the
/// parked reply's id) comes first, then its error. Once the team is interrupted, no further
/// task starts.
fn member_tasks(
    participant: Arc<dyn Participant>,
    leader: Arc<str>,
    first: Option<(usize, EventStream)>,
    tasks: Tasks,
    stop: Arc<AtomicBool>,
) -> Assigned {
    struct Member {
        participant: Arc<dyn Participant>,
        leader: Arc<str>,
        current: Option<(usize, EventStream)>,
        queue: VecDeque<(usize, String)>,
        stop: Arc<AtomicBool>,
        parked: bool,
        /// The replies the current task asked about (its `REQUIRE_*` events).
        asked: Vec<Id>,
        /// Whether the current task is the resumed one.
        resumed: bool,
        /// The error that follows a failed member's waiting message.
        then: Option<(usize, Result<ReplyItem, AgentError>)>,
    }
    let state = Member {
        participant,
        leader,
        resumed: first.is_some(),
        current: first,
        queue: tasks.into(),
        stop,
        parked: false,
        asked: Vec::new(),
        then: None,
    };
    Box::pin(futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(item) = s.then.take() {
                return Some((item, s));
            }
            if s.current.is_none() {
                if s.parked || s.stop.load(Ordering::SeqCst) {
                    return None;
                }
                let (k, prompt) = s.queue.pop_front()?;
                let stream = s
                    .participant
                    .reply_stream(Msg::user(Arc::clone(&s.leader), prompt).into());
                // An interrupt between the check above and the start reaches the task.
                if s.stop.load(Ordering::SeqCst) {
                    s.participant.interrupt();
                }
                s.current = Some((k, stream));
                s.asked.clear();
                s.resumed = false;
            }
            let (k, stream) = s.current.as_mut()?;
            let k = *k;
            match stream.next().await {
                None => s.current = None,
                Some(Ok(ReplyItem::Final(msg))) if msg.finished_reason.is_none() => {
                    // The parked reply's stream goes first: while it is held, the member counts
                    // as replying and would refuse a resume or a closing.
                    s.current = None;
                    s.parked = true;
                    return Some(((k, Ok(ReplyItem::Final(msg))), s));
                }
                Some(Err(e)) => {
                    s.current = None;
                    let parked = s.participant.parked_reply();
                    let Some(reply) = parked.filter(|reply| s.resumed || s.asked.contains(reply)) else {
                        return Some(((k, Err(e)), s));
                    };
                    s.parked = true;
                    s.then = Some((k, Err(e)));
                    let waiting = waiting_note(s.participant.name(), reply);
                    return Some(((k, Ok(ReplyItem::Final(waiting))), s));
                }
                Some(Ok(ReplyItem::Event(event))) => {
                    if let Some(reply) = asks_about(&event) {
                        s.asked.push(reply.clone());
                    }
                    return Some(((k, Ok(ReplyItem::Event(event))), s));
                }
                Some(item) => return Some(((k, item), s)),
            }
        }
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use futures_util::StreamExt;
    use towerscope_core::ReplyFinishedReason;
    use towerscope_models::{ScriptedModel, ScriptedResponse};

    use super::*;

    /// The final message of a run of `team` asked to "Do it." whose stop is raised from its
    /// start (as when the team is interrupted after the leader's last check), the only item of
    /// the run's own.
    async fn stopped_at_once(team: super::super::TeamPipeline) -> Msg {
        let leader = team.leader.clone();
        let stream = Box::pin(leader.reply_stream(Msg::user("user", "Do it.")));
        let stop = Arc::new(AtomicBool::new(true));
        let run = TeamRun::new(leader, team.members, stream, stop, team.waiting.clone());
        let own: Vec<_> = futures_util::stream::unfold(run, TeamRun::next)
            .filter_map(|(tagged, own)| std::future::ready(own.then_some(tagged.item)))
            .collect()
            .await;
        match <[_; 1]>::try_from(own) {
            Ok([Ok(ReplyItem::Final(last))]) => last,
            other => panic!("one final message: {other:?}"),
        }
    }

    /// The team was interrupted after the leader's last interrupt check, before the run saw
    /// its parked final message: the run closes the parked reply, and the leader is free.
    #[tokio::test]
    async fn a_stop_raised_as_the_leader_parks_closes_its_reply() {
        let assign = ScriptedResponse::tool_call("t1", ASSIGN_TOOL, r#"{"member": "worker", "prompt": "One."}"#);
        let leader_model = ScriptedModel::new("m", [assign, ScriptedResponse::text("continued")]);
        let worker_model = ScriptedModel::new("m", [ScriptedResponse::text("done")]);
        let worker = Agent::builder("worker").model(worker_model.clone()).build().unwrap();
        let builder = Agent::builder("lead").model(leader_model);
        let team = super::super::TeamPipeline::new(builder, [TeamMember::new(worker, "Works.")]).unwrap();
        let leader = team.leader.clone();

        let last = stopped_at_once(team).await;
        assert_eq!(last.finished_reason, Some(ReplyFinishedReason::Interrupted));
        assert_eq!(worker_model.calls(), 0, "no task starts");
        let again = leader.reply(Msg::user("user", "And now?")).await.unwrap();
        assert_eq!(again.text_content().as_deref(), Some("continued"), "the leader is free");
    }

    /// The same for a leader that parks for the user (a confirmation of its own tool): its
    /// question is closed, not left waiting in an interrupted team.
    #[tokio::test]
    async fn a_stop_raised_as_the_leader_asks_the_user_closes_its_question() {
        let leader_model = ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/x"}"#),
                ScriptedResponse::text("continued"),
            ],
        );
        let worker = Agent::builder("worker")
            .model(ScriptedModel::new("m", [ScriptedResponse::text("done")]))
            .build()
            .unwrap();
        let lead = Agent::builder("lead")
            .model(leader_model.clone())
            .tool(towerscope_agent::toolkit::FunctionTool::new(
                "delete",
                |a: serde_json::Value| async move { a.to_string() },
            ))
            .default_permission(towerscope_core::PermissionDecision::Ask {
                suggested_rules: vec![],
            });
        let team = super::super::TeamPipeline::new(lead, [TeamMember::new(worker, "Works.")]).unwrap();
        let leader = team.leader.clone();

        let last = stopped_at_once(team).await;
        assert_eq!(last.finished_reason, Some(ReplyFinishedReason::Interrupted));
        assert_eq!(leader.waiting_calls(), None, "the question is closed");
        assert_eq!(leader_model.calls(), 1);
    }
}
