//! [`GoalPipeline`]: an executor works towards a goal and a verifier checks the result, round
//! after round, until the verifier passes it (the reference's 2.x goal-driven pipeline).

mod executor;
mod outcome;
mod run;
mod texts;

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use towerscope_agent::Agent;
use towerscope_core::{AgentError, ContentBlock, EventStream, Messages, Msg, ReplyInput, TextBlock};

pub use outcome::{GoalOutcome, Verdict};
pub use run::GOAL_VERIFICATION;

use self::executor::Executor;
use self::outcome::{GoalLimits, Progress};
use self::run::{GoalRun, Phase};
use super::Runs;
use super::team::TeamPipeline;
use crate::Participant;

/// An executor that works on a goal, and a verifier that checks its work: the reference's
/// `GoalPipeline`, a goal-driven team whose checker decides when the work is done.
///
/// ```text
///  goal ──▶ executor ──(report)──▶ verifier ──pass / impossible──▶ end: the executor's reply
///              ▲                       │
///              └──── fail: feedback ───┘   (at most `max_iters` failed rounds)
/// ```
///
/// 1. The executor receives the goal with a reminder to report what it did, and must answer
///    with the structured output `{"report": ..}` (`ExecutionReport`).
/// 2. The verifier receives the goal and the report and must answer with
///    `{"result": "pass" | "fail" | "impossible", "message": ..}` (`VerificationResult`).
/// 3. `pass` or `impossible` ends the run. `fail` sends the verifier's message to the executor
///    as feedback, clears the verifier's conversation ([`verifier_reset_context`], on by
///    default), and starts the next round; after [`max_iters`] failed rounds the run ends.
/// 4. A reply without a valid structured output is asked for again, at most [`max_retries`]
///    times per participant over a run; then the stream ends with an error.
///
/// The stream carries both participants' events, a `CUSTOM` [`GOAL_VERIFICATION`] event after
/// each verification (`round`, `result`, `message`), and ends with the executor's last final
/// message; [`outcome`](Self::outcome) gives the last verdict. A participant that parks for
/// the user (a confirmation, an external tool) parks the pipeline: its waiting message ends the
/// stream, and the resuming input, addressed to its reply, continues the run where it stopped
/// (with the same budget of rounds and retries).
///
/// [`interrupt`](Participant::interrupt) stops the run: the reply in progress is interrupted,
/// and no further one starts (no check of the report, no retry, no next round); the stream
/// ends with the interrupted reply, or, when the interrupt came between two replies, with the
/// executor's last final message marked interrupted. A participant that parks although the
/// run was stopped (the interrupt came after its reply decided to wait) does not park the
/// pipeline: it closes its parked reply at once (as a `UserInterruptEvent` would; its calls get
/// interrupted results, and its events are streamed), its interrupted message ends the stream,
/// and the pipeline waits for nothing (a resume is refused; a new goal starts a new run).
///
/// [`verifier_reset_context`]: Self::verifier_reset_context
/// [`max_iters`]: Self::max_iters
/// [`max_retries`]: Self::max_retries
///
/// # Example
///
/// ```
/// use towerscope_agent::Agent;
/// use towerscope_core::Msg;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
/// use towerscope_team::pipeline::{GoalPipeline, Verdict};
/// use towerscope_team::Participant;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), towerscope_core::AgentError> {
/// let report = |text: &str| ScriptedResponse::tool_call("r", "GenerateStructuredOutput", &format!(r#"{{"report": "{text}"}}"#));
/// let executor = Agent::builder("coder")
///     .model(ScriptedModel::new("m", [report("wrote hello.txt"), report("wrote hello.txt, with a newline")]))
///     .build()?;
/// let verifier = Agent::builder("checker")
///     .model(ScriptedModel::new("m", [
///         ScriptedResponse::tool_call("v", "GenerateStructuredOutput", r#"{"result": "fail", "message": "no newline"}"#),
///         ScriptedResponse::tool_call("v", "GenerateStructuredOutput", r#"{"result": "pass", "message": ""}"#),
///     ]))
///     .build()?;
/// let goal = GoalPipeline::new(executor, verifier);
/// let last = goal.reply(Msg::user("user", "Write hello.txt ending with a newline.").into()).await?;
/// assert_eq!(last.structured_output.unwrap()["report"], "wrote hello.txt, with a newline");
/// let outcome = goal.outcome().unwrap();
/// assert_eq!((outcome.verdict, outcome.rounds), (Verdict::Pass, 2));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct GoalPipeline {
    executor: Executor,
    verifier: Agent,
    limits: GoalLimits,
    progress: Arc<Mutex<Progress>>,
    runs: Arc<Runs>,
}

