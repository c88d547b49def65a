//! Many agents sharing one rate limit never exceed it, and waiting callers are served in order.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::join_all;
use tokio::time::Instant;
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{ModelCallRequest, ModelOutput, Msg, Next, from_fn};
use towerscope_layers::RateLimitLayer;
use towerscope_layers::rate_limit::RateLimits;
use towerscope_models::{ScriptedModel, ScriptedResponse};

type Log = Arc<Mutex<Vec<(Duration, String)>>>;

/// No arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// `n` agents sharing `limit`, each making two model calls per reply (a tool round and an
/// answer); the model calls that pass the limit are logged with the agent's name.
fn agents(n: usize, limit: &RateLimitLayer, log: &Log, origin: Instant) -> Vec<Agent> {
    (0..n)
        .map(|i| {
            let model = ScriptedModel::new(
                "scripted",
                [
                    ScriptedResponse::tool_call("c1", "noop", "{}"),
                    ScriptedResponse::text("done"),
                ],
            );
            let log = Arc::clone(log);
            let record = from_fn(
                move |req: ModelCallRequest, next: Next<ModelCallRequest, ModelOutput>| {
                    log.lock()
                        .unwrap()
                        .push((origin.elapsed(), req.ctx.agent_name().to_owned()));
                    next.run(req)
                },
            );
            Agent::builder(format!("agent-{i}"))
                .model(model)
                .tool(FunctionTool::new("noop", |_: NoArgs| async { "ok" }))
                .on_model_call(limit.clone())
                .on_model_call(record)
                .build()
                .unwrap()
        })
        .collect()
}

async fn reply_all(agents: &[Agent]) {
    let replies = join_all(agents.iter().map(|a| a.reply(Msg::user("user", "go")))).await;
    for r in replies {
        assert_eq!(r.unwrap().text_content().as_deref(), Some("done"));
    }
}

#[tokio::test(start_paused = true)]
async fn concurrent_agents_never_call_closer_than_the_interval() {
    let log = Log::default();
    let interval = Duration::from_millis(500);
    let limit = RateLimitLayer::new(RateLimits::new().min_interval(interval));
    let origin = Instant::now();
    let agents = agents(4, &limit, &log, origin);
    reply_all(&agents).await;

    let log = log.lock().unwrap();
    assert_eq!(log.len(), 8, "two model calls per agent");
    for pair in log.windows(2) {
        assert!(pair[1].0 - pair[0].0 >= interval, "calls too close: {log:?}");
    }
    // Busy from the start: exactly one call per interval.
    assert_eq!(log.last().unwrap().0, interval * 7);
}

#[tokio::test(start_paused = true)]
async fn concurrent_agents_never_exceed_the_calls_per_window() {
    let log = Log::default();
    let window = Duration::from_secs(10);
    let limit = RateLimitLayer::new(RateLimits::new().requests_per(3, window));
    let agents = agents(5, &limit, &log, Instant::now());
    reply_all(&agents).await;

    let starts: Vec<Duration> = log.lock().unwrap().iter().map(|(t, _)| *t).collect();
    assert_eq!(starts.len(), 10);
    for s in &starts {
        let n = starts.iter().filter(|t| **t >= *s && **t < *s + window).count();
        assert!(n <= 3, "{n} calls within {window:?} from {s:?}: {starts:?}");
    }
    let secs: Vec<u64> = starts.iter().map(Duration::as_secs).collect();
    assert_eq!(secs, [0, 0, 0, 10, 10, 10, 20, 20, 20, 30]);
}

