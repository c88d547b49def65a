//! One run of the goal pipeline, step by step: the executor works until it reports, the
//! verifier judges the report, and a failed verdict sends the executor back with the
//! verifier's message, within the bounds of [`GoalLimits`].

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_util::StreamExt;
use serde_json::{Map, Value};
use towerscope_agent::Agent;
use towerscope_core::event::{CustomEvent, UserInterruptEvent};
use towerscope_core::{
    AgentError, AgentEvent, ContentBlock, EventStream, Msg, ReplyFinishedReason, ReplyInput, ReplyItem, Role, TextBlock,
};

use super::executor::Executor;
use super::outcome::{GoalLimits, GoalOutcome, Progress, Verdict};
use super::texts;
use crate::pipeline::stopped;

/// The name of the `CUSTOM` event that carries each verification (`round`, `result`,
/// `message`).
pub const GOAL_VERIFICATION: &str = "goal_verification";

/// Where a run is.
pub(super) enum Phase {
    /// A resumed interrupt, or the closing of a reply that parked after the run was stopped:
    /// the parked participant's stream, passed through as it is.
    Passthrough(EventStream),
    /// The executor is working (or retrying its report).
    Executor(EventStream),
    /// The verifier is judging; `instruction` is what it was told, for a retry.
    Verifier { stream: EventStream, instruction: Box<Msg> },
    /// The next reply, started when the stream is polled again unless the run was interrupted
    /// by then.
    Next(Next),
    /// Verified (or out of rounds): the executor's final message ends the stream.
    Finish,
    /// Nothing more.
    Done,
}

/// A reply the run starts next.
pub(super) enum Next {
    /// The executor, on this input (a retry, or the verifier's feedback).
    Executor(ReplyInput),
    /// The verifier, on this instruction.
    Verifier(Box<Msg>),
}

type Step = Result<ReplyItem, AgentError>;

pub(super) struct GoalRun {
    pub(super) executor: Executor,
    pub(super) verifier: Agent,
    pub(super) limits: GoalLimits,
    pub(super) progress: Arc<Mutex<Progress>>,
    pub(super) phase: Phase,
    /// Raised by the pipeline's `interrupt`; `None` once the run is over.
    pub(super) stop: Option<Arc<AtomicBool>>,
}

impl GoalRun {
    /// The next item of the stream.
    pub(super) async fn next(mut self) -> Option<(Step, Self)> {
        let item = self.step().await?;
        if matches!(self.phase, Phase::Done) {
            self.stop = None; // the run is over: nothing left to interrupt
        }
        Some((item, self))
    }

