//! [`RedisBackend`]: one rate limit shared by every process, kept in Redis (feature `redis`).

use std::fmt;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use towerscope_core::AgentError;

use super::RateLimits;
use super::backend::{BackendFuture, HeldBy, RateLimitBackend, Verdict};

/// Decides and counts one start, atomically. Times are microseconds of the server's clock
/// (`TIME`: one clock for every process). KEYS: last start, starts (sorted set), token records
/// (sorted set, members `tokens:nonce`), token sum. ARGV: minimum interval, calls per window
/// and window, tokens per window and window (0: no such limit), a nonce. Returns `{0, 0}` when
/// the call starts (and is counted), else `{wait, limit}` (1 interval, 2 calls, 3 tokens).
const ADMIT: &str = r"
local function s(x) return string.format('%.0f', x) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local wait, held = 0, 0
local interval = tonumber(ARGV[1])
if interval > 0 then
  local last = redis.call('GET', KEYS[1])
  if last then
    local at = tonumber(last) + interval
    if at > now then wait, held = at - now, 1 end
  end
end
local n, window = tonumber(ARGV[2]), tonumber(ARGV[3])
if n > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', s(now - window))
  local count = redis.call('ZCARD', KEYS[2])
  if count >= n then
    local oldest = redis.call('ZRANGE', KEYS[2], count - n, count - n, 'WITHSCORES')
    local at = tonumber(oldest[2]) + window
    if at - now > wait then wait, held = at - now, 2 end
  end
end
local limit, twindow = tonumber(ARGV[4]), tonumber(ARGV[5])
if limit > 0 then
  local old = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', s(now - twindow))
  if #old > 0 then
    local gone = 0
    for _, m in ipairs(old) do gone = gone + tonumber(string.match(m, '^(%d+):')) end
    redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', s(now - twindow))
    redis.call('DECRBY', KEYS[4], gone)
  end
  local sum = tonumber(redis.call('GET', KEYS[4]) or '0')
  if sum < 0 then
    redis.call('SET', KEYS[4], 0, 'KEEPTTL')
    sum = 0
  end
  -- Oldest first, a page at a time: only the records whose leaving brings the sum under the
  -- limit are read, not the window's whole log.
  local from = 0
  while sum >= limit do
    local entries = redis.call('ZRANGE', KEYS[3], from, from + 63, 'WITHSCORES')
    if #entries == 0 then break end
    for i = 1, #entries, 2 do
      sum = sum - tonumber(string.match(entries[i], '^(%d+):'))
      if sum < limit then
        local at = tonumber(entries[i + 1]) + twindow
        if at - now > wait then wait, held = at - now, 3 end
        break
      end
    end
    from = from + 64
  end
end
if wait > 0 then return {math.ceil(wait), held} end
if interval > 0 then redis.call('SET', KEYS[1], s(now), 'PX', math.ceil(interval / 1000) + 1000) end
if n > 0 then
  redis.call('ZADD', KEYS[2], s(now), s(now) .. ':' .. ARGV[6])
  redis.call('PEXPIRE', KEYS[2], math.ceil(window / 1000) + 1000)
end
return {0, 0}
";

/// Counts the tokens of an answer. KEYS: token records, token sum. ARGV: tokens, window, nonce.
/// The sum first: a count Redis refuses leaves no record behind that the sum never had.
const RECORD: &str = r"
local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2]))
redis.call('INCRBY', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[1], now, ARGV[1] .. ':' .. ARGV[3])
local ttl = math.ceil(tonumber(ARGV[2]) / 1000) + 1000
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
";

/// The tokens an answer is recorded with: at most the window's limit, which holds calls back
/// exactly as any larger count does (until the record leaves the window), and at most 2^53 - 1,
/// which the scripts' numbers (doubles) hold exactly. A usage figure a server got wrong
/// (`u64::MAX`) was refused by Redis's `INCRBY`, then its record broke the decision that
/// dropped it from the window.
fn recorded_tokens(tokens: u64, limit: u64) -> u64 {
    const EXACT: u64 = (1 << 53) - 1;
    tokens.min(limit).min(EXACT)
}

static ADMIT_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(ADMIT));
static RECORD_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(RECORD));

