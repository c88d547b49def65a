//! An open span held in its own OpenTelemetry [`Context`], and how every span of this crate
//! records an error, a cancellation and its end.
//!
//! A span lives in a `Context` (its parent's, plus the span), never in the thread's "current"
//! context: the streams of this crate attach it only for the duration of one `poll`, so it is the
//! parent of whatever inner layers create while they run, and is never left current across an
//! await point the consumer controls.

use std::borrow::Cow;
use std::sync::Arc;

use crate::failure::Failure;
use crate::semconv::{ERROR_TYPE, EXCEPTION_EVENT, EXCEPTION_MESSAGE, EXCEPTION_TYPE};
use opentelemetry::trace::{SpanBuilder, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::SdkTracer;

/// The `error.type` of a span whose stream was dropped before its end.
pub(crate) const CANCELLED: &str = "cancelled";

/// The invoke_agent span's context, stored in the reply's `AgentContext` extensions so that the
/// chat and execute_tool spans of the same reply find their parent.
#[derive(Debug, Clone)]
pub(crate) struct ReplySpan(pub(crate) Context);

/// The parent of a chat or execute_tool span: the reply's invoke_agent span, else the current
/// context (a layer installed on its own).
pub(crate) fn parent_of(ctx: &towerscope_core::AgentContext) -> Context {
    ctx.get::<ReplySpan>().map_or_else(Context::current, |span| span.0)
}

/// The provider of the reply's first model call, left in the reply's `AgentContext` extensions
/// by the chat span for the invoke_agent span: that one starts before any model is called, and
/// records `gen_ai.provider.name` when it ends.
#[derive(Debug, Clone)]
pub(crate) struct ReplyProvider(pub(crate) Arc<str>);

/// The tokens of a traced reply's model calls so far, added up by their chat spans: the
/// invoke_agent span's usage when its consumer stopped reading at `REPLY_END`, before the final
/// message that carries the reply's usage.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ReplyTokens {
    pub(crate) input: u64,
    pub(crate) output: u64,
}

/// A string-array attribute value (`gen_ai.response.finish_reasons`, stop sequences).
pub(crate) fn string_array<I, T>(items: I) -> opentelemetry::Value
where
    I: IntoIterator<Item = T>,
    T: Into<opentelemetry::StringValue>,
{
    opentelemetry::Value::Array(opentelemetry::Array::String(
        items.into_iter().map(Into::into).collect(),
    ))
}

/// A started span that has not ended yet.
#[derive(Debug)]
pub(crate) struct OpenSpan {
    cx: Context,
    ended: bool,
    failed: bool,
}

impl OpenSpan {
    /// Starts a span under `parent`.
    pub(crate) fn start(tracer: &SdkTracer, builder: SpanBuilder, parent: &Context) -> Self {
        let span = tracer.build_with_context(builder, parent);
        Self {
            cx: parent.with_span(span),
            ended: false,
            failed: false,
        }
    }

    /// The context holding the span (the parent of spans created under it).
    pub(crate) fn context(&self) -> &Context {
        &self.cx
    }

    /// Whether the span records anything (sampled in, not ended).
    pub(crate) fn is_recording(&self) -> bool {
        !self.ended && self.cx.span().is_recording()
    }

    pub(crate) fn set(&self, attribute: KeyValue) {
        self.cx.span().set_attribute(attribute);
    }

    /// Marks the span failed: `error.type`, an `exception` event and the ERROR status. The
    /// first failure wins: a later one (or a cancellation) changes nothing, so `error.type` is
    /// set once and the description is the one of what went wrong first.
    pub(crate) fn fail(&mut self, failure: Failure<'_>) {
        if self.failed {
            return;
        }
        self.failed = true;
        let span = self.cx.span();
        // Cut as captured content is: with capture on, an error may quote a whole request.
        let description = crate::content::cut_owned(failure.description.into_owned());
        span.set_attribute(KeyValue::new(ERROR_TYPE, failure.kind.to_owned()));
        span.add_event(
            EXCEPTION_EVENT,
            vec![
                KeyValue::new(EXCEPTION_TYPE, failure.kind.to_owned()),
                KeyValue::new(EXCEPTION_MESSAGE, description.clone()),
            ],
        );
        span.set_status(Status::error(description));
    }

    /// Marks a span whose stream was dropped before its end: failed as `cancelled`; nothing if
    /// it already failed.
    pub(crate) fn cancel(&mut self, what: &str) {
        self.fail(Failure {
            kind: CANCELLED,
            description: Cow::Owned(format!("the {what} was dropped before it ended")),
        });
    }

    /// Sets the OK status unless the span failed (the SDK orders OK above ERROR, so an OK set
    /// after an error would hide it).
    pub(crate) fn ok(&self) {
        if !self.failed {
            self.cx.span().set_status(Status::Ok);
        }
    }

    /// Whether the span was marked failed or cancelled.
    pub(crate) fn failed(&self) -> bool {
        self.failed
    }

    /// Ends the span (once).
    pub(crate) fn end(&mut self) {
        if !self.ended {
            self.ended = true;
            self.cx.span().end();
        }
    }

    pub(crate) fn ended(&self) -> bool {
        self.ended
    }
}

/// Runs `poll` with `polling` set, and clears it once `poll` returns: a flag still set when
/// its future or stream is dropped says the poll unwound (a panic below), which the drop
/// records as [`PANICKED`].
pub(crate) fn marked<T>(polling: &mut bool, poll: impl FnOnce() -> T) -> T {
    *polling = true;
    let out = poll();
    *polling = false;
    out
}

/// The service below's answer to `call`, caught with `catch_unwind`: if the call panicked,
/// `panicked` records it on the span (the agent turns the panic into a middleware error; the
/// span's drop would record a cancelled call) and the panic goes on.
pub(crate) fn or_panicked<T>(caught: std::thread::Result<T>, panicked: impl FnOnce()) -> T {
    caught.unwrap_or_else(|panic| {
        panicked();
        std::panic::resume_unwind(panic)
    })
}

/// What a span records when the call below or a poll of its stream unwound (a panic in the
/// model, a tool or a layer below): the agent turns the panic into a middleware error, which
/// this kind matches.
pub(crate) const PANICKED: Failure<'static> = Failure {
    kind: "middleware_error",
    description: std::borrow::Cow::Borrowed(
        "a layer, tool or model below panicked (the agent gets the panic as an error)",
    ),
};

impl Drop for OpenSpan {
    /// A span dropped without being ended (its future was dropped before the inner service
    /// answered) ends as cancelled.
    fn drop(&mut self) {
        if !self.ended {
            self.cancel("call");
            self.end();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};

    use super::*;

    #[test]
    fn the_first_failure_wins_and_a_later_cancellation_changes_nothing() {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let mut span = OpenSpan::start(&provider.tracer("test"), SpanBuilder::from_name("s"), &Context::new());
        span.fail(Failure::new("model_error", "the first failure"));
        span.fail(Failure::new("stream_error", "a second failure"));
        span.cancel("reply stream");
        span.ok();
        span.end();

        let spans = exporter.get_finished_spans().unwrap();
        let recorded = &spans[0];
        let types: Vec<String> = recorded
            .attributes
            .iter()
            .filter(|kv| kv.key.as_str() == ERROR_TYPE)
            .map(|kv| kv.value.as_str().into_owned())
            .collect();
        assert_eq!(types, ["model_error"]);
        assert_eq!(recorded.status, Status::error("the first failure"));
        assert_eq!(recorded.events.len(), 1);
    }
}
