//! `RedisStore` against a real Redis (`scripts/redis-server.sh`): round trip, TTL, conflicts,
//! listing, and a server restarted between calls.
#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used)]

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use towerscope_agent::AgentState;
use towerscope_agent::session::{Expect, RedisStore, SessionDocument, SessionKey, SessionStore};
use towerscope_core::{AgentError, Msg};

fn unique_prefix() -> String {
    use std::hash::{BuildHasher, RandomState};
    let n = RandomState::new().hash_one(std::time::SystemTime::now());
    format!("towerscope-test:{}:{n:x}:", std::process::id())
}

fn doc(text: &str) -> SessionDocument {
    let mut state = AgentState::new();
    state.context.push(Arc::new(Msg::user("user", text)));
    let mut doc = SessionDocument::new(state);
    doc.modules
        .insert("prefs".to_owned(), serde_json::json!({"language": "fr"}));
    doc
}

/// The text of a document made by [`doc`].
fn text(doc: &SessionDocument) -> String {
    doc.agent.context[0].text_content().unwrap()
}

#[tokio::test]
async fn sessions_round_trip_list_and_delete_under_their_prefix() {
    let Some(url) = common::redis_url("sessions_round_trip_list_and_delete_under_their_prefix") else {
        return;
    };
    let store = RedisStore::open(&url).unwrap().key_prefix(unique_prefix());
    let other = RedisStore::open(&url).unwrap().key_prefix(unique_prefix());
    let a = SessionKey::new("alice", "conv:1*").unwrap();
    let b = SessionKey::new("alice", "conv-2").unwrap();
    let c = SessionKey::new("", "nobody").unwrap();
    let one = doc("one");
    for (key, d) in [(&a, &one), (&b, &doc("two")), (&c, &doc("three"))] {
        assert_eq!(store.save(key, d, Expect::Absent).await.unwrap(), 1);
    }
    let stored = store.load(&a).await.unwrap().unwrap();
    assert_eq!((stored.revision, stored.document), (1, one), "every field comes back");
    assert_eq!(store.list("alice").await.unwrap(), ["conv-2", "conv:1*"]);
    assert_eq!(store.list("").await.unwrap(), ["nobody"]);
    assert!(
        other.list("alice").await.unwrap().is_empty(),
        "another prefix sees nothing"
    );
    assert!(other.load(&a).await.unwrap().is_none());
    assert!(store.delete(&a).await.unwrap());
    assert!(!store.delete(&a).await.unwrap());
    assert_eq!(store.list("alice").await.unwrap(), ["conv-2"]);
    store.delete(&b).await.unwrap();
    store.delete(&c).await.unwrap();
}

#[tokio::test]
async fn a_save_from_a_stale_revision_is_a_conflict_and_the_retry_wins() {
    let Some(url) = common::redis_url("a_save_from_a_stale_revision_is_a_conflict_and_the_retry_wins") else {
        return;
    };
    let store = RedisStore::open(&url).unwrap().key_prefix(unique_prefix());
    let key = SessionKey::new("u", "s").unwrap();
    assert_eq!(store.save(&key, &doc("a"), Expect::Absent).await.unwrap(), 1);
    // Two processes loaded revision 1; the first to save wins.
    assert_eq!(store.save(&key, &doc("b"), Expect::Revision(1)).await.unwrap(), 2);
    let err = store.save(&key, &doc("c"), Expect::Revision(1)).await.unwrap_err();
    assert!(
        matches!(&err, AgentError::Conflict { found, .. } if found == "revision 2"),
        "{err:?}"
    );
    assert!(err.is_retryable());
    let err = store.save(&key, &doc("c"), Expect::Absent).await.unwrap_err();
    assert!(matches!(err, AgentError::Conflict { .. }));
    assert_eq!(text(&store.load(&key).await.unwrap().unwrap().document), "b");
    // The loser loads again and retries.
    let again = store.load(&key).await.unwrap().unwrap();
    assert_eq!(
        store
            .save(&key, &doc("c"), Expect::Revision(again.revision))
            .await
            .unwrap(),
        3
    );
    let missing = SessionKey::new("u", "never").unwrap();
    let err = store.save(&missing, &doc("x"), Expect::Revision(4)).await.unwrap_err();
    assert!(
        matches!(&err, AgentError::Conflict { found, .. } if found == "no saved session"),
        "{err:?}"
    );
    store.delete(&key).await.unwrap();
}

