//! Running one reply of a task: the agent's events become A2A updates, published to the task's
//! subscribers and folded into the stored task.
//!
//! ```text
//! status WORKING
//! artifact update (append) per TEXT_BLOCK_DELTA        the answer as it streams
//! then, by how the reply ended:
//!   completed   artifact (whole answer, lastChunk) + status COMPLETED with the answer
//!   parked      status INPUT_REQUIRED with the question and the waiting tool calls
//!   interrupted status CANCELED
//!   failed      status FAILED ("the agent's reply failed"; the cause is logged by kind only)
//! ```

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;
use tokio::sync::Semaphore;
use towerscope_agent::Agent;
use towerscope_core::event::UserInterruptEvent;
use towerscope_core::{AgentEvent, ContentBlock, Msg, ReplyFinishedReason, ReplyInput, ReplyItem, ToolCallBlock};

use super::tasks::{Parked, TaskEntry, Tasks, UPDATES};
use super::wire::{
    Artifact, Message, Part, Role, StreamResponse, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent, now_rfc3339,
};
use crate::busy::BusyClaim;

/// Spawns the reply of task `id` to `input` on the runtime; with `pace`, the reply's text goes
/// no further ahead of the streamed request than the stream can follow (see [`pace`]). `claim`
/// marks the task's context busy while the reply runs (see [`Tasks::claim`]).
pub(crate) fn spawn(
    tasks: Arc<Tasks>,
    id: String,
    agent: Agent,
    input: ReplyInput,
    pace: Option<Pace>,
    claim: BusyClaim,
) {
    tokio::spawn(run(tasks, id, agent, input, pace, claim));
}

/// How many pieces of text the reply of a streamed request may publish ahead of what the
/// request's stream has taken: half the task's update channel, so that the stream does not fall
/// behind it (and get the whole task again instead of the pieces) when the model is faster
/// than the client.
const AHEAD: usize = UPDATES / 2;

/// How long the reply waits for a stream that takes nothing before it stops waiting for it (a
/// client that stopped reading does not hold the task for ever; it falls behind instead).
const PACE_WAIT: Duration = Duration::from_secs(30);

/// The reply's side of a streamed request's pace.
pub(crate) struct Pace(Arc<Semaphore>);

/// The stream's side: each update it takes lets the reply publish one more; dropped (the
/// request is not streamed, or its client went away), the reply stops waiting.
pub(crate) struct PaceGuard(Arc<Semaphore>);

/// A reply's pace and the guard its streamed request holds.
pub(crate) fn pace() -> (Pace, PaceGuard) {
    let permits = Arc::new(Semaphore::new(AHEAD));
    (Pace(Arc::clone(&permits)), PaceGuard(permits))
}

impl Pace {
    /// Waits until the stream is less than [`AHEAD`] pieces behind; at most [`PACE_WAIT`], after
    /// which the reply no longer waits for this stream.
    async fn wait(&self) {
        match tokio::time::timeout(PACE_WAIT, self.0.acquire()).await {
            Ok(Ok(permit)) => permit.forget(),
            Ok(Err(_closed)) => {}
            Err(_elapsed) => self.0.close(),
        }
    }
}

impl PaceGuard {
    /// The stream took one update.
    pub(crate) fn taken(&self) {
        self.0.add_permits(1);
    }
}

impl Drop for PaceGuard {
    fn drop(&mut self) {
        self.0.close();
    }
}

