//! The span tree and every attribute of a reply, with content capture off and on; errors; model
//! answers whole and streamed. Every test passes its own provider to the middleware, so the tests
//! of this binary never share a tracer.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use opentelemetry::Value;
use opentelemetry::trace::{SpanKind, Status};
use serde_json::json;
use support::*;
use towerscope_agent::Agent;
use towerscope_core::{
    AgentError, ChatModel, ChatResponse, ChatUsage, ContentBlock, GenerationParams, ModelCallRequest, ModelFuture,
    ModelOutput, Msg,
};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_otel::TracingMiddleware;

fn params() -> GenerationParams {
    let mut params = GenerationParams::new()
        .temperature(0.2)
        .max_tokens(256)
        .top_p(0.9)
        .seed(7);
    params.top_k = Some(40);
    params.presence_penalty = Some(0.5);
    params.frequency_penalty = Some(0.25);
    params.stop_sequences = vec!["END".into()];
    params
}

fn calculator(tracing: TracingMiddleware) -> Agent {
    let model = ScriptedModel::new(
        "gpt-test",
        [
            ScriptedResponse::thinking("I add.")
                .and_tool_call(
                    "call-1",
                    "add",
                    r#"{"a": 2, "b": 3, "api_key": "sk-abcdefghijklmnopqrstuvwx"}"#,
                )
                .with_usage(100, 20),
            ScriptedResponse::text("2 + 3 = 5").with_usage(130, 8),
        ],
    )
    .provider_name("openai")
    .parameters(params());
    // Without runtime-state hints: the spans' input messages are the conversation itself (a
    // hint-only assistant message would show as `"parts": []`, as in the reference).
    Agent::builder("calculator")
        .system_prompt("You add numbers.")
        .model(model)
        .tool(add_tool())
        .middleware(tracing)
        .hints(towerscope_agent::HintConfig::disabled())
        .build()
        .unwrap()
}

