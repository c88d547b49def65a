//! One run of the team pipeline: the leader replies, the members work on its assignments,
//! their answers go back to the leader, until the leader's reply ends (or the team is
//! interrupted).

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
use crate::pipeline::assign::{ASSIGN_TOOL, parse_assignment, result_of};
use crate::pipeline::merge::Tagged;

type Assigned = std::pin::Pin<Box<dyn futures_core::Stream<Item = (usize, Result<ReplyItem, AgentError>)> + Send>>;

/// Starts the leader's reply of a run.
pub(super) type Start = Box<dyn FnOnce() -> EventStream + Send>;

enum Phase {
    /// The leader closes a reply whose run was dropped while its members worked (nobody reads
    /// that reply any more: its items are not the run's), then starts the run's own.
    Closing(EventStream, Option<Start>),
    Leader(EventStream),
    Members {
        merged: Assigned,
        calls: Vec<(ToolCallBlock, Option<usize>)>,
        results: Vec<Option<ToolResultBlock>>,
        leader_reply: Id,
    },
    Done,
}

/// The state of one run, from which [`TeamRun::next`] unfolds the run's stream.
pub(super) struct TeamRun {
    leader: Agent,
    members: Arc<[TeamMember]>,
    phase: Phase,
    assignments: Vec<ToolCallBlock>,
    /// Raised by the pipeline's `interrupt`; `None` once the run is over.
    stop: Option<Arc<AtomicBool>>,
}

impl TeamRun {
    /// A run of `leader`'s reply `stream` with `members`, stopped when `stop` is raised.
    pub(super) fn new(leader: Agent, members: Arc<[TeamMember]>, stream: EventStream, stop: Arc<AtomicBool>) -> Self {
        Self::in_phase(leader, members, Phase::Leader(stream), stop)
    }

    /// A run that first closes the leader's parked reply `orphan`, whose assignments no run
    /// carries out any more, then starts its own reply with `start`.
    pub(super) fn closing_first(
        leader: Agent,
        members: Arc<[TeamMember]>,
        orphan: Id,
        start: Start,
        stop: Arc<AtomicBool>,
    ) -> Self {
        let close = Box::pin(leader.reply_stream(UserInterruptEvent::new(orphan)));
        Self::in_phase(leader, members, Phase::Closing(close, Some(start)), stop)
    }

    fn in_phase(leader: Agent, members: Arc<[TeamMember]>, phase: Phase, stop: Arc<AtomicBool>) -> Self {
        Self {
            leader,
            members,
            phase,
            assignments: Vec::new(),
            stop: Some(stop),
        }
    }

    /// The run's next item, tagged with its speaker, and whether it is the run's own final
    /// item (the leader's last).
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
                    match item {
                        Some(Ok(ReplyItem::Event(AgentEvent::RequireExternalExecution(e))))
                            if e.tool_calls.iter().all(|c| c.name == ASSIGN_TOOL) =>
                        {
                            self.assignments.extend(e.tool_calls);
                        }
                        Some(Ok(ReplyItem::Final(msg)))
                            if msg.finished_reason.is_none() && !self.assignments.is_empty() =>
                        {
                            // The parked reply's stream goes first: while it is held, the leader
                            // counts as replying and a resume of it would be refused.
                            drop(std::mem::replace(&mut self.phase, Phase::Done));
                            self.phase = if self.stopped() {
                                self.assignments.clear();
                                self.resume_leader(UserInterruptEvent::new(msg.id.clone()).into())
                            } else {
                                self.assign(msg.id.clone())
                            };
                        }
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
                Phase::Members {
                    merged,
                    calls,
                    results,
                    leader_reply,
                } => {
                    let Some((k, item)) = merged.next().await else {
                        let leader_reply = leader_reply.clone();
                        let results: Vec<ToolResultBlock> = results.drain(..).flatten().collect();
                        // Interrupted: the leader's reply ends, its assignments interrupted.
                        let resume: ReplyInput = if self.stopped() {
                            UserInterruptEvent::new(leader_reply).into()
                        } else {
                            ExternalExecutionResultEvent::new(leader_reply, results).into()
                        };
                        self.phase = self.resume_leader(resume);
                        continue;
                    };
                    let (call, member) = &calls[k];
                    let name = member.map_or(Arc::from("team"), |m| {
                        Arc::<str>::from(self.members[m].participant.name())
                    });
                    match item {
                        Ok(ReplyItem::Final(msg)) => {
                            results[k] = Some(result_of(call, &msg));
                            return Some(((Tagged::new(name, Ok(ReplyItem::Final(msg))), false), self));
                        }
                        Ok(event) => return Some(((Tagged::new(name, Ok(event)), false), self)),
                        Err(e) => {
                            let text = format!("The member '{name}' failed: {e}");
                            results[k] = Some(ToolResultBlock::new(
                                &call.id,
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
    fn assign(&mut self, leader_reply: Id) -> Phase {
        let assignments = std::mem::take(&mut self.assignments);
        let mut calls = Vec::new();
        let mut results = Vec::new();
        let mut groups: Vec<(usize, Vec<(usize, String)>)> = Vec::new();
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
        let streams = groups.into_iter().map(|(member, group)| {
            let participant = Arc::clone(&self.members[member].participant);
            let leader = Arc::clone(&leader);
            let (before, after) = (Arc::clone(&stop), Arc::clone(&stop));
            futures_util::stream::iter(group)
                .take_while(move |_| std::future::ready(!before.load(Ordering::SeqCst)))
                .map(move |(k, prompt)| {
                    let stream = participant.reply_stream(Msg::user(Arc::clone(&leader), prompt).into());
                    // An interrupt between the check above and the start reaches the task.
                    if after.load(Ordering::SeqCst) {
                        participant.interrupt();
                    }
                    stream.map(move |item| (k, item))
                })
                .flatten()
        });
        Phase::Members {
            merged: Box::pin(futures_util::stream::select_all(streams)),
            calls,
            results,
            leader_reply,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use futures_util::StreamExt;
    use towerscope_core::ReplyFinishedReason;
    use towerscope_models::{ScriptedModel, ScriptedResponse};

    use super::*;

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

        let stream = Box::pin(leader.reply_stream(Msg::user("user", "Do it.")));
        let run = TeamRun::new(leader.clone(), team.members, stream, Arc::new(AtomicBool::new(true)));
        let own: Vec<_> = futures_util::stream::unfold(run, TeamRun::next)
            .filter_map(|(tagged, own)| std::future::ready(own.then_some(tagged.item)))
            .collect()
            .await;

        let [Ok(ReplyItem::Final(last))] = &own[..] else {
            panic!("one final message: {own:?}");
        };
        assert_eq!(last.finished_reason, Some(ReplyFinishedReason::Interrupted));
        assert_eq!(worker_model.calls(), 0, "no task starts");
        let again = leader.reply(Msg::user("user", "And now?")).await.unwrap();
        assert_eq!(again.text_content().as_deref(), Some("continued"), "the leader is free");
    }
}
