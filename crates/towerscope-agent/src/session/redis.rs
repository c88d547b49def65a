//! [`RedisStore`]: sessions in Redis, shared by every process of a service (feature `redis`).

use std::fmt;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use towerscope_core::AgentError;

use super::SessionDocument;
use super::document::{read, write};
use super::key::{SessionKey, decode, encode};
use super::store::{Expect, SessionStore, StoreFuture, Stored, conflict};

/// Saves a session if its revision is what the caller expects, atomically.
/// KEYS[1]: the session's hash; ARGV: expected (`absent`, `any`, or a revision), the document,
/// the TTL in milliseconds (0: none). Returns `{1, new revision}` or `{0, found revision or ''}`.
const SAVE: &str = r"
local found = redis.call('HGET', KEYS[1], 'revision')
-- A document without a revision (written by hand, or by a migration) loads as revision 0.
if not found and redis.call('HEXISTS', KEYS[1], 'document') == 1 then found = '0' end
local expect = ARGV[1]
if expect == 'absent' then
  if found then return {0, found} end
elseif expect ~= 'any' then
  if found ~= expect then return {0, found or ''} end
end
local revision = (tonumber(found) or 0) + 1
redis.call('HSET', KEYS[1], 'revision', revision, 'document', ARGV[2])
local ttl = tonumber(ARGV[3])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) else redis.call('PERSIST', KEYS[1]) end
return {1, tostring(revision)}
";

static SAVE_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(SAVE));

/// Sessions in Redis, one hash per session at the reference's key
/// `{prefix}user_id:{user_id}:session:{session_id}:state` (ids encoded, see [`SessionKey`]),
/// with the fields `revision` and `document` (the [`SessionDocument`] JSON).
///
/// - **No lost update**: a save is one Lua script that checks the revision and writes, so of
///   two processes saving from the same revision one wins and the other gets
///   [`AgentError::Conflict`].
/// - **TTL**: with [`ttl`](Self::ttl), every save sets the session to expire that long after
///   it (an idle conversation goes away); without, or with one longer than
///   [`MAX_TTL`](Self::MAX_TTL), sessions stay.
/// - **Connection**: a `redis` connection manager (tokio): one multiplexed connection,
///   re-established after a failure. A call that cannot reach Redis fails with
///   [`AgentError::Unavailable`] (retryable); the next calls reconnect.
/// - [`list`](SessionStore::list) scans the keyspace (`SCAN MATCH`): fine for tools and
///   administration, not for every request.
///
/// ```no_run
/// use std::time::Duration;
/// use towerscope_agent::Agent;
/// use towerscope_agent::session::RedisStore;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), towerscope_core::AgentError> {
/// let store = RedisStore::open("redis://127.0.0.1:6379/")?
///     .key_prefix("chat:")
///     .ttl(Duration::from_secs(7 * 24 * 3600));
/// let agent = Agent::builder("assistant")
///     .model(ScriptedModel::new("m", [ScriptedResponse::text("Hello!")]))
///     .session(store.clone(), "alice", "conv-1")
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisStore {
    conn: ConnectionManager,
    prefix: Arc<str>,
    ttl: Option<Duration>,
    what: Arc<str>,
}

impl RedisStore {
    /// A store on the Redis at `url` (`redis://host:port/db`). The connection is made on the
    /// first call, so this fails only on a malformed URL or outside a tokio runtime; calls time out after 2 s.
    pub fn open(url: &str) -> Result<Self, AgentError> {
        if tokio::runtime::Handle::try_current().is_err() {
            // The connection manager spawns its task on the current runtime.
            return Err(AgentError::validation(
                "RedisStore::open must be called inside a tokio runtime (the connection manager runs on it)",
            ));
        }
        let client = redis::Client::open(url).map_err(|e| AgentError::validation(format!("Redis URL: {e}")))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(Duration::from_secs(2)))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(50));
        let conn = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| AgentError::unavailable("session store redis", e))?;
        Ok(Self::with_connection(conn))
    }

    /// A store on an existing connection manager (your timeouts and retries).
    pub fn with_connection(conn: ConnectionManager) -> Self {
        Self {
            conn,
            prefix: Arc::from(""),
            ttl: None,
            what: Arc::from("session store redis"),
        }
    }

    /// The longest TTL a store sets: 1000 years (of 365 days). A longer [`ttl`](Self::ttl),
    /// `Duration::MAX` say, means sessions never expire.
    pub const MAX_TTL: Duration = Duration::from_secs(1000 * 365 * 24 * 3600);

    /// Prepends `prefix` to every key (default none, as the reference).
    #[must_use]
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        let prefix: String = prefix.into();
        self.what = Arc::from(format!("session store redis (keys {prefix}*)"));
        self.prefix = Arc::from(prefix);
        self
    }

    /// Sessions expire `ttl` after their last save (rounded down to milliseconds, at least
    /// 1 ms). A `ttl` longer than [`MAX_TTL`](Self::MAX_TTL), such as `Duration::MAX`, means
    /// they never expire, as without a TTL (Redis itself refuses an expiry as far as
    /// `Duration::MAX`).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// The Redis key of `key`'s session.
    pub fn key_of(&self, key: &SessionKey) -> String {
        format!(
            "{}user_id:{}:session:{}:state",
            self.prefix,
            encode(key.user_id()),
            encode(key.session_id())
        )
    }

    /// What a failed call means: Redis could not be reached (retryable), or it answered that
    /// the key holds something this store did not write (a string, a revision that is not a
    /// number), which no retry mends.
    fn failed(&self, e: redis::RedisError) -> AgentError {
        // Inside a script, Redis before 7 reports it as `ERR Error running script ...: WRONGTYPE`.
        let wrong_type = e.code() == Some("WRONGTYPE") || e.to_string().contains("WRONGTYPE");
        if wrong_type || e.kind() == redis::ErrorKind::UnexpectedReturnType {
            return AgentError::decode(
                &*self.what,
                format_args!(
                    "{e}; the key holds something this store did not write: delete it or use another key prefix"
                ),
            );
        }
        AgentError::unavailable(&*self.what, e)
    }
}

