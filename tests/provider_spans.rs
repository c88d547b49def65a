//! What the providers tell tracing reaches the `chat` span: the provider name, the server
//! address, the response id and model, the finish reason and the usage (cache tokens included),
//! for a stream replayed by a loopback server.
#![allow(clippy::unwrap_used)]

#[path = "../crates/towerscope-models/tests/support/mod.rs"]
mod support;

use std::collections::HashMap;

use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use support::{MockServer, Reply, pieces};
use towerscope::models::anthropic::AnthropicChatModel;
use towerscope::models::openai::OpenAiChatModel;
use towerscope::otel::TracingMiddleware;
use towerscope::prelude::*;

const OPENAI_TEXT: &str = include_str!("../crates/towerscope-models/tests/transcripts/openai_text.sse");
const ANTHROPIC_ANSWER: &str = include_str!("../crates/towerscope-models/tests/transcripts/anthropic_answer.sse");

/// The attributes of the one `chat` span of a reply, as strings.
async fn chat_span(model: impl ChatModel) -> (String, HashMap<String, String>) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let tracing = TracingMiddleware::builder().tracer_provider(&provider).build();
    let agent = Agent::builder("Friday")
        .model(model)
        .on_model_call(tracing.model_call_layer())
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "Bonjour ?")).await.unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let chat = spans.iter().find(|s| s.name.starts_with("chat ")).unwrap();
    let attributes = chat
        .attributes
        .iter()
        .map(|kv| (kv.key.as_str().to_owned(), kv.value.as_str().into_owned()))
        .collect();
    (chat.name.to_string(), attributes)
}

fn assert_attributes(attributes: &HashMap<String, String>, expected: &[(&str, &str)]) {
    for (key, value) in expected {
        assert_eq!(
            attributes.get(*key).map(String::as_str),
            Some(*value),
            "{key} in {attributes:#?}"
        );
    }
}

#[tokio::test]
async fn openai_response_and_usage_reach_the_chat_span() {
    let server = MockServer::start(vec![Reply::sse(pieces(OPENAI_TEXT.as_bytes(), 100))]).await;
    let model = OpenAiChatModel::builder("gpt-4o")
        .base_url(format!("{}/v1", server.base))
        .api_key("sk-test")
        .from_env(false)
        .temperature(0.5)
        .build()
        .unwrap();
    let (name, attributes) = chat_span(model).await;
    assert_eq!(name, "chat gpt-4o");
    assert_attributes(
        &attributes,
        &[
            ("gen_ai.provider.name", "openai"),
            ("server.address", "127.0.0.1"),
            ("gen_ai.request.model", "gpt-4o"),
            ("gen_ai.request.temperature", "0.5"),
            ("gen_ai.response.model", "gpt-4o-2024-08-06"),
            ("gen_ai.response.id", "chatcmpl-AcE7text"),
            ("gen_ai.usage.input_tokens", "42"),
            ("gen_ai.usage.output_tokens", "19"),
            ("gen_ai.usage.cache_read.input_tokens", "32"),
        ],
    );
    assert!(!attributes.values().any(|v| v.contains("sk-test")));
}

#[tokio::test]
async fn anthropic_response_and_usage_reach_the_chat_span() {
    let server = MockServer::start(vec![Reply::sse(pieces(ANTHROPIC_ANSWER.as_bytes(), 100))]).await;
    let model = AnthropicChatModel::builder("claude-sonnet-4-5")
        .base_url(&server.base)
        .api_key("sk-ant-test")
        .from_env(false)
        .max_tokens(512)
        .build()
        .unwrap();
    let (name, attributes) = chat_span(model).await;
    assert_eq!(name, "chat claude-sonnet-4-5");
    assert_attributes(
        &attributes,
        &[
            ("gen_ai.provider.name", "anthropic"),
            ("server.address", "127.0.0.1"),
            ("gen_ai.request.max_tokens", "512"),
            ("gen_ai.response.model", "claude-sonnet-4-5-20250929"),
            ("gen_ai.response.id", "msg_01Answer"),
            ("gen_ai.usage.input_tokens", "1524"),
            ("gen_ai.usage.output_tokens", "15"),
            ("gen_ai.usage.cache_creation.input_tokens", "1489"),
        ],
    );
}
