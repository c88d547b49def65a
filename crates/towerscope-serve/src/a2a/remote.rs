//! [`RemoteAgent`]: an agent served elsewhere over A2A, as a [`Participant`].

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::StreamExt;
use futures_util::stream;
use towerscope_core::event::{
    DataBlockDeltaEvent, DataBlockEndEvent, DataBlockStartEvent, ReplyEndEvent, ReplyStartEvent, TextBlockDeltaEvent,
    TextBlockEndEvent, TextBlockStartEvent,
};
use towerscope_core::{
    AgentError, AgentEvent, ContentBlock, ErrorInfo, EventStream, Id, Msg, ReplyFinishedReason, ReplyInput, ReplyItem,
};
use towerscope_team::Participant;
use towerscope_team::hub::Broadcaster;

use super::client::{A2aClient, ClientError, MAX_ANSWER_BYTES, UpdateStream, user_message};
use super::wire::{Part, SendMessageResponse, StreamResponse, Task, TaskState};

/// A remote A2A agent taking part in a conversation here: in a `MsgHub`, a pipeline, a console.
///
/// Its replies are the remote agent's answers, streamed as text events when its card says it
/// streams. It keeps one A2A context (the remote session) across replies; messages it observes
/// are sent with its next message, each as `name: text`; in a `MsgHub` its completed replies
/// are broadcast to the others (it has a [`Broadcaster`]). A remote task that waits for input
/// ends the reply with the remote agent's question; the next reply answers that task. Failures
/// of the remote agent end the reply with `finished_reason` `error` (the connection's failures
/// are the stream's error).
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use towerscope_agent::Agent;
/// use towerscope_core::Msg;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
/// use towerscope_serve::a2a::{A2aConfig, RemoteAgent};
/// use towerscope_team::Participant;
///
/// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let factory = |_: &str| Agent::builder("far").model(ScriptedModel::new("m", [ScriptedResponse::text("Hello from afar.")])).build();
/// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// # let base = format!("http://{}", listener.local_addr()?);
/// # tokio::spawn(async move { axum::serve(listener, A2aConfig::new("far").routes(Arc::new(factory))).await });
/// let far = RemoteAgent::connect(&base).await?;
/// let msg = far.reply(Msg::user("user", "Hi").into()).await?;
/// assert_eq!(msg.name.as_ref(), "far");
/// assert_eq!(msg.text_content().as_deref(), Some("Hello from afar."));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RemoteAgent {
    name: String,
    client: A2aClient,
    state: Arc<Mutex<Conversation>>,
    broadcaster: Broadcaster,
    /// Wakes a reply whose request is still on its way when it is interrupted.
    interrupted: Arc<tokio::sync::Notify>,
}

#[derive(Debug, Default)]
struct Conversation {
    context_id: Option<String>,
    /// The remote task waiting for input, answered by the next reply.
    open_task: Option<String>,
    /// The remote task of the reply in progress (for `interrupt`).
    running_task: Option<String>,
    /// Whether a reply is in progress.
    replying: bool,
    /// An interrupt came before the reply's remote task was known: it is canceled as soon as
    /// it is (or the request is given up while it is on its way).
    interrupt_pending: bool,
    /// How many replies have started: a reply changes the flags above only while it is the
    /// latest (an old stream dropped late leaves the new reply's alone).
    generation: u64,
    observed: Vec<Msg>,
}

impl Conversation {
    /// Reply `generation` is over: if it is the latest, no reply is in progress.
    fn finish(&mut self, generation: u64) {
        if self.generation == generation {
            self.replying = false;
            self.running_task = None;
            self.interrupt_pending = false;
        }
    }
}

impl RemoteAgent {
    /// Connects to the agent at `base_url` (its card is fetched), named as its card names it.
    pub async fn connect(base_url: &str) -> Result<Self, ClientError> {
        Ok(Self::new(A2aClient::connect(base_url).await?))
    }

    /// The agent `client` talks to, named as its card names it.
    pub fn new(client: A2aClient) -> Self {
        Self {
            name: client.card().name.clone(),
            client,
            state: Arc::default(),
            broadcaster: Broadcaster::new(),
            interrupted: Arc::default(),
        }
    }

