//! The cost of one call through each position with 0, 1, 5 and 10 pass-through layers.
//!
//! Every layer forwards `poll_ready` and `call` and changes nothing, so a benchmark measures what
//! the stacking itself costs. Three ways of stacking the same layers are compared, and for the
//! generic stack two ways of calling it:
//!
//! - `generic`: a `ServiceBuilder` stack of [`PassThroughLayer`], nested generic types whose
//!   future is the implementation's own (nothing boxed), called with `ready().await` + `call` on
//!   an instance reused across calls: the best case tower offers.
//! - `generic_oneshot`: the same stack called as the agent calls a position,
//!   `svc.clone().oneshot(req)`.
//! - `erased`: [`PassThroughLayer`] installed N times through `LayerStack::push` + `build`, the
//!   agent's way (one `ErasedService` per layer boundary; with no layer, the implementation
//!   itself), called as the agent calls it, `svc.clone().oneshot(req)`.
//! - `erased_reused`: the same erased stack called with `ready().await` + `call` on a reused
//!   instance, which separates the per-call clone of the boxed chain from the call itself.
//! - `from_fn`: N `from_fn(|req, next| next.run(req))` closures through `LayerStack` (each over
//!   the erased rest of the stack), called as the agent calls it, `svc.clone().oneshot(req)`.
//!
//! Benchmark ids read `<position>/<style>/<layers>`, for example `on_model_call/erased/5`; the
//! `on_system_prompt` fold is measured as `on_system_prompt/fold/<transformers>` with `prompt_fn`
//! transformers that return the prompt unchanged (a boxed future each), and as
//! `on_system_prompt/map/<transformers>` with `prompt_map` ones (no future boxed).
//!
//! What every call pays besides the stack, equally in every style: a `clone()` of a request built
//! once outside the loop (a real call pays it too), the implementation's answer (a clone of a
//! prebuilt response, returned through `std::future::Ready`; the `on_acting`, `on_reasoning` and
//! `on_reply` streams are boxed by their position's type), and draining the stream.
//!
//! The futures run on a current-thread tokio runtime through criterion's `to_async` with
//! `iter_custom`: one `block_on` per sample around a loop of `iters` awaited calls, so the timed
//! loop holds no runtime entry per call (`b.iter(|| rt.block_on(..))` would add one per call).
//!
//! ```text
//! cargo bench --bench positions
//! cargo bench --bench positions -- 'on_model_call/'
//! ```

use std::future::{Ready, ready};
use std::hint::black_box;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, criterion_group, criterion_main};
use futures_util::{Stream, StreamExt, stream};
use tokio::runtime::Runtime;
use tower::{Layer, Service, ServiceBuilder, ServiceExt};
use towerscope_core::{
    ActingRequest, AgentContext, AgentError, AgentEvent, ChatModel, ChatResponse, CompressRequest, ContentBlock,
    EventStream, LayerStack, ModelCallRequest, ModelFuture, ModelOutput, Msg, Next, PermissionDecision,
    PermissionRequest, ReasoningRequest, ReplyInput, ReplyItem, ReplyRequest, SystemPromptFold, TextBlock,
    TextBlockDeltaEvent, ToolCallBlock, ToolInfo, ToolItem, ToolResponse, ToolSchema, ToolStream, event_stream,
    from_fn, prompt_fn, prompt_map,
};

/// The layer counts every position is measured with.
const LAYER_COUNTS: [usize; 4] = [0, 1, 5, 10];

/// A layer that changes nothing: its service forwards `poll_ready` and `call`.
#[derive(Debug, Clone, Copy)]
struct PassThroughLayer;

impl<S> Layer<S> for PassThroughLayer {
    type Service = PassThrough<S>;

    fn layer(&self, inner: S) -> Self::Service {
        PassThrough { inner }
    }
}

/// The service of [`PassThroughLayer`]; its future is the inner one, unchanged.
#[derive(Debug, Clone)]
struct PassThrough<S> {
    inner: S,
}

impl<S, Req> Service<Req> for PassThrough<S>
where
    S: Service<Req>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        self.inner.call(req)
    }
}

