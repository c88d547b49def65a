//! [`Tasks`]: the tasks this process knows and the agent serving each context, bounded.
//!
//! One mutex guards both maps; it is never held across an await. A context's agent comes from
//! the [`AgentFactory`] the first time the context is seen and is kept while it is among the
//! latest [`Limits::max_contexts`] contexts: evicting one loses nothing the factory's
//! `SessionStore` keeps. Ended tasks are forgotten oldest first past [`Limits::max_tasks`], or
//! past [`Limits::max_ended_task_bytes`] of them.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::broadcast;
use towerscope_agent::Agent;

use super::error::RpcError;
use super::wire::{Message, StreamResponse, Task, TaskState, TaskStatus, now_rfc3339};
use crate::AgentFactory;

/// How much a server keeps in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Tasks kept for `GetTask` (default 10,000): past this, ended tasks are forgotten oldest
    /// first, and a new message is refused while this many have not ended (working, or waiting
    /// for input).
    pub max_tasks: usize,
    /// Bytes of ended tasks kept for `GetTask`, counted as their JSON when they ended (default
    /// 256 MiB): past this, ended tasks are forgotten oldest first when a new message comes, so
    /// that clients sending large messages, or an agent giving large answers, cannot make the
    /// server hold `max_tasks` of them. Tasks that have not ended are not counted.
    pub max_ended_task_bytes: usize,
    /// Contexts whose agent is kept in memory (default 1,000); an evicted context's agent is
    /// built again by the factory, from its session store. A context whose last task has not
    /// ended is never evicted, so while more than this many are busy, more are kept (at most
    /// as many as tasks that have not ended, [`max_tasks`](Self::max_tasks)).
    pub max_contexts: usize,
    /// The largest request body in bytes (default 1 MiB); larger ones get HTTP 413.
    pub max_body_bytes: usize,
    /// How long a task may wait for input (a confirmation, an external result) before it may
    /// be canceled to make room (default 1 hour): when a new message finds the server holding
    /// [`max_tasks`](Self::max_tasks) tasks, those that have waited longer are canceled (their
    /// replies interrupted, as `CancelTask` does) and the message is refused as before; the
    /// next one finds room. Clients that park tasks and never answer cannot fill the server
    /// for longer than this.
    pub max_input_wait: std::time::Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_tasks: 10_000,
            max_ended_task_bytes: 256 << 20,
            max_contexts: 1_000,
            max_body_bytes: 1 << 20,
            max_input_wait: std::time::Duration::from_secs(3600),
        }
    }
}

/// What a parked reply waits for (the agent's own record of it).
pub(crate) type Parked = towerscope_agent::WaitingCalls;

pub(crate) struct TaskEntry {
    pub(crate) task: Task,
    /// The context's agent, while the task may still need it (until it ends).
    agent: Option<Agent>,
    pub(crate) parked: Option<Parked>,
    /// The task's updates, until it ends: the channel's buffer (`UPDATES` slots, allocated
    /// when it is made) and the agent are released then, so an ended task kept for `GetTask`
    /// holds its task and little else.
    updates: Option<broadcast::Sender<StreamResponse>>,
    pub(crate) cancel_requested: bool,
    /// The reply rounds run so far (names each round's artifact).
    pub(crate) rounds: u32,
    /// Since when the task waits for input (set with its status).
    pub(crate) waiting_since: Option<std::time::Instant>,
    /// The length of the task's JSON when it ended, once it has (counted in
    /// `Inner::ended_bytes`).
    ended_bytes: Option<usize>,
}

impl TaskEntry {
    /// A subscription to the task's updates; closed at once for a task that has ended.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<StreamResponse> {
        match &self.updates {
            Some(updates) => updates.subscribe(),
            None => broadcast::channel(1).1,
        }
    }

    /// Publishes `update` to the task's subscribers (none once it has ended).
    pub(crate) fn publish(&self, update: StreamResponse) {
        if let Some(updates) = &self.updates {
            let _ = updates.send(update);
        }
    }

    /// Whether the task waits for input, has for longer than `max`, and is not being canceled.
    pub(crate) fn waited_too_long(&self, max: std::time::Duration) -> bool {
        self.task.status.state == TaskState::InputRequired
            && !self.cancel_requested
            && self.waiting_since.is_some_and(|since| since.elapsed() > max)
    }

    /// The agent replying in this task; an error once the task has ended.
    pub(crate) fn agent(&self) -> Result<Agent, RpcError> {
        self.agent.clone().ok_or_else(|| {
            RpcError::invalid_params(format!("task `{}` has ended; its agent is released", self.task.id))
        })
    }
}

