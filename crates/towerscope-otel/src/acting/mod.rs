//! `on_acting`: the `execute_tool {tool}` span over one tool execution.
//!
//! The span is a child of the reply's `invoke_agent` span, found in the request's
//! [`AgentContext`](towerscope_core::AgentContext) (or of the current context when this layer is
//! used without the reply layer). It records the tool's name, call id, description and type
//! (`function`), with content capture its arguments and result (the tool's final
//! [`ToolResponse`](towerscope_core::ToolResponse)), and ends with the tool's stream, which the
//! agent reads past the response ([`ToolSpanStream`]). A response in the `error` state, an
//! error item (also after the response: a layer rejecting the result), a stream without a final
//! response, a stream dropped before its response and a poll that panicked end it with ERROR;
//! an interrupted tool, and a stream dropped after its response, end it OK.
//!
//! While the tool's stream is polled the span's context is attached, so an agent called from
//! inside the tool has its `invoke_agent` span under this `execute_tool` span.
//!
//! # Example
//!
//! ```
//! use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
//! use towerscope_agent::{Agent, toolkit::FunctionTool};
//! use towerscope_core::Msg;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//! use towerscope_otel::TracingMiddleware;
//!
//! /// Add two numbers.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let exporter = InMemorySpanExporter::default();
//! let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
//! let tracing = TracingMiddleware::builder().tracer_provider(&provider).build();
//! let agent = Agent::builder("calculator")
//!     .model(ScriptedModel::new("m", [
//!         ScriptedResponse::tool_call("c1", "add", r#"{"a": 2, "b": 3}"#),
//!         ScriptedResponse::text("5"),
//!     ]))
//!     .tool(FunctionTool::new("add", |args: Add| async move { (args.a + args.b).to_string() }))
//!     .on_acting(tracing.acting_layer())
//!     .build()?;
//! agent.reply(Msg::user("user", "2 + 3?")).await?;
//! let spans = exporter.get_finished_spans().unwrap();
//! assert_eq!(spans[0].name, "execute_tool add");
//! # Ok(()) }
//! ```

mod record;
mod stream;

pub use stream::ToolSpanStream;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use tower::{Layer, Service};
use towerscope_core::{ActingRequest, AgentError, ToolStream};

use self::record::ToolRecord;
use crate::config::Config;

/// The `on_acting` layer of [`TracingMiddleware`](crate::TracingMiddleware).
#[derive(Debug, Clone)]
pub struct ActingTracingLayer {
    config: Arc<Config>,
}

impl ActingTracingLayer {
    pub(crate) fn from_config(config: Arc<Config>) -> Self {
        Self { config }
    }
}

impl<S> Layer<S> for ActingTracingLayer {
    type Service = ActingTracing<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ActingTracing {
            inner,
            config: Arc::clone(&self.config),
        }
    }
}

/// The service of [`ActingTracingLayer`].
#[derive(Debug, Clone)]
pub struct ActingTracing<S> {
    inner: S,
    config: Arc<Config>,
}

impl<S> ActingTracing<S> {
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

impl<S> Service<ActingRequest> for ActingTracing<S>
where
    S: Service<ActingRequest, Response = ToolStream, Error = AgentError>,
{
    type Response = ToolStream;
    type Error = AgentError;
    type Future = ActingTracingFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: ActingRequest) -> Self::Future {
        let instruments = self.config.source.current();
        let Some(tracer) = instruments.as_ref().and_then(|i| i.tracer.as_ref()) else {
            return ActingTracingFuture {
                record: None,
                inner: self.inner.call(req),
                polling: false,
            };
        };
        let mut record = ToolRecord::start(tracer, &self.config, &req);
        let inner = {
            let _attached = record.context().clone().attach();
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.inner.call(req)))
        };
        let inner = crate::span::or_panicked(inner, || record.panicked());
        ActingTracingFuture {
            record: Some(record),
            inner,
            polling: false,
        }
    }
}

pin_project! {
    /// The future of [`ActingTracing`]: the inner future itself when nothing is recorded;
    /// otherwise it wraps the tool's stream in a [`ToolSpanStream`].
    pub struct ActingTracingFuture<F> {
        #[pin]
        inner: F,
        record: Option<ToolRecord>,
        // Set while the inner future is polled: still set on drop, the poll unwound.
        polling: bool,
    }

    impl<F> PinnedDrop for ActingTracingFuture<F> {
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

impl<F> fmt::Debug for ActingTracingFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActingTracingFuture")
            .field("traced", &self.record.is_some())
            .finish_non_exhaustive()
    }
}

impl<F> Future for ActingTracingFuture<F>
where
    F: Future<Output = Result<ToolStream, AgentError>>,
{
    type Output = Result<ToolStream, AgentError>;

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
            Ok(stream) => Ok(Box::pin(ToolSpanStream::new(stream, record))),
            Err(err) => {
                record.fail(&err);
                Err(err)
            }
        })
    }
}