    /// Renames the participant (what others see as the speaker).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The remote context (session) id, once the remote agent has named one.
    pub fn context_id(&self) -> Option<String> {
        self.lock().context_id.clone()
    }

    fn lock(&self) -> MutexGuard<'_, Conversation> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The state of one streamed reply.
struct Reply {
    agent: RemoteAgent,
    reply_id: Id,
    session: Id,
    block: Option<Id>,
    text: String,
    /// The artifact the text streams into, and where its text starts in `text`.
    artifact: Option<String>,
    artifact_start: usize,
    /// The file parts of the answer so far.
    files: AnswerFiles,
    out: VecDeque<Result<ReplyItem, AgentError>>,
    upstream: Option<UpdateStream>,
    done: bool,
    /// What the request carried (the messages heard, the open task), until an update shows
    /// that the remote agent took it: a stream whose first item is an error gives it back.
    unsent: Option<(Vec<Msg>, Option<String>)>,
    /// Which reply this is (see `Conversation::generation`).
    generation: u64,
    /// The remote task, once an update named it.
    task: Option<String>,
}

impl Drop for Reply {
    /// A reply stream dropped before its end: the reply is over here, and its remote task, if
    /// it still runs, is canceled (left running, it would keep the remote context busy; the
    /// cancellation may land after the next reply is sent, which the remote agent then refuses
    /// as busy). When no update named the task yet, the stream's first item is read from a task
    /// of its own, for at most [`DROPPED_READ`]: a running task is canceled, one waiting for
    /// input stays the open task (the next reply answers it), and an error gives back what the
    /// request carried.
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.agent.lock().finish(self.generation);
        let unsent = self.unsent.take();
        if let Some(task) = self.task.take() {
            cancel_remote(&self.agent.client, task);
            return;
        }
        let (Some(mut upstream), Ok(runtime)) = (self.upstream.take(), tokio::runtime::Handle::try_current()) else {
            return;
        };
        let agent = self.agent.clone();
        let generation = self.generation;
        runtime.spawn(async move {
            let first = tokio::time::timeout(DROPPED_READ, upstream.next()).await;
            match first {
                Ok(Some(Ok(update))) => match task_state(&update) {
                    Some((task, TaskState::InputRequired)) => {
                        let mut conv = agent.lock();
                        if conv.open_task.is_none() {
                            conv.open_task = Some(task);
                        }
                    }
                    Some((task, state)) if !state.is_stopped() => {
                        if let Err(e) = agent.client.cancel_task(&task).await {
                            tracing::warn!(error = %e, "canceling a remote A2A task failed");
                        }
                    }
                    _ => {}
                },
                Ok(Some(Err(e))) => {
                    if let Some((observed, task)) = unsent {
                        restore(&agent, observed, task, Some(&e), generation);
                    }
                }
                Ok(None) | Err(_) => {}
            }
        });
    }
}

/// How long a dropped reply's stream is read for the task to cancel (see `Drop for Reply`).
const DROPPED_READ: std::time::Duration = std::time::Duration::from_secs(60);

/// The task an update names and the state it reports, if any.
fn task_state(update: &StreamResponse) -> Option<(String, TaskState)> {
    match update {
        StreamResponse::Task(t) => Some((t.id.clone(), t.status.state)),
        StreamResponse::StatusUpdate(u) => Some((u.task_id.clone(), u.status.state)),
        StreamResponse::ArtifactUpdate(u) => Some((u.task_id.clone(), TaskState::Working)),
        StreamResponse::Message(_) => None,
    }
}

/// What a request takes from the conversation (the messages heard, the open task), given back
/// if the request is dropped before it got through (its stream dropped, or never polled). A
/// request dropped on its way may have reached the remote agent already: an open task given
/// back is then one the remote agent has resumed, and the next reply's answer to it is
/// refused (which drops it).
struct Unsent {
    agent: RemoteAgent,
    generation: u64,
    carried: Option<(Vec<Msg>, Option<String>)>,
}

impl Unsent {
    /// What the request carried, now that it is accounted for.
    fn take(&mut self) -> (Vec<Msg>, Option<String>) {
        self.carried.take().unwrap_or_default()
    }
}

