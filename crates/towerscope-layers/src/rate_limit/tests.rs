#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::join_all;
use tokio::time::Instant;
use tower::{Service, ServiceBuilder, ServiceExt, service_fn};
use towerscope_core::{AgentContext, AgentError, ChatResponse, ChatUsage, ModelCallRequest, ModelOutput};
use towerscope_models::ScriptedModel;

use super::*;
use crate::testing::request_in;

type Log = Arc<Mutex<Vec<(Duration, String)>>>;

/// A model answering at once with `tokens` of usage; logs when each call started (since
/// `origin`) and for which reply.
fn recording(
    log: Log,
    origin: Instant,
    tokens: u64,
) -> impl Service<ModelCallRequest, Response = ModelOutput, Error = AgentError, Future: Send> + Clone + Send + Sync {
    service_fn(move |req: ModelCallRequest| {
        log.lock()
            .unwrap()
            .push((origin.elapsed(), req.ctx.reply_id().to_string()));
        let response = ChatResponse::new(vec![]).with_usage(ChatUsage::new(tokens, 0));
        std::future::ready(Ok::<_, AgentError>(ModelOutput::Complete(response)))
    })
}

/// A model answering at once with `tokens` of usage behind a layer enforcing `limits`: the
/// log of its calls' starts, the layer, and the service.
fn limited(
    limits: RateLimits,
    tokens: u64,
) -> (
    Log,
    RateLimitLayer,
    RateLimit<
        impl Service<ModelCallRequest, Response = ModelOutput, Error = AgentError, Future: Send> + Clone + Send + Sync,
    >,
) {
    let log = Log::default();
    let layer = RateLimitLayer::new(limits);
    let svc = ServiceBuilder::new()
        .layer(layer.clone())
        .service(recording(log.clone(), Instant::now(), tokens));
    (log, layer, svc)
}

fn request(i: usize) -> ModelCallRequest {
    request_in(
        &ScriptedModel::new("m", []),
        AgentContext::new("a", "s", format!("r{i}")),
    )
}

fn secs(log: &Log) -> Vec<u64> {
    log.lock().unwrap().iter().map(|(d, _)| d.as_secs()).collect()
}

#[tokio::test(start_paused = true)]
async fn min_interval_spaces_concurrent_callers() {
    let log = Log::default();
    let layer = RateLimitLayer::new(RateLimits::new().min_interval(Duration::from_secs(1)));
    let svc = ServiceBuilder::new()
        .layer(layer)
        .service(recording(log.clone(), Instant::now(), 0));
    let calls = (0..5).map(|i| svc.clone().oneshot(request(i)));
    assert!(join_all(calls).await.iter().all(Result::is_ok));
    assert_eq!(secs(&log), [0, 1, 2, 3, 4]);
}

#[tokio::test(start_paused = true)]
async fn waiting_callers_are_served_in_order() {
    let log = Log::default();
    let mut svc = ServiceBuilder::new()
        .layer(RateLimitLayer::new(
            RateLimits::new().requests_per(1, Duration::from_secs(1)),
        ))
        .service(recording(log.clone(), Instant::now(), 0));
    let mut calls = Vec::new();
    for i in 0..6 {
        calls.push(svc.ready().await.unwrap().call(request(i)));
    }
    // Polled last to first: the order of the calls decides, not the order of polling.
    calls.reverse();
    assert!(join_all(calls).await.iter().all(Result::is_ok));
    let order: Vec<String> = log.lock().unwrap().iter().map(|(_, r)| r.clone()).collect();
    assert_eq!(order, ["r0", "r1", "r2", "r3", "r4", "r5"]);
    assert_eq!(secs(&log), [0, 1, 2, 3, 4, 5]);
}

#[tokio::test(start_paused = true)]
async fn requests_per_window_are_never_exceeded() {
    let log = Log::default();
    let window = Duration::from_secs(10);
    let layer = RateLimitLayer::new(RateLimits::new().requests_per(3, window));
    let svc = ServiceBuilder::new()
        .layer(layer.clone())
        .service(recording(log.clone(), Instant::now(), 0));
    let calls = (0..8).map(|i| svc.clone().oneshot(request(i)));
    assert!(join_all(calls).await.iter().all(Result::is_ok));
    let starts: Vec<Duration> = log.lock().unwrap().iter().map(|(d, _)| *d).collect();
    for s in &starts {
        let in_window = starts.iter().filter(|t| **t >= *s && **t < *s + window).count();
        assert!(
            in_window <= 3,
            "{in_window} calls in the window starting at {s:?}: {starts:?}"
        );
    }
    assert_eq!(secs(&log), [0, 0, 0, 10, 10, 10, 20, 20]);
    assert_eq!(layer.limiter().waiting(), 0);
}

