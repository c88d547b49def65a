//! [`Threads`]: which threads have a run in progress in this process.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

/// The threads with a run in progress; a second run on one of them is refused (409).
#[derive(Debug, Clone, Default)]
pub(crate) struct Threads {
    running: Arc<Mutex<HashSet<String>>>,
}

impl Threads {
    /// Marks `thread` running until the claim is dropped; `None` when it already runs.
    pub(crate) fn claim(&self, thread: &str) -> Option<ThreadClaim> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.insert(thread.to_owned()).then(|| ThreadClaim {
            running: Arc::clone(&self.running),
            thread: thread.to_owned(),
        })
    }
}

/// A thread marked running; dropping it frees the thread.
#[derive(Debug)]
pub(crate) struct ThreadClaim {
    running: Arc<Mutex<HashSet<String>>>,
    thread: String,
}

impl Drop for ThreadClaim {
    fn drop(&mut self) {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.thread);
    }
}