    /// The next item; the phase is `Done` after the last one.
    async fn step(&mut self) -> Option<Step> {
        loop {
            match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Done => return None,
                Phase::Finish => return Some(self.executor_final(None)),
                Phase::Next(_) if stopped(self.stop.as_ref()) => {
                    return Some(self.executor_final(Some(ReplyFinishedReason::Interrupted)));
                }
                Phase::Next(next) => self.phase = self.start(next),
                Phase::Passthrough(mut stream) => {
                    let item = stream.next().await?;
                    if matches!(item, Ok(ReplyItem::Event(_))) {
                        self.phase = Phase::Passthrough(stream);
                    }
                    return Some(item);
                }
                Phase::Executor(mut stream) => match stream.next().await {
                    Some(Ok(ReplyItem::Event(e))) => {
                        self.phase = Phase::Executor(stream);
                        return Some(Ok(ReplyItem::Event(e)));
                    }
                    Some(Ok(ReplyItem::Final(msg))) => {
                        drop(stream); // the executor is free again
                        if let Some(item) = self.executor_replied(msg) {
                            return Some(item);
                        }
                    }
                    Some(Err(e)) => return Some(Err(e)),
                    None => return Some(Err(ended("executor"))),
                },
                Phase::Verifier {
                    mut stream,
                    instruction,
                } => match stream.next().await {
                    Some(Ok(ReplyItem::Event(e))) => {
                        self.phase = Phase::Verifier { stream, instruction };
                        return Some(Ok(ReplyItem::Event(e)));
                    }
                    Some(Ok(ReplyItem::Final(msg))) => {
                        drop(stream); // the verifier is free again (its context may be reset)
                        if let Some(item) = self.verifier_replied(msg, *instruction) {
                            return Some(item);
                        }
                    }
                    Some(Err(e)) => return Some(Err(e)),
                    None => return Some(Err(ended("verifier"))),
                },
            }
        }
    }

    /// The executor's last final message ends the run, with `reason` if given (an interrupt
    /// between two replies ends the run with the work so far, marked interrupted).
    fn executor_final(&self, reason: Option<ReplyFinishedReason>) -> Step {
        let mut last =
            self.progress().executor_final.clone().ok_or_else(|| {
                AgentError::State("the goal pipeline finished without the executor's reply".to_owned())
            })?;
        if reason.is_some() {
            last.finished_reason = reason;
        }
        Ok(ReplyItem::Final(last))
    }

    /// Starts the `next` reply. An interrupt that came after the caller looked (when neither
    /// was replying) reaches the reply just started.
    fn start(&self, next: Next) -> Phase {
        let phase = match next {
            Next::Executor(input) => Phase::Executor(self.start_executor(input)),
            Next::Verifier(instruction) => self.start_verifier(*instruction),
        };
        if stopped(self.stop.as_ref()) {
            match phase {
                Phase::Executor(_) => self.executor.interrupt(),
                _ => self.verifier.interrupt(),
            };
        }
        phase
    }

    fn progress(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The executor's reply ended: park, verify its report, or ask again for one.
    fn executor_replied(&mut self, mut msg: Msg) -> Option<Step> {
        self.executor.name_parked(&mut msg);
        if self.parked_when_stopped(&msg) {
            let closing: ReplyInput = UserInterruptEvent::new(msg.id).into();
            self.phase = Phase::Passthrough(self.executor.reply_stream(closing));
            return None;
        }
        if stops_the_run(&msg) {
            return Some(Ok(ReplyItem::Final(msg)));
        }
        let report = (msg.finished_reason == Some(ReplyFinishedReason::Completed))
            .then(|| {
                msg.structured_output
                    .as_ref()?
                    .get("report")?
                    .as_str()
                    .map(str::to_owned)
            })
            .flatten();
        let Some(report) = report else {
            let retries = {
                let mut p = self.progress();
                p.executor_retries += 1;
                p.executor_retries
            };
            if retries > self.limits.max_retries {
                return Some(Err(out_of_retries(
                    "executor",
                    "execution report",
                    self.limits.max_retries,
                )));
            }
            // The reply the run ends with if it is interrupted before the retry starts.
            self.progress().executor_final = Some(msg);
            let retry = Msg::user("system", texts::REPORT_RETRY);
            self.phase = Phase::Next(Next::Executor(retry.into()));
            return None;
        };
        let instruction = {
            let mut p = self.progress();
            p.report = Some(report.clone());
            p.executor_final = Some(msg);
            verify_instruction(&p.goal, &report)
        };
        match instruction {
            Ok(instruction) => self.phase = Phase::Next(Next::Verifier(Box::new(instruction))),
            Err(e) => return Some(Err(e)),
        }
        None
    }

    /// The verifier's reply ended: park, end the run, send the executor back, or ask again
    /// for a valid result.
    fn verifier_replied(&mut self, mut msg: Msg, instruction: Msg) -> Option<Step> {
        crate::participant::named_by_its_reply(&self.verifier, &mut msg);
        if self.parked_when_stopped(&msg) {
            let closing: ReplyInput = UserInterruptEvent::new(msg.id).into();
            self.phase = Phase::Passthrough(Box::pin(self.verifier.reply_stream(closing)));
            return None;
        }
        if stops_the_run(&msg) {
            return Some(Ok(ReplyItem::Final(msg)));
        }
        if msg.finished_reason != Some(ReplyFinishedReason::Completed) {
            // Ended some other way (its own iteration limit): the same instruction again, as a
            // new message (the verifier holds the first, and stores a message it holds once).
            if let Err(e) = self.verifier_retry() {
                return Some(Err(e));
            }
            let again = instruction.with_id(towerscope_core::id::new_id());
            self.phase = Phase::Next(Next::Verifier(Box::new(again)));
            return None;
        }
        let output = msg.structured_output.as_ref();
        let verdict = output.and_then(|o| o.get("result")?.as_str()).and_then(Verdict::parse);
        let Some(verdict) = verdict else {
            if let Err(e) = self.verifier_retry() {
                return Some(Err(e));
            }
            let goal = self.progress().goal.clone();
            match retry_instruction(&goal) {
                Ok(instruction) => self.phase = Phase::Next(Next::Verifier(Box::new(instruction))),
                Err(e) => return Some(Err(e)),
            }
            return None;
        };
        let message = output
            .and_then(|o| o.get("message")?.as_str())
            .unwrap_or_default()
            .to_owned();
        let round = {
            let mut p = self.progress();
            let round = p.iters + 1;
            p.outcome = Some(GoalOutcome {
                verdict,
                message: message.clone(),
                report: p.report.clone().unwrap_or_default(),
                rounds: round,
            });
            round
        };
        let event = verification_event(round, verdict, &message);
        if verdict != Verdict::Fail {
            self.phase = Phase::Finish;
            return Some(Ok(event));
        }
        self.progress().iters = round;
        if self.limits.verifier_reset_context {
            // Only the conversation: tools and other state stay, as in the reference.
            let mut state = self.verifier.state();
            state.context = towerscope_core::Messages::new();
            state.summary.clear();
            if let Err(e) = self.verifier.load_state(state) {
                return Some(Err(e));
            }
        }
        self.phase = if round >= self.limits.max_iters {
            Phase::Finish
        } else {
            Phase::Next(Next::Executor(Msg::user("system", texts::feedback(&message)).into()))
        };
        Some(Ok(event))
    }

    /// Whether `msg` parked its reply although the run was stopped (the interrupt came after
    /// the reply decided to wait): the participant then closes its parked reply (its calls get
    /// interrupted results), and its interrupted message ends the run, which waits for nothing.
    fn parked_when_stopped(&self, msg: &Msg) -> bool {
        msg.finished_reason.is_none() && stopped(self.stop.as_ref())
    }

    fn verifier_retry(&mut self) -> Result<(), AgentError> {
        let mut p = self.progress();
        p.verifier_retries += 1;
        if p.verifier_retries > self.limits.max_retries {
            return Err(out_of_retries(
                "verifier",
                "verification result",
                self.limits.max_retries,
            ));
        }
        Ok(())
    }

    pub(super) fn start_executor(&self, input: ReplyInput) -> EventStream {
        self.executor.reply_stream_structured(input, texts::report_schema())
    }

    fn start_verifier(&self, instruction: Msg) -> Phase {
        let stream = Box::pin(
            self.verifier
                .reply_stream_structured(instruction.clone(), texts::verdict_schema()),
        );
        Phase::Verifier {
            stream,
            instruction: Box::new(instruction),
        }
    }

    /// The verifier resumed from a park (a confirmation or an external result); a retry after
    /// it gets the usual instruction.
    pub(super) fn resume_verifier(&self, input: ReplyInput) -> Result<Phase, AgentError> {
        let p = self.progress();
        let instruction = verify_instruction(&p.goal, p.report.as_deref().unwrap_or_default())?;
        drop(p);
        let stream = Box::pin(self.verifier.reply_stream_structured(input, texts::verdict_schema()));
        Ok(Phase::Verifier {
            stream,
            instruction: Box::new(instruction),
        })
    }
}