#[tokio::test]
async fn span_tree_and_attributes_without_content() {
    let (provider, exporter) = in_memory();
    let agent = calculator(
        TracingMiddleware::builder()
            .tracer_provider(&provider)
            .capture_content(false)
            .build(),
    );
    let reply = collect(agent.reply_stream(Msg::user("user", "2 + 3? my key is sk-abcdefghijklmnopqrstuvwx"))).await;
    assert!(reply.error.is_none(), "{:?}", reply.error);
    let final_msg = reply.final_msg.unwrap();

    let spans = spans(&exporter);
    assert_eq!(
        names(&spans),
        [
            "chat gpt-test",
            "execute_tool add",
            "chat gpt-test",
            "invoke_agent calculator"
        ]
    );
    let root = one(&spans, "invoke_agent calculator");
    assert!(is_root(root));
    assert!(spans[..3].iter().all(|s| is_child_of(s, root)));
    assert_eq!(root.span_kind, SpanKind::Internal);
    assert!(spans.iter().all(|s| s.status == Status::Ok), "{spans:?}");

    // invoke_agent
    assert_eq!(str_attr(root, "gen_ai.operation.name").as_deref(), Some("invoke_agent"));
    assert_eq!(str_attr(root, "gen_ai.agent.name").as_deref(), Some("calculator"));
    assert_eq!(str_attr(root, "gen_ai.provider.name").as_deref(), Some("openai"));
    assert_eq!(
        str_attr(root, "gen_ai.agent.description").as_deref(),
        Some("No description available")
    );
    assert_eq!(
        str_attr(root, "gen_ai.conversation.id"),
        Some(agent.session_id().to_string())
    );
    assert_eq!(
        str_attr(root, "agentscope.agent.reply_id"),
        Some(final_msg.id.to_string())
    );
    assert_eq!(
        attr(root, "gen_ai.response.finish_reasons"),
        Some(string_array(&["completed"]))
    );
    assert_eq!(int_attr(root, "gen_ai.usage.input_tokens"), Some(230));
    assert_eq!(int_attr(root, "gen_ai.usage.output_tokens"), Some(28));
    for absent in [
        "agentscope.agent.hitl_pending_tools",
        "agentscope.agent.external_execution_pending_tools",
        "agentscope.agent.incoming_event_type",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "error.type",
    ] {
        assert_eq!(attr(root, absent), None, "{absent}");
    }

    // chat
    let chats = named(&spans, "chat gpt-test");
    for chat in &chats {
        assert_eq!(chat.span_kind, SpanKind::Client);
        assert_eq!(str_attr(chat, "gen_ai.operation.name").as_deref(), Some("chat"));
        assert_eq!(str_attr(chat, "gen_ai.provider.name").as_deref(), Some("openai"));
        assert_eq!(str_attr(chat, "gen_ai.request.model").as_deref(), Some("gpt-test"));
        assert_eq!(
            str_attr(chat, "gen_ai.conversation.id"),
            Some(agent.session_id().to_string())
        );
        assert_eq!(attr(chat, "gen_ai.request.temperature"), Some(Value::F64(0.2)));
        assert_eq!(attr(chat, "gen_ai.request.top_p"), Some(Value::F64(0.9)));
        assert_eq!(attr(chat, "gen_ai.request.presence_penalty"), Some(Value::F64(0.5)));
        assert_eq!(attr(chat, "gen_ai.request.frequency_penalty"), Some(Value::F64(0.25)));
        assert_eq!(int_attr(chat, "gen_ai.request.top_k"), Some(40));
        assert_eq!(int_attr(chat, "gen_ai.request.max_tokens"), Some(256));
        assert_eq!(int_attr(chat, "gen_ai.request.seed"), Some(7));
        assert_eq!(
            attr(chat, "gen_ai.request.stop_sequences"),
            Some(string_array(&["END"]))
        );
        assert_eq!(attr(chat, "gen_ai.request.stream"), Some(Value::Bool(true)));
        assert!(matches!(attr(chat, "gen_ai.response.time_to_first_chunk"), Some(Value::F64(s)) if s >= 0.0));
        assert!(str_attr(chat, "gen_ai.response.id").is_some_and(|id| !id.is_empty()));
        for absent in [
            "server.address",
            "gen_ai.response.model",
            "gen_ai.usage.cache_read.input_tokens",
            "gen_ai.usage.cache_creation.input_tokens",
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.system_instructions",
            "gen_ai.tool.definitions",
        ] {
            assert_eq!(attr(chat, absent), None, "{absent}");
        }
    }
    assert_eq!(
        attr(chats[0], "gen_ai.response.finish_reasons"),
        Some(string_array(&["tool_call"]))
    );
    assert_eq!(
        attr(chats[1], "gen_ai.response.finish_reasons"),
        Some(string_array(&["stop"]))
    );
    assert_eq!(int_attr(chats[0], "gen_ai.usage.input_tokens"), Some(100));
    assert_eq!(int_attr(chats[0], "gen_ai.usage.output_tokens"), Some(20));
    assert_eq!(int_attr(chats[1], "gen_ai.usage.input_tokens"), Some(130));

    // execute_tool
    let tool = one(&spans, "execute_tool add");
    assert_eq!(tool.span_kind, SpanKind::Internal);
    assert_eq!(str_attr(tool, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
    assert_eq!(str_attr(tool, "gen_ai.tool.name").as_deref(), Some("add"));
    assert_eq!(str_attr(tool, "gen_ai.tool.call.id").as_deref(), Some("call-1"));
    assert_eq!(
        str_attr(tool, "gen_ai.tool.description").as_deref(),
        Some("Add two numbers.")
    );
    assert_eq!(str_attr(tool, "gen_ai.tool.type").as_deref(), Some("function"));
    assert_eq!(
        str_attr(tool, "gen_ai.conversation.id"),
        Some(agent.session_id().to_string())
    );
    assert_eq!(attr(tool, "gen_ai.tool.call.arguments"), None);
    assert_eq!(attr(tool, "gen_ai.tool.call.result"), None);

    // The instrumentation scope.
    assert_eq!(root.instrumentation_scope.name(), "towerscope");
}

#[tokio::test]
async fn content_capture_records_messages_with_credentials_redacted() {
    let (provider, exporter) = in_memory();
    let agent = calculator(
        TracingMiddleware::builder()
            .tracer_provider(&provider)
            .capture_content(true)
            .build(),
    );
    let reply = collect(agent.reply_stream(Msg::user("user", "2 + 3? my key is sk-abcdefghijklmnopqrstuvwx"))).await;
    assert!(reply.error.is_none());

    let spans = spans(&exporter);
    let root = one(&spans, "invoke_agent calculator");
    assert_eq!(
        json_attr(root, "gen_ai.input.messages"),
        json!([{"role": "user", "name": "user", "parts": [{"type": "text", "content": "2 + 3? my key is [REDACTED]"}]}])
    );
    assert_eq!(
        json_attr(root, "gen_ai.output.messages"),
        json!([{"role": "assistant", "name": "calculator", "finish_reason": "completed",
                "parts": [{"type": "text", "content": "2 + 3 = 5"}]}])
    );

    let chats = named(&spans, "chat gpt-test");
    assert_eq!(
        json_attr(chats[0], "gen_ai.system_instructions"),
        json!([{"type": "text", "content": "You add numbers."}])
    );
    assert_eq!(
        json_attr(chats[0], "gen_ai.input.messages"),
        json!([{"role": "user", "name": "user", "parts": [{"type": "text", "content": "2 + 3? my key is [REDACTED]"}]}])
    );
    let definitions = json_attr(chats[0], "gen_ai.tool.definitions");
    assert_eq!(definitions[0]["type"], "function");
    assert_eq!(definitions[0]["name"], "add");
    assert_eq!(definitions[0]["description"], "Add two numbers.");
    assert_eq!(definitions[0]["parameters"]["type"], "object");
    assert_eq!(
        json_attr(chats[0], "gen_ai.output.messages"),
        json!([{"role": "assistant", "finish_reason": "tool_call", "parts": [
            {"type": "reasoning", "content": "I add."},
            {"type": "tool_call", "id": "call-1", "name": "add", "arguments": {"a": 2, "b": 3, "api_key": "[REDACTED]"}},
        ]}])
    );
    // The second call sees the whole conversation: the tool call and its result in the reply.
    let second_input = json_attr(chats[1], "gen_ai.input.messages");
    assert_eq!(second_input[1]["role"], "assistant");
    let parts = second_input[1]["parts"].as_array().unwrap();
    assert!(
        parts.contains(&json!({"type": "tool_call_response", "id": "call-1", "response": "5"})),
        "{parts:?}"
    );

    let tool = one(&spans, "execute_tool add");
    let arguments: serde_json::Value =
        serde_json::from_str(&str_attr(tool, "gen_ai.tool.call.arguments").unwrap()).unwrap();
    assert_eq!(arguments, json!({"a": 2, "b": 3, "api_key": "[REDACTED]"}));
    assert_eq!(str_attr(tool, "gen_ai.tool.call.result").as_deref(), Some("5"));

    let everything = format!("{spans:?}");
    assert!(
        !everything.contains("sk-abcdefghijklmnopqrstuvwx"),
        "a credential was recorded"
    );
}

/// A model answering whole, with a provider-reported model name, cache counters and a host.
#[derive(Debug)]
struct HostedModel;

impl ChatModel for HostedModel {
    fn model_name(&self) -> &str {
        "claude-test"
    }

    fn provider(&self) -> &str {
        "anthropic"
    }

    fn server_address(&self) -> Option<&str> {
        Some("api.anthropic.example")
    }

    fn server_port(&self) -> Option<u16> {
        Some(8443)
    }

    fn call(&self, _request: ModelCallRequest) -> ModelFuture {
        let mut usage = ChatUsage::new(50, 5);
        usage.cache_input_tokens = 30;
        usage.cache_creation_input_tokens = 10;
        let mut response = ChatResponse::new(vec![ContentBlock::text("Hello")]).with_usage(usage);
        response
            .metadata
            .insert("model".into(), "claude-test-2026-01-01".into());
        Box::pin(std::future::ready(Ok(ModelOutput::Complete(response))))
    }
}

#[tokio::test]
async fn whole_answers_record_response_model_cache_tokens_and_host() {
    let (provider, exporter) = in_memory();
    let agent = Agent::builder("host")
        .model(HostedModel)
        .middleware(
            TracingMiddleware::builder()
                .tracer_provider(&provider)
                .agent_description("Says hello")
                .build(),
        )
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hi")).await.unwrap();

    let spans = spans(&exporter);
    let chat = one(&spans, "chat claude-test");
    assert_eq!(attr(chat, "gen_ai.request.stream"), Some(Value::Bool(false)));
    assert_eq!(attr(chat, "gen_ai.response.time_to_first_chunk"), None);
    assert_eq!(
        str_attr(chat, "gen_ai.response.model").as_deref(),
        Some("claude-test-2026-01-01")
    );
    assert_eq!(
        str_attr(chat, "server.address").as_deref(),
        Some("api.anthropic.example")
    );
    assert_eq!(int_attr(chat, "server.port"), Some(8443), "the port beside the host");
    assert_eq!(str_attr(chat, "gen_ai.provider.name").as_deref(), Some("anthropic"));
    assert_eq!(int_attr(chat, "gen_ai.usage.cache_read.input_tokens"), Some(30));
    assert_eq!(int_attr(chat, "gen_ai.usage.cache_creation.input_tokens"), Some(10));
    assert_eq!(
        attr(chat, "gen_ai.request.temperature"),
        None,
        "unset parameters are left out"
    );
    let root = one(&spans, "invoke_agent host");
    assert_eq!(
        str_attr(root, "gen_ai.agent.description").as_deref(),
        Some("Says hello")
    );
    assert_eq!(
        str_attr(root, "gen_ai.provider.name").as_deref(),
        Some("anthropic"),
        "the invoke_agent span names the provider of the agent's model"
    );
}

/// A model whose answer was cut at its token limit, as the provider decoders report it.
#[derive(Debug)]
struct TruncatingModel;

impl ChatModel for TruncatingModel {
    fn model_name(&self) -> &str {
        "gpt-test"
    }

    fn call(&self, _request: ModelCallRequest) -> ModelFuture {
        let mut response = ChatResponse::new(vec![ContentBlock::text("The answer was cut sh")]);
        response.metadata.insert("finish_reason".into(), "length".into());
        response
            .metadata
            .insert("provider_finish_reason".into(), "max_tokens".into());
        Box::pin(std::future::ready(Ok(ModelOutput::Complete(response))))
    }
}

#[tokio::test]
async fn the_providers_finish_reason_is_recorded() {
    let (provider, exporter) = in_memory();
    let agent = Agent::builder("writer")
        .model(TruncatingModel)
        .middleware(
            TracingMiddleware::builder()
                .tracer_provider(&provider)
                .capture_content(true)
                .build(),
        )
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "Write a long story")).await.unwrap();

    let spans = spans(&exporter);
    let chat = one(&spans, "chat gpt-test");
    assert_eq!(
        attr(chat, "gen_ai.response.finish_reasons"),
        Some(string_array(&["length"]))
    );
    assert_eq!(
        json_attr(chat, "gen_ai.output.messages")[0]["finish_reason"],
        json!("length")
    );
}

