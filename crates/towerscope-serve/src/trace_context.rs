//! W3C trace context: the reply's spans (from `towerscope-otel`'s `TracingMiddleware`) join
//! the trace of the request's `traceparent` header (feature `otel`; without it, nothing).
//!
//! The agent opens its `invoke_agent` span under the OpenTelemetry context current when the
//! reply starts, which the endpoint makes the request's remote parent while it reads the
//! reply's first item.
//!
//! ```
//! # #[cfg(feature = "otel")] {
//! use opentelemetry::trace::TraceContextExt;
//!
//! let mut headers = axum::http::HeaderMap::new();
//! headers.insert("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".parse().unwrap());
//! let parent = towerscope_serve::trace_context::remote_parent(&headers).expect("a valid traceparent");
//! assert_eq!(parent.span().span_context().trace_id().to_string(), "0af7651916cd43dd8448eb211c80319c");
//! # }
//! ```

use std::future::Future;

use axum::http::HeaderMap;

/// The remote parent a `traceparent` header names; `None` without one, or when it is malformed
/// (version `00` only, as the W3C recommendation defines).
#[cfg(feature = "otel")]
pub fn remote_parent(headers: &HeaderMap) -> Option<opentelemetry::Context> {
    use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
    let value = headers.get("traceparent")?.to_str().ok()?.trim();
    let mut parts = value.split('-');
    let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if version != "00" || parts.next().is_some() || trace.len() != 32 || span.len() != 16 || flags.len() != 2 {
        return None;
    }
    // Lowercase hex digits only: the parsers below also take a sign and capitals, which the
    // recommendation says make the header invalid.
    let lower_hex = |field: &str| field.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if ![trace, span, flags].into_iter().all(lower_hex) {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    let context = SpanContext::new(trace_id, span_id, TraceFlags::new(flags), true, TraceState::default());
    context
        .is_valid()
        .then(|| opentelemetry::Context::new().with_remote_span_context(context))
}

/// Runs `future` with the request's remote parent (if any) as the current OpenTelemetry context.
pub(crate) async fn within_request<F: Future>(headers: &HeaderMap, future: F) -> F::Output {
    #[cfg(feature = "otel")]
    if let Some(parent) = remote_parent(headers) {
        use opentelemetry::trace::FutureExt;
        return future.with_context(parent).await;
    }
    let _ = headers;
    future.await
}

#[cfg(all(test, feature = "otel"))]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn parent(value: &'static str) -> bool {
        let mut headers = HeaderMap::new();
        headers.insert("traceparent", HeaderValue::from_static(value));
        remote_parent(&headers).is_some()
    }

    #[test]
    fn only_lowercase_hex_fields_name_a_parent() {
        assert!(parent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
        for malformed in [
            "00-+af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-+7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-+1",
            "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01",
        ] {
            assert!(!parent(malformed), "{malformed}");
        }
    }
}
