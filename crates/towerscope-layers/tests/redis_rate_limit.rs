//! The shared rate limit in Redis (`scripts/redis-server.sh`): the same limits as in one
//! process, the user's choice when Redis is unreachable, and one budget for four OS processes.
//!
//! The four processes are this test binary run again on its `#[ignore]`d `child_*` test.
#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tower::{Service, ServiceBuilder, ServiceExt, service_fn};
use towerscope_core::{AgentContext, AgentError, ChatResponse, ChatUsage, ModelCallRequest, ModelOutput, Msg};
use towerscope_layers::RateLimitLayer;
use towerscope_layers::rate_limit::{HeldBy, RateLimitBackend, RateLimits, RedisBackend, Verdict, WhenUnavailable};
use towerscope_models::ScriptedModel;

fn unique(name: &str) -> String {
    use std::hash::{BuildHasher, RandomState};
    let n = RandomState::new().hash_one(SystemTime::now());
    format!("{name}-{}-{n:x}", std::process::id())
}

fn request() -> ModelCallRequest {
    ModelCallRequest {
        ctx: AgentContext::new("a", "s", "r"),
        model: Arc::new(ScriptedModel::new("m", [])),
        messages: vec![Msg::user("user", "hi")].into(),
        tools: Arc::from(vec![]),
        tool_choice: None,
    }
}

/// A model call through `layer`, to a model answering at once with `tokens` of usage.
fn limited(
    layer: &RateLimitLayer,
    tokens: u64,
) -> impl Service<ModelCallRequest, Response = ModelOutput, Error = AgentError, Future: Send> + Clone + use<> {
    ServiceBuilder::new()
        .layer(layer.clone())
        .service(service_fn(move |_req: ModelCallRequest| {
            let response = ChatResponse::new(vec![]).with_usage(ChatUsage::new(tokens, 0));
            std::future::ready(Ok::<_, AgentError>(ModelOutput::Complete(response)))
        }))
}

#[tokio::test]
async fn two_limiters_on_one_redis_limit_share_the_calls_per_window_and_the_interval() {
    let Some(url) = common::redis_url("two_limiters_on_one_redis_limit_share_the_calls_per_window_and_the_interval")
    else {
        return;
    };
    // Two layers made separately, as two processes would: only Redis is shared.
    let name = unique("calls");
    let limits = RateLimits::new().requests_per(3, Duration::from_secs(30)).fail_fast();
    let a = RateLimitLayer::with_backend(limits, RedisBackend::open(&url, &name).unwrap(), WhenUnavailable::Fail);
    let b = RateLimitLayer::with_backend(limits, RedisBackend::open(&url, &name).unwrap(), WhenUnavailable::Fail);
    limited(&a, 0).oneshot(request()).await.unwrap();
    limited(&b, 0).oneshot(request()).await.unwrap();
    limited(&a, 0).oneshot(request()).await.unwrap();
    let err = limited(&b, 0).oneshot(request()).await.unwrap_err();
    assert!(matches!(err, AgentError::RateLimited { .. }), "{err:?}");
    assert!(
        err.to_string().contains("shared rate limit of 3 calls per 30s reached"),
        "{err}"
    );
    let after = err.retry_after().unwrap();
    assert!(
        after > Duration::from_secs(25) && after <= Duration::from_secs(30),
        "{after:?}"
    );

    let name = unique("interval");
    let limits = RateLimits::new().min_interval(Duration::from_secs(30)).fail_fast();
    let a = RateLimitLayer::with_backend(limits, RedisBackend::open(&url, &name).unwrap(), WhenUnavailable::Fail);
    let b = RateLimitLayer::with_backend(limits, RedisBackend::open(&url, &name).unwrap(), WhenUnavailable::Fail);
    limited(&a, 0).oneshot(request()).await.unwrap();
    let err = limited(&b, 0).oneshot(request()).await.unwrap_err();
    assert!(err.to_string().contains("one call every 30s"), "{err}");
}

