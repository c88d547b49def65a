//! [`MsgHub`] and its builder: who is in the hub, and their subscriptions.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use towerscope_core::{AgentError, Msg};

use super::broadcaster::Receiver;
use crate::Participant;

static NEXT_HUB: AtomicU64 = AtomicU64::new(1);

/// Builds and enters a [`MsgHub`].
#[must_use = "a hub does nothing until `enter` is called"]
pub struct MsgHubBuilder {
    name: Option<String>,
    participants: Vec<Arc<dyn Participant>>,
    announcement: Vec<Msg>,
    auto_broadcast: bool,
}

impl MsgHubBuilder {
    /// The hub's name (default `hub-{n}`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Adds a participant.
    pub fn participant(self, participant: impl Participant) -> Self {
        self.participant_ref(Arc::new(participant))
    }

    /// Adds a shared participant.
    pub fn participant_ref(mut self, participant: Arc<dyn Participant>) -> Self {
        self.participants.push(participant);
        self
    }

    /// Adds participants, in order.
    pub fn participants<P: Participant>(mut self, participants: impl IntoIterator<Item = P>) -> Self {
        for p in participants {
            self.participants.push(Arc::new(p));
        }
        self
    }

    /// A message every participant observes when the hub is entered (call again for more).
    pub fn announcement(mut self, msg: Msg) -> Self {
        self.announcement.push(msg);
        self
    }

    /// Whether each participant's finished replies are broadcast to the others (default
    /// `true`). Without it the hub only broadcasts the announcement and what
    /// [`MsgHub::broadcast`] is given.
    pub fn auto_broadcast(mut self, on: bool) -> Self {
        self.auto_broadcast = on;
        self
    }

    /// Enters the hub: subscribes every participant to the others' replies, then every
    /// participant observes the announcement.
    ///
    /// Fails when two participants share a name, when auto-broadcast is on and a participant
    /// has no [`Broadcaster`](super::Broadcaster), or when a participant refuses the
    /// announcement; no subscription is left behind then.
    pub fn enter(self) -> Result<MsgHub, AgentError> {
        let id = NEXT_HUB.fetch_add(1, Ordering::Relaxed);
        let hub = MsgHub {
            id,
            name: self.name.unwrap_or_else(|| format!("hub-{id}")),
            state: Mutex::new(State {
                members: Vec::new(),
                auto: self.auto_broadcast,
            }),
        };
        {
            // Every participant first, then each one's subscriptions once (subscribing after
            // each addition rebuilt every list each time: cubic in participants).
            let mut state = hub.lock();
            for p in self.participants {
                hub.admit(&mut state, p)?;
            }
            hub.resubscribe(&state);
        }
        if !self.announcement.is_empty() {
            hub.broadcast(self.announcement)?;
        }
        Ok(hub)
    }
}

impl fmt::Debug for MsgHubBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsgHubBuilder")
            .field("name", &self.name)
            .field(
                "participants",
                &self.participants.iter().map(|p| p.name()).collect::<Vec<_>>(),
            )
            .field("auto_broadcast", &self.auto_broadcast)
            .finish_non_exhaustive()
    }
}

struct State {
    members: Vec<Arc<dyn Participant>>,
    auto: bool,
}

/// A group of participants that hear each other: the reference's 1.x `MsgHub`. See the
/// [module docs](super).
///
/// The hub is a guard: while it lives, each participant's finished replies are broadcast to
/// the others; when it is dropped (the scope ends, the task panics or is cancelled) the
/// subscriptions are removed. [`run`](Self::run) scopes it to a block.
pub struct MsgHub {
    id: u64,
    name: String,
    state: Mutex<State>,
}

impl MsgHub {
    /// Starts building a hub.
    pub fn builder() -> MsgHubBuilder {
        MsgHubBuilder {
            name: None,
            participants: Vec::new(),
            announcement: Vec::new(),
            auto_broadcast: true,
        }
    }

    /// The hub's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The participants' names, in the order they joined.
    pub fn participants(&self) -> Vec<String> {
        self.lock().members.iter().map(|p| p.name().to_owned()).collect()
    }

    /// The participant named `name`.
    pub fn participant(&self, name: &str) -> Option<Arc<dyn Participant>> {
        self.lock().members.iter().find(|p| p.name() == name).cloned()
    }

    /// Adds a participant: from now on it hears the others and they hear it.
    pub fn add(&self, participant: impl Participant) -> Result<(), AgentError> {
        self.add_ref(Arc::new(participant))
    }

    /// Adds a shared participant.
    pub fn add_ref(&self, participant: Arc<dyn Participant>) -> Result<(), AgentError> {
        let mut state = self.lock();
        self.admit(&mut state, participant)?;
        self.resubscribe(&state);
        Ok(())
    }

    /// Removes the participant named `name`: it stops hearing the others and they stop hearing
    /// it (the reference keeps broadcasting a deleted participant's replies; this does not).
    pub fn delete(&self, name: &str) -> Result<Arc<dyn Participant>, AgentError> {
        let mut state = self.lock();
        let Some(pos) = state.members.iter().position(|p| p.name() == name) else {
            return Err(AgentError::validation(format!(
                "hub '{}' has no participant named '{name}' (participants: {})",
                self.name,
                names(&state.members)
            )));
        };
        let removed = state.members.remove(pos);
        if let Some(b) = removed.broadcaster() {
            b.unsubscribe(self.id);
        }
        self.resubscribe(&state);
        Ok(removed)
    }