impl Drop for Unsent {
    fn drop(&mut self) {
        if let Some((observed, task)) = self.carried.take() {
            restore(&self.agent, observed, task, None, self.generation);
        }
    }
}

impl Participant for RemoteAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn reply_stream(&self, input: ReplyInput) -> EventStream {
        let ReplyInput::Messages(msgs) = input else {
            let error = AgentError::Validation(
                "a remote A2A agent takes messages; answer a question it asked with a message".to_owned(),
            );
            return Box::pin(stream::iter([Err(error)]));
        };
        let (observed, text, context, task, generation) = {
            let mut conv = self.lock();
            conv.generation = conv.generation.wrapping_add(1);
            conv.replying = true;
            conv.interrupt_pending = false;
            conv.running_task = None;
            let observed = std::mem::take(&mut conv.observed);
            let mut lines: Vec<String> = observed
                .iter()
                .filter_map(|m| m.text_content().map(|t| format!("{}: {t}", m.name)))
                .collect();
            lines.extend(msgs.iter().filter_map(|m| m.text_content()));
            (
                observed,
                lines.join("\n"),
                conv.context_id.clone(),
                conv.open_task.take(),
                conv.generation,
            )
        };
        let agent = self.clone();
        let mut message = user_message(&text, context.as_deref(), task.as_deref());
        // The data blocks of the messages (images, files) go as file parts after the text; one
        // pointing at a local path is not sent.
        for block in msgs.iter().flat_map(|m| m.content.iter()) {
            if let ContentBlock::Data(data) = block {
                match Part::file(data) {
                    Some(part) => message.parts.push(part),
                    None => {
                        tracing::warn!(agent = %self.name, "a data block with a URL other than http or https is not sent")
                    }
                }
            }
        }
        let mut unsent = Unsent {
            agent: self.clone(),
            generation,
            carried: Some((observed, task)),
        };
        let first = async move {
            let streaming = agent.client.card().capabilities.streaming;
            // An interrupt before the request goes out gives it up. One while it is on its way
            // waits for the stream's first update, which names the task to cancel (`track`);
            // an agent whose card does not stream names it only with its whole answer, so its
            // request is given up (its task goes on there, unknown to us).
            let notify = Arc::clone(&agent.interrupted);
            let interrupted = notify.notified();
            tokio::pin!(interrupted);
            interrupted.as_mut().enable();
            let pending = agent.lock().interrupt_pending;
            let opened: Result<Option<UpdateStream>, ClientError> = {
                let opening = async {
                    if streaming {
                        return agent.client.stream(message).await;
                    }
                    let answer = agent.client.send(message).await?;
                    let item = match answer {
                        SendMessageResponse::Task(t) => StreamResponse::Task(t),
                        SendMessageResponse::Message(m) => StreamResponse::Message(m),
                    };
                    Ok(Box::pin(stream::iter([Ok(item)])) as UpdateStream)
                };
                if pending {
                    Ok(None)
                } else if streaming {
                    opening.await.map(Some)
                } else {
                    tokio::select! {
                        opened = opening => opened.map(Some),
                        () = &mut interrupted => Ok(None),
                    }
                }
            };
            let (observed, task) = unsent.take();
            match opened {
                Ok(Some(upstream)) => Ok((agent, Some(upstream), Some((observed, task)))),
                Ok(None) => {
                    restore(&agent, observed, task, None, generation);
                    Ok((agent, None, None))
                }
                Err(e) => {
                    restore(&agent, observed, task, Some(&e), generation);
                    Err(e)
                }
            }
        };
        let name = self.name.clone();
        Box::pin(stream::once(first).flat_map(move |opened| match opened {
            Ok((agent, upstream, unsent)) => {
                let reply_id = towerscope_core::id::new_id();
                let session: Id = agent.context_id().map(Id::from).unwrap_or_default();
                let start = ReplyStartEvent::new(session.clone(), reply_id.clone(), name.as_str());
                let given_up = upstream.is_none();
                let mut reply = Reply {
                    agent,
                    reply_id,
                    session,
                    block: None,
                    text: String::new(),
                    artifact: None,
                    artifact_start: 0,
                    files: AnswerFiles::default(),
                    out: VecDeque::from([Ok(ReplyItem::Event(AgentEvent::ReplyStart(start)))]),
                    upstream,
                    done: false,
                    unsent,
                    generation,
                    task: None,
                };
                if given_up {
                    reply.end(TaskState::Canceled, None);
                }
                stream::unfold(reply, Reply::next).left_stream()
            }
            Err(e) => {
                let error = AgentError::Validation(format!("remote agent `{name}`: {e}"));
                stream::iter([Err(error)]).right_stream()
            }
        }))
    }

    fn observe(&self, msgs: Vec<Msg>) -> Result<(), AgentError> {
        let mut conv = self.lock();
        conv.observed.extend(msgs);
        keep_latest(&mut conv.observed);
        Ok(())
    }

    fn broadcaster(&self) -> Option<&Broadcaster> {
        Some(&self.broadcaster)
    }

    /// Cancels the reply's remote task. Before the task is known: a request not sent yet is
    /// given up; one on its way to a streaming agent has the task canceled as soon as the
    /// stream's first update names it; one to an agent whose card does not stream (it names
    /// the task only with its whole answer) is given up here, and its task goes on there.
    /// `false` when no reply is in progress. A `RemoteAgent` (and its clones, which share its
    /// conversation) replies one reply at a time.
    fn interrupt(&self) -> bool {
        let task = {
            let mut conv = self.lock();
            match conv.running_task.clone() {
                Some(task) => task,
                None if conv.replying => {
                    conv.interrupt_pending = true;
                    drop(conv);
                    self.interrupted.notify_waiters();
                    return true;
                }
                None => return false,
            }
        };
        cancel_remote(&self.client, task)
    }
}

