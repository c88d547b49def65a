//! The per-call cost of each built-in layer on `on_model_call`.
//!
//! A trivial model answers every call at once with a complete response (a clone of a prebuilt
//! one, through `std::future::Ready`), so a benchmark measures what the layer adds around a call
//! that neither waits nor fails:
//!
//! - `none`: no layer, the model service itself;
//! - `timing`: [`TimingLayer`], one sample recorded per call;
//! - `rate_limit`: [`RateLimitLayer`] whose limit is never hit (a minimum interval of zero: the
//!   shared limiter's lock, clock and bookkeeping, never a wait);
//! - `fallback`: [`FallbackLayer`] with one fallback model, never used;
//! - `retry`: [`RetryLayer`] with 3 attempts and its default shared budget, never used;
//! - `timeout`: [`TimeoutLayer`] with a 60 s deadline, never reached (one timer per call);
//! - `call_limit`: [`CallLimitLayer`] with a per-reply model-call limit never reached (a count in
//!   the reply's extensions per call).
//!
//! Each is measured two ways, both called as the agent calls a position,
//! `svc.clone().oneshot(req.clone())`:
//!
//! - `generic/<layer>`: `ServiceBuilder::new().layer(layer).service(model)`, nested concrete types;
//! - `erased/<layer>`: the layer installed through `LayerStack::push` + `build`, the agent's way
//!   (the `none` case is the model service itself, as the agent does with no layer installed).
//!
//! The futures run on a current-thread tokio runtime (with the timer enabled) through
//! criterion's `to_async` with `iter_custom`: one `block_on` per sample around a loop of awaited
//! calls.
//!
//! ```text
//! cargo bench --bench layers
//! cargo bench --bench layers -- 'erased/'
//! ```

use std::future::{Ready, ready};
use std::hint::black_box;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, criterion_group, criterion_main};
use tokio::runtime::Runtime;
use tower::{Layer, Service, ServiceBuilder, ServiceExt};
use towerscope_core::ErasedService;
use towerscope_core::{
    AgentContext, AgentError, ChatModel, ChatResponse, ContentBlock, LayerStack, ModelCallRequest, ModelFuture,
    ModelOutput, ModelRef, Msg, TextBlock,
};
use towerscope_layers::rate_limit::RateLimits;
use towerscope_layers::{CallLimitLayer, FallbackLayer, RateLimitLayer, RetryLayer, TimeoutLayer, TimingLayer};

/// The erased `on_model_call` service the agent's layers wrap.
type Erased = ErasedService<ModelCallRequest, ModelOutput>;

/// A model that fills `ModelCallRequest::model`; the [`Model`] service answers in its place.
#[derive(Debug)]
struct BenchModel(&'static str);

impl ChatModel for BenchModel {
    fn model_name(&self) -> &str {
        self.0
    }

    fn call(&self, _request: ModelCallRequest) -> ModelFuture {
        let response = ChatResponse::new(vec![ContentBlock::Text(TextBlock::new("hello"))]);
        Box::pin(ready(Ok(ModelOutput::Complete(response))))
    }
}

/// The innermost `on_model_call` service: answers at once with a clone of a prebuilt complete
/// response.
#[derive(Debug, Clone)]
struct Model {
    response: Arc<ChatResponse>,
}

impl Service<ModelCallRequest> for Model {
    type Response = ModelOutput;
    type Error = AgentError;
    type Future = Ready<Result<ModelOutput, AgentError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _req: ModelCallRequest) -> Self::Future {
        ready(Ok(ModelOutput::Complete((*self.response).clone())))
    }
}

/// Measures one call with `svc.clone().oneshot(req.clone())`, the way the agent calls a position.
fn bench_oneshot<S>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    rt: &Runtime,
    id: BenchmarkId,
    svc: &S,
    req: &ModelCallRequest,
) where
    S: Service<ModelCallRequest, Response = ModelOutput, Error = AgentError> + Clone,
{
    group.bench_function(id, |b| {
        b.to_async(rt).iter_custom(|iters| async move {
            let start = Instant::now();
            for _ in 0..iters {
                let response = svc
                    .clone()
                    .oneshot(req.clone())
                    .await
                    .expect("the benchmark model does not fail");
                black_box(response);
            }
            start.elapsed()
        });
    });
}

/// Measures `layer` generic (over the concrete model service) and erased (the agent's way).
fn bench_layer<L>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    rt: &Runtime,
    name: &str,
    layer: L,
    model: &Model,
    req: &ModelCallRequest,
) where
    L: Layer<Model> + Layer<Erased> + Clone + Send + Sync + 'static,
    <L as Layer<Model>>::Service: Service<ModelCallRequest, Response = ModelOutput, Error = AgentError> + Clone,
    <L as Layer<Erased>>::Service:
        Service<ModelCallRequest, Response = ModelOutput, Error = AgentError> + Clone + Send + Sync + 'static,
    <<L as Layer<Erased>>::Service as Service<ModelCallRequest>>::Future: Send + 'static,
{
    let generic = ServiceBuilder::new().layer(layer.clone()).service(model.clone());
    bench_oneshot(group, rt, BenchmarkId::new("generic", name), &generic, req);
    let mut stack = LayerStack::<ModelCallRequest, ModelOutput>::new();
    stack.push(layer);
    let erased = stack.build(model.clone());
    bench_oneshot(group, rt, BenchmarkId::new("erased", name), &erased, req);
}

fn layers(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime with a timer");
    let model = Model {
        response: Arc::new(ChatResponse::new(vec![ContentBlock::Text(TextBlock::new("hello"))])),
    };
    let req = ModelCallRequest {
        ctx: AgentContext::new("assistant", "session-1", "reply-1"),
        model: Arc::new(BenchModel("bench-primary")),
        messages: vec![Msg::user("user", "Hi")].into(),
        tools: Arc::from(vec![]),
        tool_choice: None,
    };
    let mut group = c.benchmark_group("on_model_call_layers");
    let req = &req;

    bench_oneshot(
        &mut group,
        &rt,
        BenchmarkId::new("generic", "none"),
        &ServiceBuilder::new().service(model.clone()),
        req,
    );
    let erased = LayerStack::<ModelCallRequest, ModelOutput>::new().build(model.clone());
    bench_oneshot(&mut group, &rt, BenchmarkId::new("erased", "none"), &erased, req);

    bench_layer(&mut group, &rt, "timing", TimingLayer::new(), &model, req);
    let limits = RateLimits::new().min_interval(Duration::ZERO);
    bench_layer(&mut group, &rt, "rate_limit", RateLimitLayer::new(limits), &model, req);
    let backup: ModelRef = Arc::new(BenchModel("bench-backup"));
    bench_layer(&mut group, &rt, "fallback", FallbackLayer::new([backup]), &model, req);
    bench_layer(&mut group, &rt, "retry", RetryLayer::new(3), &model, req);
    bench_layer(
        &mut group,
        &rt,
        "timeout",
        TimeoutLayer::new(Duration::from_secs(60)),
        &model,
        req,
    );
    let limit = CallLimitLayer::new().model_calls_per_reply(u32::MAX);
    bench_layer(&mut group, &rt, "call_limit", limit, &model, req);
    group.finish();
}

/// Short runs: about 1.5 s per benchmark.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = layers
}
criterion_main!(benches);
