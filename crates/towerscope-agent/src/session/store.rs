//! [`SessionStore`]: where sessions are saved, with the revision check that keeps two processes
//! from overwriting each other's work.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;

use towerscope_core::AgentError;

use super::{SessionDocument, SessionKey};

/// The future of a [`SessionStore`] call (boxed, so that stores can be chosen at run time:
/// `Arc<dyn SessionStore>`; a store call is I/O, next to which the box costs nothing).
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, AgentError>> + Send + 'a>>;

/// A saved session: its document and its revision.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// Counts the saves of the session: 1 after the first, one more after each.
    pub revision: u64,
    /// What was saved.
    pub document: SessionDocument,
}

/// What a save expects to find, so that it never overwrites a save it has not seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// No saved session (a new one).
    Absent,
    /// The session at this revision (the one that was loaded).
    Revision(u64),
    /// Anything: overwrite whatever is there (imports, tools; not for concurrent writers).
    Any,
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Absent => f.write_str("no saved session"),
            Self::Revision(r) => write!(f, "revision {r}"),
            Self::Any => f.write_str("anything"),
        }
    }
}

/// Where sessions are saved: [`JsonFileStore`](super::JsonFileStore) (embedded, the default),
/// `RedisStore` (feature `redis`), or your own.
///
/// A store must make [`save`](Self::save) atomic with its check of [`Expect`]: when two
/// processes save one session from the same revision, one wins and the other fails with
/// [`AgentError::Conflict`] (it loads again and retries); and a crash in the middle of a save
/// leaves the old or the new session, never a mix.
///
/// # Example
///
/// ```
/// use towerscope_agent::AgentState;
/// use towerscope_agent::session::{Expect, JsonFileStore, SessionDocument, SessionKey, SessionStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), towerscope_core::AgentError> {
/// # let dir = std::env::temp_dir().join(format!("towerscope-doc-store-{}", std::process::id()));
/// let store = JsonFileStore::new(&dir);
/// let key = SessionKey::new("alice", "conv-1")?;
/// let doc = SessionDocument::new(AgentState::new());
/// let first = store.save(&key, &doc, Expect::Absent).await?;
/// assert_eq!(first, 1);
/// // A second writer that also started from "absent" loses, and is told so.
/// let err = store.save(&key, &doc, Expect::Absent).await.unwrap_err();
/// assert!(err.is_retryable(), "{err}");
/// let stored = store.load(&key).await?.expect("saved");
/// assert_eq!((stored.revision, stored.document), (1, doc));
/// assert_eq!(store.list("alice").await?, ["conv-1"]);
/// assert!(store.delete(&key).await?);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(()) }
/// ```
pub trait SessionStore: Send + Sync + 'static {
    /// The saved session, or `None` when there is none.
    fn load<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, Option<Stored>>;

    /// Saves `document` if the saved session is what `expect` says, and returns the new
    /// revision; otherwise fails with [`AgentError::Conflict`] and changes nothing.
    fn save<'a>(&'a self, key: &'a SessionKey, document: &'a SessionDocument, expect: Expect) -> StoreFuture<'a, u64>;

    /// Deletes the session; whether there was one.
    fn delete<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, bool>;

    /// The session ids of `user_id` (empty: the sessions saved without a user), sorted.
    fn list<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, Vec<String>>;
}

impl<S: SessionStore + ?Sized> SessionStore for Arc<S> {
    fn load<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, Option<Stored>> {
        (**self).load(key)
    }

    fn save<'a>(&'a self, key: &'a SessionKey, document: &'a SessionDocument, expect: Expect) -> StoreFuture<'a, u64> {
        (**self).save(key, document, expect)
    }

    fn delete<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, bool> {
        (**self).delete(key)
    }

    fn list<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, Vec<String>> {
        (**self).list(user_id)
    }
}

/// The conflict error of a save that expected `expect` and found `found`.
pub(crate) fn conflict(key: &SessionKey, expect: Expect, found: Option<u64>) -> AgentError {
    AgentError::Conflict {
        what: format!("session {key}"),
        expected: expect.to_string(),
        found: found.map_or_else(|| "no saved session".to_owned(), |r| format!("revision {r}")),
    }
}

/// Whether a session at `found` satisfies `expect`.
pub(crate) fn satisfies(expect: Expect, found: Option<u64>) -> bool {
    match expect {
        Expect::Absent => found.is_none(),
        Expect::Revision(r) => found == Some(r),
        Expect::Any => true,
    }
}