fn failing_model_agent(tracing: TracingMiddleware) -> Agent {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::error(AgentError::model(
            "provider refused: Authorization: Bearer sk-abcdefghijklmnopqrstuvwx",
        ))],
    );
    Agent::builder("a").model(model).middleware(tracing).build().unwrap()
}

#[tokio::test]
async fn a_model_error_fails_the_chat_and_the_reply_without_its_message() {
    let (provider, exporter) = in_memory();
    let agent = failing_model_agent(TracingMiddleware::builder().tracer_provider(&provider).build());
    let reply = collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    assert!(matches!(reply.error, Some(AgentError::Model { .. })));

    let spans = spans(&exporter);
    for span in [one(&spans, "chat m"), one(&spans, "invoke_agent a")] {
        assert_eq!(
            str_attr(span, "error.type").as_deref(),
            Some("model_error"),
            "{}",
            span.name
        );
        let description = error_description(span).unwrap();
        assert_eq!(
            description, "model error; message not recorded: content capture is off",
            "{}",
            span.name
        );
        assert_eq!(exception(span).unwrap(), ("model_error".to_owned(), description));
    }
    let everything = format!("{spans:?}");
    assert!(
        !everything.contains("provider refused"),
        "a provider's message was recorded without content capture"
    );
}

#[tokio::test]
async fn a_model_error_message_is_recorded_redacted_with_content_capture() {
    let (provider, exporter) = in_memory();
    let agent = failing_model_agent(
        TracingMiddleware::builder()
            .tracer_provider(&provider)
            .capture_content(true)
            .build(),
    );
    let reply = collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    assert!(matches!(reply.error, Some(AgentError::Model { .. })));

    let spans = spans(&exporter);
    for span in [one(&spans, "chat m"), one(&spans, "invoke_agent a")] {
        assert_eq!(
            str_attr(span, "error.type").as_deref(),
            Some("model_error"),
            "{}",
            span.name
        );
        let description = error_description(span).unwrap();
        assert!(description.contains("provider refused"), "{description}");
        assert!(!description.contains("sk-abc"), "{description}");
        let (kind, message) = exception(span).unwrap();
        assert_eq!(kind, "model_error");
        assert!(message.contains("Bearer [REDACTED]"), "{message}");
    }
}

