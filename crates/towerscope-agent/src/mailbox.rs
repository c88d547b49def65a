//! The agent's mailbox: messages posted with
//! [`Agent::observe_when_free`](crate::Agent::observe_when_free), waiting for the agent to be
//! free. Delivering them is `observe`'s work; this module only holds them, in arrival order.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use towerscope_core::Msg;

/// Messages waiting for the agent to be free, in arrival order.
#[derive(Debug, Default)]
pub(crate) struct Mailbox {
    queue: Mutex<VecDeque<Msg>>,
    /// Whether `queue` may hold messages: lets a reply's end skip the lock when it is empty.
    pub(crate) has_mail: AtomicBool,
    /// Held by the one thread delivering, so deliveries from two threads keep the order.
    pub(crate) delivering: Mutex<()>,
}

impl Mailbox {
    fn queue(&self) -> MutexGuard<'_, VecDeque<Msg>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn post(&self, msgs: Vec<Msg>) {
        let mut queue = self.queue();
        queue.extend(msgs);
        self.has_mail.store(true, Ordering::Release);
    }

    pub(crate) fn take(&self) -> Vec<Msg> {
        let mut queue = self.queue();
        self.has_mail.store(false, Ordering::Release);
        queue.drain(..).collect()
    }

    pub(crate) fn put_back(&self, msgs: Vec<Msg>) {
        let mut queue = self.queue();
        for m in msgs.into_iter().rev() {
            queue.push_front(m);
        }
        if !queue.is_empty() {
            self.has_mail.store(true, Ordering::Release);
        }
    }

    /// How many messages wait.
    pub(crate) fn len(&self) -> usize {
        self.queue().len()
    }
}
