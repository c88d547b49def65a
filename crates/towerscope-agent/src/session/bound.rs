//! What a session layer shares with its clones: the store, the key, the agent's state, the
//! registered modules, and the revision the agent's state is at.

use std::fmt;
use std::hash::RandomState;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use serde_json::Value;
use tokio::sync::OwnedMutexGuard;
use towerscope_core::state::{StateModule, StateModules};
use towerscope_core::{AgentContext, AgentError, Id, ReplyRequest};

use super::store::{Expect, SessionStore, StoreFuture};
use super::{SessionDocument, SessionKey};
use crate::emit::EventsRead;
use crate::state::AgentState;

/// One agent's session: loads it into the agent before a reply, saves it after.
pub(crate) struct Bound {
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) key: SessionKey,
    pub(crate) modules: StateModules,
    pub(crate) strict: bool,
    state: Arc<Mutex<AgentState>>,
    /// What the agent's state is at in the store. Held across a load or a save, so that the
    /// saves of one agent happen in order.
    revision: Arc<tokio::sync::Mutex<Saved>>,
    /// The keys of the documents' fingerprints (random: nobody can make two documents that
    /// look alike on purpose).
    keys: RandomState,
    /// The registered modules' state before the first load: what a session deleted since it
    /// was saved starts over from.
    initial_modules: OnceLock<Value>,
    /// This agent's claim on the parked reply it resumes, written in the session until the
    /// reply's save.
    claim: Mutex<Option<Claim>>,
    /// Another request's claim, as the revision loaded last holds it: kept in this agent's
    /// saves, so that a save on top of it (a compression while the reply is parked) does not
    /// take it out.
    foreign: Mutex<Option<Claim>>,
    /// The agent's state was replaced (`Agent::load_state`) and not saved since: the
    /// conversation it replaced (its length and last message's id). A load keeps the
    /// replacement while the store holds that conversation at the agent's revision (or the
    /// agent never loaded, or the session is gone); another conversation stored since is
    /// loaded over it.
    replaced: Mutex<Option<Conversation>>,
}

/// Which conversation a state holds, as [`same_conversation`] compares them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Conversation {
    len: usize,
    last: Option<Id>,
}

impl Conversation {
    pub(crate) fn of(state: &AgentState) -> Self {
        Self {
            len: state.context.len(),
            last: state.context.last().map(|m| m.id.clone()),
        }
    }
}

/// Where a document holds the claim on its parked reply, beside the modules' states.
const CLAIM_KEY: &str = "towerscope.resuming";

/// How long a claim holds: a process that died while resuming a parked reply leaves its claim,
/// and a confirmation after this long takes the reply over.
pub(crate) const CLAIM_LEASE: std::time::Duration = std::time::Duration::from_secs(300);

/// A confirmation's claim on the parked reply it resumes: since when, in microseconds of the
/// wall clock (not the ids' and timestamps' clock, which a test may fix: a lease is real time),
/// and by whom (a random number: an agent finds its own claim again).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Claim {
    at: i64,
    by: u64,
}

impl Claim {
    fn now() -> Self {
        use std::hash::BuildHasher;
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let at = i64::try_from(since_epoch.as_micros()).unwrap_or(i64::MAX);
        Self {
            at,
            by: RandomState::new().hash_one(at),
        }
    }

    fn to_value(self) -> Value {
        serde_json::json!({ "at": self.at, "by": self.by })
    }

    /// The claim a document holds, if any (a claim it cannot read is none).
    fn of(value: &Value) -> Option<Self> {
        Some(Self {
            at: value.get("at")?.as_i64()?,
            by: value.get("by")?.as_u64()?,
        })
    }

    /// Whether the claim still holds: younger than the lease, or written by a clock ahead of
    /// this one (a negative age).
    fn is_live(self) -> bool {
        let lease = i64::try_from(CLAIM_LEASE.as_micros()).unwrap_or(i64::MAX);
        Self::now().at.saturating_sub(self.at) < lease
    }
}

/// The store revision the agent's state is at, and the fingerprint of that document.
#[derive(Debug, Default)]
pub(crate) struct Saved {
    /// `None`: never saved or loaded.
    revision: Option<u64>,
    /// `None`: not known (a save then goes to the store whatever it holds).
    fingerprint: Option<u64>,
    /// Another request's claim on the parked reply, as that revision holds it.
    claimed: Option<Claim>,
}

impl Bound {
    pub(crate) fn new(
        store: Arc<dyn SessionStore>,
        key: SessionKey,
        modules: StateModules,
        strict: bool,
        state: Arc<Mutex<AgentState>>,
    ) -> Self {
        Self {
            store,
            key,
            modules,
            strict,
            state,
            revision: Arc::new(tokio::sync::Mutex::new(Saved::default())),
            keys: RandomState::new(),
            initial_modules: OnceLock::new(),
            claim: Mutex::new(None),
            foreign: Mutex::new(None),
            replaced: Mutex::new(None),
        }
    }

