//! The process-wide providers ([`set_tracer_provider`], [`clear_providers`]) and the content
//! capture environment variable. Both are process-global, hence this binary of their own.
#![allow(clippy::unwrap_used)]

mod support;

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use opentelemetry::trace::TraceContextExt;
use support::*;
use towerscope_agent::Agent;
use towerscope_core::{ModelCallRequest, ModelOutput, Msg, Next, from_fn};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_otel::{TracingMiddleware, clear_providers, set_tracer_provider, tracing_installed};

#[tokio::test]
async fn tracing_follows_the_process_wide_provider() {
    let spans_seen_by_the_model = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&spans_seen_by_the_model);
    let probe = from_fn(
        move |req: ModelCallRequest, next: Next<ModelCallRequest, ModelOutput>| {
            if opentelemetry::Context::current().has_active_span() {
                seen.fetch_add(1, Ordering::Relaxed);
            }
            next.run(req)
        },
    );
    let agent = Agent::builder("a")
        .model(ScriptedModel::cycle("m", [ScriptedResponse::text("hi")]))
        .middleware(TracingMiddleware::new())
        .on_model_call(probe)
        .build()
        .unwrap();

    // Nothing installed: straight through.
    assert!(!tracing_installed());
    agent.reply(Msg::user("user", "1")).await.unwrap();
    assert_eq!(spans_seen_by_the_model.load(Ordering::Relaxed), 0);

    // Installed: the same middleware records, and the model runs under its chat span.
    let (provider, exporter) = in_memory();
    set_tracer_provider(provider.clone());
    assert!(tracing_installed());
    agent.reply(Msg::user("user", "2")).await.unwrap();
    assert_eq!(names(&spans(&exporter)), ["chat m", "invoke_agent a"]);
    assert_eq!(spans_seen_by_the_model.load(Ordering::Relaxed), 1);

    // Cleared: straight through again.
    clear_providers();
    exporter.reset();
    agent.reply(Msg::user("user", "3")).await.unwrap();
    assert!(spans(&exporter).is_empty());
    assert_eq!(spans_seen_by_the_model.load(Ordering::Relaxed), 1);
}

const CHILD: &str = "TOWERSCOPE_OTEL_TEST_EXPECT_CAPTURE";

/// Runs in a child process (see below) with the environment variable set.
#[test]
fn capture_child() {
    let Ok(expected) = std::env::var(CHILD) else {
        return;
    };
    assert_eq!(TracingMiddleware::new().captures_content(), expected == "true");
    // The builder's setting wins over the variable, both ways.
    assert!(
        !TracingMiddleware::builder()
            .capture_content(false)
            .build()
            .captures_content()
    );
    assert!(
        TracingMiddleware::builder()
            .capture_content(true)
            .build()
            .captures_content()
    );
}

#[test]
fn content_capture_follows_the_environment_variable() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    for (value, expected) in [
        ("true", true),
        ("SPAN_ONLY", true),
        ("span_and_event", true),
        ("false", false),
        ("NO_CONTENT", false),
        ("EVENT_ONLY", false),
    ] {
        let output = Command::new(std::env::current_exe().unwrap())
            .args(["capture_child", "--exact", "--test-threads=1"])
            .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value)
            .env(CHILD, expected.to_string())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{value}: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.contains("1 passed"), "{value}: the child ran no test: {stdout}");
    }
    if std::env::var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT").is_err() {
        assert!(
            !TracingMiddleware::new().captures_content(),
            "off when the variable is unset"
        );
    }
}