#[tokio::test(start_paused = true)]
async fn tokens_per_minute_hold_calls_back_until_the_window_frees() {
    let (log, layer, svc) = limited(RateLimits::new().tokens_per_minute(1000), 600);
    let calls = (0..5).map(|i| svc.clone().oneshot(request(i)));
    assert!(join_all(calls).await.iter().all(Result::is_ok));
    // 600 tokens each: two calls fit under 1000 (the second one starts at 600), the third waits
    // until the first two leave the window.
    assert_eq!(secs(&log), [0, 0, 60, 60, 120]);
    // At 120 s the calls of 60 s have just left the window; only the last call's tokens count.
    assert_eq!(layer.limiter().tokens_in_window(), 600);
    tokio::time::advance(Duration::from_secs(60)).await;
    assert_eq!(layer.limiter().tokens_in_window(), 0);
}

/// A usage figure a server got wrong (`u64::MAX` tokens) holds calls back for a window; it
/// neither panics (overflow) nor wraps to a small count that would let calls through.
#[tokio::test(start_paused = true)]
async fn an_overflowing_usage_holds_calls_back_for_a_window() {
    let log = Log::default();
    let layer = RateLimitLayer::new(RateLimits::new().tokens_per_minute(100));
    let origin = Instant::now();
    let model = {
        let log = log.clone();
        service_fn(move |req: ModelCallRequest| {
            log.lock()
                .unwrap()
                .push((origin.elapsed(), req.ctx.reply_id().to_string()));
            let response = ChatResponse::new(vec![]).with_usage(ChatUsage::new(u64::MAX, 1));
            std::future::ready(Ok::<_, AgentError>(ModelOutput::Complete(response)))
        })
    };
    let svc = ServiceBuilder::new().layer(layer.clone()).service(model);
    let calls = (0..3).map(|i| svc.clone().oneshot(request(i)));
    assert!(join_all(calls).await.iter().all(Result::is_ok));
    assert_eq!(secs(&log), [0, 60, 120]);
    assert_eq!(layer.limiter().tokens_in_window(), u64::MAX);
    tokio::time::advance(Duration::from_secs(60)).await;
    assert_eq!(layer.limiter().tokens_in_window(), 0);
}

/// A huge count beside an ordinary one, both in the window: when the huge one leaves it, the
/// other still counts (a saturated sum had forgotten it, and let the next call through early).
#[tokio::test(start_paused = true)]
async fn a_huge_count_leaving_the_window_leaves_the_others_counted() {
    let log = Log::default();
    let layer = RateLimitLayer::new(RateLimits::new().tokens_per_minute(100));
    let origin = Instant::now();
    let model = {
        let log = log.clone();
        service_fn(move |req: ModelCallRequest| {
            let reply = req.ctx.reply_id().to_string();
            log.lock().unwrap().push((origin.elapsed(), reply.clone()));
            // r0 answers at 1 s with u64::MAX tokens, r1 at 2 s with 150.
            let (delay, tokens) = if reply == "r0" { (1, u64::MAX) } else { (2, 150) };
            async move {
                tokio::time::sleep(Duration::from_secs(delay)).await;
                let response = ChatResponse::new(vec![]).with_usage(ChatUsage::new(tokens, 0));
                Ok::<_, AgentError>(ModelOutput::Complete(response))
            }
        })
    };
    let svc = ServiceBuilder::new().layer(layer.clone()).service(model);
    let (a, b) = tokio::join!(svc.clone().oneshot(request(0)), svc.clone().oneshot(request(1)));
    assert!(a.is_ok() && b.is_ok());
    svc.clone().oneshot(request(2)).await.unwrap();
    // Both started at once (nothing counted yet); the third waits until r1's 150 leave the
    // window at 62 s, not only r0's count at 61 s.
    assert_eq!(secs(&log), [0, 0, 62]);
}

