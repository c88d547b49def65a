//! [`SessionLayer`]: the `on_reply` layer that loads the session before a reply and saves it
//! after.

use std::fmt;
use std::sync::Arc;

use tower::Layer;

use super::SessionKey;
use super::bound::Bound;
use super::service::SessionService;

/// Loads the agent's session before each reply and saves it after. See the
/// [module docs](super) for when it saves.
///
/// [`AgentBuilder::session`](crate::AgentBuilder::session) installs it, outermost on
/// `on_reply` (it needs the agent's state, which only the builder can hand it); clones share
/// one session.
#[derive(Clone)]
pub struct SessionLayer {
    pub(crate) bound: Arc<Bound>,
}

impl SessionLayer {
    /// The session this layer loads and saves.
    pub fn key(&self) -> &SessionKey {
        &self.bound.key
    }
}

impl<S> Layer<S> for SessionLayer {
    type Service = SessionService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        SessionService::new(inner, Arc::clone(&self.bound))
    }
}

impl fmt::Debug for SessionLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionLayer").field("session", &self.bound).finish()
    }
}
