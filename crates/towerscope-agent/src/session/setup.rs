//! What [`AgentBuilder`](crate::AgentBuilder) collects for a session, turned into a
//! [`SessionLayer`] when the agent is built.

use std::sync::{Arc, Mutex};

use towerscope_core::state::{StateModule, StateModules};
use towerscope_core::{AgentError, ErasedService, EventStream, Position, ReplyRequest};

use super::bound::Bound;
use super::{SessionKey, SessionLayer, SessionStore};
use crate::state::AgentState;

/// The `on_reply` position with the session layer, and the session (`None` without one).
pub(crate) type Wrapped<S> = (Position<S, ReplyRequest, EventStream>, Option<Arc<Bound>>);

/// A session being configured on a builder.
pub(crate) struct SessionSetup {
    target: Option<(Arc<dyn SessionStore>, Result<SessionKey, AgentError>)>,
    modules: StateModules,
    strict: bool,
    /// The first registration that failed, reported by `build`.
    error: Option<AgentError>,
}

impl Default for SessionSetup {
    fn default() -> Self {
        Self {
            target: None,
            modules: StateModules::new(),
            strict: true,
            error: None,
        }
    }
}

impl SessionSetup {
    pub(crate) fn target(&mut self, store: Arc<dyn SessionStore>, key: Result<SessionKey, AgentError>) {
        self.target = Some((store, key));
    }

    /// The user id of the session's key; empty without a session.
    pub(crate) fn user_id(&self) -> &str {
        match &self.target {
            Some((_, Ok(key))) => key.user_id(),
            _ => "",
        }
    }

    pub(crate) fn register(&mut self, name: String, module: impl StateModule) {
        if let Err(e) = self.modules.register(name, module) {
            self.error.get_or_insert(e);
        }
    }

    pub(crate) fn strict(&mut self, strict: bool) {
        self.strict = strict;
    }

    /// Checks what was configured before anything is built.
    pub(crate) fn check(&self) -> Result<(), AgentError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        match &self.target {
            Some((_, Err(e))) => Err(e.clone()),
            None if !self.modules.is_empty() => Err(AgentError::validation(
                "state was registered with session_state, but no session was set: call session(store, user_id, \
                 session_id) too",
            )),
            _ => Ok(()),
        }
    }

    /// `reply` wrapped in the session layer (outermost), and the session the agent keeps for
    /// [`Agent::load_session`](crate::Agent::load_session); `reply` itself without a session.
    pub(crate) fn wrap<S>(
        self,
        reply: Position<S, ReplyRequest, EventStream>,
        state: &Arc<Mutex<AgentState>>,
    ) -> Result<Wrapped<S>, AgentError>
    where
        S: tower::Service<ReplyRequest, Response = EventStream, Error = AgentError> + Clone + Send + Sync + 'static,
        S::Future: Send + 'static,
    {
        self.check()?;
        let Some((store, key)) = self.target else {
            return Ok((reply, None));
        };
        let bound = Arc::new(Bound::new(store, key?, self.modules, self.strict, Arc::clone(state)));
        let layer = SessionLayer {
            bound: Arc::clone(&bound),
        };
        let wrapped = tower::Layer::layer(&layer, reply);
        Ok((tower::util::Either::Right(ErasedService::new(wrapped)), Some(bound)))
    }
}