/// A rate limit kept in Redis, so that every process using the same name shares one budget.
///
/// Each decision is one Lua script, run atomically by Redis with the server's clock, that
/// checks and counts the start: no two processes can both take the last slot. The limits are
/// the in-process limiter's, with the same meaning:
///
/// - **minimum interval**: the last start, in a key;
/// - **calls per window** and **tokens per window**: a *sliding log* (a sorted set of the
///   starts, and of the token counts, in the last window), exact like the in-process limiter:
///   never more than `n` starts in any window. Not GCRA: GCRA enforces the average rate with a
///   burst, and lets up to `2n - 1` calls through in some windows (a burst right after a
///   steady stream), so `requests_per(n, w)` would mean something else across processes than
///   in one. The price is memory of one entry per call in the window, and `O(log n)` per
///   decision; over the token limit, the oldest token records are read a page of 64 at a
///   time, only until the sum falls under the limit.
///
/// Every process must configure the same [`RateLimits`] for one name; only the events live in
/// Redis. Tokens are counted when an answer arrives, from a task of its own (a failure is
/// logged). What a call does when Redis cannot be reached is the
/// [`WhenUnavailable`](super::WhenUnavailable) given to the limiter.
///
/// ```no_run
/// use std::time::Duration;
/// use towerscope_layers::RateLimitLayer;
/// use towerscope_layers::rate_limit::{RateLimits, RedisBackend, WhenUnavailable};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), towerscope_core::AgentError> {
/// let backend = RedisBackend::open("redis://127.0.0.1:6379/", "openai-gpt-4o")?;
/// let limits = RateLimits::new().requests_per_minute(500).tokens_per_minute(200_000);
/// let layer = RateLimitLayer::with_backend(limits, backend, WhenUnavailable::FailOpen);
/// // Agent::builder(..).on_model_call(layer.clone()) in every process.
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisBackend {
    conn: ConnectionManager,
    keys: Arc<[String; 4]>,
    limit: Arc<str>,
    name: Arc<str>,
}

impl RedisBackend {
    /// The limit named `name` on the Redis at `url`. The connection is made on the first call
    /// (so this fails only on a malformed URL, or outside a tokio runtime); calls time out after 1 s.
    pub fn open(url: &str, name: &str) -> Result<Self, AgentError> {
        if tokio::runtime::Handle::try_current().is_err() {
            // The connection manager spawns its task on the current runtime.
            return Err(AgentError::validation(
                "RedisBackend::open must be called inside a tokio runtime (the connection manager runs on it)",
            ));
        }
        let client = redis::Client::open(url).map_err(|e| AgentError::validation(format!("Redis URL: {e}")))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(1)))
            .set_response_timeout(Some(Duration::from_secs(1)))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(50));
        let conn = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| AgentError::unavailable(format!("redis rate limit {name}"), e))?;
        Ok(Self::with_connection(conn, name))
    }

    /// The limit named `name` on an existing connection manager (your timeouts and retries).
    pub fn with_connection(conn: ConnectionManager, name: &str) -> Self {
        Self {
            conn,
            keys: Arc::new(keys("towerscope:rate_limit:", name)),
            limit: Arc::from(name),
            name: Arc::from(format!("redis rate limit {name}")),
        }
    }

    /// Prepends `prefix` to the keys instead of `towerscope:rate_limit:`. The keys of limit
    /// `name` are `{prefix}{name}:last`, `:starts`, `:tokens` and `:token_sum`, with the name
    /// in braces (a cluster hash tag: one slot for the script).
    #[must_use]
    pub fn key_prefix(mut self, prefix: &str) -> Self {
        self.keys = Arc::new(keys(prefix, &self.limit));
        self
    }
}

fn keys(prefix: &str, name: &str) -> [String; 4] {
    ["last", "starts", "tokens", "token_sum"].map(|k| format!("{prefix}{{{name}}}:{k}"))
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

impl RateLimitBackend for RedisBackend {
    fn try_start(&self, limits: &RateLimits) -> BackendFuture {
        let mut conn = self.conn.clone();
        let keys = Arc::clone(&self.keys);
        let name = Arc::clone(&self.name);
        let interval = limits.min_interval.map_or(0, micros);
        let (n, window) = limits.requests.map_or((0, 0), |(n, w)| (u64::from(n), micros(w)));
        let (tokens, token_window) = limits.tokens.map_or((0, 0), |(n, w)| (n, micros(w)));
        Box::pin(async move {
            let mut call = ADMIT_SCRIPT.prepare_invoke();
            for key in keys.iter() {
                call.key(key);
            }
            call.arg(interval)
                .arg(n)
                .arg(window)
                .arg(tokens)
                .arg(token_window)
                .arg(fastrand::u64(..));
            let (wait, held): (u64, u8) = call
                .invoke_async(&mut conn)
                .await
                .map_err(|e| AgentError::unavailable(&*name, e))?;
            Ok(match (wait, held) {
                (0, _) => Verdict::Start,
                (wait, held) => Verdict::Wait {
                    after: Duration::from_micros(wait),
                    held_by: match held {
                        1 => HeldBy::MinInterval,
                        3 => HeldBy::Tokens,
                        _ => HeldBy::Requests,
                    },
                },
            })
        })
    }

    fn record_tokens(&self, limits: &RateLimits, tokens: u64) {
        let Some((limit, window)) = limits.tokens else {
            return;
        };
        let tokens = recorded_tokens(tokens, limit);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(backend = %self.name, "tokens not counted: no tokio runtime");
            return;
        };
        let mut conn = self.conn.clone();
        let keys = Arc::clone(&self.keys);
        let name = Arc::clone(&self.name);
        runtime.spawn(async move {
            let counted: Result<u8, _> = RECORD_SCRIPT
                .key(&keys[2])
                .key(&keys[3])
                .arg(tokens)
                .arg(micros(window))
                .arg(fastrand::u64(..))
                .invoke_async(&mut conn)
                .await;
            if let Err(e) = counted {
                tracing::warn!(backend = %name, error = %e, tokens, "could not count tokens in the shared rate limit");
            }
        });
    }

    fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBackend")
            .field("name", &self.name)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}