/// A `ServiceBuilder` with 0, 1, 5 or 10 [`PassThroughLayer`]s: the service it builds is the
/// nested generic type `PassThrough<PassThrough<…<Impl>>>`.
macro_rules! pass_through_builder {
    (0) => {
        ServiceBuilder::new()
    };
    (1) => {
        ServiceBuilder::new().layer(PassThroughLayer)
    };
    (5) => {
        pass_through_builder!(1)
            .layer(PassThroughLayer)
            .layer(PassThroughLayer)
            .layer(PassThroughLayer)
            .layer(PassThroughLayer)
    };
    (10) => {
        pass_through_builder!(5).layer(pass_through_builder!(5))
    };
}

/// `n` [`PassThroughLayer`]s installed the agent's way.
fn erased_stack<Req, Resp>(n: usize) -> LayerStack<Req, Resp>
where
    Req: Send + 'static,
    Resp: Send + 'static,
{
    let mut stack = LayerStack::new();
    for _ in 0..n {
        stack.push(PassThroughLayer);
    }
    stack
}

/// `n` pass-through `from_fn` closures, each over the erased rest of the stack.
fn from_fn_stack<Req, Resp>(n: usize) -> LayerStack<Req, Resp>
where
    Req: Send + 'static,
    Resp: Send + 'static,
{
    let mut stack = LayerStack::new();
    for _ in 0..n {
        stack.push(from_fn(|req: Req, next: Next<Req, Resp>| next.run(req)));
    }
    stack
}

/// What a caller does with a position's answer: looks at it, and drains it if it is a stream.
trait Consume {
    /// Consumes the answer.
    async fn consume(self);
}

impl Consume for () {
    async fn consume(self) {}
}

impl Consume for PermissionDecision {
    async fn consume(self) {
        black_box(self);
    }
}

impl Consume for ModelOutput {
    async fn consume(self) {
        match self {
            Self::Complete(response) => {
                black_box(response);
            }
            Self::Stream(stream) => stream.consume().await,
        }
    }
}

impl<T> Consume for Pin<Box<dyn Stream<Item = Result<T, AgentError>> + Send>> {
    async fn consume(mut self) {
        while let Some(item) = self.next().await {
            black_box(item.expect("a pass-through stream does not fail"));
        }
    }
}

/// A model that is never called: it fills `ModelCallRequest::model`.
#[derive(Debug)]
struct BenchModel;

impl ChatModel for BenchModel {
    fn model_name(&self) -> &str {
        "bench-1"
    }

    fn call(&self, _request: ModelCallRequest) -> ModelFuture {
        let response = ChatResponse::new(vec![ContentBlock::Text(TextBlock::new("hello"))]);
        Box::pin(ready(Ok(ModelOutput::Complete(response))))
    }
}

/// A position's implementation: answers every request with a clone of `answer`, ready at once.
///
/// `answer` sits behind an `Arc`, so cloning the implementation (as the agent's call style does
/// per call) costs one reference count, as it does for the agent's own implementations.
#[derive(Debug)]
struct Answer<T, F> {
    answer: Arc<T>,
    make: F,
}

impl<T, F: Clone> Clone for Answer<T, F> {
    fn clone(&self) -> Self {
        Self {
            answer: Arc::clone(&self.answer),
            make: self.make.clone(),
        }
    }
}

impl<Req, T, F, Resp> Service<Req> for Answer<T, F>
where
    F: Fn(&T) -> Resp,
{
    type Response = Resp;
    type Error = AgentError;
    type Future = Ready<Result<Resp, AgentError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _req: Req) -> Self::Future {
        ready(Ok((self.make)(&self.answer)))
    }
}

/// An implementation answering with `make(&answer)`.
fn answer<T, F>(answer: T, make: F) -> Answer<T, F> {
    Answer {
        answer: Arc::new(answer),
        make,
    }
}

