//! [`TracingMiddleware`]: GenAI spans and metrics on `on_reply`, `on_model_call` and `on_acting`.

use std::sync::Arc;

use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use towerscope_core::{ActingLayer, ErasedLayer, EventKinds, Middleware, ModelCallLayer, ReplyLayer};

use crate::acting::ActingTracingLayer;
use crate::config::Config;
use crate::content::ToolDefinitions;
use crate::model_call::ModelCallTracingLayer;
use crate::provider::{Instruments, Source};
use crate::reply::ReplyTracingLayer;
use crate::semconv::ENV_CAPTURE_CONTENT;

/// The reference's `gen_ai.agent.description` when the agent has none.
pub(crate) const NO_DESCRIPTION: &str = "No description available";

/// Whether a value of [`ENV_CAPTURE_CONTENT`] switches capture on: `true`/`1`/`yes`/`on`/
/// `SPAN_ONLY`/`SPAN_AND_EVENT` (case-insensitive); anything else leaves it off.
fn parse_capture(value: &str) -> bool {
    let value = value.trim();
    ["true", "1", "yes", "on", "span_only", "span_and_event"]
        .iter()
        .any(|on| value.eq_ignore_ascii_case(on))
}

/// OpenTelemetry GenAI tracing and metrics for an agent: one middleware hooking `on_reply`
/// (`invoke_agent {agent}` spans), `on_model_call` (`chat {model}` spans and the GenAI client
/// metrics) and `on_acting` (`execute_tool {tool}` spans).
///
/// See the [crate docs](crate) for the span tree, the attributes and an example.
///
/// Where spans go:
///
/// - [`TracingMiddleware::new`] records with the providers installed for the whole process
///   ([`init_otlp`](crate::init_otlp), [`set_tracer_provider`](crate::set_tracer_provider),
///   [`set_meter_provider`](crate::set_meter_provider)), looked up on every call. With none
///   installed it passes straight through: each position calls its inner service directly, with
///   no span object and no attribute work.
/// - [`TracingMiddleware::builder`] with
///   [`tracer_provider`](TracingMiddlewareBuilder::tracer_provider) and/or
///   [`meter_provider`](TracingMiddlewareBuilder::meter_provider) records with those providers
///   only (tests, or several exporters in one process).
///
/// Install it outermost (first) so that the spans cover what the other middleware do.
#[derive(Debug, Clone)]
pub struct TracingMiddleware {
    config: Arc<Config>,
}

impl Default for TracingMiddleware {
    fn default() -> Self {
        Self::new()
    }
}

impl TracingMiddleware {
    /// Tracing with the process-wide providers; content capture as
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` says (off when unset).
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A builder, to give explicit providers, switch content capture, or describe the agent.
    pub fn builder() -> TracingMiddlewareBuilder {
        TracingMiddlewareBuilder::default()
    }

    /// Whether message content is recorded.
    pub fn captures_content(&self) -> bool {
        self.config.capture_content
    }

    /// The `on_reply` layer (the `invoke_agent` span), for use as a plain tower layer.
    pub fn reply_layer(&self) -> ReplyTracingLayer {
        ReplyTracingLayer::from_config(Arc::clone(&self.config))
    }

    /// The `on_model_call` layer (the `chat` span and the metrics), for use as a plain tower layer.
    pub fn model_call_layer(&self) -> ModelCallTracingLayer {
        ModelCallTracingLayer::from_config(Arc::clone(&self.config))
    }

    /// The `on_acting` layer (the `execute_tool` span), for use as a plain tower layer.
    pub fn acting_layer(&self) -> ActingTracingLayer {
        ActingTracingLayer::from_config(Arc::clone(&self.config))
    }
}

impl Middleware for TracingMiddleware {
    fn name(&self) -> &str {
        "TracingMiddleware"
    }

    fn on_reply(&self) -> Option<ReplyLayer> {
        Some(ErasedLayer::new(self.reply_layer()))
    }

    /// The `invoke_agent` span reads the reply's id, its end, and the calls it parks; a reply
    /// whose events nobody else reads builds only these.
    fn reads_events(&self) -> EventKinds {
        crate::reply::READS
    }

    fn on_model_call(&self) -> Option<ModelCallLayer> {
        Some(ErasedLayer::new(self.model_call_layer()))
    }

    fn on_acting(&self) -> Option<ActingLayer> {
        Some(ErasedLayer::new(self.acting_layer()))
    }
}

/// Builds a [`TracingMiddleware`].
///
/// ```
/// use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
/// use towerscope_otel::TracingMiddleware;
///
/// let exporter = InMemorySpanExporter::default();
/// let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
/// let tracing = TracingMiddleware::builder()
///     .tracer_provider(&provider)
///     .capture_content(true)
///     .agent_description("Answers weather questions")
///     .build();
/// assert!(tracing.captures_content());
/// ```
#[derive(Debug, Default)]
pub struct TracingMiddlewareBuilder {
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
    explicit: bool,
    capture_content: Option<bool>,
    agent_description: Option<String>,
}

impl TracingMiddlewareBuilder {
    /// Records spans with this provider instead of the process-wide one. Giving any provider
    /// here makes the middleware ignore the process-wide providers (a signal without a provider
    /// here is not recorded).
    pub fn tracer_provider(mut self, provider: &SdkTracerProvider) -> Self {
        self.tracer_provider = Some(provider.clone());
        self.explicit = true;
        self
    }