impl Reply {
    async fn next(mut self) -> Option<(Result<ReplyItem, AgentError>, Self)> {
        loop {
            if let Some(item) = self.out.pop_front() {
                return Some((item, self));
            }
            if self.done {
                return None;
            }
            let upstream = self.upstream.as_mut()?;
            match upstream.next().await {
                Some(Ok(update)) => {
                    self.unsent = None;
                    self.apply(update);
                }
                Some(Err(e)) => {
                    self.done = true;
                    match self.unsent.take() {
                        // Refused before any update (a streamed refusal comes as the first item).
                        Some((observed, task)) => restore(&self.agent, observed, task, Some(&e), self.generation),
                        None => self.agent.lock().finish(self.generation),
                    }
                    self.out.push_back(Err(AgentError::Validation(format!(
                        "remote agent `{}`: {e}",
                        self.agent.name
                    ))));
                }
                None => self.end(TaskState::Failed, None),
            }
        }
    }

    fn apply(&mut self, update: StreamResponse) {
        match update {
            StreamResponse::Task(task) => {
                self.track(&task.id, &task.context_id);
                if task.status.state.is_stopped() {
                    let answer = task.answer_text();
                    self.end(task.status.state, Some((answer, &task)));
                }
            }
            StreamResponse::Message(m) => {
                if let Some(ctx) = &m.context_id {
                    self.agent.lock().context_id = Some(ctx.clone());
                }
                self.text = m.text();
                self.files.clear();
                self.files.take("", &m.parts, true, &self.agent.name);
                if self.too_long() {
                    return;
                }
                self.end(TaskState::Completed, None);
            }
            StreamResponse::ArtifactUpdate(u) => {
                self.track(&u.task_id, &u.context_id);
                let piece = u.artifact.text();
                self.files
                    .take(&u.artifact.artifact_id, &u.artifact.parts, u.append, &self.agent.name);
                if self.too_long() {
                    return;
                }
                // The answer is the artifacts' texts one after the other (as `Task::answer_text`
                // reads it): a new artifact follows the text so far; this one again, whole,
                // replaces its own part.
                let id = u.artifact.artifact_id.as_str();
                if self.artifact.as_deref() != Some(id) {
                    self.artifact = Some(id.to_owned());
                    self.artifact_start = self.text.len();
                }
                let whole = !u.append;
                let own = self.text.get(self.artifact_start..).unwrap_or_default();
                let grows = whole && !piece.starts_with(own);
                let length = if grows {
                    self.artifact_start.saturating_add(piece.len())
                } else if whole {
                    self.artifact_start.saturating_add(piece.len()).max(self.text.len())
                } else {
                    self.text.len().saturating_add(piece.len())
                };
                // Each event is capped; so is their sum, or a remote agent streaming without end
                // would grow the answer without end.
                if length.saturating_add(self.files.bytes) > MAX_ANSWER_BYTES {
                    self.fail_too_long();
                    return;
                }
                if grows {
                    // This artifact sent whole again, not as a continuation: its part is replaced.
                    self.text.truncate(self.artifact_start);
                    self.text.push_str(&piece);
                } else if whole {
                    // Whole again, continuing what streamed: only what is new is a delta.
                    let rest = piece[own.len()..].to_owned();
                    self.delta(&rest);
                } else {
                    self.delta(&piece);
                }
            }
            StreamResponse::StatusUpdate(u) => {
                self.track(&u.task_id, &u.context_id);
                if u.status.state.is_stopped() {
                    let state = u.status.state;
                    let status_text = u.status.message.as_ref().map(super::wire::Message::text);
                    if self.text.is_empty() || state != TaskState::Completed {
                        self.text = status_text.unwrap_or_else(|| self.text.clone());
                    }
                    if self.files.is_empty()
                        && let Some(message) = &u.status.message
                    {
                        self.files.take("", &message.parts, true, &self.agent.name);
                    }
                    if self.too_long() {
                        return;
                    }
                    if state == TaskState::InputRequired {
                        self.agent.lock().open_task = Some(u.task_id);
                    }
                    self.end(state, None);
                }
            }
        }
    }