#[tokio::test]
async fn a_stream_breaking_midway_fails_the_chat_span() {
    let (provider, exporter) = in_memory();
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::text("one two three").fail_mid_stream(1, AgentError::Stream("connection reset".into()))],
    );
    let agent = Agent::builder("a")
        .model(model)
        .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
        .build()
        .unwrap();
    let reply = collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    assert!(reply.error.is_some());

    let spans = spans(&exporter);
    let chat = one(&spans, "chat m");
    assert_eq!(str_attr(chat, "error.type").as_deref(), Some("stream_error"));
    assert!(attr(chat, "gen_ai.response.time_to_first_chunk").is_some());
    assert_eq!(attr(chat, "gen_ai.response.finish_reasons"), None);
    assert!(error_description(one(&spans, "invoke_agent a")).is_some());
}

#[tokio::test]
async fn a_stream_without_its_final_chunk_fails_the_chat_span() {
    let (provider, exporter) = in_memory();
    let model = ScriptedModel::new("m", [ScriptedResponse::text("one two").without_final_chunk()]);
    let agent = Agent::builder("a")
        .model(model)
        .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
        .build()
        .unwrap();
    let reply = collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    assert!(matches!(reply.error, Some(AgentError::Stream(_))));
    let spans = spans(&exporter);
    assert_eq!(
        str_attr(one(&spans, "chat m"), "error.type").as_deref(),
        Some("stream_error")
    );
    assert_eq!(
        str_attr(one(&spans, "invoke_agent a"), "error.type").as_deref(),
        Some("stream_error")
    );
}

/// A layer inside the tracing rejects the model's answer after its final chunk (the agent reads
/// the stream to its end, and the reply fails): the chat span records the answer's usage and
/// fails, rather than ending OK at the final chunk.
#[tokio::test]
async fn an_answer_a_layer_rejects_after_its_final_chunk_fails_the_chat_span() {
    use futures_util::StreamExt;

    let (provider, exporter) = in_memory();
    let guardrail = towerscope_core::from_fn(
        |req: ModelCallRequest, next: towerscope_core::Next<ModelCallRequest, ModelOutput>| async move {
            match next.run(req).await? {
                ModelOutput::Stream(inner) => {
                    let verdict = futures_util::stream::once(async { Err(AgentError::validation("broke a rule")) });
                    Ok(ModelOutput::Stream(Box::pin(inner.chain(verdict))))
                }
                complete => Ok(complete),
            }
        },
    );
    let agent = Agent::builder("a")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("forbidden words")]).streaming(true))
        .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
        .on_model_call(guardrail)
        .build()
        .unwrap();
    let reply = collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    assert!(
        matches!(reply.error, Some(AgentError::Validation(_))),
        "{:?}",
        reply.error
    );

    let spans = spans(&exporter);
    let chat = one(&spans, "chat m");
    assert!(!is_ok(chat), "{chat:?}");
    assert_eq!(str_attr(chat, "error.type").as_deref(), Some("validation_error"));
    assert!(
        attr(chat, "gen_ai.response.finish_reasons").is_some(),
        "the answer arrived"
    );
}