#[tokio::test(start_paused = true)]
async fn agents_are_served_in_the_order_they_asked() {
    let served = Log::default();
    let asked = Log::default();
    let limit = RateLimitLayer::new(RateLimits::new().min_interval(Duration::from_secs(1)));
    let origin = Instant::now();
    // A logger outside the limit records when each agent asks for a model call.
    let outer = {
        let asked = Arc::clone(&asked);
        from_fn(
            move |req: ModelCallRequest, next: Next<ModelCallRequest, ModelOutput>| {
                asked
                    .lock()
                    .unwrap()
                    .push((origin.elapsed(), req.ctx.agent_name().to_owned()));
                next.run(req)
            },
        )
    };
    let agents: Vec<Agent> = (0..3)
        .map(|i| {
            let model = ScriptedModel::new(
                "scripted",
                [
                    ScriptedResponse::tool_call("c1", "noop", "{}"),
                    ScriptedResponse::text("done"),
                ],
            );
            let served = Arc::clone(&served);
            let inner = from_fn(
                move |req: ModelCallRequest, next: Next<ModelCallRequest, ModelOutput>| {
                    served
                        .lock()
                        .unwrap()
                        .push((origin.elapsed(), req.ctx.agent_name().to_owned()));
                    next.run(req)
                },
            );
            Agent::builder(format!("agent-{i}"))
                .model(model)
                .tool(FunctionTool::new("noop", |_: NoArgs| async { "ok" }))
                .on_model_call(outer.clone())
                .on_model_call(limit.clone())
                .on_model_call(inner)
                .build()
                .unwrap()
        })
        .collect();
    // Start the replies in order 0, 1, 2 (each runs until it waits for the limit), then drive
    // them polling the last one first.
    let mut replies: Vec<_> = agents
        .iter()
        .map(|a| Box::pin(a.reply(Msg::user("user", "go"))))
        .collect();
    for r in &mut replies {
        assert!(futures_util::poll!(r.as_mut()).is_pending());
    }
    replies.reverse();
    for r in join_all(replies).await {
        assert_eq!(r.unwrap().text_content().as_deref(), Some("done"));
    }

    let names = |log: &Log| -> Vec<String> { log.lock().unwrap().iter().map(|(_, n)| n.clone()).collect() };
    assert_eq!(names(&served).len(), 6);
    assert_eq!(names(&served), names(&asked), "served in the order asked");
    let secs: Vec<u64> = served.lock().unwrap().iter().map(|(t, _)| t.as_secs()).collect();
    assert_eq!(secs, [0, 1, 2, 3, 4, 5]);
}

/// Three agents sharing `limit`: agent-1's reply stream is not read once its first model call
/// started (a web client that stalled: its second call waits at the front of the queue), the
/// other two reply in turn, then agent-1's stream is read to its end. The calls' starts, in
/// seconds from the first, and who made them.
async fn with_an_unread_reply_at_the_front(limit: &RateLimitLayer) -> Vec<(u64, String)> {
    use futures_util::StreamExt;

    let log = Log::default();
    let agents = agents(3, limit, &log, Instant::now());
    let mut unread = agents[1].reply_stream(Msg::user("user", "go"));
    while futures_util::poll!(unread.next()).is_ready() {}
    let done = tokio::time::timeout(Duration::from_secs(300), async {
        agents[0].reply(Msg::user("user", "go")).await.unwrap();
        agents[2].reply(Msg::user("user", "go")).await.unwrap();
    })
    .await;
    assert!(
        done.is_ok(),
        "the unread reply held every other agent back: {:?}",
        log.lock().unwrap()
    );
    let mut last = None;
    while let Some(item) = unread.next().await {
        last = Some(item.unwrap());
    }
    let msg = last.and_then(|i| i.as_final().cloned()).expect("a final message");
    assert_eq!(
        msg.text_content().as_deref(),
        Some("done"),
        "read again, the reply goes on"
    );
    log.lock()
        .unwrap()
        .iter()
        .map(|(t, n)| (t.as_secs(), n.clone()))
        .collect()
}

/// An agent whose reply stream nobody reads any more (a web client that stalled), its model
/// call queued first, holds the other agents sharing the limit back for a second past its
/// turn, not for as long as its reader stalls; read again, its reply goes on.
#[tokio::test(start_paused = true)]
async fn an_unread_reply_at_the_front_of_the_queue_holds_the_other_agents_back_a_second() {
    let limit = RateLimitLayer::new(RateLimits::new().min_interval(Duration::from_secs(10)));
    assert_eq!(with_an_unread_reply_at_the_front(&limit).await, unread_front_starts());
}

/// The starts of [`with_an_unread_reply_at_the_front`] with one call every 10 s: agent-1's
/// first call at 0, its second waiting for its turn at 10 s; agent-0's calls queued behind it,
/// the first at 11 s, not never; read again (at 41 s), agent-1's reply takes the next turn,
/// 10 s after the last call.
fn unread_front_starts() -> Vec<(u64, String)> {
    [
        (0, "agent-1"),
        (11, "agent-0"),
        (21, "agent-0"),
        (31, "agent-2"),
        (41, "agent-2"),
        (51, "agent-1"),
    ]
    .map(|(t, n)| (t, n.to_owned()))
    .to_vec()
}

