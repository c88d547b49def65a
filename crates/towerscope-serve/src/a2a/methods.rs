//! The JSON-RPC methods: what `SendMessage`, `SendStreamingMessage`, `GetTask` and
//! `CancelTask` do to the tasks.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::{self, error::RecvError};
use towerscope_agent::Agent;
use towerscope_core::ReplyInput;
use towerscope_core::event::UserInterruptEvent;

use super::answer;
use super::error::RpcError;
use super::run;
use super::tasks::{Inserted, Parked, TaskEntry, Tasks};
use super::wire::{Message, Role, SendMessageRequest, StreamResponse, Task, TaskState};

/// The longest id a client may choose (a context, a task, a message).
const MAX_ID_BYTES: usize = 256;

/// How long `CancelTask` waits for the reply to stop before answering with the task as it is.
const CANCEL_WAIT: Duration = Duration::from_secs(30);

/// A task started or continued by a message, subscribed to from its first update.
pub(crate) struct Started {
    pub(crate) id: String,
    pub(crate) task: Task,
    pub(crate) updates: broadcast::Receiver<StreamResponse>,
    /// The pace of the reply this message started, for a stream to hold (dropping it lets the
    /// reply run free); `None` when no reply was started.
    pub(crate) pace: Option<run::PaceGuard>,
}

/// Starts the task a message asks for: continues the task it names (or its context's task
/// waiting for input), or starts a new one.
pub(crate) fn start(tasks: &Arc<Tasks>, request: SendMessageRequest) -> Result<Started, RpcError> {
    let mut message = request.message;
    if message.role == Role::Agent {
        return Err(RpcError::invalid_params("a client's message has role ROLE_USER"));
    }
    for (what, id) in [
        ("contextId", message.context_id.as_deref()),
        ("taskId", message.task_id.as_deref()),
        ("messageId", Some(message.message_id.as_str())),
    ] {
        if id.is_some_and(|id| id.len() > MAX_ID_BYTES) {
            return Err(RpcError::invalid_params(format!(
                "`{what}` is longer than {MAX_ID_BYTES} bytes"
            )));
        }
    }
    if message.message_id.is_empty() {
        message.message_id = towerscope_core::id::new_id().to_string();
    }
    // A message sent before is found where it would run: `Tasks::insert` for a new task,
    // `Tasks::answer_task` for a waiting one, and below for a context busy with it.
    let open = match (&message.task_id, &message.context_id) {
        (Some(task), _) => Some(task.clone()),
        (None, Some(context)) => match tasks.open_task_of(context) {
            Ok(open) => open,
            // Busy with this very message, sent twice at once: its task.
            Err(busy) => match tasks.task_of_message(context, &message)? {
                Some(task_id) => return subscribe(tasks, &task_id),
                None => return Err(busy),
            },
        },
        (None, None) => None,
    };
    if let Some(task_id) = open {
        return resume(tasks, &task_id, message);
    }
    let input = answer::new_message(&message)?;
    let context = message
        .context_id
        .clone()
        .unwrap_or_else(|| towerscope_core::id::new_id().to_string());
    let agent = tasks.agent_for(&context)?;
    message.context_id = Some(context.clone());
    let inserted = tasks.insert(&context, agent.clone(), message);
    if inserted.is_err() && tasks.is_full() {
        make_room(tasks);
    }
    let (id, task, updates, claim) = match inserted? {
        Inserted::New(id, task, updates, claim) => (id, *task, updates, claim),
        // Sent at the same time as its copy, which started the task.
        Inserted::Sent(task_id) => return subscribe(tasks, &task_id),
    };
    let _ = tasks.with_task(&id, |t| {
        t.task.history[0].task_id = Some(id.clone());
    });
    let (pace, guard) = run::pace();
    run::spawn(Arc::clone(tasks), id.clone(), agent, input, Some(pace), claim);
    Ok(Started {
        id,
        task,
        updates,
        pace: Some(guard),
    })
}

/// Cancels the tasks that have waited for input longer than `Limits::max_input_wait`, so that
/// the next message finds room. Each is checked again under the task's lock: one answered
/// meanwhile is left alone.
fn make_room(tasks: &Arc<Tasks>) {
    let max = tasks.limits.max_input_wait;
    for id in tasks.waited_too_long() {
        // A context busy with another reply (an AG-UI run) is left for the next time.
        let canceled = tasks.with_task(&id, |t| {
            if !t.waited_too_long(max) {
                return None;
            }
            let claim = tasks.busy.claim(&t.task.context_id)?;
            begin_cancel(t).ok().map(|canceled| (canceled, claim))
        });
        if let Ok(Some(((agent, Some(parked)), claim))) = canceled {
            tracing::info!(task = %id, "an A2A task waited for input too long and is canceled to make room");
            let input = ReplyInput::from(UserInterruptEvent::new(parked.reply_id));
            run::spawn(Arc::clone(tasks), id, agent, input, None, claim);
        }
    }
}

