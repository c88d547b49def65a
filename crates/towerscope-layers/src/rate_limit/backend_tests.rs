//! The limiter with a shared backend, against a scripted backend (paused time).
#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::join_all;
use tokio::time::Instant;
use tower::{ServiceBuilder, ServiceExt, service_fn};
use towerscope_core::{AgentContext, AgentError, ChatResponse, ChatUsage, ModelCallRequest, ModelOutput};
use towerscope_models::ScriptedModel;

use super::*;
use crate::testing::request_in;

/// A backend answering from a script (`Start` once it runs out), recording what it was asked.
#[derive(Clone, Default)]
struct Scripted {
    answers: Arc<Mutex<VecDeque<Result<Verdict, AgentError>>>>,
    asked: Arc<Mutex<Vec<Duration>>>,
    tokens: Arc<Mutex<Vec<u64>>>,
    origin: Arc<Mutex<Option<Instant>>>,
}

impl Scripted {
    fn new(answers: impl IntoIterator<Item = Result<Verdict, AgentError>>) -> Self {
        let me = Self::default();
        me.answers.lock().unwrap().extend(answers);
        *me.origin.lock().unwrap() = Some(Instant::now());
        me
    }
}

impl RateLimitBackend for Scripted {
    fn try_start(&self, _limits: &RateLimits) -> BackendFuture {
        let origin = self.origin.lock().unwrap().unwrap();
        self.asked.lock().unwrap().push(origin.elapsed());
        let answer = self.answers.lock().unwrap().pop_front().unwrap_or(Ok(Verdict::Start));
        Box::pin(async move {
            tokio::task::yield_now().await;
            answer
        })
    }

    fn record_tokens(&self, _limits: &RateLimits, tokens: u64) {
        self.tokens.lock().unwrap().push(tokens);
    }

    fn name(&self) -> &str {
        "scripted backend"
    }
}

fn down() -> Result<Verdict, AgentError> {
    Err(AgentError::unavailable(
        "scripted backend",
        std::io::Error::other("connection refused"),
    ))
}

fn wait(secs: u64) -> Result<Verdict, AgentError> {
    Ok(Verdict::Wait {
        after: Duration::from_secs(secs),
        held_by: HeldBy::Requests,
    })
}

type Log = Arc<Mutex<Vec<(u64, String)>>>;

fn service(
    layer: RateLimitLayer,
    log: &Log,
) -> impl use<>
+ tower::Service<ModelCallRequest, Response = ModelOutput, Error = AgentError, Future: Send>
+ Clone
+ Send
+ 'static {
    let (log, origin) = (Arc::clone(log), Instant::now());
    ServiceBuilder::new()
        .layer(layer)
        .service(service_fn(move |req: ModelCallRequest| {
            log.lock()
                .unwrap()
                .push((origin.elapsed().as_secs(), req.ctx.reply_id().to_string()));
            let response = ChatResponse::new(vec![]).with_usage(ChatUsage::new(30, 12));
            std::future::ready(Ok::<_, AgentError>(ModelOutput::Complete(response)))
        }))
}

fn request(i: usize) -> ModelCallRequest {
    request_in(
        &ScriptedModel::new("m", []),
        AgentContext::new("a", "s", format!("r{i}")),
    )
}

#[tokio::test(start_paused = true)]
async fn a_call_told_to_wait_sleeps_then_asks_again_and_calls_keep_their_order() {
    let backend = Scripted::new([Ok(Verdict::Start), wait(2), Ok(Verdict::Start), wait(1)]);
    let limits = RateLimits::new().requests_per(1, Duration::from_secs(1));
    let layer = RateLimitLayer::with_backend(limits, backend.clone(), WhenUnavailable::Fail);
    assert_eq!(layer.limiter().backend(), Some("scripted backend"));
    let log = Log::default();
    let svc = service(layer, &log);
    let calls = (0..3).map(|i| svc.clone().oneshot(request(i)));
    assert!(join_all(calls).await.iter().all(Result::is_ok));
    let log = log.lock().unwrap().clone();
    assert_eq!(log, [(0, "r0".to_owned()), (2, "r1".to_owned()), (3, "r2".to_owned())]);
    // One question at a time, in order: r0, r1 (wait), r1 again at 2 s, r2 (wait), r2 at 3 s.
    let asked: Vec<u64> = backend.asked.lock().unwrap().iter().map(Duration::as_secs).collect();
    assert_eq!(asked, [0, 0, 2, 2, 3]);
}