impl GoalPipeline {
    /// The pipeline of `executor` and `verifier`, with the reference's defaults (10 rounds, 3
    /// retries, the verifier's conversation cleared after each failed round).
    pub fn new(executor: Agent, verifier: Agent) -> Self {
        Self::with_executor(Executor::Agent(executor), verifier)
    }

    /// A team works on the goal: its leader plans and assigns tasks to the members (a
    /// [`TeamPipeline`]) and must answer with the report; `verifier` checks it, and sends the
    /// leader back with its feedback, as for one executor.
    pub fn team(team: TeamPipeline, verifier: Agent) -> Self {
        Self::with_executor(Executor::Team(team), verifier)
    }

    fn with_executor(executor: Executor, verifier: Agent) -> Self {
        Self {
            executor,
            verifier,
            limits: GoalLimits::default(),
            progress: Arc::default(),
            runs: Arc::default(),
        }
    }

    /// How many rounds the verifier may fail before the run ends (reference `max_iters`,
    /// default 10; at least 1).
    #[must_use]
    pub fn max_iters(mut self, rounds: u32) -> Self {
        self.limits.max_iters = rounds.max(1);
        self
    }

    /// How many replies without a valid structured output each participant may retry over a
    /// run before it fails (reference `max_retries`, default 3).
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.limits.max_retries = retries;
        self
    }

    /// Whether the verifier forgets its conversation after each failed round (default `true`:
    /// it judges each report afresh).
    #[must_use]
    pub fn verifier_reset_context(mut self, reset: bool) -> Self {
        self.limits.verifier_reset_context = reset;
        self
    }

    /// The agent whose reply carries the report: the executor, or the team's leader.
    pub fn executor(&self) -> &Agent {
        self.executor.agent()
    }

    /// The verifier.
    pub fn verifier(&self) -> &Agent {
        &self.verifier
    }

    /// The last verification of the current or last run, if there was one.
    pub fn outcome(&self) -> Option<GoalOutcome> {
        self.progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .outcome
            .clone()
    }

    fn run(&self, input: ReplyInput) -> Result<GoalRun, AgentError> {
        let (stop, alone) = self.runs.start_alone();
        let mut run = GoalRun {
            executor: self.executor.clone(),
            verifier: self.verifier.clone(),
            limits: self.limits,
            progress: Arc::clone(&self.progress),
            phase: Phase::Done,
            stop: Some(stop),
        };
        run.phase = if let ReplyInput::Messages(msgs) = &input {
            // A run in progress, or one parked for the user, keeps its goal and budgets: a new
            // goal is refused (as the busy or parked participant would refuse it) before
            // anything of that run is touched.
            if !alone {
                return Err(AgentError::State(
                    "the goal pipeline is working on a goal; wait for it, or interrupt it, before a new goal"
                        .to_owned(),
                ));
            }
            if let Some(parked) = Participant::parked_reply(self) {
                return Err(AgentError::State(format!(
                    "the goal pipeline waits on reply {parked}; answer or interrupt it before a new goal"
                )));
            }
            let (goal, first) = goal_of(msgs);
            *self.progress.lock().unwrap_or_else(PoisonError::into_inner) = Progress {
                goal,
                ..Progress::default()
            };
            Phase::Executor(run.start_executor(first.into()))
        } else {
            let reply = input.resumed_reply().cloned().unwrap_or_default();
            let interrupt = matches!(input, ReplyInput::Interrupt(_));
            // An interrupt goes to a reply that waits (a parked one); naming a reply that
            // ended, it is refused, as the other pipelines refuse it (passed on, it ended the
            // stream without a final message). Other resumes of an ended reply go to its
            // participant, which says why it refuses them.
            let parked = |agent: &towerscope_agent::Agent| agent.waiting_calls().is_some_and(|w| w.reply_id == reply);
            let (executor, verifier) = if interrupt {
                (
                    parked(self.executor.agent()) || self.executor.member_waits_on(&reply),
                    parked(&self.verifier),
                )
            } else {
                (
                    self.executor.waits_on(&reply),
                    self.verifier.state().reply_context.reply_id == reply,
                )
            };
            match (executor, verifier) {
                (true, _) if interrupt => Phase::Passthrough(self.executor.reply_stream(input)),
                (_, true) if interrupt => Phase::Passthrough(Box::pin(self.verifier.reply_stream(input))),
                (true, _) => Phase::Executor(run.start_executor(input)),
                (_, true) => run.resume_verifier(input)?,
                _ => {
                    return Err(AgentError::validation(format!(
                        "neither the executor nor the verifier of the goal pipeline waits on the reply {reply}"
                    )));
                }
            }
        };
        Ok(run)
    }
}

