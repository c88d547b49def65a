//! The `reply` handler's work: load the session's state, build the agent, drive its reply
//! while running each step the journal layers ask for through `ctx.run`, park on an awakeable
//! when the reply waits for a person or an external executor, store the state.
//!
//! ```text
//! reply(key, input)                          one invocation, exclusive per key
//!  ├─ get state  ─ run "start" (journaled start time; seeds ids and timestamps)
//!  ├─ agent.reply_stream(input)  ◄──────────┐
//!  │    each StepRequest ─► ctx.run "step"   │  (journal, or replayed from it)
//!  │    each event ─► EventSink              │
//!  ├─ set state                              │
//!  └─ parked? awakeable ─► answer ──────────┘  (as many times as it parks)
//! ```
//!
//! # Example
//!
//! What the ingress takes (`POST /Agent/{session}/reply`):
//!
//! ```
//! use towerscope_restate::ReplyBody;
//!
//! let body: ReplyBody = serde_json::from_str(r#"{"text": "buy the blue mug"}"#)?;
//! assert!(matches!(body, ReplyBody::Text { ref text } if text == "buy the blue mug"));
//! let body: ReplyBody = serde_json::from_str(r#"{"messages": []}"#)?;
//! assert!(matches!(body, ReplyBody::Messages { ref messages } if messages.is_empty()));
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::{FutureExt, StreamExt};
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedReceiver;
use towerscope_agent::{AgentState, ReplyStream};
use towerscope_core::event::{RequireExternalExecutionEvent, RequireUserConfirmEvent, UserInterruptEvent};
use towerscope_core::{AgentError, AgentEvent, Id, Msg, ReplyInput, ReplyItem, ToolCallBlock};

use crate::agent::{DurableAgent, DurableContext, system_now};
use crate::error::DurableError;
use crate::hitl::{PendingInput, shape_of};
use crate::replay::ReplaySource;
use crate::step::{StepOutput, StepRecord, StepRequest, Steps};

/// The object's state key of the stored [`AgentState`].
pub const STATE_KEY: &str = "agent_state";
/// The object's state key of the [`PendingInput`] a parked reply waits on.
pub const PENDING_KEY: &str = "pending";

/// What the `reply` handler takes: a user's text, or messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ReplyBody {
    /// One user message.
    Text {
        /// The text.
        text: String,
    },
    /// Messages to answer.
    Messages {
        /// The messages.
        messages: Vec<Msg>,
    },
}

/// What the `reply` handler answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DurableReply {
    /// The reply's final message.
    pub message: Option<Msg>,
    /// How many events the reply sent (to the [`EventSink`](crate::EventSink)).
    pub events: u64,
    /// How many times it parked for an answer.
    pub parks: u32,
}

struct Drive<'a> {
    config: &'a DurableAgent,
    source: ReplaySource,
    session: String,
    invocation: String,
    seq: u64,
    step: u64,
    /// Restate cancelled the invocation during a step: the reply was interrupted.
    cancelled: bool,
    /// The answers of the cancelled step and of those asked for after it, never sent: their
    /// model or tool calls wait until the interrupt stops them.
    unanswered: Vec<tokio::sync::oneshot::Sender<Result<StepOutput, DurableError>>>,
}