/// A layer inside the tracing runs its `call` (the body of a `from_fn` closure) under the
/// model call's chat span, as its future does: a span it starts there is the chat span's child.
#[tokio::test]
async fn an_inner_model_call_layer_runs_under_the_chat_span() {
    use opentelemetry::trace::TraceContextExt;

    let (provider, exporter) = in_memory();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let probe = {
        let seen = Arc::clone(&seen);
        towerscope_core::from_fn(
            move |req: ModelCallRequest, next: towerscope_core::Next<ModelCallRequest, ModelOutput>| {
                let current = opentelemetry::Context::current().span().span_context().span_id();
                seen.lock().unwrap().push(current);
                next.run(req)
            },
        )
    };
    let agent = Agent::builder("a")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("hi")]))
        .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
        .on_model_call(probe)
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hi")).await.unwrap();
    let spans = spans(&exporter);
    let chat = one(&spans, "chat m").span_context.span_id();
    assert_eq!(*seen.lock().unwrap(), [chat]);
}

/// An agent that calls `add` once, then answers, traced by `tracing`; a layer installed on
/// `on_acting` next is inside the tracing.
fn adding_agent(tracing: TracingMiddleware) -> towerscope_agent::AgentBuilder {
    adding_agent_with(add_tool(), tracing)
}

/// An agent that calls `add` (which `tool` is) once, then answers "3".
fn adding_agent_with(
    tool: towerscope_agent::toolkit::FunctionTool,
    tracing: TracingMiddleware,
) -> towerscope_agent::AgentBuilder {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
            ScriptedResponse::text("3"),
        ],
    );
    Agent::builder("a").model(model).tool(tool).middleware(tracing)
}

/// A layer inside the tracing rejects a tool's result after its response (the agent reads the
/// stream to its end and turns the error into the call's result): the execute_tool span fails.
#[tokio::test]
async fn a_result_a_layer_rejects_after_the_response_fails_the_tool_span() {
    use futures_util::StreamExt;

    let (provider, exporter) = in_memory();
    let guard = towerscope_core::from_fn(
        |req: towerscope_core::ActingRequest, next: towerscope_core::ActingNext| async move {
            let inner = next.run(req).await?;
            let verdict = futures_util::stream::once(async { Err(AgentError::validation("result rejected")) });
            Ok(Box::pin(inner.chain(verdict)) as towerscope_core::ToolStream)
        },
    );
    let tracing = TracingMiddleware::builder().tracer_provider(&provider).build();
    let agent = adding_agent(tracing).on_acting(guard).build().unwrap();
    agent.reply(Msg::user("user", "1 + 2?")).await.unwrap();
    let spans = spans(&exporter);
    let tool = one(&spans, "execute_tool add");
    assert_eq!(
        str_attr(tool, "error.type").as_deref(),
        Some("validation_error"),
        "{tool:?}"
    );
}

/// The user interrupts the reply while a layer inside the tracing still waits before calling
/// the tool: the execute_tool span ends as interrupted (OK), not as a cancelled call.
#[tokio::test(start_paused = true)]
async fn a_tool_interrupted_before_its_stack_answers_ends_ok() {
    let (provider, exporter) = in_memory();
    let slow = towerscope_core::from_fn(
        |req: towerscope_core::ActingRequest, next: towerscope_core::ActingNext| async move {
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            next.run(req).await
        },
    );
    let tracing = TracingMiddleware::builder().tracer_provider(&provider).build();
    let agent = adding_agent(tracing).on_acting(slow).build().unwrap();
    let reply = tokio::spawn(collect(agent.reply_stream(Msg::user("user", "1 + 2?"))));
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert!(agent.interrupt(), "the reply runs");
    let reply = reply.await.unwrap();
    assert!(reply.error.is_none(), "{:?}", reply.error);
    let spans = spans(&exporter);
    let tool = one(&spans, "execute_tool add");
    assert!(is_ok(tool), "{tool:?}");
    assert_eq!(str_attr(tool, "error.type"), None);
}

/// The reply ends with the panic as a middleware error, and both its spans record that error
/// (not a cancelled call).
async fn assert_the_panic_fails_both_spans(agent: &Agent, exporter: &opentelemetry_sdk::trace::InMemorySpanExporter) {
    let reply = collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    assert!(
        matches!(reply.error, Some(AgentError::Middleware(_))),
        "{:?}",
        reply.error
    );
    let spans = spans(exporter);
    for name in ["chat m", "invoke_agent a"] {
        let span = one(&spans, name);
        assert_eq!(
            str_attr(span, "error.type").as_deref(),
            Some("middleware_error"),
            "{name}: {span:?}"
        );
    }
}

/// A model whose stream panics when polled (a provider decoder meeting unexpected JSON).
#[derive(Debug)]
struct PanickingModel;

impl ChatModel for PanickingModel {
    fn model_name(&self) -> &str {
        "m"
    }

    fn call(&self, _request: ModelCallRequest) -> ModelFuture {
        let stream = futures_util::stream::poll_fn(|_| -> std::task::Poll<Option<Result<ChatResponse, AgentError>>> {
            panic!("unexpected JSON")
        });
        Box::pin(std::future::ready(Ok(ModelOutput::Stream(Box::pin(stream)))))
    }
}