/// The goal (the text and data blocks of the input) and the executor's first input: the
/// input with the reminder to report, appended to a single message, or as a message of its
/// own after several.
fn goal_of(msgs: &Messages) -> (Vec<ContentBlock>, Messages) {
    let goal = msgs
        .iter()
        .flat_map(|m| m.content.iter())
        .filter(|b| matches!(b, ContentBlock::Text(_) | ContentBlock::Data(_)))
        .cloned()
        .collect();
    let mut first = msgs.clone();
    if first.len() == 1 {
        if let Some(only) = first.last_mut() {
            only.content.push(TextBlock::new(texts::REPORT_HINT).into());
        }
    } else {
        first.push(Msg::user("system", texts::REPORT_HINT));
    }
    (goal, first)
}

impl Participant for GoalPipeline {
    /// The executor's name: the pipeline answers with its work.
    fn name(&self) -> &str {
        self.executor.agent().name()
    }

    fn reply_stream(&self, input: ReplyInput) -> EventStream {
        match self.run(input) {
            Ok(run) => Box::pin(futures_util::stream::unfold(run, GoalRun::next)),
            Err(e) => Box::pin(futures_util::stream::iter([Err(e)])),
        }
    }

    /// The executor observes (the verifier sees only the goal and the reports).
    fn observe(&self, msgs: Vec<Msg>) -> Result<(), AgentError> {
        self.executor.observe(msgs)
    }

    /// Stops the runs in progress (no further reply starts: see [`GoalPipeline`]), then
    /// interrupts the executor and the verifier.
    fn interrupt(&self) -> bool {
        let runs = self.runs.stop();
        let executor = self.executor.interrupt();
        let verifier = self.verifier.interrupt();
        runs || executor || verifier
    }

    /// The executor's parked reply (or its team leader's or members'), else the verifier's.
    fn parked_reply(&self) -> Option<towerscope_core::Id> {
        self.executor
            .parked_reply()
            .or_else(|| super::parked_for_the_user(&self.verifier))
    }

    /// The executor's parked reply (a team's leader's or any of its members' questions), or
    /// the verifier's.
    fn waits_on(&self, reply: &towerscope_core::Id) -> bool {
        let executor = match &self.executor {
            Executor::Agent(agent) => super::parked_for_the_user(agent).as_ref() == Some(reply),
            Executor::Team(team) => team.waits_on(reply),
        };
        executor || super::parked_for_the_user(&self.verifier).as_ref() == Some(reply)
    }
}