#[tokio::test(start_paused = true)]
async fn streamed_answers_count_the_usage_of_their_final_chunk() {
    use towerscope_models::ScriptedResponse;
    let layer = RateLimitLayer::new(RateLimits::new().tokens_per_minute(100));
    let model = ScriptedModel::new("m", [ScriptedResponse::text("a b").with_usage(30, 12)]);
    let svc = ServiceBuilder::new()
        .layer(layer.clone())
        .service(crate::testing::model_service());
    let out = crate::testing::describe(svc.oneshot(crate::testing::model_request(&model)).await).await;
    assert_eq!(out.last().unwrap(), "last:a b");
    assert_eq!(layer.limiter().tokens_in_window(), 42);
}

#[tokio::test(start_paused = true)]
async fn fail_fast_says_when_to_retry() {
    let log = Log::default();
    let layer = RateLimitLayer::new(RateLimits::new().min_interval(Duration::from_secs(2)).fail_fast());
    let svc = ServiceBuilder::new()
        .layer(layer)
        .service(recording(log.clone(), Instant::now(), 0));
    svc.clone().oneshot(request(0)).await.unwrap();
    tokio::time::advance(Duration::from_millis(500)).await;
    let err = svc.clone().oneshot(request(1)).await.unwrap_err();
    assert_eq!(err.retry_after(), Some(Duration::from_millis(1500)));
    assert_eq!(
        err.to_string(),
        "rate limited: local rate limit of one call every 2s reached (retry after 1.500s)"
    );
    tokio::time::advance(Duration::from_millis(1500)).await;
    svc.oneshot(request(2)).await.unwrap();
    assert_eq!(log.lock().unwrap().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn clones_and_separate_services_share_one_limiter() {
    let log = Log::default();
    let layer = RateLimitLayer::new(RateLimits::new().min_interval(Duration::from_secs(1)));
    let origin = Instant::now();
    let a = ServiceBuilder::new()
        .layer(layer.clone())
        .service(recording(log.clone(), origin, 0));
    let b = ServiceBuilder::new()
        .layer(layer.clone())
        .service(recording(log.clone(), origin, 0));
    let c = ServiceBuilder::new()
        .layer(RateLimitLayer::shared(layer.limiter().clone()))
        .service(recording(log.clone(), origin, 0));
    let (x, y, z) = tokio::join!(a.oneshot(request(0)), b.oneshot(request(1)), c.oneshot(request(2)));
    assert!(x.is_ok() && y.is_ok() && z.is_ok());
    assert_eq!(secs(&log), [0, 1, 2]);
}

#[tokio::test(start_paused = true)]
async fn a_dropped_waiter_leaves_the_queue() {
    let (log, layer, mut svc) = limited(RateLimits::new().min_interval(Duration::from_secs(1)), 0);
    let first = svc.ready().await.unwrap().call(request(0));
    let second = svc.ready().await.unwrap().call(request(1));
    let third = svc.ready().await.unwrap().call(request(2));
    assert_eq!(layer.limiter().waiting(), 2);
    first.await.unwrap();
    drop(second);
    assert_eq!(layer.limiter().waiting(), 1);
    third.await.unwrap();
    let order: Vec<String> = log.lock().unwrap().iter().map(|(_, r)| r.clone()).collect();
    assert_eq!(order, ["r0", "r2"]);
    assert_eq!(secs(&log), [0, 1]);
}

/// The order in which `log`'s calls started, by reply, with their second.
fn started(log: &Log) -> Vec<(String, u64)> {
    log.lock()
        .unwrap()
        .iter()
        .map(|(d, r)| (r.clone(), d.as_secs()))
        .collect()
}

/// A call whose caller stopped polling it (a reply whose reader stopped reading) holds the
/// calls behind it back for a second past its turn, not until it is polled again; polled
/// again, it takes the next turn.
#[tokio::test(start_paused = true)]
async fn a_call_whose_caller_stopped_polling_holds_the_others_back_a_second_at_most() {
    let (log, layer, mut svc) = limited(RateLimits::new().min_interval(Duration::from_secs(10)), 0);
    svc.ready().await.unwrap().call(request(0)).await.unwrap();
    // r1 waits for its turn at 10 s, polled once, then never until 30 s.
    let mut stalled = Box::pin(svc.ready().await.unwrap().call(request(1)));
    assert!(futures_util::poll!(stalled.as_mut()).is_pending());
    let next = svc.clone().oneshot(request(2));
    tokio::time::timeout(Duration::from_secs(120), next)
        .await
        .expect("r2 is not held back until r1 is polled again")
        .unwrap();
    tokio::time::sleep_until(Instant::now() + Duration::from_secs(19)).await;
    stalled.await.unwrap();
    // r2 at 11 s (r1's turn at 10 s, and a second); r1 polled again at 30 s goes then (10 s
    // after r2).
    assert_eq!(started(&log), [("r0".into(), 0), ("r2".into(), 11), ("r1".into(), 30)]);
    assert_eq!(layer.limiter().waiting(), 0);
}

/// A call made and never polled (its caller dropped nothing and awaited nothing) holds nothing
/// back: its turn came when it was made, and the call behind it starts when the limit allows.
#[tokio::test(start_paused = true)]
async fn a_call_never_polled_holds_back_no_call_behind_it() {
    let (log, layer, mut svc) = limited(RateLimits::new().min_interval(Duration::from_secs(10)), 0);
    svc.ready().await.unwrap().call(request(0)).await.unwrap();
    let never_polled = svc.ready().await.unwrap().call(request(1));
    let next = svc.clone().oneshot(request(2));
    tokio::time::timeout(Duration::from_secs(120), next)
        .await
        .expect("r2 is not held back by a call nobody polls")
        .unwrap();
    assert_eq!(started(&log), [("r0".into(), 0), ("r2".into(), 10)]);
    drop(never_polled);
    assert_eq!(layer.limiter().waiting(), 0);
}

/// Fronts that wait for the limit and take their turn when it comes are never taken for
/// stalled, however long the wait: the order of the calls holds. Each call in a task of its
/// own (calls sharing one task's waker are all polled whenever any is woken).
#[tokio::test(start_paused = true)]
async fn fronts_waiting_for_a_long_limit_keep_their_order() {
    let (log, layer, mut svc) = limited(RateLimits::new().requests_per(1, Duration::from_secs(30)), 0);
    let mut calls = Vec::new();
    for i in 0..5 {
        calls.push(tokio::spawn(svc.ready().await.unwrap().call(request(i))));
    }
    // While they wait, nobody is skipped.
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_secs(7)).await;
        assert_eq!(layer.limiter().stalled(), 0, "a healthy front was taken for stalled");
    }
    let done = tokio::time::timeout(Duration::from_secs(3600), join_all(calls))
        .await
        .expect("every call went");
    assert!(done.into_iter().all(|r| r.unwrap().is_ok()));
    let order: Vec<String> = log.lock().unwrap().iter().map(|(_, r)| r.clone()).collect();
    assert_eq!(order, ["r0", "r1", "r2", "r3", "r4"]);
    assert_eq!(secs(&log), [0, 30, 60, 90, 120]);
}