/// A reply parked for the user, or interrupted: the pipeline's stream ends with it (the
/// resuming input reaches the participant by its reply id; a run stopped meanwhile closes a
/// parked reply first, see [`GoalRun::parked_when_stopped`]).
fn stops_the_run(msg: &Msg) -> bool {
    matches!(msg.finished_reason, None | Some(ReplyFinishedReason::Interrupted))
}

fn ended(who: &str) -> AgentError {
    AgentError::State(format!(
        "the goal pipeline's {who} ended its reply without a final message"
    ))
}

fn out_of_retries(who: &str, what: &str, max: u32) -> AgentError {
    AgentError::State(format!(
        "The {who} failed to generate a valid {what} after {max} retries."
    ))
}

/// The goal and the report, as the verifier receives them.
fn verify_instruction(goal: &[ContentBlock], report: &str) -> Result<Msg, AgentError> {
    wrap_goal(texts::VERIFY_OPENING, goal, &texts::verify_closing(report), "user")
}

fn retry_instruction(goal: &[ContentBlock]) -> Result<Msg, AgentError> {
    wrap_goal(
        texts::VERDICT_RETRY_OPENING,
        goal,
        texts::VERDICT_RETRY_CLOSING,
        "system",
    )
}

/// A user message: `opening`, the goal's blocks (text and data only, as the pipeline keeps
/// them), `closing`.
fn wrap_goal(opening: &str, goal: &[ContentBlock], closing: &str, name: &str) -> Result<Msg, AgentError> {
    let mut content = Vec::with_capacity(goal.len() + 2);
    content.push(TextBlock::new(opening).into());
    content.extend(goal.iter().cloned());
    content.push(TextBlock::new(closing).into());
    Msg::new(name, Role::User, content)
}

fn verification_event(round: u32, verdict: Verdict, message: &str) -> ReplyItem {
    let mut value = Map::new();
    value.insert("round".into(), Value::from(round));
    value.insert("result".into(), Value::from(verdict.as_str()));
    value.insert("message".into(), Value::from(message));
    ReplyItem::Event(AgentEvent::Custom(CustomEvent::new(GOAL_VERIFICATION, value)))
}
