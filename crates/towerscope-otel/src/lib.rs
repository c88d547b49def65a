//! OpenTelemetry for towerscope: GenAI spans and metrics as one middleware, and OTLP export in
//! one call.
//!
//! [`TracingMiddleware`] hooks three positions and records, with the OpenTelemetry API directly
//! (no `tracing` bridge), what the [GenAI semantic conventions](semconv) describe:
//!
//! ```text
//! invoke_agent {agent}          INTERNAL  on_reply       parent: the context current when the reply starts
//!  ├─ chat {model}              CLIENT    on_model_call  one per model call
//!  ├─ execute_tool {tool}       INTERNAL  on_acting      one per tool execution
//!  │   └─ invoke_agent {other}            (an agent called by the tool)
//!  └─ chat {model}
//! ```
//!
//! plus the `gen_ai.client.token.usage`, `gen_ai.client.operation.duration` and
//! `gen_ai.client.operation.time_to_first_chunk` histograms of model calls (see
//! [Metrics](#metrics)).
//!
//! - **Where spans go.** [`init_otlp`] installs OTLP export for the whole process, and
//!   [`TracingMiddleware::new`] records with it. Tests and multi-exporter programs give providers
//!   to [`TracingMiddleware::builder`] instead. With no provider, the middleware passes straight
//!   through: a direct call of the inner service, no span, no attribute work ([`provider`] says
//!   how that is detected).
//! - **Attributes.** Every attribute of the reference implementation (AgentScope 2.x), including
//!   its `agentscope.agent.*` human-in-the-loop attributes, and what it leaves out: `error.type`,
//!   the request parameters, `gen_ai.request.stream`, `gen_ai.response.model`, the time to first
//!   chunk, cache token counts, `gen_ai.tool.description` and `gen_ai.tool.type`.
//! - **Content** (messages, system instructions, tool definitions, tool arguments and results,
//!   and the text of errors, see [Errors](#errors)) is recorded only on opt-in:
//!   [`TracingMiddlewareBuilder::capture_content`], or the
//!   `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` environment variable. Credentials are
//!   redacted from everything recorded, capture on or off ([`redact`]).
//! - **Streams.** Replies, model answers and tool results are streams the consumer polls; each
//!   span ends when its stream ends, fails or is dropped ([`ReplySpanStream`],
//!   [`ChatSpanStream`], [`ToolSpanStream`]), and the chat and execute_tool spans find their
//!   parent in the reply's `AgentContext`, never in a thread-local left current across an await.
//!
//! # Content capture and the message format
//!
//! With capture on, messages are recorded as JSON strings in the reference's format (AgentScope
//! 2.x), which follows the conventions' `gen-ai-input-messages.json` /
//! `gen-ai-output-messages.json` schemas: a message is `{"role", "parts", "name"}` (output
//! messages add `"finish_reason"`), and a content block becomes a part:
//!
//! | block | part |
//! |---|---|
//! | text | `{"type": "text", "content"}` |
//! | thinking | `{"type": "reasoning", "content"}` |
//! | tool call | `{"type": "tool_call", "id", "name", "arguments"}` (parsed JSON, or the raw text) |
//! | tool result | `{"type": "tool_call_response", "id", "response"}` (the output's text) |
//! | data at a URL | `{"type": "uri", "uri", "modality"}` |
//! | inline data | `{"type": "blob", "content", "media_type", "modality"}` |
//! | hint | dropped |
//!
//! The leading system message(s) of a model call go to `gen_ai.system_instructions` (as parts),
//! the rest to `gen_ai.input.messages`. A tool's result is its text when it holds only text.
//!
//! Each captured value (a text, a tool's arguments or result, a file's base64, an error's
//! text) is cut at [`MAX_CAPTURED_VALUE_BYTES`] (64 KiB), saying how much was left out: a
//! 10 MB tool result would otherwise be copied into its span and into every later model call's
//! input, and a collector may refuse a whole batch for one such span. A model call's
//! `gen_ai.input.messages` keeps its newest messages up to [`MAX_CAPTURED_MESSAGES_BYTES`]
//! (1 MiB), after a note of how many older ones were left out: the whole conversation in
//! every chat span grew a reply's spans with the square of its length.
//!
//! Content is serialised and redacted only for spans that record: a span starts with the
//! attributes a sampler may look at, and gets its content once the sampler kept it, so traces
//! the sampler drops cost no more with capture on than off.
//!
//! # Errors
//!
//! A failed span has the ERROR status, `error.type` (a low-cardinality name:
//! `AgentError::kind`, `tool_error` for a tool's error result, `cancelled` for a stream dropped
//! before its answer (a reply's final message, a model's final chunk, a tool's response),
//! `middleware_error` for a call or a stream's poll that panicked below) and one `exception`
//! event. The first failure of a span wins: what happens
//! after it (the consumer dropping the reply's stream, as `Agent::reply` does at the first
//! error) changes neither its description nor its `error.type`.
//!
//! The text of an error is treated as content. A tool's error text often quotes its input; a
//! provider's error message is not user content, but providers, gateways and local servers echo
//! the prompt or the request body in it. So, with content capture off, the status description
//! and `exception.message` hold only what the error's structured fields say (`model error
//! (gpt-4o)`, `HTTP 429 from /v1/chat (retry after 2s)`, `tool 'search' failed`, followed by
//! `; message not recorded: content capture is off`), or the whole message for the errors
//! composed of names and numbers only (timeouts, call limits, interruptions, overload). With
//! capture on they hold the whole message, redacted. The application still gets the whole error
//! from `Agent::reply`.
//!
//! # Metrics
//!
//! Recorded for every model call when a meter provider is installed (with or without a tracer):
//!
//! | instrument | kind, unit | attributes |
//! |---|---|---|
//! | `gen_ai.client.operation.duration` | histogram, `s` | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.response.model`, `server.address`, `server.port`, `error.type` |
//! | `gen_ai.client.token.usage` | histogram, `{token}` | the same and `gen_ai.token.type` = `input` / `output` |
//! | `gen_ai.client.operation.time_to_first_chunk` | histogram, `s` (streams) | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `server.address`, `server.port`: recorded at the first chunk, before the response names its model |
//!
//! The bucket boundaries are the conventions' advice ([`semconv::DURATION_BUCKETS`],
//! [`semconv::TOKEN_BUCKETS`]).
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
//! /// Get the weather of a city.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Weather { city: String }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // In a program: `let _guard = towerscope_otel::init_otlp(OtlpConfig::default())?;` and
//! // `TracingMiddleware::new()`. Here, an in-memory exporter:
//! let exporter = InMemorySpanExporter::default();
//! let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
//!
//! let agent = Agent::builder("Friday")
//!     .model(ScriptedModel::new("scripted-weather", [
//!         ScriptedResponse::tool_call("call-1", "get_weather", r#"{"city": "Paris"}"#).with_usage(112, 31),
//!         ScriptedResponse::text("Sunny in Paris.").with_usage(168, 24),
//!     ]))
//!     .tool(FunctionTool::new("get_weather", |w: Weather| async move { format!("sunny in {}", w.city) }))
//!     .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
//!     .build()?;
//! agent.reply(Msg::user("user", "Weather in Paris?")).await?;
//!
//! let spans = exporter.get_finished_spans()?;
//! let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
//! assert_eq!(names, ["chat scripted-weather", "execute_tool get_weather", "chat scripted-weather", "invoke_agent Friday"]);
//! let root = spans.last().unwrap();
//! assert!(spans.iter().all(|s| s.span_context.trace_id() == root.span_context.trace_id()));
//! assert!(spans[..3].iter().all(|s| s.parent_span_id == root.span_context.span_id()));
//! # Ok(()) }
//! ```

