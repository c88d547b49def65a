//! The reply's spans (TracingMiddleware) join the trace of the request's W3C `traceparent`:
//! `invoke_agent` is a child of the caller's span, and the reply's chat and tool spans are in
//! the same trace. Without the header, the reply starts a trace of its own.
#![allow(clippy::unwrap_used)]

mod support;

use axum::body::Body;
use axum::http::{Request, header};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::json;
use tower::ServiceExt;
use towerscope_agent::Agent;
use towerscope_otel::TracingMiddleware;

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT: &str = "b7ad6b7169203331";

async fn post(router: &axum::Router, traceparent: Option<&str>) {
    let body =
        json!({"threadId": "t1", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "weather?"}]});
    let mut request = Request::post("/agui").header(header::CONTENT_TYPE, "application/json");
    if let Some(value) = traceparent {
        request = request.header("traceparent", value);
    }
    let response = router
        .clone()
        .oneshot(request.body(Body::from(body.to_string())).unwrap())
        .await
        .unwrap();
    axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
}

fn router(provider: &SdkTracerProvider) -> axum::Router {
    let model = support::model();
    let provider = provider.clone();
    towerscope_serve::router(move |_: &str| {
        Agent::builder("assistant")
            .model(model.clone())
            .tool(towerscope_agent::toolkit::FunctionTool::new(
                "get_weather",
                |c: support::City| async move { format!("sunny in {}", c.city) },
            ))
            .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
            .build()
    })
}

#[tokio::test]
async fn the_reply_spans_join_the_request_traceparent() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let router = router(&provider);

    post(&router, Some(&format!("00-{TRACE}-{PARENT}-01"))).await;
    let spans = exporter.get_finished_spans().unwrap();
    let invoke = spans
        .iter()
        .find(|s| s.name.starts_with("invoke_agent"))
        .expect("an invoke_agent span");
    assert_eq!(invoke.span_context.trace_id().to_string(), TRACE);
    assert_eq!(invoke.parent_span_id.to_string(), PARENT);
    assert!(
        spans.iter().any(|s| s.name.starts_with("chat")),
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    assert!(spans.iter().any(|s| s.name.starts_with("execute_tool")));
    assert!(
        spans.iter().all(|s| s.span_context.trace_id().to_string() == TRACE),
        "every span in the caller's trace"
    );

    exporter.reset();
    post(&router, None).await;
    post(&router, Some("00-zz-not-a-traceparent")).await;
    let spans = exporter.get_finished_spans().unwrap();
    let invokes: Vec<_> = spans.iter().filter(|s| s.name.starts_with("invoke_agent")).collect();
    assert_eq!(invokes.len(), 2);
    for invoke in invokes {
        assert_ne!(invoke.span_context.trace_id().to_string(), TRACE);
        assert_eq!(
            invoke.parent_span_id,
            opentelemetry::trace::SpanId::INVALID,
            "a root span"
        );
    }
}