impl fmt::Debug for GoalPipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GoalPipeline")
            .field("executor", &self.executor.agent().name())
            .field("verifier", &self.verifier.name())
            .field("limits", &self.limits)
            .finish()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use futures_util::StreamExt;
    use towerscope_core::{AgentEvent, ReplyFinishedReason, ReplyItem};
    use towerscope_models::{ScriptedModel, ScriptedResponse};

    use super::*;

    /// The interrupt reached the run while the executor's reply was past its last interrupt
    /// check (the reply completes with its report): the verifier does not start.
    #[tokio::test]
    async fn a_run_stopped_as_the_executor_reports_checks_nothing() {
        let output = |id: &str, args: &str| ScriptedResponse::tool_call(id, "GenerateStructuredOutput", args);
        let executor_model = ScriptedModel::new("m", [output("r1", r#"{"report": "done"}"#)]);
        let verifier_model = ScriptedModel::new("m", [output("v1", r#"{"result": "pass", "message": ""}"#)]);
        let executor = Agent::builder("coder").model(executor_model).build().unwrap();
        let verifier = Agent::builder("checker").model(verifier_model.clone()).build().unwrap();
        let goal = GoalPipeline::new(executor, verifier);

        let stream = goal.reply_stream(Msg::user("user", "Do it.").into());
        assert!(goal.runs.stop(), "the run is in progress");
        let items: Vec<_> = stream.map(Result::unwrap).collect().await;

        let started = items.iter().filter_map(|item| match item {
            ReplyItem::Event(AgentEvent::ReplyStart(e)) => Some(&*e.name),
            _ => None,
        });
        assert_eq!(started.collect::<Vec<_>>(), ["coder"], "the verifier does not start");
        assert_eq!(verifier_model.calls(), 0);
        let Some(ReplyItem::Final(last)) = items.last() else {
            panic!("the stream ends with a final message");
        };
        assert_eq!(last.finished_reason, Some(ReplyFinishedReason::Interrupted));
        assert_eq!(last.structured_output.as_ref().unwrap()["report"], "done");
    }

    /// The run was stopped after the executor's last interrupt check, and its reply parked
    /// for a confirmation: the executor closes its parked reply, nothing is checked, and the
    /// pipeline waits for nothing.
    #[tokio::test]
    async fn a_stop_raised_as_the_executor_parks_closes_its_reply() {
        use crate::pipeline::asking::{allow_all, asking, assert_calls_closed, closed_after_asking};

        let output = |id: &str, args: &str| ScriptedResponse::tool_call(id, "GenerateStructuredOutput", args);
        let executor = asking("coder", output("r1", r#"{"report": "nothing to delete"}"#));
        let verifier_model = ScriptedModel::new("m", [output("v1", r#"{"result": "pass", "message": ""}"#)]);
        let verifier = Agent::builder("checker").model(verifier_model.clone()).build().unwrap();
        let goal = GoalPipeline::new(executor.clone(), verifier);

        let stream = goal.reply_stream(Msg::user("user", "Clean up.").into());
        assert!(goal.runs.stop(), "the run is in progress");
        let items: Vec<_> = stream.map(Result::unwrap).collect().await;

        let (asked, _) = closed_after_asking(&items);
        assert_calls_closed(&executor);
        assert_eq!(verifier_model.calls(), 0, "an interrupted run is not checked");
        assert!(!goal.interrupt(), "nothing runs any more");

        // The pipeline waits for nothing: the confirmation is refused, a new goal runs.
        goal.reply(allow_all(asked)).await.unwrap_err();
        let again = goal.reply(Msg::user("user", "Again.").into()).await.unwrap();
        assert_eq!(again.structured_output.unwrap()["report"], "nothing to delete");
        assert_eq!(goal.outcome().unwrap().verdict, Verdict::Pass);
    }
}