/// Runs one durable reply (see the [module docs](self)).
pub(crate) async fn reply(
    config: &DurableAgent,
    ctx: &ObjectContext<'_>,
    body: serde_json::Value,
) -> Result<DurableReply, DurableError> {
    let stored = read_state(ctx.get::<Vec<u8>>(STATE_KEY).await)?;
    let Json(start) = ctx
        .run(|| async { Ok(Json(system_now())) })
        .name("start")
        .await
        .map_err(|e| DurableError::Restate(e.to_string()))?;
    let source = ReplaySource::new(ctx.random_seed(), start);
    let (steps, mut requests) = Steps::channel();
    let durable = DurableContext {
        session: ctx.key().to_owned(),
        steps,
        start,
    };
    let mut drive = Drive {
        config,
        source: source.clone(),
        session: ctx.key().to_owned(),
        invocation: ctx.invocation_id().to_owned(),
        seq: 0,
        step: 0,
        cancelled: false,
        unanswered: Vec::new(),
    };
    source
        .scope(async move {
            // Decoded here, in the scope: the defaults of a message's id and time are drawn
            // from the replay source (outside it they were random and the clock's, so each
            // attempt stored another message and Restate found the journal mismatched).
            let body: ReplyBody = serde_json::from_value(body).map_err(|e| DurableError::BadRequest(shape_of(&e)))?;
            let agent = (config.factory)(&durable)?;
            if let Some(state) = stored {
                agent.load_state(state)?;
            }
            // A new message while the state says parked: the reply that parked is gone (killed;
            // a live one holds the object's lock, and this invocation would not run). Its park
            // is closed, as when the handler gives up on it, or every new message is refused.
            if agent.waiting_calls().is_some() {
                tracing::warn!("the session's parked reply has no invocation left; closing it");
                ctx.clear(PENDING_KEY);
                drive.close_parked(ctx, &agent, &mut requests).await;
                if drive.cancelled {
                    return Err(DurableError::Cancelled);
                }
            }
            let mut input: ReplyInput = match body {
                ReplyBody::Text { text } => Msg::user("user", text).into(),
                ReplyBody::Messages { messages } => messages.into(),
            };
            let mut parks = 0;
            loop {
                let resuming = input.is_resume();
                let events_before = drive.seq;
                let outcome = drive.run(ctx, &agent, agent.reply_stream(input), &mut requests).await;
                // A failed reply keeps its state, as an agent in memory does; after a journal
                // mismatch the state stays as the agent that wrote the journal left it.
                if !matches!(outcome, Err(DurableError::JournalMismatch { .. })) {
                    ctx.set(STATE_KEY, Json(agent.state()));
                }
                if drive.cancelled {
                    return Err(DurableError::Cancelled);
                }
                let (message, seen) = match outcome {
                    // The agent refused the answer before any event (it names no call the reply
                    // waits on, or one twice): nothing changed and the reply still waits, as
                    // after a malformed answer. Ending here would leave the session parked
                    // with no one waiting on an answer, refusing every new message.
                    Err(DurableError::Agent(AgentError::State(_)))
                        if parks > 0 && resuming && drive.seq == events_before && agent.waiting_calls().is_some() =>
                    {
                        tracing::warn!("the agent refused an answer to a parked reply; waiting for another");
                        (None, None)
                    }
                    outcome => outcome?,
                };
                let Some(pending) = pending_input(&agent, seen) else {
                    return Ok(DurableReply {
                        message,
                        events: drive.seq,
                        parks,
                    });
                };
                parks += 1;
                let answer = if parks > config.max_parks {
                    Err(DurableError::TooManyParks(config.max_parks))
                } else {
                    wait(ctx, pending, config.max_parks).await
                };
                input = match answer {
                    Ok(input) => input,
                    Err(err) => {
                        drive.close_parked(ctx, &agent, &mut requests).await;
                        return Err(err);
                    }
                };
            }
        })
        .await
}

/// The stored agent state, read from its JSON bytes: a state this version cannot read is a
/// [`DurableError::State`] (its content stays out of the error), where Restate's own decoding
/// would fail the invocation, and retry it, for good.
pub(crate) fn read_state(stored: Result<Option<Vec<u8>>, TerminalError>) -> Result<Option<AgentState>, DurableError> {
    let stored = stored.map_err(|e| DurableError::State(e.to_string()))?;
    stored
        .map(|bytes| serde_json::from_slice(&bytes).map_err(|e| DurableError::State(shape_of(&e))))
        .transpose()
}