/// Answers the task `task_id` waiting for input with `message`.
fn resume(tasks: &Arc<Tasks>, task_id: &str, mut message: Message) -> Result<Started, RpcError> {
    // Before the task is touched: a refused answer leaves it waiting.
    answer::check_answer_parts(&message)?;
    let (message_id, digest) = (message.message_id.clone(), super::tasks::digest(&message));
    // Sent to the context, not to the task: an answer only if it says yes or no.
    let to_context = message.task_id.is_none();
    let answered = tasks.answer_task(task_id, (&message_id, digest), |t| {
        if let Some(context) = &message.context_id
            && *context != t.task.context_id
        {
            return Err(RpcError::invalid_params(format!(
                "task `{task_id}` belongs to another context than `{context}`"
            )));
        }
        let state = t.task.status.state;
        if to_context
            && state == TaskState::InputRequired
            && t.parked.as_ref().is_some_and(|p| !p.confirm.is_empty())
            && !answer::answers_confirmation(&message)
        {
            return Err(RpcError::invalid_params(format!(
                "context `{}` has task `{task_id}` waiting for a confirmation: answer it with yes or no (or a data \
                 part {{\"approved\": bool}}), or cancel it, before asking anything else",
                t.task.context_id
            )));
        }
        let parked = if state == TaskState::InputRequired {
            t.parked.take()
        } else {
            None
        };
        let Some(parked) = parked else {
            let (code, what) = match state {
                // The spec's UnsupportedOperationError for a message to a task that ended.
                s if s.is_terminal() => (RpcError::UNSUPPORTED_OPERATION, "has ended"),
                TaskState::InputRequired => (RpcError::INVALID_PARAMS, "waits for nothing this agent can resume"),
                _ => (RpcError::INVALID_PARAMS, "is still working"),
            };
            return Err(RpcError::new(
                code,
                format!("task `{task_id}` {what}; only a task waiting for input takes another message"),
            ));
        };
        // A context busy with another reply (an AG-UI run of the same session) takes no answer,
        // and the task still waits.
        let claim = match tasks.claim(&t.task.context_id) {
            Ok(claim) => claim,
            Err(busy) => {
                t.parked = Some(parked);
                return Err(busy);
            }
        };
        let agent = t.agent()?;
        let input = answer::resume(&parked, &message);
        message.task_id = Some(task_id.to_owned());
        message.context_id = Some(t.task.context_id.clone());
        t.task.history.push(message);
        let updates = t.subscribe();
        // Working from now on (the runner publishes the update); the next message is refused.
        t.task.status.state = TaskState::Working;
        Ok((agent, input, t.task.clone(), updates, claim))
    })?;
    let (agent, input, task, updates, claim) = match answered {
        Ok(answered) => answered,
        // The same message again (a retry after a lost answer, or a copy sent at once): its
        // task as it is now, and what follows, as `SubscribeToTask` answers; nothing runs
        // twice, and a "yes" sent again does not approve a call asked about since.
        Err(sent_to) => return subscribe(tasks, &sent_to),
    };
    let (pace, guard) = run::pace();
    run::spawn(Arc::clone(tasks), task_id.to_owned(), agent, input, Some(pace), claim);
    Ok(Started {
        id: task_id.to_owned(),
        task,
        updates,
        pace: Some(guard),
    })
}

/// Follows the task `id`: the task as it is, then its updates until it stops (a message sent
/// again gets its task this way).
pub(crate) fn subscribe(tasks: &Tasks, id: &str) -> Result<Started, RpcError> {
    tasks.with_task(id, |t| Started {
        id: id.to_owned(),
        task: t.task.clone(),
        updates: t.subscribe(),
        pace: None,
    })
}

/// `SubscribeToTask`: follows the task `id` (see [`subscribe`]); a task that ended has nothing
/// to follow: the spec's UnsupportedOperationError, as the official SDK's server answers
/// (`GetTask` has it).
pub(crate) fn follow(tasks: &Tasks, id: &str) -> Result<Started, RpcError> {
    let started = subscribe(tasks, id)?;
    if started.task.status.state.is_terminal() {
        return Err(RpcError::new(
            RpcError::UNSUPPORTED_OPERATION,
            format!("task `{id}` has ended: there is nothing to subscribe to; `GetTask` returns it"),
        ));
    }
    Ok(started)
}