struct ContextEntry {
    agent: Agent,
    last_task: Option<String>,
    /// The latest messages (at most `RECENT_MESSAGES`): a message sent again (a client's
    /// retry) is answered with its task, not run twice; an id sent again with other content
    /// is refused.
    recent: VecDeque<Sent>,
}

/// A message a context took: its id, a digest of its parts, the task it went to.
struct Sent {
    message_id: String,
    digest: u64,
    task_id: String,
}

/// A digest of what a message says (its parts), to tell a message sent again from another
/// message that reuses its id. Stable within the process, which is all it is compared in.
pub(crate) fn digest(message: &Message) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(&message.parts)
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}

/// The task the message `message_id` went to if the context took it before: `Ok(Some)` for the
/// same message sent again, an error for another message under its id (it was answered with
/// the first one's task, and what it said was dropped).
fn sent_before(recent: &VecDeque<Sent>, message_id: &str, digest: u64) -> Result<Option<String>, RpcError> {
    match recent.iter().find(|s| s.message_id == message_id) {
        Some(s) if s.digest == digest => Ok(Some(s.task_id.clone())),
        Some(s) => Err(RpcError::invalid_params(format!(
            "messageId `{message_id}` was sent before (task `{}`) with other parts; give each message an id of its own",
            s.task_id
        ))),
        None => Ok(None),
    }
}

/// How many message ids a context remembers.
const RECENT_MESSAGES: usize = 64;

/// What [`Tasks::insert`] did.
pub(crate) enum Inserted {
    /// A new task: its id, the task, a subscription to its updates, and its context's claim
    /// (for its reply).
    New(
        String,
        Box<Task>,
        broadcast::Receiver<StreamResponse>,
        crate::busy::BusyClaim,
    ),
    /// The message was sent before: the task it went to.
    Sent(String),
}

/// How many of a task's latest messages a request's `historyLength` keeps (`None`: all); a
/// negative one is refused, as the official SDK's server does.
pub(crate) fn history_keep(history_length: Option<i32>) -> Result<Option<usize>, RpcError> {
    match history_length {
        None => Ok(None),
        Some(n) => usize::try_from(n)
            .map(Some)
            .map_err(|_| RpcError::invalid_params(format!("historyLength must not be negative (got {n})"))),
    }
}

/// Drops all but the latest `keep` messages of the task's history.
pub(crate) fn cut_history(task: &mut Task, keep: Option<usize>) {
    if let Some(keep) = keep {
        let skip = task.history.len().saturating_sub(keep);
        task.history.drain(..skip);
    }
}

/// Tasks on an agent that says nothing, holding one task in context `ctx`: the tasks, the
/// task's id and a subscription to its updates from its start.
#[cfg(test)]
pub(crate) fn one_task() -> (Tasks, String, broadcast::Receiver<StreamResponse>) {
    let factory = |_: &str| {
        Agent::builder("a")
            .model(towerscope_models::ScriptedModel::new("m", []))
            .build()
    };
    let tasks = Tasks::new(Arc::new(factory), Limits::default());
    let agent = tasks.agent_for("ctx").expect("an agent");
    let inserted = tasks.insert("ctx", agent, Message::default()).expect("a task");
    let (id, _, updates) = inserted.into_new().expect("a new task");
    (tasks, id, updates)
}

#[cfg(test)]
impl Inserted {
    /// The new task's id, the task and the subscription; `None` for a message sent before.
    pub(crate) fn into_new(self) -> Option<(String, Task, broadcast::Receiver<StreamResponse>)> {
        match self {
            Self::New(id, task, updates, _claim) => Some((id, *task, updates)),
            Self::Sent(_) => None,
        }
    }
}

/// Remembers one more message id of a context, forgetting the oldest past `RECENT_MESSAGES`.
fn remember(recent: &mut VecDeque<Sent>, message_id: &str, digest: u64, task_id: &str) {
    if recent.len() == RECENT_MESSAGES {
        recent.pop_front();
    }
    recent.push_back(Sent {
        message_id: message_id.to_owned(),
        digest,
        task_id: task_id.to_owned(),
    });
}

