//! `on_model_call`: the `chat {model}` span (kind CLIENT) and the GenAI client metrics.
//!
//! The span is a child of the reply's `invoke_agent` span, found in the request's
//! [`AgentContext`](towerscope_core::AgentContext) (or of the current context when this layer is
//! used without the reply layer). It starts with the request attributes (model, provider,
//! generation parameters, and with content capture the messages and tool definitions) and ends:
//!
//! - at once for a complete answer;
//! - for a stream, at its end (the agent reads it past its final `is_last` chunk, whose usage
//!   and finish reason the span records, with the time to the first chunk); or when the stream
//!   fails (also after its final chunk: a layer rejecting the answer), ends without its final
//!   chunk, or is dropped ([`ChatSpanStream`]);
//! - with ERROR, `error.type` and an `exception` event when the call fails.
//!
//! The finish reason (`gen_ai.response.finish_reasons`, and in `gen_ai.output.messages`) is the
//! provider's, as the decoders report it in the response's `metadata["finish_reason"]` (`stop`,
//! `length`, `tool_call`, `content_filter`); for a model that reports none, `tool_call` when the
//! answer calls tools and `stop` otherwise; `interrupted` when the user interrupted the call.
//!
//! One span per call: with retries or a fallback installed inside this layer, one span covers all
//! attempts; installed outside them, one span per attempt.
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
//! let agent = Agent::builder("assistant")
//!     .model(ScriptedModel::new("m", [ScriptedResponse::text("hi").with_usage(10, 2)]))
//!     .on_model_call(tracing.model_call_layer())
//!     .build()?;
//! agent.reply(Msg::user("user", "hello")).await?;
//! let spans = exporter.get_finished_spans().unwrap();
//! assert_eq!(spans[0].name, "chat m");
//! assert_eq!(spans[0].span_kind, opentelemetry::trace::SpanKind::Client);
//! # Ok(()) }
//! ```

mod record;
mod stream;

pub use stream::ChatSpanStream;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use tower::{Layer, Service};
use towerscope_core::{AgentError, ModelCallRequest, ModelOutput};

use self::record::ChatRecord;
use crate::config::Config;

/// The `on_model_call` layer of [`TracingMiddleware`](crate::TracingMiddleware).
#[derive(Debug, Clone)]
pub struct ModelCallTracingLayer {
    config: Arc<Config>,
}

impl ModelCallTracingLayer {
    pub(crate) fn from_config(config: Arc<Config>) -> Self {
        Self { config }
    }
}

impl<S> Layer<S> for ModelCallTracingLayer {
    type Service = ModelCallTracing<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ModelCallTracing {
            inner,
            config: Arc::clone(&self.config),
        }
    }
}

/// The service of [`ModelCallTracingLayer`].
#[derive(Debug, Clone)]
pub struct ModelCallTracing<S> {
    inner: S,
    config: Arc<Config>,
}

impl<S> ModelCallTracing<S> {
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

impl<S> Service<ModelCallRequest> for ModelCallTracing<S>
where
    S: Service<ModelCallRequest, Response = ModelOutput, Error = AgentError>,
{
    type Response = ModelOutput;
    type Error = AgentError;
    type Future = ModelCallTracingFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: ModelCallRequest) -> Self::Future {
        let Some(instruments) = self.config.source.current() else {
            return ModelCallTracingFuture {
                record: None,
                inner: self.inner.call(req),
                polling: false,
            };
        };
        let mut record = ChatRecord::start(instruments, &self.config, &req);
        // The inner layers' `call` runs under the chat span, as their futures do.
        let inner = {
            let _attached = record.context().map(|c| c.clone().attach());
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.inner.call(req)))
        };
        let inner = crate::span::or_panicked(inner, || record.panicked());
        ModelCallTracingFuture {
            record: Some(record),
            inner,
            polling: false,
        }
    }
}

pin_project! {
    /// The future of [`ModelCallTracing`]: the inner future itself when nothing is recorded;
    /// otherwise it records a complete answer, or wraps a stream in a [`ChatSpanStream`].
    pub struct ModelCallTracingFuture<F> {
        #[pin]
        inner: F,
        record: Option<ChatRecord>,
        // Set while the inner future is polled: still set on drop, the poll unwound.
        polling: bool,
    }

    impl<F> PinnedDrop for ModelCallTracingFuture<F> {
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

impl<F> fmt::Debug for ModelCallTracingFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelCallTracingFuture")
            .field("traced", &self.record.is_some())
            .finish_non_exhaustive()
    }
}

impl<F> Future for ModelCallTracingFuture<F>
where
    F: Future<Output = Result<ModelOutput, AgentError>>,
{
    type Output = Result<ModelOutput, AgentError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = match this.record.as_ref() {
            None => return this.inner.poll(cx),
            Some(record) => {
                let _attached = record.context().map(|c| c.clone().attach());
                ready!(crate::span::marked(this.polling, || this.inner.poll(cx)))
            }
        };
        let Some(mut record) = this.record.take() else {
            return Poll::Ready(result);
        };
        Poll::Ready(match result {
            Ok(ModelOutput::Complete(response)) => {
                record.streamed(false);
                record.complete(&response);
                Ok(ModelOutput::Complete(response))
            }
            Ok(ModelOutput::Stream(stream)) => {
                record.streamed(true);
                Ok(ModelOutput::Stream(Box::pin(ChatSpanStream::new(stream, record))))
            }
            Err(err) => {
                record.fail(&err);
                Err(err)
            }
        })
    }
}