/// Waits until the task stops (ends, or waits for input), or its updates end.
pub(crate) async fn wait_stopped(tasks: &Tasks, id: &str, updates: &mut broadcast::Receiver<StreamResponse>) {
    loop {
        if tasks
            .with_task(id, |t| t.task.status.state.is_stopped())
            .unwrap_or(true)
        {
            return;
        }
        match updates.recv().await {
            Ok(_) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => return,
        }
    }
}

/// Marks the task canceled: one waiting for input gives up its parked reply (to interrupt) or
/// ends at once when there is none; a working one is interrupted by the caller. An error for a
/// task that has ended.
fn begin_cancel(t: &mut TaskEntry) -> Result<(Agent, Option<Parked>), RpcError> {
    let state = t.task.status.state;
    if state.is_terminal() {
        return Err(RpcError::new(
            RpcError::TASK_NOT_CANCELABLE,
            format!("task `{}` has already ended ({state:?})", t.task.id),
        ));
    }
    let agent = t.agent()?;
    t.cancel_requested = true;
    let parked = if state == TaskState::InputRequired {
        t.parked.take()
    } else {
        None
    };
    match parked {
        // Closed by a reply the caller starts: working from now on (the runner publishes the
        // update), so that a cancel sent again waits for that reply instead of ending the task
        // under it.
        Some(_) => t.task.status.state = TaskState::Working,
        // Nothing to interrupt: the task just ends.
        None if state == TaskState::InputRequired => run::publish_status(t, TaskState::Canceled, None),
        None => {}
    }
    Ok((agent, parked))
}

/// `CancelTask`: interrupts a working task, or ends one waiting for input; waits (bounded) for
/// the reply to stop and answers with the task.
pub(crate) async fn cancel(tasks: &Arc<Tasks>, id: &str) -> Result<Task, RpcError> {
    let (agent, parked, mut updates) = tasks.with_task(id, |t| {
        // A task waiting for input is closed by a reply of its own: its context must be free
        // of another reply (an AG-UI run of the same session), or the task still waits.
        let closes = t.task.status.state == TaskState::InputRequired && t.parked.is_some();
        let claim = if closes {
            Some(tasks.claim(&t.task.context_id)?)
        } else {
            None
        };
        let (agent, parked) = begin_cancel(t)?;
        Ok::<_, RpcError>((agent, parked.zip(claim), t.subscribe()))
    })??;
    if let Some((parked, claim)) = parked {
        let input = ReplyInput::from(UserInterruptEvent::new(parked.reply_id));
        run::spawn(Arc::clone(tasks), id.to_owned(), agent.clone(), input, None, claim);
    }
    let stopped = async {
        loop {
            if tasks
                .with_task(id, |t| t.task.status.state.is_terminal())
                .unwrap_or(true)
            {
                return;
            }
            // The reply may not have started yet: interrupt until it has stopped.
            agent.interrupt();
            let waited = tokio::time::timeout(Duration::from_millis(20), updates.recv()).await;
            if let Ok(Err(RecvError::Closed)) = waited {
                return;
            }
        }
    };
    if tokio::time::timeout(CANCEL_WAIT, stopped).await.is_err() {
        tracing::warn!(task = %id, "an A2A task did not stop within 30 s of its cancellation");
    }
    tasks.snapshot(id, None)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A cancel of a task waiting for input takes its parked reply for the closing and marks it
    /// working; a cancel sent again before that closing ran finds nothing to close and leaves
    /// the task to it (it ended the task under the closing, which then set it working again).
    #[tokio::test]
    async fn a_cancel_sent_again_leaves_the_task_to_the_first_ones_closing() {
        let (tasks, id, _) = crate::a2a::tasks::one_task();
        tasks
            .with_task(&id, |t| {
                t.task.status.state = TaskState::InputRequired;
                t.parked = Some(Parked {
                    reply_id: "r1".into(),
                    confirm: vec![],
                    external: vec![],
                });
            })
            .unwrap();
        let first = tasks
            .with_task(&id, |t| begin_cancel(t).map(|(_, parked)| parked))
            .unwrap();
        assert!(first.unwrap().is_some(), "the first cancel closes the parked reply");
        let second = tasks
            .with_task(&id, |t| begin_cancel(t).map(|(_, parked)| parked))
            .unwrap();
        assert!(second.unwrap().is_none());
        let state = tasks.with_task(&id, |t| t.task.status.state).unwrap();
        assert_eq!(
            state,
            TaskState::Working,
            "the task waits for the first cancel's closing"
        );
    }
}