async fn run(tasks: Arc<Tasks>, id: String, agent: Agent, input: ReplyInput, pace: Option<Pace>, claim: BusyClaim) {
    let new_message = !input.is_resume();
    let Ok((canceled, round)) = tasks.with_task(&id, |t| {
        t.rounds += 1;
        (t.cancel_requested, t.rounds)
    }) else {
        return; // forgotten already
    };
    // The claim is let go before each final status: a client told the task stopped finds the
    // context free.
    let mut claim = Some(claim);
    if canceled && new_message {
        drop(claim.take());
        set_status(&tasks, &id, TaskState::Canceled, None);
        return;
    }
    set_status(&tasks, &id, TaskState::Working, None);

    let artifact_id = format!("{id}-answer-{round}");
    let mut stream = agent.reply_stream(input);
    let mut parked: Option<Parked> = None;
    let mut last: Option<Msg> = None;
    // How the reply ended, from its `REPLY_END` (a layer may replace the final message, and
    // with it the finished reason it carries).
    let mut ended: Option<ReplyFinishedReason> = None;
    let mut failed = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(ReplyItem::Event(AgentEvent::TextBlockDelta(e))) if !e.delta.is_empty() => {
                if let Some(pace) = &pace {
                    pace.wait().await;
                }
                publish_artifact(&tasks, &id, &artifact_id, &e.delta, true, false);
            }
            Ok(ReplyItem::Event(AgentEvent::ReplyEnd(e))) => ended = Some(e.finished_reason),
            Ok(ReplyItem::Event(_)) => {}
            Ok(ReplyItem::Final(msg)) => {
                // What a parked reply waits for is read from the agent: the `REQUIRE_*` events
                // name a call only when it is first decided, so a resume that answers one call
                // of a turn and parks again on another sends none.
                parked = agent.waiting_calls();
                last = Some(msg);
            }
            Err(e) => {
                tracing::warn!(task = %id, kind = e.kind(), "an A2A task's reply failed");
                failed = true;
                break;
            }
        }
    }
    if failed {
        // Read to its end (interrupted: a layer's stream going on after the error is not run
        // unseen), so that its session is saved before the context is free; dropped, it would
        // be saved on a task of its own, later.
        agent.interrupt();
        while stream.next().await.is_some() {}
    }
    drop(stream);
    match (failed, last) {
        (false, Some(_)) if let Some(waiting) = parked => {
            let question = question(&waiting);
            let reply_id = waiting.reply_id.clone();
            // Parked, unless a cancellation came while the reply ran (it could not interrupt a
            // reply that was parking): decided and published under one lock, so that a
            // `CancelTask` either comes first and is seen here, or finds the task waiting.
            let canceled = tasks
                .with_task(&id, |t| {
                    if t.cancel_requested {
                        return true;
                    }
                    t.parked = Some(waiting);
                    drop(claim.take());
                    publish_status(t, TaskState::InputRequired, Some(question));
                    false
                })
                .unwrap_or(false);
            if canceled {
                // Closed under the same claim: the context is not free until it is.
                let mut closing = agent.reply_stream(ReplyInput::from(UserInterruptEvent::new(reply_id)));
                while closing.next().await.is_some() {}
                drop(claim.take());
                set_status(&tasks, &id, TaskState::Canceled, None);
            }
        }
        (false, Some(msg)) => {
            drop(claim.take());
            match ended.or(msg.finished_reason) {
                Some(ReplyFinishedReason::Interrupted) => set_status(&tasks, &id, TaskState::Canceled, None),
                Some(ReplyFinishedReason::Error) => {
                    tracing::warn!(task = %id, "an A2A task's reply ended with an error");
                    set_status(&tasks, &id, TaskState::Failed, Some(failure()));
                }
                _ => {
                    let answer = msg.text_content().unwrap_or_default();
                    let files = file_parts(&msg);
                    publish_artifact(&tasks, &id, &artifact_id, &answer, false, files.is_empty());
                    if !files.is_empty() {
                        publish_files(&tasks, &id, &artifact_id, &files);
                    }
                    // The files are in the artifact only: a task carries its status message
                    // twice (status and history), and a blocking answer is the whole task.
                    set_status(
                        &tasks,
                        &id,
                        TaskState::Completed,
                        Some(Message::new_text(Role::Agent, answer)),
                    );
                }
            }
        }
        _ => {
            drop(claim.take());
            set_status(&tasks, &id, TaskState::Failed, Some(failure()));
        }
    }
}

fn failure() -> Message {
    Message::new_text(Role::Agent, "The agent's reply failed.")
}