/// Measures one call with `svc.clone().oneshot(req.clone())`, the way the agent calls a position.
fn bench_oneshot<S, Req>(group: &mut BenchmarkGroup<'_, WallTime>, rt: &Runtime, id: BenchmarkId, svc: &S, req: &Req)
where
    S: Service<Req, Error = AgentError> + Clone,
    S::Response: Consume,
    Req: Clone,
{
    group.bench_function(id, |b| {
        b.to_async(rt).iter_custom(|iters| async move {
            let start = Instant::now();
            for _ in 0..iters {
                let response = svc
                    .clone()
                    .oneshot(req.clone())
                    .await
                    .expect("a pass-through stack does not fail");
                response.consume().await;
            }
            start.elapsed()
        });
    });
}

/// Measures one call with `ready().await` and `call` on an instance reused across calls.
fn bench_reused<S, Req>(group: &mut BenchmarkGroup<'_, WallTime>, rt: &Runtime, id: BenchmarkId, svc: &S, req: &Req)
where
    S: Service<Req, Error = AgentError> + Clone,
    S::Response: Consume,
    Req: Clone,
{
    group.bench_function(id, |b| {
        b.to_async(rt).iter_custom(|iters| {
            let mut svc = svc.clone();
            async move {
                let start = Instant::now();
                for _ in 0..iters {
                    let ready = svc.ready().await.expect("a pass-through stack is always ready");
                    let response = ready
                        .call(req.clone())
                        .await
                        .expect("a pass-through stack does not fail");
                    response.consume().await;
                }
                start.elapsed()
            }
        });
    });
}

/// Measures the generic stack of `layers` layers in both call styles.
fn bench_generic<S, Req>(group: &mut BenchmarkGroup<'_, WallTime>, rt: &Runtime, layers: usize, svc: S, req: &Req)
where
    S: Service<Req, Error = AgentError> + Clone,
    S::Response: Consume,
    Req: Clone,
{
    bench_reused(group, rt, BenchmarkId::new("generic", layers), &svc, req);
    bench_oneshot(group, rt, BenchmarkId::new("generic_oneshot", layers), &svc, req);
}

/// Measures one position: every style, every layer count.
fn bench_position<I, Req, Resp>(c: &mut Criterion, rt: &Runtime, position: &str, implementation: I, req: Req)
where
    I: Service<Req, Response = Resp, Error = AgentError> + Clone + Send + Sync + 'static,
    I::Future: Send + 'static,
    Req: Clone + Send + 'static,
    Resp: Consume + Send + 'static,
{
    let mut group = c.benchmark_group(position);
    let req = &req;
    bench_generic(
        &mut group,
        rt,
        0,
        pass_through_builder!(0).service(implementation.clone()),
        req,
    );
    bench_generic(
        &mut group,
        rt,
        1,
        pass_through_builder!(1).service(implementation.clone()),
        req,
    );
    bench_generic(
        &mut group,
        rt,
        5,
        pass_through_builder!(5).service(implementation.clone()),
        req,
    );
    bench_generic(
        &mut group,
        rt,
        10,
        pass_through_builder!(10).service(implementation.clone()),
        req,
    );
    for layers in LAYER_COUNTS {
        let svc = erased_stack(layers).build(implementation.clone());
        bench_oneshot(&mut group, rt, BenchmarkId::new("erased", layers), &svc, req);
        bench_reused(&mut group, rt, BenchmarkId::new("erased_reused", layers), &svc, req);
    }
    for layers in LAYER_COUNTS {
        let svc = from_fn_stack(layers).build(implementation.clone());
        bench_oneshot(&mut group, rt, BenchmarkId::new("from_fn", layers), &svc, req);
    }
    group.finish();
}

/// The tool every tool-call request names.
fn echo_tool() -> (ToolCallBlock, Arc<ToolInfo>) {
    let call = ToolCallBlock::new("call-1", "echo", r#"{"text":"hi"}"#);
    let info = ToolInfo {
        name: "echo".to_owned(),
        description: "Echoes its input.".to_owned(),
        concurrency_safe: true,
        read_only: true,
        external: false,
    };
    (call, Arc::new(info))
}

/// A couple of reply items: one text delta and the final message.
fn reply_items(ctx: &AgentContext) -> [ReplyItem; 2] {
    let delta = TextBlockDeltaEvent::new(ctx.reply_id(), "block-1", "hello");
    [
        ReplyItem::Event(AgentEvent::TextBlockDelta(delta)),
        ReplyItem::Final(Msg::assistant("assistant", "hello")),
    ]
}

/// Wraps a clone of `items` as a stream.
fn stream_items(items: &[ReplyItem; 2]) -> EventStream {
    event_stream(stream::iter(items.clone().map(Ok)))
}

/// All positions' onions.
fn positions(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
    let ctx = AgentContext::new("assistant", "session-1", "reply-1");
    let (tool_call, tool) = echo_tool();

    let model_call = ModelCallRequest {
        ctx: ctx.clone(),
        model: Arc::new(BenchModel),
        messages: vec![Msg::system("system", "You are helpful."), Msg::user("user", "Hi")].into(),
        tools: Arc::from(vec![ToolSchema::new(
            "echo",
            "Echoes its input.",
            serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        )]),
        tool_choice: None,
    };
    let response = ChatResponse::new(vec![ContentBlock::Text(TextBlock::new("hello"))]);
    let model_impl = answer(response, |r: &ChatResponse| ModelOutput::Complete(r.clone()));
    bench_position(c, &rt, "on_model_call", model_impl, model_call);

    let acting =
        ActingRequest::new(ctx.clone(), tool_call.clone(), Arc::clone(&tool)).with_input(serde_json::json!({}));
    let acting_impl = answer(ToolResponse::text("hi"), |r: &ToolResponse| -> ToolStream {
        Box::pin(stream::iter([Ok(ToolItem::Response(r.clone()))]))
    });
    bench_position(c, &rt, "on_acting", acting_impl, acting);

    let permission = PermissionRequest::new(ctx.clone(), tool_call, tool, serde_json::json!({"text": "hi"}));
    let permission_impl = answer(PermissionDecision::Allow, PermissionDecision::clone);
    bench_position(c, &rt, "on_check_permission", permission_impl, permission);

    let compress = CompressRequest {
        config: None,
        ctx: ctx.clone(),
        instructions: None,
    };
    bench_position(c, &rt, "on_compress_context", answer((), |_: &()| ()), compress);

    let reasoning = ReasoningRequest {
        ctx: ctx.clone(),
        tool_choice: None,
    };
    bench_position(
        c,
        &rt,
        "on_reasoning",
        answer(reply_items(&ctx), stream_items),
        reasoning,
    );

    let reply = ReplyRequest {
        ctx: ctx.clone(),
        input: ReplyInput::from(Msg::user("user", "Hi")),
        structured_schema: None,
    };
    bench_position(c, &rt, "on_reply", answer(reply_items(&ctx), stream_items), reply);
}

/// The `on_system_prompt` fold with 0, 1, 5 and 10 transformers that return the prompt unchanged,
/// written with `prompt_fn` (`fold`) and with `prompt_map` (`map`).
fn system_prompt(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
    let ctx = AgentContext::new("assistant", "session-1", "reply-1");
    let prompt = "You are helpful.".to_owned();
    let mut group = c.benchmark_group("on_system_prompt");
    for transformers in LAYER_COUNTS {
        for style in ["fold", "map"] {
            let mut fold = SystemPromptFold::new();
            for _ in 0..transformers {
                match style {
                    "fold" => fold.push(prompt_fn(|_ctx: &AgentContext, prompt: String| {
                        ready(Ok::<_, AgentError>(prompt))
                    })),
                    _ => fold.push(prompt_map(|_ctx: &AgentContext, prompt: String| Ok(prompt))),
                };
            }
            let (fold, ctx, prompt) = (&fold, &ctx, &prompt);
            group.bench_function(BenchmarkId::new(style, transformers), |b| {
                b.to_async(&rt).iter_custom(|iters| async move {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let prompt = fold
                            .apply(ctx, prompt.clone())
                            .await
                            .expect("an identity fold does not fail");
                        black_box(prompt);
                    }
                    start.elapsed()
                });
            });
        }
    }
    group.finish();
}

/// Short runs: about 1.5 s per benchmark, so the whole bench stays within a few minutes.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = positions, system_prompt
}
criterion_main!(benches);