    fn track(&mut self, task: &str, context: &str) {
        if self.task.as_deref() != Some(task) {
            self.task = Some(task.to_owned());
        }
        let mut conv = self.agent.lock();
        if !context.is_empty() {
            conv.context_id = Some(context.to_owned());
        }
        if conv.generation != self.generation {
            return;
        }
        if conv.running_task.as_deref() != Some(task) {
            conv.running_task = Some(task.to_owned());
        }
        if std::mem::take(&mut conv.interrupt_pending) {
            drop(conv);
            cancel_remote(&self.agent.client, task.to_owned());
        }
    }

    fn delta(&mut self, piece: &str) {
        if piece.is_empty() {
            return;
        }
        let block = match &self.block {
            Some(b) => b.clone(),
            None => {
                let b = towerscope_core::id::new_id();
                let start = TextBlockStartEvent::new(self.reply_id.clone(), b.clone());
                self.out
                    .push_back(Ok(ReplyItem::Event(AgentEvent::TextBlockStart(start))));
                self.block = Some(b.clone());
                b
            }
        };
        self.text.push_str(piece);
        let delta = TextBlockDeltaEvent::new(self.reply_id.clone(), block, piece);
        self.out
            .push_back(Ok(ReplyItem::Event(AgentEvent::TextBlockDelta(delta))));
    }

    /// Whether the answer (its text and files) grew past [`MAX_ANSWER_BYTES`]; then the reply
    /// failed (see [`fail_too_long`](Self::fail_too_long)).
    fn too_long(&mut self) -> bool {
        if self.text.len().saturating_add(self.files.bytes) <= MAX_ANSWER_BYTES {
            return false;
        }
        self.fail_too_long();
        true
    }

    /// Fails the reply whose answer grew past [`MAX_ANSWER_BYTES`]: its error is queued, and its
    /// remote task, whose rest nobody reads, is canceled.
    fn fail_too_long(&mut self) {
        self.done = true;
        self.upstream = None;
        self.agent.lock().finish(self.generation);
        if let Some(task) = self.task.take() {
            cancel_remote(&self.agent.client, task);
        }
        self.out.push_back(Err(AgentError::Validation(format!(
            "remote agent `{}`: the answer is larger than {MAX_ANSWER_BYTES} bytes",
            self.agent.name
        ))));
    }