#[tokio::test]
async fn a_session_with_a_ttl_expires_after_its_last_save() {
    let Some(url) = common::redis_url("a_session_with_a_ttl_expires_after_its_last_save") else {
        return;
    };
    let prefix = unique_prefix();
    let store = RedisStore::open(&url)
        .unwrap()
        .key_prefix(prefix.clone())
        .ttl(Duration::from_millis(300));
    let key = SessionKey::new("u", "brief").unwrap();
    store.save(&key, &doc("a"), Expect::Absent).await.unwrap();
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let pttl: i64 = redis::cmd("PTTL")
        .arg(store.key_of(&key))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(pttl > 0 && pttl <= 300, "{pttl}");
    // Without a TTL, a save makes the session permanent again.
    let keep = RedisStore::open(&url).unwrap().key_prefix(prefix);
    keep.save(&key, &doc("b"), Expect::Revision(1)).await.unwrap();
    let pttl: i64 = redis::cmd("PTTL")
        .arg(store.key_of(&key))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(pttl, -1);
    store.save(&key, &doc("c"), Expect::Revision(2)).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while store.load(&key).await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "the session never expired");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(store.list("u").await.unwrap().is_empty());
}

/// The PTTL of `key` in milliseconds (-1: no expiry).
async fn pttl(url: &str, key: &str) -> i64 {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("PTTL").arg(key).query_async(&mut conn).await.unwrap()
}

/// `ttl(Duration::MAX)` ("never") saves a session that never expires: such a save once
/// wrote the session, then failed at its expiry (out of Redis's range) as a retryable error
/// whose retry was a conflict. The longest TTL kept as one is set as asked.
#[tokio::test]
async fn a_ttl_longer_than_redis_takes_saves_a_session_that_never_expires() {
    let Some(url) = common::redis_url("a_ttl_longer_than_redis_takes_saves_a_session_that_never_expires") else {
        return;
    };
    let prefix = unique_prefix();
    let forever = RedisStore::open(&url)
        .unwrap()
        .key_prefix(prefix.clone())
        .ttl(Duration::MAX);
    let key = SessionKey::new("u", "forever").unwrap();
    let kept = doc("kept");
    assert_eq!(forever.save(&key, &kept, Expect::Absent).await.unwrap(), 1);
    let stored = forever.load(&key).await.unwrap().unwrap();
    assert_eq!((stored.revision, stored.document), (1, kept));
    assert_eq!(pttl(&url, &forever.key_of(&key)).await, -1, "no expiry");
    assert_eq!(forever.save(&key, &doc("b"), Expect::Revision(1)).await.unwrap(), 2);

    let longest = RedisStore::open(&url)
        .unwrap()
        .key_prefix(prefix)
        .ttl(RedisStore::MAX_TTL);
    assert_eq!(longest.save(&key, &doc("c"), Expect::Revision(2)).await.unwrap(), 3);
    let max = i64::try_from(RedisStore::MAX_TTL.as_millis()).unwrap();
    let left = pttl(&url, &longest.key_of(&key)).await;
    assert!(left > max - 60_000 && left <= max, "{left}");
    assert_eq!(text(&longest.load(&key).await.unwrap().unwrap().document), "c");
    assert!(longest.delete(&key).await.unwrap());
}

#[test]
fn opening_a_store_outside_a_tokio_runtime_is_an_error_not_a_panic() {
    let err = RedisStore::open("redis://127.0.0.1:1/").unwrap_err();
    assert!(err.to_string().contains("inside a tokio runtime"), "{err}");
}