/// The model's stream panics: the reply ends with the panic as a middleware error, and the
/// chat and invoke_agent spans record that failure, not a cancelled call.
#[tokio::test]
async fn a_panicking_model_stream_fails_the_spans_as_the_reply_fails() {
    let (provider, exporter) = in_memory();
    let agent = Agent::builder("a")
        .model(PanickingModel)
        .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
        .build()
        .unwrap();
    assert_the_panic_fails_both_spans(&agent, &exporter).await;
}

/// An `on_reply` layer below the tracing panics before it answers with the reply's stream:
/// the reply fails with the panic as a middleware error, and its span records that error.
#[tokio::test]
async fn an_on_reply_layer_panicking_as_it_opens_the_reply_fails_its_span() {
    let (provider, exporter) = in_memory();
    let panicking = towerscope_core::from_fn(
        |_req: towerscope_core::ReplyRequest,
         _next: towerscope_core::Next<towerscope_core::ReplyRequest, towerscope_core::EventStream>| async move {
            if true {
                panic!("a bug in a layer");
            }
            Err::<towerscope_core::EventStream, AgentError>(AgentError::model("unreachable"))
        },
    );
    let agent = Agent::builder("a")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("hi")]))
        .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
        .on_reply(panicking)
        .build()
        .unwrap();
    let reply = collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    assert!(
        matches!(reply.error, Some(AgentError::Middleware(_))),
        "{:?}",
        reply.error
    );
    let spans = spans(&exporter);
    let root = one(&spans, "invoke_agent a");
    assert_eq!(
        str_attr(root, "error.type").as_deref(),
        Some("middleware_error"),
        "{root:?}"
    );
}

/// A layer below the tracing panics before it calls the model (in the future that opens the
/// call, not in a stream): the chat span records the failure the reply records.
#[tokio::test]
async fn a_layer_panicking_as_it_opens_the_model_call_fails_the_chat_span() {
    let (provider, exporter) = in_memory();
    let panicking = towerscope_core::from_fn(
        |_req: ModelCallRequest, _next: towerscope_core::Next<ModelCallRequest, ModelOutput>| async move {
            if true {
                panic!("a bug in a layer");
            }
            Err::<ModelOutput, AgentError>(AgentError::model("unreachable"))
        },
    );
    let agent = Agent::builder("a")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("hi")]))
        .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
        .on_model_call(panicking)
        .build()
        .unwrap();
    assert_the_panic_fails_both_spans(&agent, &exporter).await;
}

/// An agent whose `explode` tool fails with an error text holding content and a password.
fn exploding_agent(tracing: TracingMiddleware) -> Agent {
    let failing = towerscope_agent::toolkit::FunctionTool::new("explode", |_: Add| async move {
        Err::<String, _>(towerscope_agent::toolkit::ToolError::new(
            "the tool blew up on the customer's file; password=hunter2",
        ))
    });
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "explode", r#"{"a": 1, "b": 2}"#),
            ScriptedResponse::text("sorry"),
        ],
    );
    Agent::builder("a")
        .model(model)
        .tool(failing)
        .middleware(tracing)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_failing_tool_fails_its_span_only() {
    let (provider, exporter) = in_memory();
    let agent = exploding_agent(
        TracingMiddleware::builder()
            .tracer_provider(&provider)
            .capture_content(true)
            .build(),
    );
    agent.reply(Msg::user("user", "go")).await.unwrap();
    let spans = spans(&exporter);
    let tool = one(&spans, "execute_tool explode");
    assert_eq!(str_attr(tool, "error.type").as_deref(), Some("tool_error"));
    let description = error_description(tool).unwrap();
    assert!(description.contains("the tool blew up"), "{description}");
    assert!(description.contains("password=[REDACTED]"), "{description}");
    assert!(is_ok(one(&spans, "invoke_agent a")));
}

#[tokio::test]
async fn a_tool_error_text_is_not_recorded_without_content_capture() {
    let (provider, exporter) = in_memory();
    let agent = exploding_agent(TracingMiddleware::builder().tracer_provider(&provider).build());
    agent.reply(Msg::user("user", "go")).await.unwrap();
    let spans = spans(&exporter);
    let tool = one(&spans, "execute_tool explode");
    assert_eq!(str_attr(tool, "error.type").as_deref(), Some("tool_error"));
    let description = error_description(tool).unwrap();
    assert_eq!(
        description,
        "the tool returned an error; message not recorded: content capture is off"
    );
    assert_eq!(exception(tool).unwrap(), ("tool_error".to_owned(), description));
    let everything = format!("{spans:?}");
    assert!(
        !everything.contains("blew up") && !everything.contains("hunter2"),
        "a tool's error text was recorded without content capture"
    );
}