#[tokio::test]
async fn tokens_counted_by_one_limiter_hold_back_the_other() {
    let Some(url) = common::redis_url("tokens_counted_by_one_limiter_hold_back_the_other") else {
        return;
    };
    let name = unique("tokens");
    let limits = RateLimits::new().tokens_per_minute(100).fail_fast();
    let a = RateLimitLayer::with_backend(limits, RedisBackend::open(&url, &name).unwrap(), WhenUnavailable::Fail);
    let b = RateLimitLayer::with_backend(limits, RedisBackend::open(&url, &name).unwrap(), WhenUnavailable::Fail);
    limited(&a, 150).oneshot(request()).await.unwrap();
    // The tokens are counted from a task of their own: wait until b sees them.
    let mut refused = None;
    for _ in 0..100 {
        match limited(&b, 0).oneshot(request()).await {
            Err(e) => {
                refused = Some(e);
                break;
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    let err = refused.expect("150 tokens of 100 per minute hold the next call back");
    assert!(
        err.to_string().contains("shared rate limit of 100 tokens per 60s"),
        "{err}"
    );
    let after = err.retry_after().unwrap();
    assert!(
        after > Duration::from_secs(55) && after <= Duration::from_secs(60),
        "{after:?}"
    );
}

/// A usage figure a server got wrong (`u64::MAX` tokens) holds the shared limit's calls back
/// for a window, as in one process, and the calls start again once it has left the window
/// (Redis refused to add it to the sum, so it held nothing back, and its record then broke
/// the decision that dropped it from the window).
#[tokio::test]
async fn a_huge_usage_holds_calls_back_for_a_window_then_leaves_it() {
    let Some(url) = common::redis_url("a_huge_usage_holds_calls_back_for_a_window_then_leaves_it") else {
        return;
    };
    let name = unique("huge");
    let window = Duration::from_millis(1_500);
    let limits = RateLimits::new().tokens_per(1_000, window).fail_fast();
    let layer = RateLimitLayer::with_backend(limits, RedisBackend::open(&url, &name).unwrap(), WhenUnavailable::Fail);
    limited(&layer, u64::MAX).oneshot(request()).await.unwrap();
    // The tokens are counted from a task of their own: wait until the limit sees them.
    let mut refused = None;
    for _ in 0..50 {
        match limited(&layer, 0).oneshot(request()).await {
            Err(e) => {
                refused = Some(e);
                break;
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    let err = refused.expect("u64::MAX tokens hold the next call back");
    assert!(matches!(err, AgentError::RateLimited { .. }), "{err:?}");
    tokio::time::sleep(window + Duration::from_millis(100)).await;
    let after = limited(&layer, 0).oneshot(request()).await;
    assert!(after.is_ok(), "the record left the window: {after:?}");
}

/// How many token records the limit `name` holds in Redis.
async fn token_records(url: &str, name: &str) -> usize {
    let mut conn = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    redis::cmd("ZCARD")
        .arg(format!("towerscope:rate_limit:{{{name}}}:tokens"))
        .query_async(&mut conn)
        .await
        .unwrap()
}

/// Counts `records` answers of 10 tokens, and waits until Redis holds `total` records.
async fn record_tokens(
    backend: &RedisBackend,
    limits: &RateLimits,
    url: &str,
    name: &str,
    records: usize,
    total: usize,
) {
    for _ in 0..records {
        backend.record_tokens(limits, 10);
    }
    for _ in 0..200 {
        if token_records(url, name).await == total {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("Redis never held {total} token records");
}

/// Over the token limit, the decision reads the oldest records a page at a time until the sum
/// falls under the limit: here the record that does is the 81st of 140, on the second page
/// (64 a page), and it is one of the 70 counted two seconds after the first 70. A decision that
/// read only the first page would let the call start; one that stopped in the first 70 would
/// say to wait about 58 s, not 60.
#[tokio::test]
async fn a_token_limit_reached_far_into_the_log_waits_for_the_record_that_frees_it() {
    let Some(url) = common::redis_url("a_token_limit_reached_far_into_the_log_waits_for_the_record_that_frees_it")
    else {
        return;
    };
    let name = unique("token-pages");
    let limits = RateLimits::new().tokens_per_minute(600);
    let backend = RedisBackend::open(&url, &name).unwrap();
    record_tokens(&backend, &limits, &url, &name, 70, 70).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    record_tokens(&backend, &limits, &url, &name, 70, 140).await;
    match backend.try_start(&limits).await.unwrap() {
        Verdict::Wait { after, held_by } => {
            assert_eq!(held_by, HeldBy::Tokens);
            assert!(
                after > Duration::from_millis(59_000) && after <= Duration::from_secs(60),
                "{after:?}"
            );
        }
        other => panic!("1,400 tokens of 600 a minute: {other:?}"),
    }
}

#[tokio::test]
async fn when_redis_is_unreachable_calls_fail_open_or_fail_as_the_user_chose() {
    // A loopback port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis://127.0.0.1:{port}/");
    let limits = RateLimits::new().requests_per(1, Duration::from_secs(60));

    let open = RateLimitLayer::with_backend(
        limits,
        RedisBackend::open(&url, "x").unwrap(),
        WhenUnavailable::FailOpen,
    );
    for _ in 0..3 {
        limited(&open, 0).oneshot(request()).await.unwrap();
    }

    let closed = RateLimitLayer::with_backend(limits, RedisBackend::open(&url, "x").unwrap(), WhenUnavailable::Fail);
    let err = limited(&closed, 0).oneshot(request()).await.unwrap_err();
    assert!(matches!(err, AgentError::Unavailable { .. }), "{err:?}");
    assert!(err.is_retryable());
    assert!(
        err.to_string().starts_with("redis rate limit x is unavailable: "),
        "{err}"
    );
}

const PROCESSES: usize = 4;
const RATE: u64 = 50;
const SECONDS: u64 = 10;

fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

#[tokio::test]
#[ignore = "a child process of four_processes_share_one_budget, run by it"]
async fn child_send_as_fast_as_allowed() {
    let var = |n: &str| std::env::var(n).unwrap_or_else(|_| panic!("{n} is not set: this test is run by another"));
    let (url, name) = (var("URL"), var("NAME"));
    let start: u64 = var("START_AT_MS").parse().unwrap();
    let end = start + SECONDS * 1000;
    let limits = RateLimits::new().requests_per(RATE as u32, Duration::from_secs(1));
    let layer = RateLimitLayer::with_backend(limits, RedisBackend::open(&url, &name).unwrap(), WhenUnavailable::Fail);
    let started = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&started);
    let mut svc = ServiceBuilder::new()
        .layer(layer)
        .service(service_fn(move |_req: ModelCallRequest| {
            // Counted when the limit lets the call start, inside the ten seconds.
            if unix_ms() < end {
                counter.fetch_add(1, Ordering::Relaxed);
            }
            std::future::ready(Ok::<_, AgentError>(ModelOutput::Complete(ChatResponse::new(vec![]))))
        }));
    tokio::time::sleep(Duration::from_millis(start.saturating_sub(unix_ms()))).await;
    while unix_ms() < end {
        svc.ready().await.unwrap().call(request()).await.unwrap();
    }
    println!("@@STARTED {}", started.load(Ordering::Relaxed));
}

#[tokio::test]
async fn four_processes_share_one_budget() {
    let Some(url) = common::redis_url("four_processes_share_one_budget") else {
        return;
    };
    let name = unique("budget");
    let start = (unix_ms() + 2000).to_string();
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "child_send_as_fast_as_allowed", "--ignored", "--nocapture"])
                .env("URL", &url)
                .env("NAME", &name)
                .env("START_AT_MS", &start)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut counts = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        let count = stdout
            .lines()
            .find_map(|l| {
                l.split_once("@@STARTED ")
                    .map(|(_, n)| n.trim().parse::<u64>().unwrap())
            })
            .unwrap();
        counts.push(count);
    }
    let total: u64 = counts.iter().sum();
    let expected = SECONDS * RATE;
    println!(
        "{PROCESSES} processes, {RATE} calls/s shared for {SECONDS} s: {total} calls started (expected {expected}, \
         per process {counts:?})"
    );
    let off = total.abs_diff(expected) as f64 / expected as f64;
    assert!(off <= 0.05, "{total} calls is {:.1}% off {expected}", off * 100.0);
    assert!(
        counts.iter().all(|&c| c > 0),
        "every process got calls through: {counts:?}"
    );
}