impl Drive<'_> {
    /// Reads the reply to its end, running the steps it asks for; returns its final message
    /// and what it parked on, if it did.
    async fn run(
        &mut self,
        ctx: &ObjectContext<'_>,
        agent: &towerscope_agent::Agent,
        mut stream: ReplyStream,
        requests: &mut UnboundedReceiver<StepRequest>,
    ) -> Result<(Option<Msg>, Option<PendingInput>), DurableError> {
        let mut message = None;
        let mut pending = None;
        loop {
            tokio::select! {
                biased;
                Some(request) = requests.recv() => self.step(ctx, agent, request).await?,
                item = stream.next() => match item {
                    None => return Ok((message, pending)),
                    Some(Err(err)) => return Err(err.into()),
                    Some(Ok(ReplyItem::Final(msg))) => message = Some(msg),
                    Some(Ok(ReplyItem::Event(event))) => {
                        if PendingInput::parks(&event) {
                            pending = Some(PendingInput::new(String::new(), event.clone()));
                        }
                        if let Some(sink) = &self.config.events {
                            // Outside the reply's sequence: a sink may draw ids or read the
                            // time on one attempt and not the next (it keeps the first copy of
                            // each event), which shifted the reply's later ids, and Restate
                            // found the journal mismatched and retried the reply for good.
                            // A sink that panics loses its event, not the reply.
                            let delivered = ReplaySource::unjournaled().sync_scope(|| {
                                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                    sink.event(&self.session, &self.invocation, self.seq, &event);
                                }))
                            });
                            if delivered.is_err() {
                                tracing::warn!(seq = self.seq, "the event sink panicked; its event was dropped");
                            }
                        }
                        self.seq += 1;
                    }
                },
            }
        }
    }

    /// Gives up on the agent's parked reply: closes it as a `UserInterruptEvent` would (its
    /// waiting calls get interrupted results) and stores the state, so that the session takes
    /// new messages. A close that fails leaves the reply parked (logged).
    async fn close_parked(
        &mut self,
        ctx: &ObjectContext<'_>,
        agent: &towerscope_agent::Agent,
        requests: &mut UnboundedReceiver<StepRequest>,
    ) {
        let Some(waiting) = agent.waiting_calls() else {
            return;
        };
        let closing: ReplyInput = UserInterruptEvent::new(waiting.reply_id).into();
        let closed = self.run(ctx, agent, agent.reply_stream(closing), requests).await;
        if closed.is_err() {
            tracing::warn!("closing a parked reply the handler gave up on failed; it stays parked");
        }
        ctx.set(STATE_KEY, Json(agent.state()));
    }

    /// One journaled step: runs its work in `ctx.run` (or reads the journal), checks that the
    /// journal recorded this step, hands the output to the layer.
    async fn step(
        &mut self,
        ctx: &ObjectContext<'_>,
        agent: &towerscope_agent::Agent,
        request: StepRequest,
    ) -> Result<(), DurableError> {
        let StepRequest {
            fingerprint,
            work,
            reply,
        } = request;
        if self.cancelled {
            // Restate reports a cancel once: a step asked for after it would run (a tool call
            // waiting behind the cancelled one), its result thrown away by the interrupt.
            self.unanswered.push(reply);
            return Ok(());
        }
        let index = self.step;
        self.step += 1;
        // The record is journaled as its JSON bytes and read back here: a record this version
        // cannot read (written by another) is a journal mismatch, where Restate's own decoding
        // would fail the invocation, and retry it, for good.
        let journaled = ctx
            .run(move || {
                ReplaySource::unjournaled().scope(async move {
                    // A panic in the step's work (a model adapter's, a layer's) ends the reply
                    // with a middleware error, as it does in memory: unwound into the SDK, it
                    // failed the attempt, and Restate replayed it (calling the model again) up
                    // to its retry limit.
                    let done = match std::panic::AssertUnwindSafe(work).catch_unwind().await {
                        Ok(done) => done,
                        Err(payload) => Err(AgentError::Middleware(format!(
                            "a middleware on a position of the reply panicked: {}",
                            panic_text(&*payload)
                        ))),
                    };
                    let record = match done {
                        Ok(record) => record,
                        // A failed attempt of the step: Restate retries it by its policy.
                        Err(err) if err.is_retryable() => return Err(HandlerError::from(err)),
                        // A failure no retry fixes: journaled, the agent sees it.
                        Err(err) => StepRecord {
                            fingerprint,
                            at: system_now(),
                            output: StepOutput::failed(&err),
                        },
                    };
                    serde_json::to_vec(&record).map_err(HandlerError::from)
                })
            })
            .name("step")
            .retry_policy(self.config.step_retry.clone())
            .await
            .map(|bytes| serde_json::from_slice::<StepRecord>(&bytes).map_err(|e| shape_of(&e)));
        let output = match journaled {
            Ok(Err(unreadable)) => {
                let _ = reply.send(Err(DurableError::Restate("the journal holds another step".to_owned())));
                drain(ctx).await;
                return Err(DurableError::JournalMismatch {
                    step: index,
                    recorded: format!("a step this agent cannot read ({unreadable})"),
                    found: fingerprint.describe(),
                });
            }
            Ok(Ok(record)) if record.fingerprint != fingerprint => {
                let _ = reply.send(Err(DurableError::Restate("the journal holds another step".to_owned())));
                drain(ctx).await;
                return Err(DurableError::JournalMismatch {
                    step: index,
                    recorded: record.fingerprint.describe(),
                    found: fingerprint.describe(),
                });
            }
            Ok(Ok(record)) => {
                self.source.advance_to(record.at);
                record.output
            }
            // Restate cancelled the invocation (its first await after the cancel fails with
            // 409): the reply is interrupted, as a person's Ctrl-C would, and the handler ends
            // with the cancellation once the reply has closed and its state is stored.
            Err(err) if err.code() == CANCELLED => {
                self.cancelled = true;
                self.unanswered.push(reply);
                agent.interrupt();
                return Ok(());
            }
            // Restate's retries ran out; the failure is journaled, a replay sees it too.
            Err(err) => StepOutput::Failed {
                message: format!("the step failed after Restate's retries: {err}"),
                limit: None,
            },
        };
        let _ = reply.send(Ok(output));
        Ok(())
    }
}

