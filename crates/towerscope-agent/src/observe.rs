//! Adding messages to the context without replying: now ([`Agent::observe`]), or as soon as the
//! agent is free ([`Agent::observe_when_free`]).
//!
//! An agent never changes its conversation in the middle of a reply, so `observe` fails with
//! [`AgentError::State`] while a reply runs or is parked for the user. A sender that must not
//! lose a message while the agent is busy (a hub broadcasting another participant's reply)
//! posts it to the agent's [`Mailbox`] instead. The mailbox is emptied, in the order messages
//! arrived, the moment the agent is free: when the running reply's stream ends or is dropped
//! (after everything that reply stored), or, for a reply parked for the user, when the reply
//! that resumes it ends. A message is observed once; the observe hooks run when it is.
//!
//! [`Agent::observe`]: crate::Agent::observe
//! [`Agent::observe_when_free`]: crate::Agent::observe_when_free

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use towerscope_core::{AgentError, Msg};

use crate::runtime::{Runtime, validate_input};

/// Why messages could not be observed now.
enum Refused {
    /// A reply is running: retry when it ends.
    Busy,
    /// A reply is parked for the user: retry when the reply resuming it ends.
    Parked,
    /// A hook or the input rules rejected them.
    Failed(AgentError),
}

/// Whether a reply is running or parked, checked before any hook runs.
fn refuse_early(runtime: &Runtime, busy: &AtomicBool) -> Option<Refused> {
    if busy.load(Ordering::Acquire) {
        return Some(Refused::Busy);
    }
    crate::state::check_not_parked(&runtime.lock_state())
        .err()
        .map(|_| Refused::Parked)
}

/// Why `observe` failed, and whether the messages were stored.
enum Failure {
    /// A reply runs or is parked: nothing was stored (a mailbox keeps the messages).
    NotFree(AgentError),
    /// A hook or the input rules rejected them: nothing was stored.
    Rejected(AgentError),
    /// They were stored, and an observe hook failed after.
    AfterStored(AgentError),
}

impl Failure {
    fn into_error(self) -> AgentError {
        match self {
            Self::NotFree(e) | Self::Rejected(e) | Self::AfterStored(e) => e,
        }
    }
}

/// `Agent::observe`: the observe hooks, the input rules, then the context.
pub(crate) fn observe_now(runtime: &Runtime, busy: &AtomicBool, msgs: Vec<Msg>) -> Result<(), AgentError> {
    observe(runtime, busy, msgs).map_err(Failure::into_error)
}

fn observe(runtime: &Runtime, busy: &AtomicBool, msgs: Vec<Msg>) -> Result<(), Failure> {
    let mut msgs = msgs;
    for hook in &runtime.observe_hooks {
        msgs = hook.pre_observe(&runtime.name, msgs).map_err(Failure::Rejected)?;
    }
    for m in &msgs {
        validate_input(m).map_err(Failure::Rejected)?;
    }
    {
        let mut state = runtime.lock_state();
        // Read under the state lock: a reply marks the agent busy before it first takes that
        // lock, so a reply that started before this point is seen here, and one that starts
        // after changes nothing until these messages are stored.
        if busy.load(Ordering::Acquire) {
            return Err(Failure::NotFree(AgentError::State(
                "cannot observe messages while the agent is replying; observe them after the reply ends".to_owned(),
            )));
        }
        crate::state::check_not_parked(&state).map_err(Failure::NotFree)?;
        crate::resume::close_dangling_calls(&runtime.name, &mut state);
        state.store_input(msgs.iter().cloned().map(Arc::new));
    }
    for hook in &runtime.observe_hooks {
        hook.post_observe(&runtime.name, &msgs).map_err(Failure::AfterStored)?;
    }
    Ok(())
}

/// `Agent::observe_when_free`: checks the messages against the input rules (so a message that
/// can never be stored fails here, for its sender), posts them, and delivers what waits if the
/// agent is free. Returns whether nothing is left waiting.
pub(crate) fn observe_when_free(runtime: &Runtime, busy: &AtomicBool, msgs: Vec<Msg>) -> Result<bool, AgentError> {
    for m in &msgs {
        validate_input(m)?;
    }
    runtime.mailbox.post(msgs);
    deliver(runtime, busy)
}

