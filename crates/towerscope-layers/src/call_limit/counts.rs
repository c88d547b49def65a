//! Where the calls are counted: per reply in the context's extensions, per session in a map
//! shared by the clones of one layer.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use towerscope_core::state::StateModule;
use towerscope_core::{AgentContext, AgentError, Id, LimitKind};

/// How many calls were counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CallCounts {
    /// Model calls.
    pub model_calls: u32,
    /// Tool calls.
    pub tool_calls: u32,
}

impl CallCounts {
    fn get_mut(&mut self, kind: LimitKind) -> &mut u32 {
        match kind {
            LimitKind::ToolCalls => &mut self.tool_calls,
            _ => &mut self.model_calls,
        }
    }
}

/// The counts of one reply, per layer (keyed by the layer's id), stored in the reply's
/// extensions so that every clone of the reply's context sees them.
#[derive(Debug, Default)]
pub(crate) struct ReplyCounts(HashMap<u64, CallCounts>);

/// The calls counted per session by one [`CallLimitLayer`](super::CallLimitLayer) and its
/// clones.
///
/// The map keeps one entry per session that made a call; [`reset`](Self::reset) or
/// [`clear`](Self::clear) it when sessions end.
#[derive(Clone, Default)]
pub struct SessionCounts {
    map: Arc<Mutex<HashMap<towerscope_core::Id, CallCounts>>>,
}

impl SessionCounts {
    fn lock(&self) -> MutexGuard<'_, HashMap<towerscope_core::Id, CallCounts>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The counts of `session_id` (zero for a session that made no call).
    pub fn get(&self, session_id: impl Into<towerscope_core::Id>) -> CallCounts {
        self.lock().get(&session_id.into()).copied().unwrap_or_default()
    }

    /// Forgets the counts of `session_id`: its calls start from zero again.
    pub fn reset(&self, session_id: impl Into<towerscope_core::Id>) {
        self.lock().remove(&session_id.into());
    }

    /// Forgets the counts of every session.
    pub fn clear(&self) {
        self.lock().clear();
    }
}

/// A session saves its own counts (`{"model_calls": 3, "tool_calls": 5}`) and loads them back,
/// so per-session limits hold when the session's next reply runs in another process: register
/// the layer's counts with the session
/// (`.session_state("call_limits", layer.session_counts().clone())`).
impl StateModule for SessionCounts {
    fn state_dict(&self, session: &Id) -> Result<Value, AgentError> {
        serde_json::to_value(self.get(session.clone())).map_err(|e| AgentError::validation(e.to_string()))
    }

    fn load_state_dict(&self, session: &Id, state: Value, strict: bool) -> Result<(), AgentError> {
        let mut counts = self.get(session.clone());
        let Value::Object(mut map) = state else {
            return Err(AgentError::decode("call counts", "expected an object"));
        };
        for (key, slot) in [
            ("model_calls", &mut counts.model_calls),
            ("tool_calls", &mut counts.tool_calls),
        ] {
            match map.remove(key) {
                Some(v) => *slot = serde_json::from_value(v).map_err(|e| AgentError::decode("call counts", e))?,
                None if strict => return Err(AgentError::MissingState { key: key.to_owned() }),
                None => {}
            }
        }
        self.lock().insert(session.clone(), counts);
        Ok(())
    }
}

impl fmt::Debug for SessionCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionCounts")
            .field("sessions", &self.lock().len())
            .finish()
    }
}

/// The configured limits.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Limits {
    pub(crate) model_reply: Option<u32>,
    pub(crate) tool_reply: Option<u32>,
    pub(crate) model_session: Option<u32>,
    pub(crate) tool_session: Option<u32>,
}

impl Limits {
    fn of(&self, kind: LimitKind) -> (Option<u32>, Option<u32>) {
        match kind {
            LimitKind::ToolCalls => (self.tool_reply, self.tool_session),
            _ => (self.model_reply, self.model_session),
        }
    }
}

/// Counts one call of `kind`, or fails with [`AgentError::CallLimit`] when it would exceed a
/// limit (a refused call is not counted).
pub(crate) fn admit(
    id: u64,
    limits: &Limits,
    sessions: &SessionCounts,
    ctx: &AgentContext,
    kind: LimitKind,
) -> Result<(), AgentError> {
    let (per_reply, per_session) = limits.of(kind);
    if per_reply.is_none() && per_session.is_none() {
        return Ok(());
    }
    let mut extensions = ctx.extensions();
    let reply = match per_reply {
        Some(limit) => {
            let count = extensions
                .get_or_insert_with(ReplyCounts::default)
                .0
                .entry(id)
                .or_default()
                .get_mut(kind);
            if *count >= limit {
                return Err(AgentError::CallLimit {
                    kind,
                    limit,
                    scope: "reply",
                });
            }
            Some(count)
        }
        None => None,
    };
    if let Some(limit) = per_session {
        let mut map = sessions.lock();
        let counts = match map.get_mut(ctx.session_id()) {
            Some(counts) => counts,
            None => map.entry(ctx.session_id().clone()).or_default(),
        };
        let count = counts.get_mut(kind);
        if *count >= limit {
            return Err(AgentError::CallLimit {
                kind,
                limit,
                scope: "session",
            });
        }
        *count += 1;
    }
    if let Some(count) = reply {
        *count += 1;
    }
    Ok(())
}

/// The counts of this reply for the layer `id`.
pub(crate) fn reply_counts(id: u64, ctx: &AgentContext) -> CallCounts {
    ctx.extensions()
        .get::<ReplyCounts>()
        .and_then(|counts| counts.0.get(&id).copied())
        .unwrap_or_default()
}
