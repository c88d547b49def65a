//! [`Busy`]: which sessions (AG-UI threads, A2A contexts: one factory, one id space) have a
//! reply running in this process, whichever protocol started it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

/// The sessions with a reply running; a second reply on one of them is refused (AG-UI: 409
/// `thread_busy`; A2A: a JSON-RPC error). A router's AG-UI and A2A endpoints share one, as they
/// share the agent factory that makes a thread id and a context id one session.
#[derive(Debug, Clone, Default)]
pub(crate) struct Busy {
    running: Arc<Mutex<HashSet<String>>>,
}

impl Busy {
    /// Marks `session` running until the claim is dropped; `None` when it already runs.
    pub(crate) fn claim(&self, session: &str) -> Option<BusyClaim> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.insert(session.to_owned()).then(|| BusyClaim {
            running: Arc::clone(&self.running),
            session: session.to_owned(),
        })
    }
}

/// A session marked running; dropping it frees the session.
#[derive(Debug)]
pub(crate) struct BusyClaim {
    running: Arc<Mutex<HashSet<String>>>,
    session: String,
}

impl Drop for BusyClaim {
    fn drop(&mut self) {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.session);
    }
}