#[derive(Default)]
struct Inner {
    tasks: HashMap<String, TaskEntry>,
    task_order: VecDeque<String>,
    contexts: HashMap<String, ContextEntry>,
    context_order: VecDeque<String>,
    /// The sum of the ended tasks' `ended_bytes`.
    ended_bytes: usize,
}

/// The tasks and contexts of one A2A endpoint.
pub(crate) struct Tasks {
    factory: Arc<dyn AgentFactory>,
    pub(crate) limits: Limits,
    /// The keep-alive period of streamed answers (`A2aConfig::keep_alive`).
    pub(crate) keep_alive: Option<std::time::Duration>,
    /// The sessions with a reply running, this endpoint's and (on a router) AG-UI's: a reply
    /// of a context holds its claim while it runs.
    pub(crate) busy: crate::busy::Busy,
    inner: Mutex<Inner>,
}

/// Capacity of a task's update channel; a subscriber that falls further behind gets the whole
/// task instead of the updates it missed.
pub(crate) const UPDATES: usize = 256;

impl Tasks {
    pub(crate) fn new(factory: Arc<dyn AgentFactory>, limits: Limits) -> Self {
        Self {
            factory,
            limits,
            keep_alive: Some(crate::DEFAULT_KEEP_ALIVE),
            busy: crate::busy::Busy::default(),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Marks `context` busy for a reply of this endpoint, or the error of a context that
    /// already runs one (on a router, an AG-UI run of the same session, whose thread id is this
    /// context id).
    pub(crate) fn claim(&self, context: &str) -> Result<crate::busy::BusyClaim, RpcError> {
        self.busy.claim(context).ok_or_else(|| {
            RpcError::invalid_params(format!(
                "context `{context}` is busy with another reply (an AG-UI run of the same session); wait for it"
            ))
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The agent of `context`, built by the factory if this process has none.
    pub(crate) fn agent_for(&self, context: &str) -> Result<Agent, RpcError> {
        if let Some(c) = self.lock().contexts.get(context) {
            return Ok(c.agent.clone());
        }
        // Built outside the lock: a slow factory holds up only this request. A panicking one
        // is a JSON-RPC internal error too (nothing else would answer the request).
        let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.factory.agent(context)));
        let agent = match built {
            Ok(Ok(agent)) => agent,
            Ok(Err(e)) => {
                tracing::error!(kind = e.kind(), "the agent factory failed for an A2A context");
                return Err(RpcError::internal());
            }
            Err(_) => {
                tracing::error!("the agent factory panicked for an A2A context");
                return Err(RpcError::internal());
            }
        };
        let mut inner = self.lock();
        if let Some(c) = inner.contexts.get(context) {
            return Ok(c.agent.clone()); // another request built it first
        }
        inner.contexts.insert(
            context.to_owned(),
            ContextEntry {
                agent: agent.clone(),
                last_task: None,
                recent: VecDeque::new(),
            },
        );
        inner.context_order.push_back(context.to_owned());
        evict_contexts(&mut inner, self.limits.max_contexts, context);
        Ok(agent)
    }

    /// The task a message `message_id` sent to `context` earlier went to, if the context
    /// remembers it.
    pub(crate) fn task_of_message(&self, context: &str, message: &Message) -> Result<Option<String>, RpcError> {
        // Before the lock: a message's parts (up to the body limit) are serialised for it.
        let digest = digest(message);
        let inner = self.lock();
        let Some(c) = inner.contexts.get(context) else {
            return Ok(None);
        };
        sent_before(&c.recent, &message.message_id, digest)
    }

    /// The task the context's last message left waiting for input, if any; an error if that
    /// task is still running (one reply at a time per context).
    pub(crate) fn open_task_of(&self, context: &str) -> Result<Option<String>, RpcError> {
        let inner = self.lock();
        let Some(last) = inner.contexts.get(context).and_then(|c| c.last_task.as_ref()) else {
            return Ok(None);
        };
        match inner.tasks.get(last).map(|t| t.task.status.state) {
            Some(TaskState::InputRequired) => Ok(Some(last.clone())),
            Some(s) if !s.is_stopped() => Err(RpcError::invalid_params(format!(
                "context `{context}` is busy with task `{last}`; wait for it, or cancel it"
            ))),
            _ => Ok(None),
        }
    }

    /// Registers a new task for `message` in `context`, subscribed before anything can happen,
    /// and remembers the message's id; when the context remembers the id already (the same
    /// message sent again), registers nothing and names the task it went to. Checked and
    /// remembered under one lock, so two copies of a message sent at once start one task.
    /// Fails when [`Limits::max_tasks`] tasks have not ended (none can be forgotten).
    pub(crate) fn insert(&self, context: &str, agent: Agent, message: Message) -> Result<Inserted, RpcError> {
        let id = towerscope_core::id::new_id().to_string();
        let task = Task {
            id: id.clone(),
            context_id: context.to_owned(),
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: Some(now_rfc3339()),
            },
            history: vec![message],
            ..Task::default()
        };
        let (updates, rx) = broadcast::channel(UPDATES);
        // Before the lock, which every request of every context takes.
        let digest = digest(&task.history[0]);
        let mut inner = self.lock();
        if let Some(c) = inner.contexts.get(context)
            && let Some(task_id) = sent_before(&c.recent, &task.history[0].message_id, digest)?
        {
            return Ok(Inserted::Sent(task_id));
        }
        // Checked again under the lock: two messages racing on one context start one reply.
        let last = inner.contexts.get(context).and_then(|c| c.last_task.as_ref());
        if let Some(last) = last
            && inner.tasks.get(last).is_some_and(|t| !t.task.status.state.is_stopped())
        {
            return Err(RpcError::invalid_params(format!(
                "context `{context}` is busy with task `{last}`; wait for it, or cancel it"
            )));
        }
        // Under the lock, after the copies are found and before anything changes: a copy sent
        // at once gets this task, and only a reply of another protocol (an AG-UI run of the same
        // session) is refused.
        let claim = self.claim(context)?;
        evict_tasks(
            &mut inner,
            self.limits.max_tasks.saturating_sub(1),
            self.limits.max_ended_task_bytes,
        );
        if inner.tasks.len() >= self.limits.max_tasks {
            return Err(RpcError::new(
                RpcError::INTERNAL_ERROR,
                format!(
                    "the server holds {} tasks that have not ended (its limit); try again later",
                    inner.tasks.len()
                ),
            ));
        }
        let context_agent = agent.clone();
        inner.tasks.insert(
            id.clone(),
            TaskEntry {
                task: task.clone(),
                agent: Some(agent),
                parked: None,
                updates: Some(updates),
                cancel_requested: false,
                rounds: 0,
                waiting_since: None,
                ended_bytes: None,
            },
        );
        inner.task_order.push_back(id.clone());
        if !inner.contexts.contains_key(context) {
            // Evicted since its agent was made (by another context's new agent): it is kept
            // again, since the task and its message must be found by context.
            inner.contexts.insert(
                context.to_owned(),
                ContextEntry {
                    agent: context_agent,
                    last_task: None,
                    recent: VecDeque::new(),
                },
            );
            inner.context_order.push_back(context.to_owned());
        }
        if let Some(c) = inner.contexts.get_mut(context) {
            c.last_task = Some(id.clone());
            remember(&mut c.recent, &task.history[0].message_id, digest, &id);
        }
        evict_contexts(&mut inner, self.limits.max_contexts, context);
        Ok(Inserted::New(id, Box::new(task), rx, claim))
    }

    /// Whether the server holds [`Limits::max_tasks`] tasks.
    pub(crate) fn is_full(&self) -> bool {
        self.lock().tasks.len() >= self.limits.max_tasks
    }

    /// Runs `f` on the task `id`, or fails with task-not-found. A task that `f` ended is
    /// settled here (and in [`answer_task`](Self::answer_task)), the places tasks change.
    pub(crate) fn with_task<R>(&self, id: &str, f: impl FnOnce(&mut TaskEntry) -> R) -> Result<R, RpcError> {
        let mut inner = self.lock();
        let inner = &mut *inner;
        let entry = inner.tasks.get_mut(id).ok_or_else(|| RpcError::task_not_found(id))?;
        let out = f(entry);
        settle(&mut inner.ended_bytes, entry);
        Ok(out)
    }

    /// The tasks that have waited for input longer than [`Limits::max_input_wait`] and are not
    /// being canceled yet, oldest first.
    pub(crate) fn waited_too_long(&self) -> Vec<String> {
        let inner = self.lock();
        let max = self.limits.max_input_wait;
        inner
            .task_order
            .iter()
            .filter(|id| inner.tasks.get(*id).is_some_and(|t| t.waited_too_long(max)))
            .cloned()
            .collect()
    }

    /// Runs `f` on the task `id` for a message `message_id` that answers it, and remembers the
    /// message when `f` succeeds. A message the task's context remembers (sent before, or a
    /// copy sent at once) runs nothing: `Err` names the task it went to. Checked and
    /// remembered under one lock, so that copies do not race.
    pub(crate) fn answer_task<R>(
        &self,
        id: &str,
        (message_id, digest): (&str, u64),
        f: impl FnOnce(&mut TaskEntry) -> Result<R, RpcError>,
    ) -> Result<Result<R, String>, RpcError> {
        let mut inner = self.lock();
        let inner = &mut *inner;
        let entry = inner.tasks.get_mut(id).ok_or_else(|| RpcError::task_not_found(id))?;
        let context = inner.contexts.get_mut(&entry.task.context_id);
        if let Some(c) = context.as_ref()
            && let Some(task) = sent_before(&c.recent, message_id, digest)?
        {
            return Ok(Err(task));
        }
        let out = f(entry);
        settle(&mut inner.ended_bytes, entry);
        let out = out?;
        if let Some(c) = context {
            remember(&mut c.recent, message_id, digest, id);
        }
        Ok(Ok(out))
    }

    /// A new subscription to the task `id` and the task as it is, taken together (updates are
    /// published under the same lock), so that the task and the updates after it miss nothing
    /// and repeat nothing.
    pub(crate) fn resubscribe(&self, id: &str) -> Result<(broadcast::Receiver<StreamResponse>, Task), RpcError> {
        self.with_task(id, |t| (t.subscribe(), t.task.clone()))
    }

    /// A copy of the task `id`, its history cut to the latest `history_length` messages.
    pub(crate) fn snapshot(&self, id: &str, history_length: Option<i32>) -> Result<Task, RpcError> {
        let keep = history_keep(history_length)?;
        let mut task = self.with_task(id, |t| t.task.clone())?;
        cut_history(&mut task, keep);
        Ok(task)
    }
}

/// A task that has just ended is measured (its JSON's length, counted in `ended_bytes`) and
/// lets go of its update channel and its agent: subscribers keep what was published (the end
/// included), then see the channel closed; later ones get the task alone.
fn settle(ended_bytes: &mut usize, entry: &mut TaskEntry) {
    if entry.ended_bytes.is_none() && entry.task.status.state.is_terminal() {
        let bytes = json_len(&entry.task);
        entry.ended_bytes = Some(bytes);
        *ended_bytes = ended_bytes.saturating_add(bytes);
        entry.updates = None;
        entry.agent = None;
    }
}

/// Forgets the oldest ended tasks while there are more than `max` tasks or the ended ones
/// take more than `max_bytes`; running and waiting ones are kept.
fn evict_tasks(inner: &mut Inner, max: usize, max_bytes: usize) {
    let mut tries = inner.task_order.len();
    while (inner.tasks.len() > max || inner.ended_bytes > max_bytes) && tries > 0 {
        tries -= 1;
        let Some(id) = inner.task_order.pop_front() else { break };
        let terminal = inner.tasks.get(&id).is_none_or(|t| t.task.status.state.is_terminal());
        if terminal {
            if let Some(bytes) = inner.tasks.remove(&id).and_then(|t| t.ended_bytes) {
                inner.ended_bytes = inner.ended_bytes.saturating_sub(bytes);
            }
        } else {
            inner.task_order.push_back(id);
        }
    }
}

/// The length of `task`'s JSON, counted without building it.
fn json_len(task: &Task) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // The wire types are plain data and always serialize; were one to fail, what it wrote
    // before is what is counted.
    let _ = serde_json::to_writer(&mut count, task);
    count.0
}

/// Drops the oldest contexts' agents past `max`, except `keep` (the context a request is
/// using: its task is about to be recorded) and those whose last task has not ended. When
/// every other context is busy, there are more than `max` for a while: as many as tasks that
/// have not ended ([`Limits::max_tasks`]).
fn evict_contexts(inner: &mut Inner, max: usize, keep: &str) {
    let mut tries = inner.context_order.len();
    while inner.contexts.len() > max && tries > 0 {
        tries -= 1;
        let Some(ctx) = inner.context_order.pop_front() else {
            break;
        };
        let busy = ctx == keep
            || inner
                .contexts
                .get(&ctx)
                .and_then(|c| c.last_task.as_ref())
                .and_then(|t| inner.tasks.get(t))
                .is_some_and(|t| !t.task.status.state.is_terminal());
        if busy {
            inner.context_order.push_back(ctx);
        } else {
            inner.contexts.remove(&ctx);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tokio::sync::broadcast::error::TryRecvError;
    use towerscope_core::AgentError;
    use towerscope_models::ScriptedModel;

    use super::super::run::publish_status;
    use super::*;

    /// A task that ends lets go of its update channel (whose slots are allocated when it is
    /// made) and of its agent: thousands of ended tasks kept for `GetTask` hold their tasks,
    /// not a channel and a conversation each. Subscribers still get the end.
    #[tokio::test]
    async fn an_ended_task_keeps_neither_its_channel_nor_its_agent_and_subscribers_get_its_end() {
        let (tasks, id, mut early) = one_task();
        tasks
            .with_task(&id, |t| {
                publish_status(t, TaskState::Working, None);
                assert!(t.updates.is_some() && t.agent.is_some(), "kept while it works");
            })
            .unwrap();
        tasks
            .with_task(&id, |t| publish_status(t, TaskState::Completed, None))
            .unwrap();
        tasks
            .with_task(&id, |t| {
                assert!(t.updates.is_none(), "the channel is released");
                assert!(t.agent.is_none(), "the agent is released");
                assert!(t.agent().is_err());
            })
            .unwrap();
        // The early subscriber gets both updates, then the closed channel.
        let states: Vec<TaskState> = std::iter::from_fn(|| match early.try_recv() {
            Ok(StreamResponse::StatusUpdate(u)) => Some(u.status.state),
            _ => None,
        })
        .collect();
        assert_eq!(states, [TaskState::Working, TaskState::Completed]);
        assert!(matches!(early.try_recv(), Err(TryRecvError::Closed)));
        // A late one gets the task as it ended, and a channel already closed.
        let (mut late, task) = tasks.resubscribe(&id).unwrap();
        assert_eq!(task.status.state, TaskState::Completed);
        assert!(matches!(late.try_recv(), Err(TryRecvError::Closed)));
    }

    /// A cancellation that comes while the reply runs, and that the reply does not see before
    /// it parks (the agent was not running when it was interrupted), still cancels the task:
    /// the run interrupts the parked reply instead of leaving the task waiting.
    #[tokio::test(start_paused = true)]
    async fn a_reply_that_parks_after_its_task_was_canceled_is_interrupted() {
        use std::time::Duration;

        use towerscope_agent::toolkit::FunctionTool;
        use towerscope_core::{PermissionDecision, ReplyInput, ToolCallState};
        use towerscope_models::ScriptedResponse;

        use super::super::run;
        use super::super::wire::{Message, Role};

        #[derive(serde::Deserialize, schemars::JsonSchema)]
        struct Path {
            path: String,
        }
        let factory = |_: &str| -> Result<Agent, AgentError> {
            let model = ScriptedModel::new(
                "m",
                [ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/a"}"#)
                    .delay(Duration::from_millis(100))],
            );
            Agent::builder("a")
                .model(model)
                .tool(FunctionTool::new("delete", |p: Path| async move { p.path }))
                .default_permission(PermissionDecision::Ask {
                    suggested_rules: vec![],
                })
                .build()
        };
        let tasks = Arc::new(Tasks::new(Arc::new(factory), Limits::default()));
        let agent = tasks.agent_for("ctx").unwrap();
        let message = Message::new_text(Role::User, "Delete /tmp/a");
        let (id, _, _) = tasks
            .insert("ctx", agent.clone(), message.clone())
            .unwrap()
            .into_new()
            .unwrap();
        let input = ReplyInput::from(towerscope_core::Msg::user("user", "Delete /tmp/a"));
        let claim = tasks.claim("ctx").unwrap();
        run::spawn(Arc::clone(&tasks), id.clone(), agent.clone(), input, None, claim);
        tokio::time::sleep(Duration::from_millis(50)).await;
        // The cancellation is asked while the model answers, and nothing interrupts the reply.
        tasks.with_task(&id, |t| t.cancel_requested = true).unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let state = tasks.with_task(&id, |t| t.task.status.state).unwrap();
        assert_eq!(state, TaskState::Canceled);
        // The agent's parked call was closed by the interruption: it takes a new message.
        let calls = agent
            .state()
            .context
            .iter()
            .flat_map(|m| m.tool_calls().map(|c| c.state).collect::<Vec<_>>())
            .collect::<Vec<_>>();
        assert!(!calls.contains(&ToolCallState::Asking), "{calls:?}");
    }
}