#[tokio::test]
async fn no_provider_given_to_the_builder_means_no_current_span() {
    // No provider given and none installed for the process (this binary never installs one):
    // nothing is recorded, and the layers attach no span (a non-recording one included), so a
    // layer inside sees none. (`global.rs` checks that such a middleware records nothing, and
    // records once a provider is installed for the process.)
    let saw_span = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = Arc::clone(&saw_span);
    let probe = towerscope_core::from_fn(
        move |req: ModelCallRequest, next: towerscope_core::Next<ModelCallRequest, ModelOutput>| {
            use opentelemetry::trace::TraceContextExt;
            if opentelemetry::Context::current().has_active_span() {
                seen.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            next.run(req)
        },
    );
    let agent = Agent::builder("a")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("hi")]))
        .middleware(TracingMiddleware::builder().capture_content(true).build())
        .on_model_call(probe)
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hi")).await.unwrap();
    assert!(!saw_span.load(std::sync::atomic::Ordering::Relaxed));
}

/// A layer whose service panics in `call` itself (before it returns a future).
#[derive(Clone)]
struct PanicsInCall;

impl<S> tower::Layer<S> for PanicsInCall {
    type Service = PanicsInCallService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        PanicsInCallService(inner)
    }
}

#[derive(Clone)]
struct PanicsInCallService<S>(S);

impl<S: tower::Service<R>, R> tower::Service<R> for PanicsInCallService<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, _req: R) -> Self::Future {
        panic!("a bug in a layer's call")
    }
}

/// A layer below the tracing panics in its synchronous `call` on `on_model_call`, `on_acting`
/// and `on_reply`: each span records the panic as the reply does (a middleware error), not as a
/// cancelled call.
#[tokio::test]
async fn a_layer_panicking_in_its_call_fails_the_spans() {
    let (provider, exporter) = in_memory();
    let agent = Agent::builder("a")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("hi")]))
        .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
        .on_model_call(PanicsInCall)
        .build()
        .unwrap();
    assert_the_panic_fails_both_spans(&agent, &exporter).await;

    let (provider, exporter) = in_memory();
    let add = towerscope_agent::toolkit::FunctionTool::new("add", |a: Add| async move {
        Ok::<_, towerscope_agent::toolkit::ToolError>((a.a + a.b).to_string())
    });
    let tracing = TracingMiddleware::builder().tracer_provider(&provider).build();
    let agent = adding_agent_with(add, tracing).on_acting(PanicsInCall).build().unwrap();
    let _ = collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    let recorded = spans(&exporter);
    let tool = one(&recorded, "execute_tool add");
    assert_eq!(
        str_attr(tool, "error.type").as_deref(),
        Some("middleware_error"),
        "{tool:?}"
    );

    let (provider, exporter) = in_memory();
    let agent = Agent::builder("a")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("hi")]))
        .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
        .on_reply(PanicsInCall)
        .build()
        .unwrap();
    let reply = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(collect(
        agent.reply_stream(Msg::user("user", "hi")),
    )))
    .await;
    let spans = spans(&exporter);
    let root = one(&spans, "invoke_agent a");
    assert_eq!(
        str_attr(root, "error.type").as_deref(),
        Some("middleware_error"),
        "{root:?} ({:?})",
        reply.as_ref().map(|r| &r.error)
    );
}

/// A tool describing itself with an internal URL and a token: the description is recorded
/// redacted, capture off (the same description in the tool definitions already was).
#[tokio::test]
async fn a_tool_description_is_recorded_redacted() {
    let (provider, exporter) = in_memory();
    let tool = add_tool().description("Adds, at https://svc:hunter2@calc.internal with Bearer abc.def.ghi");
    let tracing = TracingMiddleware::builder()
        .tracer_provider(&provider)
        .agent_description("Reads https://bot:s3cret@wiki.internal/api")
        .build();
    let agent = adding_agent_with(tool, tracing).build().unwrap();
    agent.reply(Msg::user("user", "1 + 2?")).await.unwrap();
    let spans = spans(&exporter);
    let everything = format!("{spans:?}");
    for secret in ["hunter2", "abc.def.ghi", "s3cret"] {
        assert!(!everything.contains(secret), "{secret} was recorded");
    }
    let tool = one(&spans, "execute_tool add");
    assert!(
        str_attr(tool, "gen_ai.tool.description")
            .unwrap()
            .starts_with("Adds, at ")
    );
}

/// The spans of one reply, with content capture on, in which the model calls the tool `name`
/// `calls` times, each answering `result`, then says "done".
async fn captured_tool_rounds(
    name: &'static str,
    result: String,
    calls: usize,
) -> Vec<opentelemetry_sdk::trace::SpanData> {
    let (provider, exporter) = in_memory();
    let tool = towerscope_agent::toolkit::FunctionTool::new(name, move |_: serde_json::Value| {
        let result = result.clone();
        async move { result }
    });
    let mut script: Vec<_> = (0..calls)
        .map(|i| ScriptedResponse::tool_call(format!("c{i}"), name, "{}"))
        .collect();
    script.push(ScriptedResponse::text("done"));
    let agent = Agent::builder("a")
        .model(ScriptedModel::new("m", script))
        .tool(tool)
        .max_iters(u32::try_from(calls).unwrap() + 1)
        .middleware(
            TracingMiddleware::builder()
                .tracer_provider(&provider)
                .capture_content(true)
                .build(),
        )
        .hints(towerscope_agent::HintConfig::disabled())
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "go")).await.unwrap();
    spans(&exporter)
}

