//! Both providers against a real LLM server: llama.cpp's `llama-server` serving
//! SmolLM2-135M-Instruct on loopback (`scripts/llm-server.sh`), which speaks OpenAI's
//! `/v1/chat/completions` and Anthropic's `/v1/messages`, with the tool-calling chat template
//! `tests/llm/tool-template.jinja`.
//!
//! What a real server covers here, for each provider: streamed and whole (non-streamed) text
//! with usage, the response id, model and finish reason; a forced tool round (`required`, Anthropic `any`: the tool runs, its
//! result goes back in the provider's format, the model answers in text); and the server's own
//! error in a 200 stream (an OpenAI `error` object, an Anthropic `event: error`) surfacing as a
//! typed, retryable [`ProviderError`].
//!
//! What only the wire-format tests (`openai_wire.rs`, `anthropic_wire.rs`) cover: reasoning and
//! extended thinking with signatures, prompt caching and cache tokens, parallel tool calls,
//! HTTP 429/5xx/4xx answers with retry-after and request ids, cut connections, non-JSON bodies,
//! media input. This server ignores a named `tool_choice`, Anthropic's
//! `disable_parallel_tool_use` and Anthropic's `{"type": "none"}` (it still parses tool calls),
//! so the answering call here offers no tools.
//!
//! `scripts/test.sh` starts the server and sets `TOWERSCOPE_LLM_BASE_URL` (and
//! `TOWERSCOPE_REQUIRE_LLM=1`, so these tests fail instead of skipping when the variable is
//! missing). Without it, each test prints why it is skipped.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{
    AgentContext, AgentError, AgentEvent, ChatModel, ChatResponse, Messages, ModelCallRequest, ModelOutput, Msg, Next,
    ReplyItem, ToolChoice, ToolSchema, from_fn,
};
use towerscope_models::anthropic::AnthropicChatModel;
use towerscope_models::http::ProviderError;
use towerscope_models::openai::OpenAiChatModel;

/// The server's base URL and model, or `None` (with the reason printed) when there is none.
fn server() -> Option<(String, String)> {
    match std::env::var("TOWERSCOPE_LLM_BASE_URL") {
        Ok(url) if !url.trim().is_empty() => {
            let model = std::env::var("TOWERSCOPE_LLM_MODEL").unwrap_or_else(|_| "smollm2-135m-instruct".into());
            Some((url.trim_end_matches('/').to_owned(), model))
        }
        _ => {
            assert_ne!(
                std::env::var("TOWERSCOPE_REQUIRE_LLM").as_deref(),
                Ok("1"),
                "TOWERSCOPE_REQUIRE_LLM=1 but TOWERSCOPE_LLM_BASE_URL is not set: start the server with \
                 `eval \"$(scripts/llm-server.sh start)\"` (scripts/test.sh does)"
            );
            eprintln!(
                "skipped: TOWERSCOPE_LLM_BASE_URL is not set; scripts/test.sh starts a llama.cpp server and sets it"
            );
            None
        }
    }
}

/// Output limits: room for a tool call; and a text answer cut short. This server parses the
/// whole answer against the template's format (text in `<response>` tags) when the model stops
/// by itself, and fails when the model left the tags out; an answer cut at the limit is taken
/// as it is. A 135M model seldom writes the tags, so text answers are cut.
const CALL_TOKENS: u32 = 48;
const TEXT_TOKENS: u32 = 12;

fn openai(base: &str, model: &str, max_tokens: u32) -> OpenAiChatModel {
    OpenAiChatModel::builder(model)
        .base_url(format!("{base}/v1"))
        .from_env(false)
        .temperature(0.0)
        .seed(7)
        .max_tokens(max_tokens)
        .build()
        .unwrap()
}

fn anthropic(base: &str, model: &str, max_tokens: u32) -> AnthropicChatModel {
    AnthropicChatModel::builder(model)
        .base_url(base)
        .from_env(false)
        .temperature(0.0)
        .max_tokens(max_tokens)
        .build()
        .unwrap()
}

/// Get the current weather of a city.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct GetWeather {
    /// The city, e.g. "Paris".
    city: String,
}

async fn get_weather(args: GetWeather) -> String {
    format!("{{\"city\": {:?}, \"sky\": \"sunny\", \"celsius\": 21}}", args.city)
}

fn weather_schema() -> ToolSchema {
    let parameters = serde_json::json!({
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city"}},
        "required": ["city"]
    });
    ToolSchema::new("get_weather", "Get the current weather of a city", parameters)
}

