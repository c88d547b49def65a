//! [`Broadcaster`]: a participant's subscriptions, and the middleware that shares its replies.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use towerscope_core::{ErasedLayer, Middleware, Msg, ReplyLayer};

use super::BroadcastLayer;
use crate::Participant;
use crate::share::shared_copy;

/// Who hears one participant's replies in one hub: the hub's members, shared by all of them
/// (the participant itself among them, skipped when it broadcasts), so a hub of `n` members
/// holds one list of `n`, not `n` lists of `n - 1`.
#[derive(Clone)]
pub(crate) struct Subscription {
    pub(crate) hub: u64,
    pub(crate) to: Arc<[Receiver]>,
}

/// One participant that hears the replies.
#[derive(Clone)]
pub(crate) struct Receiver {
    /// The receiver's broadcaster: who it is, whichever hub lists it.
    pub(crate) id: usize,
    pub(crate) name: Arc<str>,
    pub(crate) participant: Weak<dyn Participant>,
}

#[derive(Default)]
struct Shared {
    subscriptions: Mutex<Vec<Subscription>>,
}

/// The part of a participant that shares its replies with the hubs it is in: a
/// [`Middleware`] on `on_reply` ([`BroadcastLayer`]) and the subscriptions the hubs set.
///
/// Install one per agent, **first**, so it is the outermost `on_reply` layer:
///
/// ```text
/// on_reply:  Broadcaster ─▶ your layers (hooks, tracing, retry …) ─▶ the reply loop
///             └ sees the final message the caller receives, after your layers changed it
/// ```
///
/// Installed after other `on_reply` layers it broadcasts the message as it is before they see
/// it (a `post_reply` hook's rewrite is then not shared), and a layer outside it that calls the
/// reply twice broadcasts twice. Either way, events stream through untouched.
///
/// Clones share the subscriptions; a hub finds the broadcaster from the agent
/// (`Agent::middleware::<Broadcaster>()`, through [`Participant::broadcaster`]).
///
/// # Example
///
/// ```
/// use towerscope_agent::Agent;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
/// use towerscope_team::hub::Broadcaster;
/// use towerscope_team::Participant;
///
/// let agent = Agent::builder("alice")
///     .model(ScriptedModel::new("scripted", [ScriptedResponse::text("Hi")]))
///     .middleware(Broadcaster::new())
///     .build()?;
/// let broadcaster = agent.broadcaster().expect("installed");
/// assert!(broadcaster.subscribers().is_empty(), "in no hub yet");
/// # Ok::<(), towerscope_core::AgentError>(())
/// ```
#[derive(Clone, Default)]
pub struct Broadcaster {
    shared: Arc<Shared>,
}

impl Broadcaster {
    /// A broadcaster in no hub.
    pub fn new() -> Self {
        Self::default()
    }

    /// The `on_reply` layer that broadcasts each finished reply.
    pub fn layer(&self) -> BroadcastLayer {
        BroadcastLayer::new(self.clone())
    }

    /// The names of the participants that hear this one's replies, over every hub it is in,
    /// each once.
    pub fn subscribers(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for r in self.receivers() {
            names.push(r.name.to_string());
        }
        names
    }

    /// How many hubs this participant's replies are broadcast in.
    pub fn hubs(&self) -> usize {
        self.lock().len()
    }

    /// Shares `msg` (its [`shared_copy`]) with every subscriber: each observes it once, now or,
    /// if it is replying, as soon as it is free. Returns how many subscribers were given it.
    ///
    /// The [`BroadcastLayer`] calls this with each finished reply; a message a subscriber
    /// refuses is logged and skipped, so one subscriber cannot stop the others hearing it.
    pub fn broadcast(&self, msg: &Msg) -> usize {
        let Some(shared) = shared_copy(msg) else {
            return 0;
        };
        let mut given = 0;
        for receiver in self.receivers() {
            let Some(participant) = receiver.participant.upgrade() else {
                continue;
            };
            match participant.observe(vec![shared.clone()]) {
                Ok(()) => given += 1,
                Err(e) => tracing::warn!(
                    speaker = %msg.name,
                    subscriber = %receiver.name,
                    error.kind = e.kind(),
                    "a hub subscriber refused a broadcast message"
                ),
            }
        }
        given
    }

    pub(crate) fn id(&self) -> usize {
        Arc::as_ptr(&self.shared) as usize
    }

    pub(crate) fn subscribe(&self, hub: u64, to: Arc<[Receiver]>) {
        let mut subs = self.lock();
        subs.retain(|s| s.hub != hub);
        subs.push(Subscription { hub, to });
    }

    #[cfg(test)]
    pub(crate) fn subscriptions(&self) -> Vec<Subscription> {
        self.lock().clone()
    }

    pub(crate) fn unsubscribe(&self, hub: u64) {
        self.lock().retain(|s| s.hub != hub);
    }

    /// Every receiver over all hubs, each once (a participant sharing two hubs with this one
    /// hears a reply once; the reference delivers it once per hub).
    fn receivers(&self) -> Vec<Receiver> {
        let subs = self.lock().clone();
        let me = self.id();
        let mut seen = std::collections::HashSet::new();
        subs.iter()
            .flat_map(|s| s.to.iter())
            .filter(|r| r.id != me && seen.insert(r.id))
            .cloned()
            .collect()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Subscription>> {
        self.shared.subscriptions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for Broadcaster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Broadcaster")
            .field("subscribers", &self.subscribers())
            .finish()
    }
}

impl Middleware for Broadcaster {
    fn name(&self) -> &str {
        "Broadcaster"
    }

    fn on_reply(&self) -> Option<ReplyLayer> {
        Some(ErasedLayer::new(self.layer()))
    }
}