/// Reads the rest of a journal this agent did not write, so that the reply can end: Restate
/// takes a handler's answer only once the recorded journal is replayed. Every recorded step is
/// a run named `step`; each is read (not run) until one whose result was never recorded, which
/// runs and does nothing. A journal that parked (state writes, awakeables) after the first
/// differing step is not readable this way: Restate reports its own journal mismatch then.
async fn drain(ctx: &ObjectContext<'_>) {
    for _ in 0..MAX_DRAINED_STEPS {
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        let _ = ctx
            .run(move || async move {
                flag.store(true, Ordering::Relaxed);
                Ok(Json(serde_json::Value::Null))
            })
            .name("step")
            .await;
        if ran.load(Ordering::Relaxed) {
            return;
        }
    }
}

/// The code of the error Restate's SDK fails an await with once the invocation is cancelled.
const CANCELLED: u16 = 409;

/// At most this many recorded steps are read past a journal mismatch.
const MAX_DRAINED_STEPS: usize = 10_000;

/// Parks on an awakeable until an answer resumes the reply; a rejected awakeable interrupts
/// it, and a cancelled invocation is [`DurableError::Cancelled`] (the caller closes the parked
/// reply). A malformed answer (not JSON, or not an answer to the request) is logged and waited past
/// (at most `max_answers` of them).
async fn wait(
    ctx: &ObjectContext<'_>,
    mut pending: PendingInput,
    max_answers: u32,
) -> Result<ReplyInput, DurableError> {
    for _ in 0..max_answers.max(1) {
        // Taken as bytes and parsed here: a body that is not JSON is a malformed answer, where
        // Restate's own decoding would fail the invocation, and retry it, for good.
        let (id, answer) = ctx.awakeable::<Vec<u8>>();
        pending.awakeable_id = id;
        ctx.set(PENDING_KEY, Json(pending.clone()));
        let answer = answer.await;
        ctx.clear(PENDING_KEY);
        let answer = match answer {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| DurableError::BadAnswer {
                kind: "parked reply",
                detail: format!("not JSON: {}", shape_of(&e)),
            }),
            // Restate cancelled the invocation: the reply is closed as interrupted, and the
            // invocation ends with 409, as a cancel during a step does. (A rejection that
            // carries 409 itself is taken the same way.)
            Err(err) if err.code() == CANCELLED => return Err(DurableError::Cancelled),
            // Rejected: the reply is interrupted, and the invocation answers with it.
            Err(_) => return Ok(UserInterruptEvent::new(reply_id(&pending)).into()),
        };
        match answer.and_then(|value| pending.answer(value)) {
            Ok(input) => return Ok(input),
            Err(err) => tracing::warn!(error = %err, "ignored an answer to a parked reply"),
        }
    }
    Err(DurableError::TooManyParks(max_answers))
}