/// With content capture on, a 10 MB tool result is cut at 64 KiB in its span and in the next
/// model call's input, saying how much was left out.
#[tokio::test]
async fn a_huge_captured_value_is_cut() {
    let spans = captured_tool_rounds("big", "x".repeat(10_000_000), 1).await;
    let result = str_attr(one(&spans, "execute_tool big"), "gen_ai.tool.call.result").unwrap();
    let limit = towerscope_otel::MAX_CAPTURED_VALUE_BYTES;
    assert!(result.len() < limit + 64, "{} bytes", result.len());
    assert!(
        result.ends_with(&format!("…[{} bytes cut]", 10_000_000 - limit)),
        "{}",
        &result[limit - 8..]
    );
    let chats = named(&spans, "chat m");
    let input = str_attr(chats[1], "gen_ai.input.messages").unwrap();
    assert!(input.len() < limit + 1024, "{} bytes", input.len());
    assert!(input.contains("bytes cut]"));
}

/// A long conversation's chat spans each keep its newest messages within the budget, after a
/// note of how many older ones were left out, and the whole stays valid JSON: forty tool
/// results of 60 KB made the last chat span carry 2.4 MB, and the reply's spans 49 MB.
#[tokio::test]
async fn a_long_conversation_is_captured_newest_first_within_a_budget() {
    let spans = captured_tool_rounds("fetch", "lorem ipsum ".repeat(5_000), 40).await;
    let chats = named(&spans, "chat m");
    assert_eq!(chats.len(), 41);
    let budget = towerscope_otel::MAX_CAPTURED_MESSAGES_BYTES;
    let mut total = 0;
    for chat in &chats {
        let input = str_attr(chat, "gen_ai.input.messages").unwrap();
        assert!(input.len() <= budget + 1024, "{} bytes", input.len());
        serde_json::from_str::<serde_json::Value>(&input).unwrap();
        total += input.len();
    }
    assert!(total < 41 * (budget + 1024), "{total}");
    let last: serde_json::Value = serde_json::from_str(&str_attr(chats[40], "gen_ai.input.messages").unwrap()).unwrap();
    let messages = last.as_array().unwrap();
    let note = messages[0]["parts"][0]["content"].as_str().unwrap();
    assert!(note.starts_with("…[not recorded: "), "{note}");
    // The newest message is the last tool result, in full.
    let newest = messages.last().unwrap().to_string();
    assert!(newest.contains("c39"), "{}", &newest[..200.min(newest.len())]);
    // The first chat span had room for everything: no note.
    let first: serde_json::Value = serde_json::from_str(&str_attr(chats[0], "gen_ai.input.messages").unwrap()).unwrap();
    assert_eq!(first[0]["role"], "user");
}

/// A tool's JSON result whose sensitive keys hold objects and arrays is redacted on the tool's
/// span and in the next chat's input messages, as tool arguments are; read as text, those
/// values were recorded whole.
#[tokio::test]
async fn a_json_tool_result_is_redacted_as_json() {
    let (provider, exporter) = in_memory();
    let login = towerscope_agent::toolkit::FunctionTool::new("login", |_: serde_json::Value| async move {
        r#"{"user": "bob", "session": {"token": {"value": "abc123secretvalue"}}, "creds": ["k-abcdef-123456"], "api_key": ["k-abcdef-123456"]}"#
            .to_owned()
    });
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "login", "{}"),
            ScriptedResponse::text("done"),
        ],
    );
    let tracing = TracingMiddleware::builder()
        .tracer_provider(&provider)
        .capture_content(true)
        .build();
    let agent = Agent::builder("a")
        .model(model)
        .tool(login)
        .middleware(tracing)
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "log in")).await.unwrap();
    let spans = spans(&exporter);
    let result = str_attr(one(&spans, "execute_tool login"), "gen_ai.tool.call.result").unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&result).unwrap(),
        json!({"user": "bob", "session": {"token": "[REDACTED]"}, "creds": "[REDACTED]", "api_key": "[REDACTED]"})
    );
    let chats: Vec<String> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat"))
        .filter_map(|s| str_attr(s, "gen_ai.input.messages"))
        .collect();
    assert_eq!(chats.len(), 2);
    assert!(!chats[1].contains("abc123secretvalue"), "{}", chats[1]);
    assert!(chats[1].contains("[REDACTED]"), "{}", chats[1]);
}

/// A timeout's text goes out in full without content capture (names and numbers), redacted:
/// a layer names what timed out as it likes, a URL with its password say (it was recorded as
/// it was).
#[tokio::test]
async fn a_timeout_description_is_redacted_without_content_capture() {
    let (provider, exporter) = in_memory();
    let timeout = towerscope_core::AgentError::Timeout {
        what: "model call via https://svc:hunter2@gateway.internal/v1".into(),
        kind: towerscope_core::TimeoutKind::Call,
        after: None,
    };
    let agent = Agent::builder("a")
        .model(ScriptedModel::new("m", [ScriptedResponse::error(timeout)]))
        .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
        .build()
        .unwrap();
    let _ = agent.reply(Msg::user("user", "hi")).await;
    let spans = spans(&exporter);
    let chat = one(&spans, "chat m");
    let description = error_description(chat).unwrap();
    assert!(description.contains("timed out"), "{description}");
    assert!(!format!("{spans:?}").contains("hunter2"), "{description}");
}
