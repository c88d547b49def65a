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
///
/// A reply holds few values (the agent's own one or two, and a few per middleware): they are
/// kept in a short list, searched in order, and move to a hash map past
/// [`LIST_MAX`](Self::LIST_MAX) values, so that a lookup stays cheap however many there are.
#[derive(Default)]
pub struct Extensions {
    values: Values,
}

type AnyValue = Box<dyn Any + Send + Sync>;

enum Values {
    List(Vec<(TypeId, AnyValue)>),
    Map(HashMap<TypeId, AnyValue, BuildHasherDefault<TypeIdHasher>>),
}

impl Default for Values {
    fn default() -> Self {
        Self::List(Vec::new())
    }
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

impl Values {
    fn get(&self, id: TypeId) -> Option<&AnyValue> {
        match self {
            Self::List(list) => list.iter().find(|(t, _)| *t == id).map(|(_, v)| v),
            Self::Map(map) => map.get(&id),
        }
    }

    fn get_mut(&mut self, id: TypeId) -> Option<&mut AnyValue> {
        match self {
            Self::List(list) => list.iter_mut().find(|(t, _)| *t == id).map(|(_, v)| v),
            Self::Map(map) => map.get_mut(&id),
        }
    }

    /// Stores `value` under `id`, returning the previous value.
    fn insert(&mut self, id: TypeId, value: AnyValue) -> Option<AnyValue> {
        if let Some(slot) = self.get_mut(id) {
            return Some(std::mem::replace(slot, value));
        }
        match self {
            Self::List(list) if list.len() < Extensions::LIST_MAX => {
                if list.is_empty() {
                    // Most replies hold one or two values: no room for four each.
                    list.reserve_exact(2);
                }
                list.push((id, value));
            }
            Self::List(list) => {
                let mut map: HashMap<_, _, _> = std::mem::take(list).into_iter().collect();
                map.insert(id, value);
                *self = Self::Map(map);
            }
            Self::Map(map) => {
                map.insert(id, value);
            }
        }
        None
    }

    fn remove(&mut self, id: TypeId) -> Option<AnyValue> {
        match self {
            Self::List(list) => {
                let i = list.iter().position(|(t, _)| *t == id)?;
                Some(list.remove(i).1)
            }
            Self::Map(map) => map.remove(&id),
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::List(list) => list.len(),
            Self::Map(map) => map.len(),
        }
    }
}

impl Extensions {
    /// How many values are kept in a list, searched in order, before they move to a hash map.
    pub const LIST_MAX: usize = 16;

    /// Inserts a value, returning the previous value of that type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        self.values
            .insert(TypeId::of::<T>(), Box::new(value))
            .and_then(|old| old.downcast::<T>().ok().map(|b| *b))
    }

    /// A reference to the value of type `T`.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.values.get(TypeId::of::<T>()).and_then(|b| b.downcast_ref())
    }

    /// A mutable reference to the value of type `T`.
    pub fn get_mut<T: Send + Sync + 'static>(&mut self) -> Option<&mut T> {
        self.values.get_mut(TypeId::of::<T>()).and_then(|b| b.downcast_mut())
    }

    /// The value of type `T`, inserting `f()` first if there is none.
    pub fn get_or_insert_with<T: Send + Sync + 'static>(&mut self, f: impl FnOnce() -> T) -> &mut T {
        let id = TypeId::of::<T>();
        if self.values.get(id).is_none() {
            self.values.insert(id, Box::new(f()));
        }
        match self.values.get_mut(id).and_then(|b| b.downcast_mut()) {
            Some(v) => v,
            None => unreachable!("the entry for TypeId::of::<T>() always holds a T"),
        }
    }

    /// Removes and returns the value of type `T`.
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> Option<T> {
        self.values
            .remove(TypeId::of::<T>())
            .and_then(|b| b.downcast().ok().map(|b| *b))
    }

    /// How many values are stored.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.values.len() == 0
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions").field("len", &self.len()).finish()
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

    /// One value per type, whether the values are in the short list or (past
    /// `Extensions::LIST_MAX` of them) in the hash map.
    #[test]
    fn extensions_keep_one_value_per_type_in_the_list_and_past_it() {
        struct Nth<const N: usize>(usize);
        fn fill<const N: usize>(ext: &mut Extensions) {
            assert!(ext.insert(Nth::<N>(N)).is_none(), "a first value of its type");
        }
        let mut ext = Extensions::default();
        fill::<0>(&mut ext);
        fill::<1>(&mut ext);
        assert_eq!(
            ext.insert(Nth::<1>(100)).map(|n| n.0),
            Some(1),
            "a second value replaces the first"
        );
        assert_eq!(ext.len(), 2);
        macro_rules! fill_all { ($($n:literal)*) => { $( fill::<$n>(&mut ext); )* } }
        fill_all!(2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);
        assert_eq!(ext.len(), 20, "past the list's bound, in the map");
        assert_eq!(ext.get::<Nth<0>>().map(|n| n.0), Some(0));
        assert_eq!(ext.get::<Nth<1>>().map(|n| n.0), Some(100));
        assert_eq!(ext.get::<Nth<19>>().map(|n| n.0), Some(19));
        assert_eq!(ext.insert(Nth::<19>(190)).map(|n| n.0), Some(19));
        *ext.get_or_insert_with(|| Nth::<20>(0)) = Nth::<20>(20);
        assert_eq!(ext.get::<Nth<20>>().map(|n| n.0), Some(20));
        assert_eq!(ext.remove::<Nth<5>>().map(|n| n.0), Some(5));
        assert!(ext.get::<Nth<5>>().is_none());
        assert!(ext.get_mut::<u8>().is_none());
        assert_eq!(ext.len(), 20);
    }
}