    /// Ends the reply: closes the text block, the files' blocks, `REPLY_END`, the final message.
    fn end(&mut self, state: TaskState, whole: Option<(String, &Task)>) {
        if let Some((answer, task)) = whole {
            // The whole task: its files replace those streamed (the same ones, or more).
            self.files.clear();
            self.files.take("", task.file_parts(), true, &self.agent.name);
            if answer.starts_with(&self.text) {
                let rest = answer[self.text.len()..].to_owned();
                self.delta(&rest);
            } else {
                self.text = answer;
            }
            if self.too_long() {
                return;
            }
            if state == TaskState::InputRequired {
                self.agent.lock().open_task = Some(task.id.clone());
            }
        }
        if let Some(block) = self.block.take() {
            let end = TextBlockEndEvent::new(self.reply_id.clone(), block);
            self.out.push_back(Ok(ReplyItem::Event(AgentEvent::TextBlockEnd(end))));
        }
        self.agent.lock().finish(self.generation);
        let reason = match state {
            TaskState::Completed | TaskState::InputRequired | TaskState::AuthRequired => ReplyFinishedReason::Completed,
            TaskState::Canceled => ReplyFinishedReason::Interrupted,
            _ => ReplyFinishedReason::Error,
        };
        let mut end = ReplyEndEvent::new(self.session.clone(), self.reply_id.clone(), reason);
        let mut msg = Msg::assistant(self.agent.name.as_str(), self.text.clone());
        for file in std::mem::take(&mut self.files).into_blocks() {
            let reply = self.reply_id.clone();
            let events = match &file {
                ContentBlock::Data(d) => [
                    AgentEvent::DataBlockStart(DataBlockStartEvent::new(
                        reply.clone(),
                        d.id.clone(),
                        d.source.media_type(),
                    )),
                    AgentEvent::DataBlockDelta(DataBlockDeltaEvent::new(reply.clone(), d.id.clone(), d.source.clone())),
                    AgentEvent::DataBlockEnd(DataBlockEndEvent::new(reply, d.id.clone())),
                ],
                ContentBlock::Text(t) => {
                    let id = towerscope_core::id::new_id();
                    [
                        AgentEvent::TextBlockStart(TextBlockStartEvent::new(reply.clone(), id.clone())),
                        AgentEvent::TextBlockDelta(TextBlockDeltaEvent::new(
                            reply.clone(),
                            id.clone(),
                            t.text.as_str(),
                        )),
                        AgentEvent::TextBlockEnd(TextBlockEndEvent::new(reply, id)),
                    ]
                }
                _ => continue,
            };
            self.out.extend(events.into_iter().map(|e| Ok(ReplyItem::Event(e))));
            msg.content.push(file);
        }
        if reason == ReplyFinishedReason::Error {
            let info = ErrorInfo::new(
                "remote_agent_error",
                format!("the remote agent's task ended as {state:?}"),
            );
            end = end.with_error(info.clone());
            msg.error = Some(info);
        }
        msg.id = self.reply_id.clone();
        msg.finished_reason = Some(reason);
        if reason == ReplyFinishedReason::Completed {
            self.agent.broadcaster.broadcast(&msg);
        }
        self.out.push_back(Ok(ReplyItem::Event(AgentEvent::ReplyEnd(end))));
        self.out.push_back(Ok(ReplyItem::Final(msg)));
        self.done = true;
        self.upstream = None;
    }
}

/// Asks the remote agent to cancel `task`, from a task of its own; `false` outside a tokio
/// runtime (nothing is sent).
fn cancel_remote(client: &A2aClient, task: String) -> bool {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return false;
    };
    let client = client.clone();
    runtime.spawn(async move {
        if let Err(e) = client.cancel_task(&task).await {
            tracing::warn!(error = %e, "canceling a remote A2A task failed");
        }
    });
    true
}

/// How many observed messages a remote agent keeps for its next turn: the latest (they go in
/// one request, which a server caps; ours at 1 MiB).
const MAX_OBSERVED: usize = 256;

/// How many bytes of text those messages may hold: the latest that fit (a message larger
/// than this alone is dropped).
const MAX_OBSERVED_BYTES: usize = 512 << 10;

/// Drops the oldest observed messages past [`MAX_OBSERVED`] and [`MAX_OBSERVED_BYTES`]: the
/// latest that fit are kept, newest first; a message larger than the bytes alone is dropped,
/// and the older ones still count.
fn keep_latest(observed: &mut Vec<Msg>) {
    let over = observed.len().saturating_sub(MAX_OBSERVED);
    observed.drain(..over);
    let sizes: Vec<usize> = observed
        .iter()
        .map(|m| m.text_content().map_or(0, |t| t.len()))
        .collect();
    let mut keep = vec![false; sizes.len()];
    let mut bytes = 0usize;
    for (i, size) in sizes.iter().enumerate().rev() {
        if *size > MAX_OBSERVED_BYTES {
            continue;
        }
        if bytes + size > MAX_OBSERVED_BYTES {
            break;
        }
        bytes += size;
        keep[i] = true;
    }
    let mut kept = keep.into_iter();
    observed.retain(|_| kept.next().unwrap_or(false));
}

