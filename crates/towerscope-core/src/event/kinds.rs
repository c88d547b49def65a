//! [`EventKinds`]: a set of [`EventType`]s, for a middleware to say which events its layers read.
//!
//! An agent builds a reply's events only when someone may read them. The caller of
//! `Agent::reply` reads none; a layer on `on_reply` or `on_reasoning` may read any, so by
//! default every event is built once one is installed. A [`Middleware`](crate::Middleware) that
//! reads only some kinds says so with
//! [`Middleware::reads_events`](crate::Middleware::reads_events): when nobody else reads the
//! events, only those kinds are built and passed through its layers.
//!
//! # Example
//!
//! ```
//! use towerscope_core::{EventKinds, EventType};
//!
//! let lifecycle = EventKinds::of(&[EventType::ReplyStart, EventType::ReplyEnd]);
//! assert!(lifecycle.contains(EventType::ReplyEnd));
//! assert!(!lifecycle.contains(EventType::TextBlockDelta));
//! assert!(EventKinds::NONE.is_empty());
//! assert_eq!(lifecycle.union(EventKinds::ALL), EventKinds::ALL);
//! ```

use super::EventType;

/// A set of event kinds: which events a middleware's `on_reply` and `on_reasoning` layers read
/// ([`Middleware::reads_events`](crate::Middleware::reads_events)). When nobody else reads the
/// events, an agent builds only the kinds its layers read.
///
/// ```
/// use towerscope_core::{EventKinds, EventType};
///
/// let lifecycle = EventKinds::of(&[EventType::ReplyStart, EventType::ReplyEnd]);
/// assert!(lifecycle.contains(EventType::ReplyStart));
/// assert!(!EventKinds::NONE.contains(EventType::ReplyStart));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EventKinds(u64);

impl EventKinds {
    /// No kind: layers that never read an event (they may still read the final message).
    pub const NONE: Self = Self(0);

    /// Every kind (the default for a middleware that does not say).
    pub const ALL: Self = Self(u64::MAX);

    /// The set of `kinds`.
    pub const fn of(kinds: &[EventType]) -> Self {
        let mut bits = 0u64;
        let mut i = 0;
        while i < kinds.len() {
            bits |= Self::bit(kinds[i]);
            i += 1;
        }
        Self(bits)
    }

    const fn bit(kind: EventType) -> u64 {
        1u64 << (kind as u32)
    }

    /// Whether the set holds `kind`.
    pub const fn contains(self, kind: EventType) -> bool {
        self.0 & Self::bit(kind) != 0
    }

    /// Whether the set holds any kind of `other`.
    pub const fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }

    /// Whether the set holds no kind.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The kinds in either set.
    #[must_use]
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_bit() {
        assert!(EventType::ALL.len() <= 64);
        for (i, a) in EventType::ALL.iter().enumerate() {
            let set = EventKinds::of(&[*a]);
            assert!(EventKinds::ALL.contains(*a));
            assert!(!EventKinds::NONE.contains(*a));
            for (j, b) in EventType::ALL.iter().enumerate() {
                assert_eq!(set.contains(*b), i == j, "{a:?} / {b:?}");
            }
        }
    }
}