/// A backend keeping a minimum interval in memory, as a shared store would.
struct IntervalBackend {
    last: Mutex<Option<Instant>>,
    interval: Duration,
}

impl towerscope_layers::rate_limit::RateLimitBackend for IntervalBackend {
    fn try_start(&self, _: &RateLimits) -> towerscope_layers::rate_limit::BackendFuture {
        use towerscope_layers::rate_limit::{HeldBy, Verdict};
        let now = Instant::now();
        let mut last = self.last.lock().unwrap();
        let verdict = match *last {
            Some(t) if now < t + self.interval => Verdict::Wait {
                after: t + self.interval - now,
                held_by: HeldBy::MinInterval,
            },
            _ => {
                *last = Some(now);
                Verdict::Start
            }
        };
        Box::pin(async move { Ok(verdict) })
    }
    fn record_tokens(&self, _: &RateLimits, _: u64) {}
    fn name(&self) -> &str {
        "memory"
    }
}

/// With a shared backend too, an unread reply at the front of the queue holds the others back
/// a second past its turn, not for good (the calls behind a front that asks a backend waited
/// for it whatever it did: one stalled web client froze every agent of the process).
#[tokio::test(start_paused = true)]
async fn with_a_backend_an_unread_reply_at_the_front_holds_the_others_back_a_second() {
    use towerscope_layers::rate_limit::WhenUnavailable;

    let limit = RateLimitLayer::with_backend(
        RateLimits::new().min_interval(Duration::from_secs(10)),
        IntervalBackend {
            last: Mutex::new(None),
            interval: Duration::from_secs(10),
        },
        WhenUnavailable::Fail,
    );
    let starts = with_an_unread_reply_at_the_front(&limit).await;
    assert_eq!(starts, unread_front_starts(), "as in one process");
}

/// A backend that cannot be reached: each call waits a second for its timeout.
struct Unreachable;

impl towerscope_layers::rate_limit::RateLimitBackend for Unreachable {
    fn try_start(&self, _: &RateLimits) -> towerscope_layers::rate_limit::BackendFuture {
        Box::pin(async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Err(towerscope_core::AgentError::unavailable(
                "unreachable",
                std::io::Error::other("connect timed out"),
            ))
        })
    }
    fn record_tokens(&self, _: &RateLimits, _: u64) {}
    fn name(&self) -> &str {
        "unreachable"
    }
}

/// With the backend down, calls are let through (fail-open) or failed (fail) at once, the
/// backend asked again every few seconds, not each call waiting out its timeout behind the
/// one before it (ten concurrent calls took ten seconds).
#[tokio::test(start_paused = true)]
async fn with_the_backend_down_calls_do_not_queue_behind_its_timeout() {
    use tower::{ServiceBuilder, ServiceExt, service_fn};
    use towerscope_core::{AgentContext, AgentError};
    use towerscope_layers::rate_limit::WhenUnavailable;

    let model = ScriptedModel::cycle("m", [ScriptedResponse::text("ok").whole()]);
    let request = || ModelCallRequest {
        ctx: AgentContext::new("agent", "s", "r"),
        model: Arc::new(model.clone()),
        messages: vec![Msg::user("user", "hi")].into(),
        tools: Arc::from(vec![]),
        tool_choice: None,
    };
    for policy in [WhenUnavailable::FailOpen, WhenUnavailable::Fail] {
        let layer = RateLimitLayer::with_backend(RateLimits::new().requests_per_minute(1000), Unreachable, policy);
        let svc = ServiceBuilder::new()
            .layer(layer)
            .service(service_fn(|req: ModelCallRequest| {
                let m = Arc::clone(&req.model);
                m.call(req)
            }));
        let start = Instant::now();
        let results = join_all((0..10).map(|_| svc.clone().oneshot(request()))).await;
        assert!(
            start.elapsed() <= Duration::from_secs(2),
            "{policy:?}: 10 concurrent calls took {:?}",
            start.elapsed()
        );
        match policy {
            WhenUnavailable::FailOpen => assert!(results.iter().all(Result::is_ok), "{results:?}"),
            _ => assert!(
                results.iter().all(|r| matches!(r, Err(AgentError::Unavailable { .. }))),
                "{results:?}"
            ),
        }
    }
}