/// A front polled late (its task was busy, or made and awaited later), with nobody behind it,
/// takes its turn when it is polled: it does not count itself as stalled and wait for ever.
#[tokio::test(start_paused = true)]
async fn a_front_polled_late_takes_its_turn() {
    let log = Log::default();
    let mut svc = ServiceBuilder::new()
        .layer(RateLimitLayer::new(
            RateLimits::new().min_interval(Duration::from_secs(10)),
        ))
        .service(recording(log.clone(), Instant::now(), 0));
    svc.ready().await.unwrap().call(request(0)).await.unwrap();
    // Made at 0, first polled at 20 s.
    let late = svc.ready().await.unwrap().call(request(1));
    tokio::time::sleep(Duration::from_secs(20)).await;
    tokio::time::timeout(Duration::from_secs(3600), late)
        .await
        .expect("r1 goes when polled")
        .unwrap();
    // Polled at 0, told to wait until 10 s, polled again only at 12 s.
    let mut sleeping = Box::pin(svc.ready().await.unwrap().call(request(2)));
    assert!(futures_util::poll!(sleeping.as_mut()).is_pending());
    tokio::time::sleep(Duration::from_secs(12)).await;
    tokio::time::timeout(Duration::from_secs(3600), sleeping)
        .await
        .expect("r2 goes when polled")
        .unwrap();
    assert_eq!(started(&log), [("r0".into(), 0), ("r1".into(), 20), ("r2".into(), 32)]);
}