#[tokio::test(start_paused = true)]
async fn fail_open_lets_calls_through_while_the_backend_is_down() {
    let backend = Scripted::new([down(), down(), Ok(Verdict::Start)]);
    let layer = RateLimitLayer::with_backend(
        RateLimits::new().min_interval(Duration::from_secs(1)),
        backend,
        WhenUnavailable::FailOpen,
    );
    let log = Log::default();
    let svc = service(layer, &log);
    for i in 0..3 {
        svc.clone().oneshot(request(i)).await.unwrap();
    }
    assert_eq!(log.lock().unwrap().len(), 3);
}

/// Fail closed: a retryable `Unavailable` error; until the backend is probed again (every
/// `PROBE_EVERY`), the next calls fail at once without asking it; once it answers, calls go on.
#[tokio::test(start_paused = true)]
async fn fail_closed_fails_with_a_retryable_unavailable_error_and_calls_go_on_once_it_answers() {
    let backend = Scripted::new([down(), Ok(Verdict::Start)]);
    let layer = RateLimitLayer::with_backend(
        RateLimits::new().min_interval(Duration::from_secs(1)),
        backend.clone(),
        WhenUnavailable::Fail,
    );
    let log = Log::default();
    let svc = service(layer.clone(), &log);
    let err = svc.clone().oneshot(request(0)).await.unwrap_err();
    assert!(matches!(err, AgentError::Unavailable { .. }), "{err:?}");
    assert!(err.is_retryable());
    assert_eq!(layer.limiter().waiting(), 0, "the failed call left the queue");
    let again = svc.clone().oneshot(request(1)).await.unwrap_err();
    assert!(matches!(again, AgentError::Unavailable { .. }), "{again:?}");
    assert_eq!(
        backend.asked.lock().unwrap().len(),
        1,
        "not asked again before the probe"
    );
    tokio::time::advance(super::backend::PROBE_EVERY).await;
    svc.oneshot(request(2)).await.unwrap();
    assert_eq!(backend.asked.lock().unwrap().len(), 2, "the probe");
    assert_eq!(log.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn fail_fast_says_which_shared_limit_and_when_to_retry() {
    let backend = Scripted::new([Ok(Verdict::Wait {
        after: Duration::from_millis(1500),
        held_by: HeldBy::Tokens,
    })]);
    let layer = RateLimitLayer::with_backend(
        RateLimits::new().tokens_per_minute(1000).fail_fast(),
        backend,
        WhenUnavailable::Fail,
    );
    let err = service(layer, &Log::default()).oneshot(request(0)).await.unwrap_err();
    assert_eq!(err.retry_after(), Some(Duration::from_millis(1500)));
    assert_eq!(
        err.to_string(),
        "rate limited: shared rate limit of 1000 tokens per 60s reached (scripted backend) (retry after 1.500s)"
    );
}

#[tokio::test(start_paused = true)]
async fn answers_tokens_go_to_the_backend() {
    let backend = Scripted::new([]);
    let layer = RateLimitLayer::with_backend(
        RateLimits::new().tokens_per_minute(1000),
        backend.clone(),
        WhenUnavailable::Fail,
    );
    service(layer.clone(), &Log::default())
        .oneshot(request(0))
        .await
        .unwrap();
    assert_eq!(*backend.tokens.lock().unwrap(), [42]);
    assert_eq!(layer.limiter().tokens_in_window(), 0, "the counts live in the backend");
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_while_asking_lets_the_next_one_ask() {
    let backend = Scripted::new([wait(5)]);
    let layer = RateLimitLayer::with_backend(
        RateLimits::new().min_interval(Duration::from_secs(1)),
        backend,
        WhenUnavailable::Fail,
    );
    let log = Log::default();
    let svc = service(layer.clone(), &log);
    let first = tokio::spawn(svc.clone().oneshot(request(0)));
    tokio::time::sleep(Duration::from_secs(1)).await;
    first.abort();
    let _ = first.await;
    svc.oneshot(request(1)).await.unwrap();
    assert_eq!(*log.lock().unwrap(), [(1, "r1".to_owned())]);
    assert_eq!(layer.limiter().waiting(), 0);
}
