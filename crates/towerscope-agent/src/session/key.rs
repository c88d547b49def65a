//! [`SessionKey`]: which session of which user, and how its ids become file names and keys.

use std::fmt;
use std::sync::Arc;

use towerscope_core::AgentError;

/// The longest user or session id accepted, in bytes.
pub const MAX_ID_LEN: usize = 128;

/// A session of a user: what a [`SessionStore`](super::SessionStore) saves and loads under.
///
/// The user id may be empty (a session of nobody in particular, as the reference allows); the
/// session id may not. Ids are any text up to [`MAX_ID_LEN`] bytes: stores never use them raw.
/// In a file name or a Redis key, every byte outside `A-Z a-z 0-9 - .` (and a leading `.`) is
/// written `%XX`, so no id can climb out of the store's directory (`../x` becomes `%2E.%2Fx`),
/// hide a file, or run into the `_`/`:` separators; uuids and plain names stay as they are.
///
/// ```
/// use towerscope_agent::session::SessionKey;
///
/// let key = SessionKey::new("alice", "conv-1")?;
/// assert_eq!(key.to_string(), "alice/conv-1");
/// assert!(SessionKey::new("alice", "").is_err());
/// # Ok::<(), towerscope_core::AgentError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionKey {
    user_id: Arc<str>,
    session_id: Arc<str>,
}

impl SessionKey {
    /// The session `session_id` of user `user_id` (empty for none). Fails on an empty session
    /// id and on ids longer than [`MAX_ID_LEN`] bytes. (A file store also bounds the key once
    /// encoded: see [`MAX_FILE_KEY_LEN`](super::MAX_FILE_KEY_LEN).)
    pub fn new(user_id: impl Into<String>, session_id: impl Into<String>) -> Result<Self, AgentError> {
        let (user_id, session_id) = (user_id.into(), session_id.into());
        if session_id.is_empty() {
            return Err(AgentError::validation("a session id must not be empty"));
        }
        for (what, id) in [("user", &user_id), ("session", &session_id)] {
            if id.len() > MAX_ID_LEN {
                return Err(AgentError::validation(format!(
                    "{what} id of {} bytes is too long: at most {MAX_ID_LEN} bytes",
                    id.len()
                )));
            }
        }
        Ok(Self {
            user_id: user_id.into(),
            session_id: session_id.into(),
        })
    }

    /// The user id (empty for none).
    pub fn user_id(&self) -> &str {
        &self.user_id
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The session id the agent replies in ([`AgentContext::session_id`], a reply's events,
    /// the key of what registered state modules hold): the session id, after the user id
    /// (encoded, so it holds no `/`) and a `/` when there is one. Two users' sessions of the
    /// same id are two sessions to the layers their agents share (a per-session call limit
    /// counted them together).
    ///
    /// [`AgentContext::session_id`]: towerscope_core::AgentContext::session_id
    pub fn agent_session_id(&self) -> towerscope_core::Id {
        if self.user_id.is_empty() {
            towerscope_core::Id::from(&*self.session_id)
        } else {
            towerscope_core::Id::from(format!("{}/{}", encode(&self.user_id), self.session_id))
        }
    }

    /// The reference's file name without `.json`: `{user_id}_{session_id}`, or `{session_id}`
    /// with no user id, each id encoded.
    pub(crate) fn file_stem(&self) -> String {
        if self.user_id.is_empty() {
            encode(&self.session_id)
        } else {
            format!("{}_{}", encode(&self.user_id), encode(&self.session_id))
        }
    }
}

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.user_id.is_empty() {
            f.write_str(&self.session_id)
        } else {
            write!(f, "{}/{}", self.user_id, self.session_id)
        }
    }
}

/// The session id of the session key behind an agent's session id: `session_id` without the
/// `{user}/` that [`SessionKey::agent_session_id`] put before it (as it is, when it has none).
pub(crate) fn key_session_id(user_id: &str, session_id: &towerscope_core::Id) -> towerscope_core::Id {
    if user_id.is_empty() {
        return session_id.clone();
    }
    let prefix = encode(user_id);
    let rest = session_id
        .as_text()
        .and_then(|text| text.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.strip_prefix('/'));
    rest.map_or_else(|| session_id.clone(), towerscope_core::Id::from)
}

/// `id` with every byte outside `A-Z a-z 0-9 - .`, and a leading `.`, written `%XX`.
pub(crate) fn encode(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for (i, b) in id.bytes().enumerate() {
        let plain = b.is_ascii_alphanumeric() || b == b'-' || (b == b'.' && i > 0);
        if plain {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The id `encode` wrote, or `None` for text it cannot have written.
pub(crate) fn decode(text: &str) -> Option<String> {
    String::from_utf8(percent_decode(text)?).ok()
}

/// The bytes of percent-encoded `text` (`%XX` read as the byte `XX`, every other byte as it
/// is); `None` for a `%` not followed by two hex digits.
pub(crate) fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn ids_cannot_escape_or_collide() {
        for (id, encoded) in [
            ("conv-1", "conv-1"),
            ("0f3a9c", "0f3a9c"),
            ("../etc/passwd", "%2E.%2Fetc%2Fpasswd"),
            ("..", "%2E."),
            (".hidden", "%2Ehidden"),
            ("a_b", "a%5Fb"),
            ("a:b", "a%3Ab"),
            ("C:\\x", "C%3A%5Cx"),
            ("été", "%C3%A9t%C3%A9"),
            ("100%", "100%25"),
        ] {
            assert_eq!(encode(id), encoded);
            assert_eq!(decode(encoded).as_deref(), Some(id));
        }
        // `_` separates user and session: "a_b" + "c" and "a" + "b_c" are different files.
        let one = SessionKey::new("a_b", "c").unwrap().file_stem();
        let two = SessionKey::new("a", "b_c").unwrap().file_stem();
        assert_ne!(one, two);
        assert_eq!(SessionKey::new("", "s").unwrap().file_stem(), "s");
        assert!(decode("%zz").is_none());
        assert!(SessionKey::new("u", "x".repeat(MAX_ID_LEN + 1)).is_err());
    }
}