/// The status message of a parked reply: what it waits for, in words and as data.
fn question(parked: &Parked) -> Message {
    let calls = |calls: &[ToolCallBlock]| -> Vec<serde_json::Value> {
        calls
            .iter()
            .map(|c| json!({"id": c.id.to_string(), "name": c.name, "input": c.input}))
            .collect()
    };
    let (text, data) = if parked.confirm.is_empty() {
        (
            "Run these tool calls and send their results.".to_owned(),
            json!({"awaiting": "external_execution", "toolCalls": calls(&parked.external)}),
        )
    } else {
        let names: Vec<String> = parked
            .confirm
            .iter()
            .map(|c| format!("{}({})", c.name, c.input))
            .collect();
        (
            format!("Confirm the tool calls {}? Answer yes or no.", names.join(", ")),
            json!({"awaiting": "confirmation", "toolCalls": calls(&parked.confirm)}),
        )
    };
    let mut message = Message::new_text(Role::Agent, text);
    message.parts.push(Part::data(data));
    message
}

/// The data blocks of the agent's answer (images, files) as file parts.
fn file_parts(msg: &Msg) -> Vec<Part> {
    msg.content
        .iter()
        .filter_map(|block| match block {
            // One pointing at a local path is not sent.
            ContentBlock::Data(data) => Part::file(data),
            _ => None,
        })
        .collect()
}

/// Appends the answer's file parts to its artifact, as its last chunk.
fn publish_files(tasks: &Tasks, id: &str, artifact_id: &str, files: &[Part]) {
    let _ = tasks.with_task(id, |t| {
        if let Some(a) = t.task.artifacts.iter_mut().find(|a| a.artifact_id == artifact_id) {
            a.parts.extend(files.iter().cloned());
        }
        publish_update(t, artifact_id, files.to_vec(), true, true);
    });
}

/// Publishes an update of the answer's artifact carrying `parts`.
fn publish_update(t: &mut TaskEntry, artifact_id: &str, parts: Vec<Part>, append: bool, last_chunk: bool) {
    let event = TaskArtifactUpdateEvent {
        task_id: t.task.id.clone(),
        context_id: t.task.context_id.clone(),
        artifact: Artifact {
            artifact_id: artifact_id.to_owned(),
            name: "answer".to_owned(),
            parts,
        },
        append,
        last_chunk,
    };
    t.publish(StreamResponse::ArtifactUpdate(event));
}

/// Publishes an artifact update and folds it into the stored task.
pub(crate) fn publish_artifact(tasks: &Tasks, id: &str, artifact_id: &str, text: &str, append: bool, last_chunk: bool) {
    let _ = tasks.with_task(id, |t| {
        let part = Part::text(text);
        // The first chunk of an artifact does not append: a client drops a chunk appending to
        // an artifact it has not seen (the A2A SDKs do), and every one after it.
        let mut append = append;
        match t.task.artifacts.iter_mut().find(|a| a.artifact_id == artifact_id) {
            // The stored answer keeps one text part: a part per streamed piece (a few characters
            // each) would make the task, its GetTask and the snapshot a lagging subscriber gets
            // many times larger than the text.
            Some(a) if append => match a.parts.last_mut() {
                Some(last) if last.is_plain_text() => last.text.get_or_insert_default().push_str(text),
                _ => a.parts.push(part.clone()),
            },
            Some(a) => a.parts = vec![part.clone()],
            None => {
                append = false;
                t.task.artifacts.push(Artifact {
                    artifact_id: artifact_id.to_owned(),
                    name: "answer".to_owned(),
                    parts: vec![part.clone()],
                });
            }
        }
        publish_update(t, artifact_id, vec![part], append, last_chunk);
    });
}

pub(crate) fn set_status(tasks: &Tasks, id: &str, state: TaskState, message: Option<Message>) {
    let _ = tasks.with_task(id, |t| publish_status(t, state, message));
}

/// Sets the task's status, records its message in the history, and publishes it.
pub(crate) fn publish_status(t: &mut TaskEntry, state: TaskState, message: Option<Message>) {
    let message = message.map(|mut m| {
        m.task_id = Some(t.task.id.clone());
        m.context_id = Some(t.task.context_id.clone());
        m
    });
    if let Some(m) = &message {
        t.task.history.push(m.clone());
    }
    t.task.status = TaskStatus {
        state,
        message,
        timestamp: Some(now_rfc3339()),
    };
    t.waiting_since = (state == TaskState::InputRequired).then(std::time::Instant::now);
    let event = TaskStatusUpdateEvent {
        task_id: t.task.id.clone(),
        context_id: t.task.context_id.clone(),
        status: t.task.status.clone(),
    };
    t.publish(StreamResponse::StatusUpdate(event));
}