/// A direct model call (no agent).
fn request(
    model: &Arc<dyn ChatModel>,
    messages: Vec<Msg>,
    tools: Vec<ToolSchema>,
    choice: Option<ToolChoice>,
) -> ModelCallRequest {
    ModelCallRequest {
        ctx: AgentContext::new("agent", "session", "reply"),
        model: Arc::clone(model),
        messages: Messages::from(messages),
        tools: Arc::from(tools),
        tool_choice: choice,
    }
}

async fn chunks(
    model: Arc<dyn ChatModel>,
    messages: Vec<Msg>,
    tools: Vec<ToolSchema>,
    choice: Option<ToolChoice>,
) -> Vec<Result<ChatResponse, AgentError>> {
    let output = model.call(request(&model, messages, tools, choice)).await.unwrap();
    let ModelOutput::Stream(stream) = output else {
        panic!("the model streams by default")
    };
    stream.collect().await
}

async fn streamed_text(model: Arc<dyn ChatModel>, model_name: &str, id_prefix: &str) {
    let messages = vec![
        Msg::system("system", "You are a travel guide."),
        Msg::user("user", "Describe Paris in three sentences."),
    ];
    let items = chunks(model, messages, Vec::new(), None).await;
    let (last, deltas) = items.split_last().unwrap();
    let last = last.as_ref().unwrap();
    assert!(last.is_last);
    let streamed: String = deltas
        .iter()
        .map(|c| c.as_ref().unwrap().text().unwrap_or_default())
        .collect();
    assert!(!streamed.trim().is_empty(), "text arrived in chunks");
    assert_eq!(
        last.text().unwrap_or_default(),
        streamed,
        "the final response holds what streamed"
    );
    let usage = last.usage.as_ref().unwrap();
    assert!(usage.input_tokens > 0 && usage.output_tokens > 0, "{usage:?}");
    assert_eq!(last.metadata["model"], model_name);
    assert_eq!(last.metadata["finish_reason"], "length", "cut at TEXT_TOKENS");
    assert!(last.id.to_string().starts_with(id_prefix), "response id {}", last.id);
}

#[tokio::test]
async fn openai_streams_text_with_usage() {
    let Some((base, name)) = server() else { return };
    let model = openai(&base, &name, TEXT_TOKENS);
    assert_eq!(
        (model.provider(), model.server_address()),
        ("openai", Some("127.0.0.1"))
    );
    streamed_text(Arc::new(model), &name, "chatcmpl-").await;
}

#[tokio::test]
async fn anthropic_streams_text_with_usage() {
    let Some((base, name)) = server() else { return };
    let model = anthropic(&base, &name, TEXT_TOKENS);
    assert_eq!(model.provider(), "anthropic");
    // llama.cpp names Anthropic messages like its chat completions.
    streamed_text(Arc::new(model), &name, "chatcmpl-").await;
}

/// A whole (non-streamed) answer: one complete response with the text, usage, model, finish
/// reason and id the server sent.
async fn whole_text(model: Arc<dyn ChatModel>, model_name: &str, id_prefix: &str) {
    let messages = vec![
        Msg::system("system", "You are a travel guide."),
        Msg::user("user", "Describe Paris in three sentences."),
    ];
    let output = model.call(request(&model, messages, Vec::new(), None)).await.unwrap();
    let ModelOutput::Complete(response) = output else {
        panic!("stream(false) answers with one complete response")
    };
    assert!(response.is_last);
    assert!(!response.text().unwrap_or_default().trim().is_empty(), "{response:?}");
    let usage = response.usage.as_ref().unwrap();
    assert!(usage.input_tokens > 0 && usage.output_tokens > 0, "{usage:?}");
    assert_eq!(response.metadata["model"], model_name);
    assert_eq!(response.metadata["finish_reason"], "length", "cut at TEXT_TOKENS");
    assert!(
        response.id.to_string().starts_with(id_prefix),
        "response id {}",
        response.id
    );
}

#[tokio::test]
async fn openai_answers_whole_without_streaming() {
    let Some((base, name)) = server() else { return };
    let model = OpenAiChatModel::builder(name.as_str())
        .base_url(format!("{base}/v1"))
        .from_env(false)
        .temperature(0.0)
        .seed(7)
        .max_tokens(TEXT_TOKENS)
        .stream(false)
        .build()
        .unwrap();
    whole_text(Arc::new(model), &name, "chatcmpl-").await;
}

#[tokio::test]
async fn anthropic_answers_whole_without_streaming() {
    let Some((base, name)) = server() else { return };
    let model = AnthropicChatModel::builder(name.as_str())
        .base_url(base)
        .from_env(false)
        .temperature(0.0)
        .max_tokens(TEXT_TOKENS)
        .stream(false)
        .build()
        .unwrap();
    whole_text(Arc::new(model), &name, "chatcmpl-").await;
}