/// Puts back what a request that did not get through carried (`error`: how it failed; `None`:
/// given up): the messages heard go with the next reply, before those heard since (a request
/// that reached the remote agent first sends them twice, which loses nothing), unless they made
/// the request too large; the open task too, unless the remote agent refused the request (the
/// task may be gone there: sending it again would fail every later reply). A passing refusal
/// (408, 429) keeps it.
fn restore(
    agent: &RemoteAgent,
    observed: Vec<Msg>,
    task: Option<String>,
    error: Option<&ClientError>,
    generation: u64,
) {
    let too_large = matches!(error, Some(ClientError::Http(413)));
    let refused = match error {
        Some(ClientError::Rpc(_)) => true,
        Some(ClientError::Http(status)) => (400..500).contains(status) && !matches!(status, 408 | 429),
        _ => false,
    };
    let mut conv = agent.lock();
    if !too_large {
        let since = std::mem::replace(&mut conv.observed, observed);
        conv.observed.extend(since);
        keep_latest(&mut conv.observed);
    }
    if conv.open_task.is_none() && !refused {
        conv.open_task = task;
    }
    conv.finish(generation);
}

/// The file parts of an answer so far, as the blocks the model reads, by the artifact that
/// carried them (`""`: a message, a task's status), in the order the artifacts came. An update
/// costs what it carries, whatever came before (a remote agent sending a file per update, each
/// in an artifact of its own, made each update rescan every file before it).
#[derive(Default)]
struct AnswerFiles {
    /// Each artifact's id, blocks, and their bytes.
    artifacts: Vec<(String, Vec<ContentBlock>, usize)>,
    /// Where each artifact is in `artifacts`.
    index: HashMap<String, usize>,
    /// The bytes of every block (base64 text, URL, text), held with the text to
    /// [`MAX_ANSWER_BYTES`].
    bytes: usize,
    /// How many blocks there are.
    count: usize,
}

impl AnswerFiles {
    fn clear(&mut self) {
        *self = Self::default();
    }

    fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Takes the file parts among `parts`, which came in `artifact` from `sender`, as blocks:
    /// after that artifact's taken so far when `append`, instead of them otherwise (see
    /// [`Part::answer_block`]).
    fn take<'p>(&mut self, artifact: &str, parts: impl IntoIterator<Item = &'p Part>, append: bool, sender: &str) {
        let blocks: Vec<ContentBlock> = parts.into_iter().filter_map(|p| p.answer_block(sender)).collect();
        let at = match self.index.get(artifact) {
            Some(&at) => at,
            None if blocks.is_empty() => return,
            None => {
                self.index.insert(artifact.to_owned(), self.artifacts.len());
                self.artifacts.push((artifact.to_owned(), Vec::new(), 0));
                self.artifacts.len() - 1
            }
        };
        let (_, held, bytes) = &mut self.artifacts[at];
        if !append {
            self.bytes -= *bytes;
            self.count -= held.len();
            held.clear();
            *bytes = 0;
        }
        for block in blocks {
            let size = block_bytes(&block);
            *bytes += size;
            self.bytes += size;
            self.count += 1;
            held.push(block);
        }
    }

    /// The blocks, artifact by artifact.
    fn into_blocks(self) -> impl Iterator<Item = ContentBlock> {
        self.artifacts.into_iter().flat_map(|(_, blocks, _)| blocks)
    }
}

/// The bytes a file's block holds toward an answer's limit: its base64 text, URL or text.
fn block_bytes(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Data(d) => match &d.source {
            towerscope_core::DataSource::Base64 { data, .. } => data.len(),
            towerscope_core::DataSource::Url { url, .. } => url.len(),
        },
        ContentBlock::Text(t) => t.text.len(),
        _ => 0,
    }
}