    /// Records the GenAI metrics with this provider instead of the process-wide one (see
    /// [`tracer_provider`](Self::tracer_provider)).
    pub fn meter_provider(mut self, provider: &SdkMeterProvider) -> Self {
        self.meter_provider = Some(provider.clone());
        self.explicit = true;
        self
    }

    /// Records message content (`gen_ai.input.messages`, `gen_ai.output.messages`,
    /// `gen_ai.system_instructions`, `gen_ai.tool.definitions`, tool arguments and results), with
    /// credentials redacted. Wins over `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`;
    /// off by default.
    pub fn capture_content(mut self, capture: bool) -> Self {
        self.capture_content = Some(capture);
        self
    }

    /// The agent's `gen_ai.agent.description` (default: `"No description available"`, as the
    /// reference records).
    pub fn agent_description(mut self, description: impl Into<String>) -> Self {
        self.agent_description = Some(description.into());
        self
    }

    /// Builds the middleware; reads the capture environment variable now if
    /// [`capture_content`](Self::capture_content) was not called.
    pub fn build(self) -> TracingMiddleware {
        self.build_with_env(|name| std::env::var(name).ok())
    }

    /// [`build`](Self::build) with the environment given as a lookup (tests give their own:
    /// changing the process environment is `unsafe` and races other threads).
    fn build_with_env(self, env: impl FnOnce(&str) -> Option<String>) -> TracingMiddleware {
        let capture_content = match self.capture_content {
            Some(capture) => capture,
            None => env(ENV_CAPTURE_CONTENT).is_some_and(|value| parse_capture(&value)),
        };
        let source = if self.explicit {
            Source::Explicit(Instruments::new(
                self.tracer_provider.as_ref(),
                self.meter_provider.as_ref(),
            ))
        } else {
            Source::Global
        };
        TracingMiddleware {
            config: Arc::new(Config {
                source,
                capture_content,
                // Redacted once: it may name an internal URL with its credentials.
                agent_description: Arc::from(crate::redact::redact_text(
                    self.agent_description.as_deref().unwrap_or(NO_DESCRIPTION),
                )),
                tool_definitions: ToolDefinitions::default(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_values() {
        for on in ["true", "TRUE", "1", "SPAN_ONLY", "span_and_event", " yes "] {
            assert!(parse_capture(on), "{on}");
        }
        for off in ["false", "0", "NO_CONTENT", "EVENT_ONLY", ""] {
            assert!(!parse_capture(off), "{off}");
        }
    }

    #[test]
    fn builder_setting_wins_over_the_environment() {
        let env = |value: &'static str| {
            move |name: &str| {
                assert_eq!(name, ENV_CAPTURE_CONTENT);
                Some(value.to_owned())
            }
        };
        let builder = |capture: bool| TracingMiddleware::builder().capture_content(capture);
        assert!(!builder(false).build_with_env(env("true")).captures_content());
        assert!(builder(true).build_with_env(env("false")).captures_content());
        assert!(builder(true).build_with_env(env("NO_CONTENT")).captures_content());
    }

    #[test]
    fn the_environment_decides_when_the_builder_does_not() {
        let build = |value: Option<&str>| {
            TracingMiddleware::builder()
                .build_with_env(|name| {
                    assert_eq!(name, ENV_CAPTURE_CONTENT);
                    value.map(str::to_owned)
                })
                .captures_content()
        };
        assert!(build(Some("true")));
        assert!(build(Some("SPAN_AND_EVENT")));
        assert!(!build(Some("false")));
        assert!(!build(None));
    }
}