/// What a reply that ended waits for, read from the agent: its `REQUIRE_*` events name a call
/// when it is first decided, so a reply that decided two kinds of waiting calls in one round
/// sent two requests (the last one `seen`), and one resumed for one kind parks again on the
/// other with none. Confirmations come first; the other kind is asked for when the reply parks
/// again. The request the agent sent is kept when it asks for the same calls; else one is made
/// whose id and time come from the calls (no id or time is drawn: a replay makes the same).
fn pending_input(agent: &towerscope_agent::Agent, seen: Option<PendingInput>) -> Option<PendingInput> {
    let waiting = agent.waiting_calls()?;
    let confirm = !waiting.confirm.is_empty();
    let calls = if confirm { waiting.confirm } else { waiting.external };
    let same = |sent: &[ToolCallBlock]| sent.iter().map(|c| &c.id).eq(calls.iter().map(|c| &c.id));
    match seen.as_ref().map(|p| &p.request) {
        Some(AgentEvent::RequireUserConfirm(e)) if confirm && same(&e.tool_calls) => return seen,
        Some(AgentEvent::RequireExternalExecution(e)) if !confirm && same(&e.tool_calls) => return seen,
        _ => {}
    }
    let first = calls.first()?;
    let id = Id::from(format!("{}-waiting-{}", waiting.reply_id, first.id));
    let created_at = first.created_at;
    let (metadata, reply_id, tool_calls) = (serde_json::Map::new(), waiting.reply_id, calls);
    // Built whole: the events' `new` draws an id and a time, which would shift a replay's.
    let request: AgentEvent = if confirm {
        RequireUserConfirmEvent {
            id,
            created_at,
            metadata,
            reply_id,
            tool_calls,
        }
        .into()
    } else {
        RequireExternalExecutionEvent {
            id,
            created_at,
            metadata,
            reply_id,
            tool_calls,
        }
        .into()
    };
    Some(PendingInput::new(String::new(), request))
}

fn reply_id(pending: &PendingInput) -> Id {
    match &pending.request {
        towerscope_core::AgentEvent::RequireUserConfirm(e) => e.reply_id.clone(),
        towerscope_core::AgentEvent::RequireExternalExecution(e) => e.reply_id.clone(),
        _ => Id::new(),
    }
}

impl From<DurableError> for TerminalError {
    fn from(err: DurableError) -> Self {
        let code = match err {
            DurableError::JournalMismatch { .. } | DurableError::Cancelled => 409,
            DurableError::BadAnswer { .. } | DurableError::BadRequest(_) => 400,
            _ => 500,
        };
        TerminalError::new_with_code(code, err.to_string())
    }
}

/// The text of a panic's payload (a `&str` or a `String`; anything else is named so).
fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A stored state this version cannot read is a typed error that holds none of its content
    /// (Restate's own decoding would fail the invocation, and retry it, for good).
    #[test]
    fn a_stored_state_that_does_not_read_is_a_state_error_without_its_content() {
        let err = read_state(Ok(Some(br#"{"context": "card 4111-1111"}"#.to_vec()))).unwrap_err();
        assert!(matches!(err, DurableError::State(_)), "{err}");
        assert!(!err.to_string().contains("4111"), "{err}");
        assert!(read_state(Ok(None)).unwrap().is_none());
        let state = serde_json::to_vec(&AgentState::new()).unwrap();
        assert!(read_state(Ok(Some(state))).unwrap().is_some());
    }
}