    pub(crate) fn session_id(&self) -> Id {
        self.key.agent_session_id()
    }

    /// The agent's state was replaced by its user ([`Agent::load_state`](crate::Agent::load_state)):
    /// the next load keeps it (and the next save stores it) when the store still holds the
    /// revision the agent saw.
    pub(crate) fn state_replaced(&self, over: Conversation) {
        let mut replaced = self.replaced.lock().unwrap_or_else(PoisonError::into_inner);
        // Replaced twice before a save: what the store holds is the first one's.
        replaced.get_or_insert(over);
    }

    fn replacement(&self) -> Option<Conversation> {
        self.replaced.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn forget_replacement(&self) {
        *self.replaced.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    fn lock_state(&self) -> MutexGuard<'_, AgentState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Loads the saved session into the agent, unless the agent already holds that revision
    /// (it saved or loaded it last). A session nobody saved leaves the agent's state as it
    /// is; one deleted since this agent saved it starts over. Either way the agent's session
    /// id becomes the key's.
    pub(crate) async fn load(self: Arc<Self>) -> Result<(), AgentError> {
        self.load_for(false).await
    }

    /// [`load`](Self::load); with `claim` (a confirmation, which runs the calls it allows),
    /// then takes the parked reply: saves it again, marked as being resumed, before any call
    /// runs. The same confirmation handled elsewhere meanwhile (a double click, a retried
    /// request) finds the mark, or loses the race to write it, and fails with
    /// [`AgentError::Conflict`] instead of running the calls again. The mark goes with the
    /// reply's own save, or after [`CLAIM_LEASE`] when its process died.
    pub(crate) async fn load_for(self: Arc<Self>, claim: bool) -> Result<(), AgentError> {
        let mut saved = self.revision.lock().await;
        let session_id = self.session_id();
        if self.initial_modules.get().is_none() {
            let initial = self.modules.state_dict(&session_id)?;
            let _ = self.initial_modules.set(initial);
        }
        let stored = self.store.load(&self.key).await?;
        let replaced = self.replacement();
        match stored {
            // A state the user loaded over the conversation the store still holds at this
            // agent's revision (or over whatever it holds, for an agent that never loaded):
            // kept, and saved over it by the next save.
            Some(stored)
                if replaced.as_ref().is_some_and(|over| {
                    saved.revision.is_none()
                        || (Some(stored.revision) == saved.revision
                            && *over == Conversation::of(&stored.document.agent))
                }) =>
            {
                self.lock_state().session_id = session_id;
                *saved = Saved {
                    revision: Some(stored.revision),
                    fingerprint: None,
                    claimed: None,
                };
            }
            // The revision this agent saved or loaded last, and its conversation: nothing to
            // load. A session deleted (or expired) and made again starts its revisions over, so
            // the revision alone could match another conversation's, whose save this agent's
            // would then overwrite without a conflict.
            Some(stored)
                if replaced.is_none()
                    && Some(stored.revision) == saved.revision
                    && same_conversation(&stored.document.agent, &self.lock_state()) => {}
            Some(stored) => {
                // Another conversation than the one a replacement was made over: loaded.
                self.forget_replacement();
                // The claim is not the agent's state: out of the document before its
                // fingerprint, or every save after this load would differ from it (and a
                // request that changes nothing would save, taking the claim out).
                let SessionDocument { agent, mut modules } = stored.document;
                let stored_claim = modules.remove(CLAIM_KEY).as_ref().and_then(Claim::of);
                // This agent's own claim (its confirmation dropped as the claim was written) is
                // not another request's.
                let claimed = stored_claim.filter(|c| Some(*c) != *self.lock_claim());
                *self.lock_foreign() = claimed;
                let document = SessionDocument { agent, modules };
                let fingerprint = fingerprint(&document, &self.keys);
                let SessionDocument { mut agent, modules } = document;
                self.modules
                    .load_state_dict(&session_id, Value::Object(modules), self.strict)
                    .map_err(|e| in_session(&self.key, e))?;
                agent.session_id = session_id;
                *self.lock_state() = agent;
                *saved = Saved {
                    revision: Some(stored.revision),
                    fingerprint,
                    claimed,
                };
            }
            None => {
                if saved.revision.is_some() && replaced.is_none() {
                    // Deleted or expired since: the conversation starts over, and so does what
                    // the registered modules held for it.
                    if let Some(initial) = self.initial_modules.get() {
                        self.modules
                            .load_state_dict(&session_id, initial.clone(), false)
                            .map_err(|e| in_session(&self.key, e))?;
                    }
                    *self.lock_state() = AgentState::new();
                }
                self.lock_state().session_id = session_id;
                *self.lock_foreign() = None;
                *saved = Saved::default();
            }
        }
        if let Some(revision) = saved.revision
            && claim
            && !self.lock_state().unfinished_calls().is_empty()
        {
            // As the revision loaded holds it (read again or not: a session loaded ahead of the
            // reply is not read twice).
            if let Some(other) = saved.claimed.filter(|c| c.is_live()) {
                return Err(AgentError::Conflict {
                    what: format!("session {}", self.key),
                    expected: "a parked reply to resume".to_owned(),
                    found: format!(
                        "its reply being resumed by another request since {}",
                        towerscope_core::Timestamp::from_micros(other.at)
                    ),
                });
            }
            *self.lock_claim() = Some(Claim::now());
            let claimed = match self.snapshot() {
                Ok(document) => self.store.save(&self.key, &document, Expect::Revision(revision)).await,
                Err(e) => Err(e),
            };
            match claimed {
                // The reply's own save must go to the store whatever it holds: it takes the
                // claim out.
                Ok(new) => {
                    *saved = Saved {
                        revision: Some(new),
                        fingerprint: None,
                        claimed: None,
                    }
                }
                Err(e) => {
                    *self.lock_claim() = None;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Whether this agent holds a claim on the parked reply it resumes.
    pub(crate) fn holds_claim(&self) -> bool {
        self.lock_claim().is_some()
    }

    fn lock_claim(&self) -> MutexGuard<'_, Option<Claim>> {
        self.claim.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_foreign(&self) -> MutexGuard<'_, Option<Claim>> {
        self.foreign.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes this agent's claim out of the store, from a task of its own, when the reply that
    /// claimed never opened: reads what the store holds and, if that holds this claim, saves it
    /// without. A claim the store does not hold (its write still under way) is remembered, so
    /// that this agent takes its own claim for its own later.
    pub(crate) fn release_detached(self: Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let mut saved = Arc::clone(&self.revision).lock_owned().await;
            let Some(own) = *self.lock_claim() else { return };
            let released: Result<bool, AgentError> = async {
                let Some(stored) = self.store.load(&self.key).await? else {
                    return Ok(false);
                };
                let mut document = stored.document;
                if document.modules.get(CLAIM_KEY).and_then(Claim::of) != Some(own) {
                    return Ok(false);
                }
                document.modules.remove(CLAIM_KEY);
                let revision = self
                    .store
                    .save(&self.key, &document, Expect::Revision(stored.revision))
                    .await?;
                *saved = Saved {
                    revision: Some(revision),
                    fingerprint: None,
                    claimed: None,
                };
                Ok(true)
            }
            .await;
            match released {
                Ok(true) => *self.lock_claim() = None,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(session = %self.key, error = %e, "could not take an unused claim out of the session")
                }
            }
        });
    }

    /// The request's context for the loaded session: its session id, and for an input that
    /// resumes a parked reply, that reply's id. The same context when nothing changed.
    pub(crate) fn rebind(&self, mut req: ReplyRequest) -> ReplyRequest {
        let (session_id, reply_id) = {
            let state = self.lock_state();
            let reply_id = if req.input.is_resume() {
                state.reply_context.reply_id.clone()
            } else {
                req.ctx.reply_id().clone()
            };
            (state.session_id.clone(), reply_id)
        };
        if *req.ctx.session_id() == session_id && *req.ctx.reply_id() == reply_id {
            return req;
        }
        let ctx = AgentContext::new(req.ctx.agent_name_arc().clone(), session_id, reply_id);
        if let Some(marker) = req.ctx.get::<EventsRead>() {
            ctx.insert(marker);
        }
        req.ctx = ctx;
        req
    }

    /// The document to save now: the agent's state and every module's, and this agent's claim
    /// on its parked reply, if it holds one.
    fn snapshot(&self) -> Result<SessionDocument, AgentError> {
        let mut modules = match self.modules.state_dict(&self.session_id())? {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        if let Some(claim) = self.lock_claim().or(*self.lock_foreign()) {
            modules.insert(CLAIM_KEY.to_owned(), claim.to_value());
        }
        Ok(SessionDocument {
            agent: self.lock_state().clone(),
            modules,
        })
    }

    /// Saves the agent's state now, expecting the revision it loaded or saved last.
    pub(crate) fn save(self: Arc<Self>) -> StoreFuture<'static, ()> {
        Box::pin(async move {
            let revision = Arc::clone(&self.revision).lock_owned().await;
            // The reply is over (or parked again): its claim goes.
            *self.lock_claim() = None;
            let document = self.snapshot()?;
            self.save_locked(revision, document).await
        })
    }

    /// Saves `document` unless it is the one the store holds at the agent's revision (a
    /// request that changed nothing: a refused input, an interrupt with nothing to stop): a
    /// save then would only move the revision on, and fail the save of a reply of the same
    /// session running elsewhere.
    async fn save_locked(
        &self,
        mut saved: OwnedMutexGuard<Saved>,
        mut document: SessionDocument,
    ) -> Result<(), AgentError> {
        // Without the claim, as at the load: a claim is not the agent's state.
        let claim = document.modules.remove(CLAIM_KEY);
        let fingerprint = fingerprint(&document, &self.keys);
        if let Some(claim) = claim {
            document.modules.insert(CLAIM_KEY.to_owned(), claim);
        }
        if saved.revision.is_some() && fingerprint.is_some() && fingerprint == saved.fingerprint {
            return Ok(());
        }
        let expect = saved.revision.map_or(Expect::Absent, Expect::Revision);
        let revision = self.store.save(&self.key, &document, expect).await?;
        *saved = Saved {
            revision: Some(revision),
            fingerprint,
            claimed: None,
        };
        self.forget_replacement();
        Ok(())
    }

    /// Saves the state as it is now from a task of its own (a reply stream dropped before its
    /// end: a client that went away). The next reply of this agent waits for it.
    pub(crate) fn save_detached(self: Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(session = %self.key, "a reply stream was dropped outside a tokio runtime; its session was not saved");
            return;
        };
        // Taken now, so that the next reply's load waits for this save.
        let revision = Arc::clone(&self.revision).try_lock_owned();
        *self.lock_claim() = None;
        let document = self.snapshot();
        runtime.spawn(async move {
            let result = match (revision, document) {
                (Ok(revision), Ok(document)) => self.save_locked(revision, document).await,
                (Err(_), Ok(document)) => {
                    let revision = Arc::clone(&self.revision).lock_owned().await;
                    self.save_locked(revision, document).await
                }
                (_, Err(e)) => Err(e),
            };
            if let Err(e) = result {
                tracing::warn!(session = %self.key, error = %e, "could not save the session of a dropped reply");
            }
        });
    }
}

/// A hash of `document`'s JSON under `keys`; `None` if it cannot be written (its save then
/// says why).
fn fingerprint(document: &SessionDocument, keys: &RandomState) -> Option<u64> {
    use std::hash::{BuildHasher, Hasher};

    struct Hashing<H>(H);

    impl<H: Hasher> std::io::Write for Hashing<H> {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.write(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    let mut out = Hashing(keys.build_hasher());
    super::document::write_to(&mut out, document, None).ok()?;
    Some(out.0.finish())
}

/// Whether `held` is the conversation `stored` is, or goes on from it (messages observed since
/// the save, or a turn whose save failed): `stored`'s last message is at the same place in
/// `held`. Message ids are drawn at random, so a conversation made again does not have it. An
/// empty stored conversation is the held one only when that is empty too. (A turn that
/// compressed the context and then failed to save is reloaded: its messages are not at the
/// same places.)
fn same_conversation(stored: &AgentState, held: &AgentState) -> bool {
    match stored.context.len().checked_sub(1) {
        None => held.context.is_empty(),
        Some(last) => held.context.get(last).map(|m| &m.id) == stored.context.last().map(|m| &m.id),
    }
}

fn in_session(key: &SessionKey, err: AgentError) -> AgentError {
    match err {
        AgentError::MissingState { key: path } => AgentError::MissingState {
            key: format!("modules.{path}"),
        },
        AgentError::Decode { what, message } => AgentError::Decode {
            what: format!("{what} in session {key}"),
            message,
        },
        other => other,
    }
}

impl fmt::Debug for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("key", &self.key)
            .field("modules", &self.modules)
            .field("strict", &self.strict)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_holds_for_its_lease_and_from_a_clock_ahead() {
        let now = Claim::now();
        assert!(now.is_live());
        let lease = i64::try_from(CLAIM_LEASE.as_micros()).unwrap_or(i64::MAX);
        let at = |at: i64| Claim { at, by: now.by };
        assert!(at(now.at + 2_000_000).is_live(), "written by a clock 2 s ahead");
        assert!(at(now.at - lease + 1_000_000).is_live());
        assert!(!at(now.at - lease - 1_000_000).is_live(), "lapsed");
        assert_eq!(Claim::of(&now.to_value()), Some(now));
        assert_eq!(Claim::of(&serde_json::json!({"at": "soon", "by": 1})), None);
        assert_ne!(Claim::now().by, Claim::now().by, "each claim its own");
    }
}
