//! `on_reply`: the `invoke_agent {agent}` span over a whole reply.
//!
//! The span starts when the reply's service is called, as a child of the OpenTelemetry context
//! current at that moment (a root span, or, for an agent called from a tool of another agent,
//! the caller's `execute_tool` span). Its context goes into the reply's
//! [`AgentContext`](towerscope_core::AgentContext) extensions, where the `chat` and
//! `execute_tool` spans of the same reply find their parent. It ends when the reply's
//! [`EventStream`] ends, fails, or is dropped ([`ReplySpanStream`]).
//!
//! The agent's model is not part of the reply's request: `gen_ai.provider.name` is the provider of
//! the reply's first `chat` span (which leaves it in the same extensions), set when the span ends,
//! and absent from a reply that called no model.
//!
//! On the resume of a parked reply with external execution results, one zero-length
//! `execute_tool {tool}` span per result is recorded, under the new `invoke_agent` span
//! (`agentscope.agent.is_external_execution = true`): it marks when the result arrived. They are
//! recorded once the agent took the results (it leaves
//! [`ResumeApplied`](towerscope_core::ResumeApplied) in the reply's context); results it refuses
//! (a call the reply does not wait on) ran nowhere, and get none.
//!
//! # Example
//!
//! ```
//! use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
//! use towerscope_agent::Agent;
//! use towerscope_core::Msg;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//! use towerscope_otel::TracingMiddleware;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let exporter = InMemorySpanExporter::default();
//! let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
//! let tracing = TracingMiddleware::builder().tracer_provider(&provider).build();
//!
//! // Only the reply span: the layer on its own, on `on_reply`.
//! let agent = Agent::builder("assistant")
//!     .model(ScriptedModel::new("m", [ScriptedResponse::text("hi")]))
//!     .on_reply(tracing.reply_layer())
//!     .build()?;
//! agent.reply(Msg::user("user", "hello")).await?;
//! let spans = exporter.get_finished_spans().unwrap();
//! assert_eq!(spans.len(), 1);
//! assert_eq!(spans[0].name, "invoke_agent assistant");
//! # Ok(()) }
//! ```

mod record;
mod stream;

pub use stream::ReplySpanStream;

pub(crate) use record::usage_int;

/// The events the `invoke_agent` span reads (`Record::event`); the final message and errors
/// always reach it.
pub(crate) const READS: towerscope_core::EventKinds = towerscope_core::EventKinds::of(&[
    towerscope_core::EventType::ReplyStart,
    towerscope_core::EventType::ReplyEnd,
    towerscope_core::EventType::RequireUserConfirm,
    towerscope_core::EventType::RequireExternalExecution,
]);

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::SystemTime;

use opentelemetry::trace::{Span as _, SpanBuilder, SpanKind, Tracer as _};
use opentelemetry::{Context as OtelContext, KeyValue};
use opentelemetry_sdk::trace::SdkTracer;
use pin_project_lite::pin_project;
use tower::{Layer, Service};
use towerscope_core::{AgentError, EventStream, ReplyInput, ReplyRequest, ToolResultBlock};

use self::record::ReplyRecord;
use crate::config::Config;
use crate::content;
use crate::semconv::*;
use crate::span::{OpenSpan, ReplySpan};

/// The `on_reply` layer of [`TracingMiddleware`](crate::TracingMiddleware).
#[derive(Debug, Clone)]
pub struct ReplyTracingLayer {
    config: Arc<Config>,
}

impl ReplyTracingLayer {
    pub(crate) fn from_config(config: Arc<Config>) -> Self {
        Self { config }
    }
}

impl<S> Layer<S> for ReplyTracingLayer {
    type Service = ReplyTracing<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ReplyTracing {
            inner,
            config: Arc::clone(&self.config),
        }
    }
}

/// The service of [`ReplyTracingLayer`].
#[derive(Debug, Clone)]
pub struct ReplyTracing<S> {
    inner: S,
    config: Arc<Config>,
}

impl<S> ReplyTracing<S> {
    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service, giving up this one.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

/// `gen_ai.conversation.id`: the session id, or the reference's placeholder.
pub(crate) fn conversation_id(session_id: &towerscope_core::Id) -> String {
    if session_id.is_empty() {
        "[no_session_id]".to_owned()
    } else {
        session_id.to_string()
    }
}

impl<S> Service<ReplyRequest> for ReplyTracing<S>
where
    S: Service<ReplyRequest, Response = EventStream, Error = AgentError>,
{
    type Response = EventStream;
    type Error = AgentError;
    type Future = ReplyTracingFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: ReplyRequest) -> Self::Future {
        let instruments = self.config.source.current();
        let Some(tracer) = instruments.as_ref().and_then(|i| i.tracer.as_ref()) else {
            return ReplyTracingFuture {
                record: None,
                inner: self.inner.call(req),
                polling: false,
            };
        };
        let mut record = start(tracer, &self.config, &req);
        let inner = {
            let _attached = record.context().clone().attach();
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.inner.call(req)))
        };
        let inner = crate::span::or_panicked(inner, || record.panicked());
        ReplyTracingFuture {
            record: Some(record),
            inner,
            polling: false,
        }
    }
}