/// A redis-server of this test's own, on a free loopback port, without persistence.
struct Server {
    binary: String,
    port: u16,
    child: Option<Child>,
}

impl Server {
    fn start(binary: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut server = Self {
            binary: binary.to_owned(),
            port,
            child: None,
        };
        server.restart();
        server
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn restart(&mut self) {
        let child = Command::new(&self.binary)
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start on {}", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

#[tokio::test]
async fn a_restarted_server_fails_calls_clearly_then_the_store_recovers() {
    let Some(binary) = common::redis_server_binary("a_restarted_server_fails_calls_clearly_then_the_store_recovers")
    else {
        return;
    };
    let mut server = Server::start(&binary);
    let store = RedisStore::open(&server.url()).unwrap();
    let key = SessionKey::new("u", "s").unwrap();
    assert_eq!(store.save(&key, &doc("a"), Expect::Absent).await.unwrap(), 1);

    server.stop();
    let err = store.load(&key).await.unwrap_err();
    assert!(matches!(err, AgentError::Unavailable { .. }), "{err:?}");
    assert!(err.is_retryable());
    assert!(
        err.to_string().starts_with("session store redis is unavailable: "),
        "{err}"
    );
    let err = store.save(&key, &doc("b"), Expect::Revision(1)).await.unwrap_err();
    assert!(matches!(err, AgentError::Unavailable { .. }), "{err:?}");

    server.restart();
    // The connection comes back within a few calls; the restarted server kept nothing.
    let deadline = Instant::now() + Duration::from_secs(10);
    let loaded = loop {
        match store.load(&key).await {
            Ok(loaded) => break loaded,
            Err(e) => assert!(Instant::now() < deadline, "no recovery: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(loaded.is_none());
    assert_eq!(store.save(&key, &doc("c"), Expect::Absent).await.unwrap(), 1);
    assert_eq!(text(&store.load(&key).await.unwrap().unwrap().document), "c");
}

/// A key holding something this store did not write (a string, as the reference's Redis
/// session writes) fails loads and saves with a lasting error that says so, not "unavailable,
/// retry"; a session document without a revision (a migration's `HSET ... document`) loads as
/// revision 0 and saves from it (every save of it was a conflict).
#[tokio::test]
async fn a_key_this_store_did_not_write_is_a_lasting_error_and_a_document_without_a_revision_saves() {
    let Some(url) =
        common::redis_url("a_key_this_store_did_not_write_is_a_lasting_error_and_a_document_without_a_revision_saves")
    else {
        return;
    };
    let store = RedisStore::open(&url).unwrap().key_prefix(unique_prefix());
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();

    let foreign = SessionKey::new("alice", "conv-1").unwrap();
    let () = redis::cmd("SET")
        .arg(store.key_of(&foreign))
        .arg(r#"{"agent": {}}"#)
        .query_async(&mut conn)
        .await
        .unwrap();
    let load = store.load(&foreign).await.unwrap_err();
    let save = store.save(&foreign, &doc("a"), Expect::Any).await.unwrap_err();
    for e in [load, save] {
        assert!(!e.is_retryable(), "{e}");
        assert!(e.to_string().contains("did not write"), "{e}");
    }

    let imported = SessionKey::new("alice", "imported").unwrap();
    let () = redis::cmd("HSET")
        .arg(store.key_of(&imported))
        .arg("document")
        .arg(doc("migrated").to_json().unwrap())
        .query_async(&mut conn)
        .await
        .unwrap();
    let stored = store.load(&imported).await.unwrap().unwrap();
    assert_eq!((stored.revision, text(&stored.document)), (0, "migrated".to_owned()));
    let absent = store.save(&imported, &doc("x"), Expect::Absent).await;
    assert!(
        matches!(absent, Err(AgentError::Conflict { .. })),
        "it is there: {absent:?}"
    );
    assert_eq!(
        store.save(&imported, &doc("next"), Expect::Revision(0)).await.unwrap(),
        1
    );
    for key in [&foreign, &imported] {
        store.delete(key).await.unwrap();
    }
}