/// The call watching a stalled front is dropped (a timeout): the one behind it watches in its
/// place, and skips the stalled front.
#[tokio::test(start_paused = true)]
async fn when_the_call_watching_a_stalled_front_is_dropped_the_next_one_watches() {
    let (log, layer, mut svc) = limited(RateLimits::new().min_interval(Duration::from_secs(10)), 0);
    svc.ready().await.unwrap().call(request(0)).await.unwrap();
    let mut stalled = Box::pin(svc.ready().await.unwrap().call(request(1)));
    assert!(futures_util::poll!(stalled.as_mut()).is_pending());
    let mut watcher = Box::pin(svc.ready().await.unwrap().call(request(2)));
    assert!(futures_util::poll!(watcher.as_mut()).is_pending());
    let third = tokio::spawn(svc.clone().oneshot(request(3)));
    tokio::time::sleep(Duration::from_secs(5)).await;
    drop(watcher);
    tokio::time::timeout(Duration::from_secs(3600), third)
        .await
        .expect("r3 is not held back by the stalled r1")
        .unwrap()
        .unwrap();
    // r1's turn at 10 s, skipped a second later.
    assert_eq!(started(&log), [("r0".into(), 0), ("r3".into(), 11)]);
    drop(stalled);
    assert_eq!(layer.limiter().waiting(), 0);
}

/// Two calls in a row whose callers stopped polling (two stalled web clients) hold the calls
/// behind them back two seconds past the first one's turn, not until a new call comes: the
/// call behind them gives each a second. Polled again, they keep their order.
#[tokio::test(start_paused = true)]
async fn two_stalled_calls_at_the_front_hold_the_others_back_two_seconds() {
    let (log, layer, mut svc) = limited(RateLimits::new().min_interval(Duration::from_secs(10)), 0);
    svc.ready().await.unwrap().call(request(0)).await.unwrap();
    let mut first = Box::pin(svc.ready().await.unwrap().call(request(1)));
    assert!(futures_util::poll!(first.as_mut()).is_pending());
    let mut second = Box::pin(svc.ready().await.unwrap().call(request(2)));
    assert!(futures_util::poll!(second.as_mut()).is_pending());
    let behind = [3, 4].map(|i| tokio::spawn(svc.clone().oneshot(request(i))));
    let done = tokio::time::timeout(Duration::from_secs(120), join_all(behind))
        .await
        .expect("r3 and r4 are not held back until r1 and r2 are polled again");
    assert!(done.into_iter().all(|r| r.unwrap().is_ok()));
    assert_eq!(layer.limiter().stalled(), 2);
    tokio::time::sleep(Duration::from_secs(30)).await;
    first.await.unwrap();
    second.await.unwrap();
    // r1's turn at 10 s: r3 skips both at 12 s, r4 goes 10 s later; r1 and r2, polled at 52 s,
    // then go in order.
    assert_eq!(
        started(&log),
        [
            ("r0".into(), 0),
            ("r3".into(), 12),
            ("r4".into(), 22),
            ("r1".into(), 52),
            ("r2".into(), 62)
        ]
    );
    assert_eq!(layer.limiter().waiting(), 0);
}

/// A front that sleeps until the limit lets it go, pushed back by an earlier call polled again
/// and given the front again when that call is dropped, is not taken for stalled: it wakes and
/// asks again, and the calls keep their order.
#[tokio::test(start_paused = true)]
async fn a_front_given_its_place_back_is_not_skipped() {
    let (log, layer, mut svc) = limited(RateLimits::new().min_interval(Duration::from_secs(100)), 0);
    svc.ready().await.unwrap().call(request(0)).await.unwrap();
    // r1 is made and not polled (stalled at 1 s); r2 and r3 wait in tasks of their own.
    let mut s = Box::pin(svc.ready().await.unwrap().call(request(1)));
    let t = tokio::spawn(svc.ready().await.unwrap().call(request(2)));
    let u = tokio::spawn(svc.ready().await.unwrap().call(request(3)));
    tokio::time::sleep(Duration::from_secs(5)).await;
    // r1 polled again: the front again, until it is dropped at 10 s.
    assert!(futures_util::poll!(s.as_mut()).is_pending());
    tokio::time::sleep(Duration::from_secs(5)).await;
    drop(s);
    // r2, the front again and sleeping until 100 s, is not skipped a second later.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(layer.limiter().stalled(), 0, "r2 was taken for stalled");
    let both = tokio::time::timeout(Duration::from_secs(3600), async { (t.await, u.await) }).await;
    let (t, u) = both.expect("r2 and r3 went");
    t.unwrap().unwrap();
    u.unwrap().unwrap();
    assert_eq!(
        started(&log),
        [("r0".into(), 0), ("r2".into(), 100), ("r3".into(), 200)]
    );
}