/// Starts the invoke_agent span (and the compensation spans of a resume), and leaves its
/// context in the reply's extensions.
fn start(tracer: &SdkTracer, config: &Config, req: &ReplyRequest) -> ReplyRecord {
    let ctx = &req.ctx;
    let conversation = conversation_id(ctx.session_id());
    let mut attributes = vec![
        KeyValue::new(GEN_AI_OPERATION_NAME, OPERATION_INVOKE_AGENT),
        KeyValue::new(GEN_AI_AGENT_NAME, ctx.agent_name().to_owned()),
        KeyValue::new(GEN_AI_AGENT_DESCRIPTION, config.agent_description.to_string()),
        KeyValue::new(GEN_AI_CONVERSATION_ID, conversation.clone()),
    ];
    match &req.input {
        ReplyInput::Confirm(_) => {
            attributes.push(KeyValue::new(AGENTSCOPE_INCOMING_EVENT_TYPE, "user_confirm_result"));
        }
        ReplyInput::External(_) => {
            attributes.push(KeyValue::new(
                AGENTSCOPE_INCOMING_EVENT_TYPE,
                "external_execution_result",
            ));
        }
        ReplyInput::Messages(_) | ReplyInput::Interrupt(_) => {}
    }
    let builder = SpanBuilder::from_name(format!("{OPERATION_INVOKE_AGENT} {}", ctx.agent_name()))
        .with_kind(SpanKind::Internal)
        .with_attributes(attributes);
    let span = OpenSpan::start(tracer, builder, &OtelContext::current());
    // The content only once the sampler kept the span (it is the costly part).
    if let ReplyInput::Messages(msgs) = &req.input
        && config.capture_content
        && span.is_recording()
    {
        span.set(KeyValue::new(
            GEN_AI_INPUT_MESSAGES,
            content::input_messages(msgs.iter()),
        ));
    }
    ctx.insert(ReplySpan(span.context().clone()));
    let mut record = ReplyRecord::new(span, config.capture_content, ctx.clone());
    // An external resume's results get their spans once the agent took them (it may refuse
    // them: then nothing ran, and nothing is recorded).
    if let ReplyInput::External(event) = &req.input {
        record.external_results(ExternalResults {
            tracer: tracer.clone(),
            results: event.execution_results.clone(),
            conversation,
            at: SystemTime::now(),
        });
    }
    record
}

/// An external resume's results, recorded once the agent took them.
#[derive(Debug)]
pub(crate) struct ExternalResults {
    tracer: SdkTracer,
    results: Vec<ToolResultBlock>,
    conversation: String,
    /// When the resume came: the spans' start and end.
    at: SystemTime,
}

impl ExternalResults {
    /// The zero-length `execute_tool` span of each result, under `parent`.
    pub(crate) fn record(&self, parent: &OtelContext, capture: bool) {
        for result in &self.results {
            external_result_span(&self.tracer, parent, result, &self.conversation, capture, self.at);
        }
    }
}

/// The zero-length `execute_tool` span of an external execution result.
fn external_result_span(
    tracer: &SdkTracer,
    parent: &OtelContext,
    result: &ToolResultBlock,
    conversation: &str,
    capture: bool,
    now: SystemTime,
) {
    let attributes = vec![
        KeyValue::new(GEN_AI_OPERATION_NAME, OPERATION_EXECUTE_TOOL),
        KeyValue::new(GEN_AI_TOOL_CALL_ID, result.id.to_string()),
        KeyValue::new(GEN_AI_TOOL_NAME, result.name.clone()),
        KeyValue::new(GEN_AI_TOOL_TYPE, TOOL_TYPE_FUNCTION),
        KeyValue::new(AGENTSCOPE_IS_EXTERNAL_EXECUTION, true),
        KeyValue::new(GEN_AI_CONVERSATION_ID, conversation.to_owned()),
    ];
    let builder = SpanBuilder::from_name(format!("{OPERATION_EXECUTE_TOOL} {}", result.name))
        .with_kind(SpanKind::Internal)
        .with_start_time(now)
        .with_attributes(attributes);
    let mut span = tracer.build_with_context(builder, parent);
    if capture && span.is_recording() {
        span.set_attribute(KeyValue::new(
            GEN_AI_TOOL_CALL_RESULT,
            content::external_result(&result.output),
        ));
    }
    span.end_with_timestamp(now);
}

pin_project! {
    /// The future of [`ReplyTracing`]: the inner future itself when nothing is recorded;
    /// otherwise it wraps the answer in a [`ReplySpanStream`].
    pub struct ReplyTracingFuture<F> {
        #[pin]
        inner: F,
        record: Option<ReplyRecord>,
        // Set while the inner future is polled: still set on drop, the poll unwound.
        polling: bool,
    }

    impl<F> PinnedDrop for ReplyTracingFuture<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if *this.polling
                && let Some(record) = this.record.as_mut()
            {
                record.panicked();
            }
        }
    }
}

impl<F> fmt::Debug for ReplyTracingFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplyTracingFuture")
            .field("traced", &self.record.is_some())
            .finish_non_exhaustive()
    }
}

impl<F> Future for ReplyTracingFuture<F>
where
    F: Future<Output = Result<EventStream, AgentError>>,
{
    type Output = Result<EventStream, AgentError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = match this.record.as_ref() {
            None => return this.inner.poll(cx),
            Some(record) => {
                let _attached = record.context().clone().attach();
                ready!(crate::span::marked(this.polling, || this.inner.poll(cx)))
            }
        };
        let Some(mut record) = this.record.take() else {
            return Poll::Ready(result);
        };
        Poll::Ready(match result {
            Ok(stream) => Ok(Box::pin(ReplySpanStream::new(stream, record))),
            Err(err) => {
                record.failed_to_open(&err);
                Err(err)
            }
        })
    }
}