/// The weather agent: the first model call must call a tool (`required`); the next answers in
/// text, offered no tools (the template then shows no example call to imitate), on a model with
/// the short limit.
fn forced_tool_agent(caller: impl ChatModel, answerer: impl ChatModel) -> Agent {
    let answerer: Arc<dyn ChatModel> = Arc::new(answerer);
    let force_first = from_fn(
        move |mut req: ModelCallRequest, next: Next<ModelCallRequest, ModelOutput>| {
            let answerer = Arc::clone(&answerer);
            async move {
                if req.ctx.iteration() == 0 {
                    req.tool_choice = Some(ToolChoice::required());
                } else {
                    // No tools rather than `none`: this server's Anthropic endpoint does not
                    // honour `{"type": "none"}`.
                    req.tool_choice = None;
                    req.tools = Arc::from(Vec::new());
                    req.model = answerer;
                }
                next.run(req).await
            }
        },
    );
    Agent::builder("Friday")
        .system_prompt("You are a weather assistant.")
        .model(caller)
        .tool(FunctionTool::new("get_weather", get_weather))
        .on_model_call(force_first)
        .max_iters(3)
        .build()
        .unwrap()
}

fn kinds(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            AgentEvent::TextBlockDelta(d) => format!("text {:?}", d.delta),
            AgentEvent::ToolCallDelta(d) => format!("call {:?}", d.delta),
            other => other.event_type().as_str().to_owned(),
        })
        .collect()
}

async fn forced_tool_round(agent: Agent) {
    let mut stream = agent.reply_stream(Msg::user("user", "What is the weather in Paris?"));
    let mut events = Vec::new();
    let mut answer = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(ReplyItem::Event(event)) => events.push(event),
            Ok(ReplyItem::Final(msg)) => answer = Some(msg),
            Err(err) => panic!("{err:?} after {:?}", kinds(&events)),
        }
    }
    let call = events.iter().find_map(|e| match e {
        AgentEvent::ToolCallStart(start) => Some(start.tool_call_name.clone()),
        _ => None,
    });
    assert_eq!(call.as_deref(), Some("get_weather"), "the first call made a tool call");
    let ran = events
        .iter()
        .any(|e| matches!(e, AgentEvent::ToolResultEnd(end) if end.state.as_str() == "success"));
    assert!(ran, "the tool ran: {events:?}");
    let model_calls = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ModelCallStart(_)))
        .count();
    assert_eq!(model_calls, 2, "{:?}", kinds(&events));
    let answer = answer.unwrap();
    assert!(
        answer.text_content().is_some_and(|t| !t.trim().is_empty()),
        "then it answered in text: {answer:?}"
    );
    let context = agent.state().context;
    assert_eq!(context[1].tool_calls().count(), 1);
    assert_eq!(context[1].tool_results().count(), 1);
}

#[tokio::test]
async fn openai_forced_tool_round() {
    let Some((base, name)) = server() else { return };
    forced_tool_round(forced_tool_agent(
        openai(&base, &name, CALL_TOKENS),
        openai(&base, &name, TEXT_TOKENS),
    ))
    .await;
}

#[tokio::test]
async fn anthropic_forced_tool_round() {
    let Some((base, name)) = server() else { return };
    let agent = forced_tool_agent(
        anthropic(&base, &name, CALL_TOKENS),
        anthropic(&base, &name, TEXT_TOKENS),
    );
    forced_tool_round(agent).await;
}

/// With `auto`, this server makes the model's free text fit its tool-call format, fails, and
/// says so in the 200 stream: that must be a typed, retryable error of the stream.
async fn error_in_the_stream(model: Arc<dyn ChatModel>) {
    let items = chunks(
        model,
        vec![Msg::user("user", "Say hello.")],
        vec![weather_schema()],
        Some(ToolChoice::auto()),
    )
    .await;
    let err = items.last().unwrap().as_ref().unwrap_err();
    let provider = ProviderError::of(err).unwrap_or_else(|| panic!("a provider error: {err:?}"));
    assert_eq!(provider.kind.as_deref(), Some("server_error"), "{provider:?}");
    assert_eq!(provider.code.as_deref(), Some("500"));
    assert!(provider.message.contains("does not match"), "{provider}");
    assert!(err.is_retryable());
    assert!(items[..items.len() - 1].iter().all(Result::is_ok));
}

#[tokio::test]
async fn openai_server_error_in_the_stream_is_typed() {
    let Some((base, name)) = server() else { return };
    error_in_the_stream(Arc::new(openai(&base, &name, CALL_TOKENS))).await;
}

#[tokio::test]
async fn anthropic_server_error_in_the_stream_is_typed() {
    let Some((base, name)) = server() else { return };
    error_in_the_stream(Arc::new(anthropic(&base, &name, CALL_TOKENS))).await;
}
