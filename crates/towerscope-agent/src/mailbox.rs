//! The agent's mailbox: messages posted with
//! [`Agent::observe_when_free`](crate::Agent::observe_when_free), waiting for the agent to be
//! free. Delivering them is `observe`'s work; this module only holds them, in arrival order,
//! each post apart (a post's messages are observed together, and apart from other posts').

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use towerscope_core::Msg;

/// Posts waiting for the agent to be free, in arrival order.
#[derive(Debug, Default)]
pub(crate) struct Mailbox {
    queue: Mutex<VecDeque<Vec<Msg>>>,
    /// Whether `queue` may hold messages: lets a reply's end skip the lock when it is empty.
    pub(crate) has_mail: AtomicBool,
    /// Held by the one thread delivering, so deliveries from two threads keep the order.
    pub(crate) delivering: Mutex<()>,
}

impl Mailbox {
    fn queue(&self) -> MutexGuard<'_, VecDeque<Vec<Msg>>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn post(&self, msgs: Vec<Msg>) {
        if msgs.is_empty() {
            return;
        }
        let mut queue = self.queue();
        queue.push_back(msgs);
        self.has_mail.store(true, Ordering::Release);
    }

    /// The oldest post, if any.
    pub(crate) fn take(&self) -> Option<Vec<Msg>> {
        let mut queue = self.queue();
        let post = queue.pop_front();
        self.has_mail.store(!queue.is_empty(), Ordering::Release);
        post
    }

    /// Puts a post taken with [`take`](Self::take) back first.
    pub(crate) fn put_back(&self, post: Vec<Msg>) {
        let mut queue = self.queue();
        queue.push_front(post);
        self.has_mail.store(true, Ordering::Release);
    }

    /// How many messages wait.
    pub(crate) fn len(&self) -> usize {
        self.queue().iter().map(Vec::len).sum()
    }
}
