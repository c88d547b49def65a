//! Sessions and the shared rate limit: what a save and a load of a 100-message conversation
//! cost in each store, and what a rate-limited call costs with the limit kept in this process
//! next to the limit kept in Redis.
//!
//! - `session/file/{save,load}`: [`JsonFileStore`] in a temporary directory (a save writes a
//!   temporary file, syncs it, renames it and syncs the directory, under the session's lock);
//! - `session/redis/{save,load}`: [`RedisStore`] (one Lua script per save, one `HMGET` per load);
//! - `rate_limit/{local,redis}`: one call through [`RateLimitLayer`] to a model that answers at
//!   once, under `requests_per(u32::MAX, 60 s)` (never reached: the bookkeeping, never a wait).
//!
//! The Redis cases run against `TOWERSCOPE_REDIS_URL` (`eval "$(scripts/redis-server.sh start)"`)
//! and are skipped without it, unless `TOWERSCOPE_REQUIRE_REDIS=1` (as `scripts/test.sh` sets).
//!
//! ```text
//! eval "$(scripts/redis-server.sh start)"
//! cargo bench --features redis --bench sessions
//! ```

#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tokio::runtime::Runtime;
use tower::{Service, ServiceBuilder, ServiceExt, service_fn};
use towerscope::agent::AgentState;
use towerscope::agent::session::{Expect, JsonFileStore, RedisStore, SessionDocument, SessionKey, SessionStore};
use towerscope::layers::RateLimitLayer;
use towerscope::layers::rate_limit::{RateLimits, RedisBackend, WhenUnavailable};
use towerscope::models::ScriptedModel;
use towerscope::{
    AgentContext, AgentError, ChatResponse, ContentBlock, ModelCallRequest, ModelOutput, Msg, ToolCallBlock,
    ToolResultBlock, ToolResultState,
};

/// 100 messages: user questions, and assistant answers that call a tool every fifth turn.
fn conversation() -> SessionDocument {
    let mut state = AgentState::new();
    for i in 0..50 {
        state.context.push(Arc::new(Msg::user(
            "user",
            format!("Question {i}: what is the weather like in Paris, and should I take an umbrella?"),
        )));
        let answer = if i % 5 == 0 {
            vec![
                ContentBlock::ToolCall(ToolCallBlock::new(format!("c{i}"), "weather", r#"{"city": "Paris"}"#)),
                ContentBlock::ToolResult(ToolResultBlock::new(
                    format!("c{i}"),
                    "weather",
                    "Rain, 14 °C, wind from the west at 20 km/h.",
                    ToolResultState::Success,
                )),
                ContentBlock::text("It rains in Paris (14 °C): take an umbrella."),
            ]
        } else {
            vec![ContentBlock::text(
                "Mild and cloudy, 17 °C; no rain is expected before the evening, so the umbrella can stay home.",
            )]
        };
        state.context.push(Arc::new(Msg::assistant_blocks("assistant", answer)));
    }
    SessionDocument::new(state)
}

fn bench_store(c: &mut Criterion, rt: &Runtime, name: &str, store: &dyn SessionStore) {
    let doc = conversation();
    let key = SessionKey::new("bench", format!("{name}-{}", std::process::id())).unwrap();
    rt.block_on(store.save(&key, &doc, Expect::Any)).unwrap();
    let size = doc.to_json().unwrap().len();
    let mut group = c.benchmark_group(format!("session/{name}"));
    group.throughput(criterion::Throughput::Bytes(size as u64));
    group.bench_function("save", |b| {
        b.to_async(rt)
            .iter(|| async { black_box(store.save(&key, &doc, Expect::Any).await.unwrap()) })
    });
    group.bench_function("load", |b| {
        b.to_async(rt)
            .iter(|| async { black_box(store.load(&key).await.unwrap().unwrap()) })
    });
    group.finish();
    rt.block_on(store.delete(&key)).unwrap();
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

fn bench_limit(c: &mut Criterion, rt: &Runtime, name: &str, layer: RateLimitLayer) {
    let answer = ChatResponse::new(vec![]);
    let svc = ServiceBuilder::new()
        .layer(layer)
        .service(service_fn(move |_req: ModelCallRequest| {
            std::future::ready(Ok::<_, AgentError>(ModelOutput::Complete(answer.clone())))
        }));
    let req = request();
    c.bench_function(&format!("rate_limit/{name}"), |b| {
        b.to_async(rt).iter(|| {
            let mut svc = svc.clone();
            let req = req.clone();
            async move { black_box(svc.ready().await.unwrap().call(req).await.unwrap()) }
        })
    });
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("towerscope-bench-sessions-{}", std::process::id()));
    bench_store(c, &rt, "file", &JsonFileStore::new(&dir));
    let _ = std::fs::remove_dir_all(&dir);

    let limits = RateLimits::new().requests_per(u32::MAX, Duration::from_secs(60));
    bench_limit(c, &rt, "local", RateLimitLayer::new(limits));

    let Ok(url) = std::env::var("TOWERSCOPE_REDIS_URL") else {
        // scripts/test.sh starts Redis and asks for it: there, a missing one fails.
        assert!(
            std::env::var("TOWERSCOPE_REQUIRE_REDIS").as_deref() != Ok("1"),
            "TOWERSCOPE_REQUIRE_REDIS=1, but TOWERSCOPE_REDIS_URL is not set"
        );
        eprintln!("TOWERSCOPE_REDIS_URL is not set: skipping the Redis benchmarks (scripts/redis-server.sh start)");
        return;
    };
    let _guard = rt.enter();
    let prefix = format!("bench:{}:", std::process::id());
    bench_store(
        c,
        &rt,
        "redis",
        &RedisStore::open(&url).unwrap().key_prefix(prefix.clone()),
    );
    let backend = RedisBackend::open(&url, &format!("{prefix}limit")).unwrap();
    bench_limit(
        c,
        &rt,
        "redis",
        RateLimitLayer::with_backend(limits, backend, WhenUnavailable::Fail),
    );
}

criterion_group! {
    name = sessions;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = benches
}
criterion_main!(sessions);