#[tokio::test(start_paused = true)]
async fn an_interval_or_window_of_duration_max_means_never_again() {
    // Fail fast: the second call is refused, with a hint too long for any retry.
    let log = Log::default();
    let layer = RateLimitLayer::new(RateLimits::new().min_interval(Duration::MAX).fail_fast());
    let svc = ServiceBuilder::new()
        .layer(layer)
        .service(recording(log.clone(), Instant::now(), 0));
    svc.clone().oneshot(request(0)).await.unwrap();
    let err = svc.clone().oneshot(request(1)).await.unwrap_err();
    assert!(matches!(err, AgentError::RateLimited { .. }), "{err}");
    assert!(err.retry_after().unwrap() > Duration::from_secs(86_400 * 365), "{err}");

    // Waiting: the second call waits (for ever) and the limiter keeps working.
    for limits in [
        RateLimits::new().min_interval(Duration::MAX),
        RateLimits::new().requests_per(1, Duration::MAX),
        RateLimits::new().tokens_per(10, Duration::MAX),
    ] {
        let log = Log::default();
        let layer = RateLimitLayer::new(limits);
        let svc = ServiceBuilder::new()
            .layer(layer.clone())
            .service(recording(log.clone(), Instant::now(), 10));
        svc.clone().oneshot(request(0)).await.unwrap();
        let second = tokio::time::timeout(Duration::from_secs(86_400), svc.clone().oneshot(request(1))).await;
        assert!(second.is_err(), "{limits:?}: the second call must still wait");
        assert_eq!(layer.limiter().waiting(), 0, "the abandoned call left the queue");
        assert_eq!(log.lock().unwrap().len(), 1);
        if limits.tokens.is_some() {
            assert_eq!(layer.limiter().tokens_in_window(), 10);
        }
    }
}

/// A limit of more calls than the log keeps one entry for (here 3,000 a second) still holds in
/// every window, and its log stays bounded: before, it held one entry per call of the window,
/// and ten million calls a minute were ten million entries.
#[tokio::test(start_paused = true)]
async fn a_busy_request_window_is_never_exceeded_and_its_log_stays_bounded() {
    let log = Log::default();
    let window = Duration::from_secs(1);
    let limit = 3_000;
    let layer = RateLimitLayer::new(RateLimits::new().requests_per(limit, window));
    let origin = Instant::now();
    let svc = ServiceBuilder::new()
        .layer(layer.clone())
        .service(recording(log.clone(), origin, 0));
    let mut most = 0;
    // One caller starting a call every 100 µs: 10,000 a second asked, 3,000 allowed.
    for i in 0..12_000 {
        svc.clone().oneshot(request(i)).await.unwrap();
        most = most.max(layer.limiter().log_len().0);
        // Not `sleep`: a timer's resolution is a millisecond.
        tokio::time::advance(Duration::from_micros(100)).await;
    }
    let starts: Vec<Duration> = log.lock().unwrap().iter().map(|(d, _)| *d).collect();
    // In every window, at most `limit` starts (the window opening at each start is the one
    // to check: the count in a window grows only at a start).
    let mut first = 0;
    for (last, s) in starts.iter().enumerate() {
        while starts[first] + window <= *s {
            first += 1;
        }
        let in_window = last - first + 1;
        assert!(
            in_window <= limit as usize,
            "{in_window} starts in the window ending at {s:?}"
        );
    }
    // Not much stricter than the exact limit, which starts the last of the 12,000 calls at
    // 3.2999 s (3,000 in the first 0.3 s of each second): a merged start is held back at most
    // 1/1024 of the window, in each of the three windows before.
    let end = *starts.last().unwrap();
    assert!(
        end >= Duration::from_micros(3_299_900),
        "the last call started at {end:?}"
    );
    assert!(end < Duration::from_millis(3_310), "the last call started at {end:?}");
    assert!(most <= 2 * super::log::EXACT + 2, "{most} entries in the log");
}
