//! [`AgentContext`]: who is replying, in which session and reply, at which iteration, plus typed
//! per-reply state for middleware.
//!
//! Every position's request carries an `AgentContext`. Cloning it is cheap (one `Arc`), and all
//! clones of one reply share the same [`Extensions`], so a middleware can leave state in
//! `on_reply` and read it back in `on_acting` of the same reply.
//!
//! # Example
//!
//! ```
//! use towerscope_core::AgentContext;
//!
//! #[derive(Clone, Debug, PartialEq)]
//! struct Budget(u32);
//!
//! let ctx = AgentContext::new("assistant", "session-1", "reply-1");
//! ctx.insert(Budget(3));
//! let later = ctx.with_iteration(2);
//! assert_eq!(later.get::<Budget>(), Some(Budget(3)));
//! assert_eq!(later.iteration(), 2);
//! assert_eq!(*later.reply_id(), "reply-1");
//! ```

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::id::Id;

/// A type map for per-reply middleware state, in the spirit of `http::Extensions`.
#[derive(Default)]
pub struct Extensions {
    map: HashMap<TypeId, Box<dyn Any + Send + Sync>, BuildHasherDefault<TypeIdHasher>>,
}

/// Hashes a `TypeId`, which is already a hash, by keeping it: the agent looks extensions up
/// on every reasoning step, and SipHash cost more than the rest of the lookup.
#[derive(Default)]
struct TypeIdHasher(u64);

impl Hasher for TypeIdHasher {
    fn write(&mut self, bytes: &[u8]) {
        // `TypeId` hashes through `write_u64`; anything else still gets a usable hash.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl Extensions {
    /// Inserts a value, returning the previous value of that type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        self.map
            .insert(TypeId::of::<T>(), Box::new(value))
            .and_then(|old| old.downcast::<T>().ok().map(|b| *b))
    }

    /// A reference to the value of type `T`.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map.get(&TypeId::of::<T>()).and_then(|b| b.downcast_ref())
    }

    /// A mutable reference to the value of type `T`.
    pub fn get_mut<T: Send + Sync + 'static>(&mut self) -> Option<&mut T> {
        self.map.get_mut(&TypeId::of::<T>()).and_then(|b| b.downcast_mut())
    }

    /// The value of type `T`, inserting `f()` first if there is none.
    pub fn get_or_insert_with<T: Send + Sync + 'static>(&mut self, f: impl FnOnce() -> T) -> &mut T {
        let slot = self.map.entry(TypeId::of::<T>()).or_insert_with(|| Box::new(f()));
        match slot.downcast_mut() {
            Some(v) => v,
            None => unreachable!("the entry for TypeId::of::<T>() always holds a T"),
        }
    }

    /// Removes and returns the value of type `T`.
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> Option<T> {
        self.map
            .remove(&TypeId::of::<T>())
            .and_then(|b| b.downcast().ok().map(|b| *b))
    }

    /// How many values are stored.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions").field("len", &self.map.len()).finish()
    }
}

struct Scope {
    agent_name: Arc<str>,
    session_id: Id,
    reply_id: Id,
    extensions: Mutex<Extensions>,
    interrupted: std::sync::atomic::AtomicBool,
    another_round: std::sync::atomic::AtomicBool,
}

/// Who is replying, in which session and reply, at which iteration.
///
/// See the [module docs](self) for an example.
#[derive(Clone)]
pub struct AgentContext {
    scope: Arc<Scope>,
    iteration: u32,
}

impl AgentContext {
    /// A context for one reply of `agent_name` in `session_id`.
    pub fn new(agent_name: impl Into<Arc<str>>, session_id: impl Into<Id>, reply_id: impl Into<Id>) -> Self {
        Self {
            scope: Arc::new(Scope {
                agent_name: agent_name.into(),
                session_id: session_id.into(),
                reply_id: reply_id.into(),
                extensions: Mutex::new(Extensions::default()),
                interrupted: std::sync::atomic::AtomicBool::new(false),
                another_round: std::sync::atomic::AtomicBool::new(false),
            }),
            iteration: 0,
        }
    }

    /// The agent's name.
    pub fn agent_name(&self) -> &str {
        &self.scope.agent_name
    }

    /// The agent's name, shared (cloning it is a reference-count bump).
    pub fn agent_name_arc(&self) -> &Arc<str> {
        &self.scope.agent_name
    }

    /// The session id: stable across the replies of one agent state.
    pub fn session_id(&self) -> &Id {
        &self.scope.session_id
    }

    /// The reply id: new for every reply, kept when a parked reply resumes.
    pub fn reply_id(&self) -> &Id {
        &self.scope.reply_id
    }

    /// The ReAct iteration (0 for the first reasoning round).
    pub fn iteration(&self) -> u32 {
        self.iteration
    }

    /// The same reply at another iteration (shares the extensions).
    pub fn with_iteration(&self, iteration: u32) -> Self {
        Self {
            scope: Arc::clone(&self.scope),
            iteration,
        }
    }

    /// Locks the reply's extensions. Do not hold the guard across an `.await`.
    pub fn extensions(&self) -> MutexGuard<'_, Extensions> {
        self.scope.extensions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores a value in the reply's extensions.
    pub fn insert<T: Send + Sync + 'static>(&self, value: T) -> Option<T> {
        self.extensions().insert(value)
    }

    /// A clone of the value of type `T` in the reply's extensions.
    pub fn get<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.extensions().get::<T>().cloned()
    }

    /// Marks the reply as interrupted by the user. The agent does this before it cancels the
    /// work in flight, so a layer whose future or stream is dropped can tell an interruption
    /// (a normal end, as in the reference) from an abandoned call.
    pub fn mark_interrupted(&self) {
        self.scope.interrupted.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whether the reply was interrupted by the user.
    pub fn is_interrupted(&self) -> bool {
        self.scope.interrupted.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Asks the reply loop for another reasoning round instead of ending the reply.
    ///
    /// An `on_reply` layer that holds back (swallows) `REPLY_END` because the answer is not good
    /// enough calls this; the loop then reasons again instead of returning the final message.
    /// The request is explicit, not inferred from whether `REPLY_END` reached the consumer: a
    /// layer that reads ahead (buffers, or bridges the stream through a channel) must not cause
    /// an extra round. Asking twice without any reasoning or acting in between fails the reply.
    pub fn request_another_round(&self) {
        self.scope
            .another_round
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Takes back a request for another round: whether one was made since the last call.
    pub fn take_another_round_request(&self) -> bool {
        self.scope
            .another_round
            .swap(false, std::sync::atomic::Ordering::AcqRel)
    }

    /// Whether two contexts belong to the same reply (share extensions).
    pub fn same_reply(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.scope, &other.scope)
    }
}

impl fmt::Debug for AgentContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentContext")
            .field("agent_name", &self.agent_name())
            .field("session_id", &self.session_id())
            .field("reply_id", &self.reply_id())
            .field("iteration", &self.iteration)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_are_shared_per_reply_not_across_replies() {
        let a = AgentContext::new("a", "s", "r1");
        let b = AgentContext::new("a", "s", "r2");
        a.with_iteration(3).insert(7u32);
        assert_eq!(a.get::<u32>(), Some(7));
        assert_eq!(b.get::<u32>(), None);
        assert!(a.same_reply(&a.with_iteration(1)));
        assert!(!a.same_reply(&b));
        *a.extensions().get_or_insert_with(|| 0u64) += 2;
        assert_eq!(a.get::<u64>(), Some(2));
        assert_eq!(a.extensions().remove::<u32>(), Some(7));
    }
}