/// Delivers the waiting posts if the agent is free, each post apart. Returns whether nothing
/// is left waiting; fails when a hook rejected a post (that post is not retried; the others
/// are delivered), or failed after storing one.
///
/// Called when a reply ends (its busy flag just cleared) and when mail is posted.
pub(crate) fn deliver(runtime: &Runtime, busy: &AtomicBool) -> Result<bool, AgentError> {
    if !runtime.mailbox.has_mail.load(Ordering::Acquire) {
        return Ok(true);
    }
    loop {
        let refused = {
            // Another thread delivering empties the mailbox itself: it looks again after
            // releasing its turn, so what was posted meanwhile is not stranded.
            let Ok(_turn) = runtime.mailbox.delivering.try_lock() else {
                return Ok(false);
            };
            deliver_all(runtime, busy)
        };
        match refused {
            None if runtime.mailbox.len() == 0 => return Ok(true),
            None => continue,
            // A reply ended while this thread held the turn: that reply's own delivery gave up,
            // so deliver now.
            Some(Refused::Busy) if !busy.load(Ordering::Acquire) => continue,
            Some(Refused::Busy | Refused::Parked) => return Ok(false),
            Some(Refused::Failed(e)) => return Err(e),
        }
    }
}

fn deliver_all(runtime: &Runtime, busy: &AtomicBool) -> Option<Refused> {
    // The first failure; the posts after the one that failed are still delivered.
    let mut failed: Option<AgentError> = None;
    loop {
        if let Some(refused) = refuse_early(runtime, busy) {
            return Some(stopped(runtime, refused, failed));
        }
        let Some(post) = runtime.mailbox.take() else {
            return failed.map(Refused::Failed);
        };
        match observe(runtime, busy, post.clone()) {
            Ok(()) => {}
            // A reply started between the check and the store: keep the post.
            Err(Failure::NotFree(_)) => {
                runtime.mailbox.put_back(post);
                let refused = if busy.load(Ordering::Acquire) {
                    Refused::Busy
                } else {
                    Refused::Parked
                };
                return Some(stopped(runtime, refused, failed));
            }
            // One sender's post rejected (or its hook failed after storing it): the others'
            // posts are not lost with it.
            Err(Failure::Rejected(e) | Failure::AfterStored(e)) => {
                if failed.is_some() {
                    warn_rejected(runtime, &e);
                }
                failed.get_or_insert(e);
            }
        }
    }
}

/// Delivery stopped by a reply: the refusal (so that what waits is delivered when the reply
/// ends), and an earlier post's failure only logged.
fn stopped(runtime: &Runtime, refused: Refused, failed: Option<AgentError>) -> Refused {
    if let Some(e) = failed {
        warn_rejected(runtime, &e);
    }
    refused
}

fn warn_rejected(runtime: &Runtime, e: &AgentError) {
    tracing::warn!(agent = %runtime.name, error.kind = e.kind(), "a post was rejected when delivered");
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::{Arc, Barrier};
    use std::time::Duration;

    use towerscope_core::{AgentError, ContentBlock, Middleware, Msg, ObserveHook, ToolCallBlock, ToolCallState};
    use towerscope_models::ScriptedModel;

    use crate::Agent;

    /// Meets the test once `observe` has run its hooks (and is about to look at the agent).
    #[derive(Clone)]
    struct Meet(Arc<Barrier>);

    impl ObserveHook for Meet {
        fn pre_observe(&self, _: &str, msgs: Vec<Msg>) -> Result<Vec<Msg>, AgentError> {
            self.0.wait();
            Ok(msgs)
        }
    }

    impl Middleware for Meet {
        fn on_observe(&self) -> Option<Arc<dyn ObserveHook>> {
            Some(Arc::new(self.clone()))
        }
    }

    /// `observe` waits for the state while a reply starts and runs a tool: it must see that
    /// reply, not close its running call or add a message in the middle of it.
    #[test]
    fn a_reply_that_starts_while_observe_waits_for_the_state_is_left_alone() {
        let meet = Meet(Arc::new(Barrier::new(2)));
        let agent = Agent::builder("a")
            .model(ScriptedModel::new("m", []))
            .middleware(meet.clone())
            .build()
            .unwrap();
        let mut state = agent.runtime.lock_state();
        let observer = std::thread::spawn({
            let agent = agent.clone();
            move || agent.observe([Msg::user("bob", "by the way")])
        });
        meet.0.wait();
        // Time for `observe` to reach the state lock (no assertion on time: with the busy flag
        // read under that lock, the outcome is the same either way).
        std::thread::sleep(Duration::from_millis(50));
        // A reply starts (its busy flag first, as `Agent::start` does) and runs a tool.
        agent.busy.store(true, Ordering::Release);
        let mut call = ToolCallBlock::new("c1", "t", "{}");
        call.state = ToolCallState::Allowed;
        state.context.push(Msg::user("user", "go"));
        state
            .context
            .push(Msg::assistant_blocks("a", vec![ContentBlock::ToolCall(call)]));
        let running = state.clone();
        drop(state);

        let observed = observer.join().unwrap();
        assert!(matches!(observed, Err(AgentError::State(_))), "{observed:?}");
        assert_eq!(agent.state(), running, "the running call is open and nothing was added");
    }
}