/// The expiry in milliseconds a save sets for `ttl`, bounded before anything is written:
/// 0 (none) without a TTL or beyond [`RedisStore::MAX_TTL`], otherwise at least 1.
fn expiry_ms(ttl: Option<Duration>) -> u64 {
    match ttl {
        Some(ttl) if ttl <= RedisStore::MAX_TTL => u64::try_from(ttl.as_millis()).map_or(0, |ms| ms.max(1)),
        _ => 0,
    }
}

impl SessionStore for RedisStore {
    fn load<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, Option<Stored>> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let (revision, document): (Option<u64>, Option<Vec<u8>>) = redis::cmd("HMGET")
                .arg(self.key_of(key))
                .arg("revision")
                .arg("document")
                .query_async(&mut conn)
                .await
                .map_err(|e| self.failed(e))?;
            let Some(document) = document else {
                return Ok(None);
            };
            let (document, _) = read(&document)?;
            Ok(Some(Stored {
                revision: revision.unwrap_or(0),
                document,
            }))
        })
    }

    fn save<'a>(&'a self, key: &'a SessionKey, document: &'a SessionDocument, expect: Expect) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            let body = write(document, None)?;
            let expected = match expect {
                Expect::Absent => "absent".to_owned(),
                Expect::Any => "any".to_owned(),
                Expect::Revision(r) => r.to_string(),
            };
            let mut conn = self.conn.clone();
            let (saved, revision): (i64, String) = SAVE_SCRIPT
                .key(self.key_of(key))
                .arg(expected)
                .arg(body)
                .arg(expiry_ms(self.ttl))
                .invoke_async(&mut conn)
                .await
                .map_err(|e| self.failed(e))?;
            let revision = revision.parse::<u64>().ok();
            match (saved, revision) {
                (1, Some(revision)) => Ok(revision),
                (_, found) => Err(conflict(key, expect, found)),
            }
        })
    }

    fn delete<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let removed: u64 = redis::cmd("DEL")
                .arg(self.key_of(key))
                .query_async(&mut conn)
                .await
                .map_err(|e| self.failed(e))?;
            Ok(removed > 0)
        })
    }

    fn list<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, Vec<String>> {
        Box::pin(async move {
            let head = format!("{}user_id:{}:session:", self.prefix, encode(user_id));
            let pattern = format!("{}*:state", glob_escape(&head));
            let mut conn = self.conn.clone();
            let mut cursor = 0u64;
            let mut ids = Vec::new();
            loop {
                let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(500)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.failed(e))?;
                ids.extend(keys.iter().filter_map(|k| {
                    let id = k.strip_prefix(&head)?.strip_suffix(":state")?;
                    if id.contains(':') { None } else { decode(id) }
                }));
                if next == 0 {
                    break;
                }
                cursor = next;
            }
            ids.sort();
            ids.dedup();
            Ok(ids)
        })
    }
}

/// `text` with the glob characters of `SCAN MATCH` escaped.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '^') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expiry_is_bounded_before_the_save() {
        assert_eq!(expiry_ms(None), 0);
        assert_eq!(expiry_ms(Some(Duration::ZERO)), 1, "at least 1 ms");
        assert_eq!(expiry_ms(Some(Duration::from_micros(1_999))), 1);
        assert_eq!(expiry_ms(Some(Duration::from_secs(7 * 24 * 3600))), 604_800_000);
        assert_eq!(expiry_ms(Some(RedisStore::MAX_TTL)), 31_536_000_000_000);
        // Longer than Redis takes: never expires, as without a TTL.
        assert_eq!(expiry_ms(Some(RedisStore::MAX_TTL + Duration::from_millis(1))), 0);
        assert_eq!(expiry_ms(Some(Duration::MAX)), 0);
    }
}