// Modules import only modules below them. Top to bottom: middleware, otlp > reply, model_call,
// acting (the last two take helpers from reply) > config > provider, content, span > failure,
// metrics > redact > json, semconv.
pub mod acting;
mod config;
pub mod model_call;
pub mod otlp;
pub mod provider;
pub mod redact;
pub mod reply;
pub mod semconv;

mod content;
mod failure;
mod json;
mod metrics;
mod middleware;
mod span;

/// The OpenTelemetry API this crate records with (re-exported so that versions match).
pub use opentelemetry;
/// The OpenTelemetry SDK this crate's providers come from (re-exported so that versions match).
pub use opentelemetry_sdk;

pub use acting::{ActingTracing, ActingTracingFuture, ActingTracingLayer, ToolSpanStream};
pub use content::{MAX_CAPTURED_MESSAGES_BYTES, MAX_CAPTURED_VALUE_BYTES};
pub use middleware::{TracingMiddleware, TracingMiddlewareBuilder};
pub use model_call::{ChatSpanStream, ModelCallTracing, ModelCallTracingFuture, ModelCallTracingLayer};
pub use otlp::{OtlpConfig, OtlpError, OtlpGuard, Protocol, init_otlp};
pub use provider::{clear_providers, set_meter_provider, set_tracer_provider, tracing_installed};
pub use reply::{ReplySpanStream, ReplyTracing, ReplyTracingFuture, ReplyTracingLayer};