    /// Every participant observes `msgs` (those replying, as soon as they are free). Tries
    /// every participant, then returns the first refusal.
    pub fn broadcast(&self, msgs: impl IntoIterator<Item = Msg>) -> Result<(), AgentError> {
        let msgs: Vec<Msg> = msgs.into_iter().collect();
        let members = self.lock().members.clone();
        let mut first_err = None;
        for p in &members {
            if let Err(e) = p.observe(msgs.clone()) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Switches the automatic broadcast of replies on or off. Switching it on fails, and
    /// changes nothing, when a participant has no broadcaster.
    pub fn set_auto_broadcast(&self, on: bool) -> Result<(), AgentError> {
        let mut state = self.lock();
        if on {
            for p in &state.members {
                check_broadcaster(&**p)?;
            }
        }
        state.auto = on;
        self.resubscribe(&state);
        Ok(())
    }

    /// Whether replies are broadcast automatically.
    pub fn auto_broadcast(&self) -> bool {
        self.lock().auto
    }

    /// Runs `body` with the hub, then ends it; the subscriptions are removed however `body`
    /// ends (returns, panics, or is cancelled by dropping the future).
    pub async fn run<T>(self, body: impl AsyncFnOnce(&MsgHub) -> T) -> T {
        body(&self).await
    }

    /// Ends the hub now (as dropping it does).
    pub fn close(self) {}

    fn resubscribe(&self, state: &State) {
        if !state.auto {
            for b in state.members.iter().filter_map(|m| m.broadcaster()) {
                b.unsubscribe(self.id);
            }
            return;
        }
        // One list for the whole hub, shared by every member's broadcaster (each skips itself):
        // adding a member costs a pass over the members, not a list of them for each.
        let to: Arc<[Receiver]> = state
            .members
            .iter()
            .map(|member| Receiver {
                id: receiver_id(member),
                name: Arc::from(member.name()),
                participant: Arc::downgrade(member),
            })
            .collect();
        for b in state.members.iter().filter_map(|m| m.broadcaster()) {
            b.subscribe(self.id, Arc::clone(&to));
        }
    }

    /// Adds `participant` to the members, unless its name is taken or auto-broadcast needs a
    /// broadcaster it lacks; subscribes no one.
    fn admit(&self, state: &mut State, participant: Arc<dyn Participant>) -> Result<(), AgentError> {
        if state.members.iter().any(|p| p.name() == participant.name()) {
            return Err(AgentError::validation(format!(
                "hub '{}' already has a participant named '{}'; participants of a hub need distinct names",
                self.name,
                participant.name()
            )));
        }
        if state.auto {
            check_broadcaster(&*participant)?;
        }
        state.members.push(participant);
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for MsgHub {
    fn drop(&mut self) {
        let state = self.lock();
        for member in &state.members {
            if let Some(b) = member.broadcaster() {
                b.unsubscribe(self.id);
            }
        }
    }
}

impl fmt::Debug for MsgHub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("MsgHub")
            .field("name", &self.name)
            .field("participants", &names(&state.members))
            .field("auto_broadcast", &state.auto)
            .finish()
    }
}

/// Who a participant is: its broadcaster, whichever `Arc` holds it.
fn receiver_id(p: &Arc<dyn Participant>) -> usize {
    p.broadcaster()
        .map_or_else(|| Arc::as_ptr(p) as *const () as usize, super::Broadcaster::id)
}

fn check_broadcaster(p: &dyn Participant) -> Result<(), AgentError> {
    if p.broadcaster().is_none() {
        return Err(AgentError::validation(format!(
            "participant '{}' cannot broadcast its replies to the hub: build it with \
             `.middleware(Broadcaster::new())` (first, so it broadcasts what the caller receives), \
             or enter the hub with `auto_broadcast(false)`",
            p.name()
        )));
    }
    Ok(())
}

fn names(members: &[Arc<dyn Participant>]) -> String {
    let names: Vec<&str> = members.iter().map(|p| p.name()).collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use towerscope_agent::Agent;
    use towerscope_models::ScriptedModel;

    use super::*;
    use crate::hub::Broadcaster;

    fn member(name: &str) -> Agent {
        Agent::builder(name)
            .model(ScriptedModel::new("scripted", []))
            .middleware(Broadcaster::new())
            .build()
            .unwrap()
    }

    /// A hub of `n` members holds one list of them, shared by every member's broadcaster: a
    /// list each made adding the `n`-th member cost `n` lists of `n`, and a hub of a few
    /// thousand members cubic work to fill.
    #[test]
    fn the_members_share_one_list_of_who_hears_them() {
        let hub = MsgHub::builder().enter().unwrap();
        let members: Vec<Agent> = (0..4).map(|i| member(&format!("m{i}"))).collect();
        for m in &members {
            hub.add(m.clone()).unwrap();
        }
        let lists: Vec<Arc<[Receiver]>> = members
            .iter()
            .map(|m| {
                let b = Participant::broadcaster(m).unwrap();
                let subs = b.subscriptions();
                assert_eq!(subs.len(), 1, "one hub");
                Arc::clone(&subs[0].to)
            })
            .collect();
        assert_eq!(lists[0].len(), 4);
        assert!(lists.iter().all(|l| Arc::ptr_eq(l, &lists[0])), "one list for the hub");
        assert_eq!(
            Participant::broadcaster(&members[0]).unwrap().subscribers(),
            ["m1", "m2", "m3"],
            "a member does not hear itself"
        );
        hub.delete("m2").unwrap();
        assert_eq!(
            Participant::broadcaster(&members[0]).unwrap().subscribers(),
            ["m1", "m3"]
        );
    }
}
