//! The OpenAI provider against a loopback server replaying SSE transcripts written from the
//! Chat Completions documentation, byte for byte, in pieces that split lines and UTF-8
//! characters: the events the agent emits, what it stores, what the provider sent, and every
//! failure a user must be able to act on.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use serde_json::json;
use support::{MockServer, Reply, collect, cut_at, joined, pieces};
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{AgentError, ChatModel, ContentBlock, Msg, Role};
use towerscope_layers::retry::Backoff;
use towerscope_layers::{FallbackLayer, RetryLayer};
use towerscope_models::http::ProviderError;
use towerscope_models::openai::OpenAiChatModel;
use towerscope_models::{ScriptedModel, ScriptedResponse};

const TEXT: &str = include_str!("transcripts/openai_text.sse");
const TOOL_CALLS: &str = include_str!("transcripts/openai_tool_calls.sse");
const ANSWER: &str = include_str!("transcripts/openai_answer.sse");
const KEY: &str = "sk-test-0123456789secret";

/// Get the current weather of a city.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct GetWeather {
    /// The city.
    city: String,
}

async fn get_weather(args: GetWeather) -> String {
    let (sky, celsius) = if args.city == "Paris" {
        ("sunny", 21)
    } else {
        ("drizzle", 14)
    };
    json!({"city": args.city, "sky": sky, "celsius": celsius}).to_string()
}

fn model(server: &MockServer) -> OpenAiChatModel {
    OpenAiChatModel::builder("gpt-4o")
        .base_url(format!("{}/v1", server.base))
        .api_key(KEY)
        .from_env(false)
        .temperature(0.0)
        .build()
        .unwrap()
}

fn agent(model: impl ChatModel) -> Agent {
    Agent::builder("Friday")
        .system_prompt("You are Friday, a weather assistant.")
        .model(model)
        .tool(FunctionTool::new("get_weather", get_weather))
        .build()
        .unwrap()
}

/// Cut points inside a `data:` line and inside a two-byte character.
fn awkward_cuts(transcript: &str) -> Vec<Vec<u8>> {
    let bytes = transcript.as_bytes();
    let in_line = transcript.find("\"reasoning_content\"").unwrap() + 5;
    let in_char = transcript.find('°').unwrap() + 1;
    let in_emoji = transcript.find('☀').unwrap() + 2;
    let mut cuts = vec![in_line, in_char, in_emoji];
    cuts.sort_unstable();
    cut_at(bytes, &cuts)
}

#[tokio::test]
async fn streamed_reasoning_and_text_with_usage() {
    let server = MockServer::start(vec![Reply::sse(awkward_cuts(TEXT))]).await;
    let agent = agent(model(&server));
    agent
        .observe([Msg::assistant("Alice (helper)", "Bob asked me to say hello.")])
        .unwrap();
    let reply = collect(agent.reply_stream(Msg::user("bob", "Bonjour ?"))).await;
    assert!(reply.error.is_none(), "{:?}", reply.error);
    assert_eq!(
        joined(&reply.lines()),
        [
            "REPLY_START",
            "MODEL_CALL_START",
            "THINKING_BLOCK_START",
            "THINKING_BLOCK_DELTA The user greets me in French; answer in French.",
            "THINKING_BLOCK_END",
            "TEXT_BLOCK_START",
            "TEXT_BLOCK_DELTA Bonjour à vous ! Il fait 21 °C ☀️ à Paris.",
            "TEXT_BLOCK_END",
            "MODEL_CALL_END in=42 out=19 cached=32 written=0",
            "REPLY_END",
        ]
    );
    let answer = reply.final_msg.unwrap();
    assert_eq!(
        answer.text_content().as_deref(),
        Some("Bonjour à vous ! Il fait 21 °C ☀️ à Paris.")
    );
    assert_eq!(
        answer.usage.map(|u| (u.input_tokens, u.cache_input_tokens)),
        Some((42, 32))
    );

    let context = agent.state().context;
    assert_eq!(context.len(), 3);
    let stored = &context[2];
    assert_eq!(stored.role, Role::Assistant);
    // The runtime-state hint comes first, then what the model streamed.
    assert!(matches!(&stored.content[0], ContentBlock::Hint(_)));
    assert!(
        matches!(&stored.content[1], ContentBlock::Thinking(t) if t.thinking == "The user greets me in French; answer in French.")
    );
    assert_eq!(stored.text_content(), answer.text_content());

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(request.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(request.header("accept"), Some("text/event-stream"));
    let body = request.json();
    let (messages, hints) = support::without_hints(&body["messages"]);
    assert_eq!(hints, 1, "the runtime-state hint goes out as one user message");
    assert_eq!(
        messages,
        json!([
            {"role": "system", "content": "You are Friday, a weather assistant."},
            {"role": "assistant", "name": "Alice__helper_", "content": "Bob asked me to say hello."},
            {"role": "user", "name": "bob", "content": "Bonjour ?"}
        ]),
        "each message keeps its sender's name"
    );
    assert_eq!(
        (
            &body["model"],
            &body["stream"],
            &body["stream_options"],
            &body["temperature"]
        ),
        (
            &json!("gpt-4o"),
            &json!(true),
            &json!({"include_usage": true}),
            &json!(0.0)
        )
    );
    assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
}

#[tokio::test]
async fn a_tool_round_sends_the_calls_and_the_results_back() {
    let server = MockServer::start(vec![
        Reply::sse(pieces(TOOL_CALLS.as_bytes(), 11)),
        Reply::sse(pieces(ANSWER.as_bytes(), 5)),
    ])
    .await;
    let agent = agent(model(&server));
    let reply = collect(agent.reply_stream(Msg::user("user", "Weather in Paris and London?"))).await;
    assert!(reply.error.is_none(), "{:?}", reply.error);
    let paris = r#"{"celsius":21,"city":"Paris","sky":"sunny"}"#;
    let london = r#"{"celsius":14,"city":"London","sky":"drizzle"}"#;
    assert_eq!(
        joined(&reply.lines()),
        [
            "REPLY_START",
            "MODEL_CALL_START",
            "TOOL_CALL_START call_paris get_weather",
            r#"TOOL_CALL_DELTA {"city": "Paris"}"#,
            "TOOL_CALL_START call_london get_weather",
            "TOOL_CALL_DELTA ",
            "TOOL_CALL_END call_paris",
            r#"TOOL_CALL_DELTA {"city": "London"}"#,
            "TOOL_CALL_END call_london",
            "MODEL_CALL_END in=120 out=38 cached=0 written=0",
            // The two calls run as one concurrent batch; each finishes in its first poll, so
            // its events come together, in call order.
            "TOOL_RESULT_START call_paris",
            &format!("TOOL_RESULT_TEXT_DELTA {paris}"),
            "TOOL_RESULT_END success",
            "TOOL_RESULT_START call_london",
            &format!("TOOL_RESULT_TEXT_DELTA {london}"),
            "TOOL_RESULT_END success",
            "MODEL_CALL_START",
            "TEXT_BLOCK_START",
            "TEXT_BLOCK_DELTA Paris is sunny (21 °C); London has drizzle (14 °C).",
            "TEXT_BLOCK_END",
            "MODEL_CALL_END in=190 out=17 cached=128 written=0",
            "REPLY_END",
        ]
    );
    assert_eq!(
        reply.final_text().as_deref(),
        Some("Paris is sunny (21 °C); London has drizzle (14 °C).")
    );
    let answer = reply.final_msg.unwrap();
    assert_eq!(answer.usage.map(|u| (u.input_tokens, u.output_tokens)), Some((310, 55)));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].json();
    // The hint is a user message of its own, before the assistant turn that holds it.
    assert!(
        second["messages"][2]["content"]
            .as_str()
            .is_some_and(|t| t.starts_with("<system-reminder>"))
    );
    let (messages, hints) = support::without_hints(&second["messages"]);
    assert_eq!(hints, 1);
    assert_eq!(
        messages,
        json!([
            {"role": "system", "content": "You are Friday, a weather assistant."},
            {"role": "user", "name": "user", "content": "Weather in Paris and London?"},
            {"role": "assistant", "name": "Friday", "content": null, "tool_calls": [
                {"id": "call_paris", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
                {"id": "call_london", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"London\"}"}}
            ]},
            {"role": "tool", "content": paris, "tool_call_id": "call_paris"},
            {"role": "tool", "content": london, "tool_call_id": "call_london"}
        ])
    );
}

#[tokio::test]
async fn a_whole_answer_without_streaming() {
    let completion = json!({
        "id": "chatcmpl-whole", "object": "chat.completion", "created": 1731000000, "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "finish_reason": "length", "message": {
            "role": "assistant", "content": "It is", "refusal": null,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]
        }}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35, "prompt_tokens_details": {"cached_tokens": 0}}
    });
    let server = MockServer::start(vec![Reply::json(200, &completion.to_string())]).await;
    let model = OpenAiChatModel::builder("gpt-4o")
        .base_url(format!("{}/v1", server.base))
        .api_key(KEY)
        .from_env(false)
        .stream(false)
        .max_tokens(5)
        .build()
        .unwrap();
    let scripted_tail = ScriptedModel::new("tail", [ScriptedResponse::text("done")]);
    let agent = Agent::builder("Friday")
        .model(model)
        .tool(FunctionTool::new("get_weather", get_weather))
        .on_model_call(towerscope_core::from_fn(
            move |req: towerscope_core::ModelCallRequest, next: towerscope_core::Next<_, _>| {
                let tail = scripted_tail.clone();
                async move {
                    // The first call goes to the server; the second to a script.
                    let mut req = req;
                    if req.ctx.iteration() > 0 {
                        req.model = std::sync::Arc::new(tail);
                    }
                    next.run(req).await
                }
            },
        ))
        .build()
        .unwrap();
    let image = Msg::new(
        "user",
        Role::User,
        vec![
            ContentBlock::text("And this?"),
            ContentBlock::data_base64("iVBORw0K", "image/png"),
        ],
    )
    .unwrap();
    let reply = collect(agent.reply_stream(image)).await;
    assert!(reply.error.is_none(), "{:?}", reply.error);
    assert_eq!(
        joined(&reply.lines())[2..7],
        [
            "TEXT_BLOCK_START",
            "TEXT_BLOCK_DELTA It is",
            "TOOL_CALL_START call_1 get_weather",
            r#"TOOL_CALL_DELTA {"city":"Paris"}"#,
            "TEXT_BLOCK_END",
        ]
    );
    let body = server.requests()[0].json();
    assert_eq!((&body["stream"], body.get("stream_options")), (&json!(false), None));
    assert_eq!(body["max_completion_tokens"], 5);
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"type": "text", "text": "And this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}}
        ])
    );
}

/// An agent on `model` that retries a failed model call up to `attempts` times, quickly.
fn retrying(model: impl ChatModel, attempts: u32) -> Agent {
    Agent::builder("Friday")
        .model(model)
        .on_model_call(
            RetryLayer::new(attempts).backoff(Backoff::new(Duration::from_millis(5), Duration::from_millis(20))),
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_429_carries_its_retry_after_and_retry_honours_it() {
    let limited = || {
        Reply::json(
            429,
            r#"{"error": {"message": "Rate limit reached for gpt-4o on tokens per min (TPM).", "type": "tokens", "param": null, "code": "rate_limit_exceeded"}}"#,
        )
        .header("retry-after-ms", "30")
        .header("x-request-id", "req_429")
    };
    let server = MockServer::start(vec![limited()]).await;
    let err = agent(model(&server)).reply(Msg::user("user", "Hi")).await.unwrap_err();
    assert!(matches!(err, AgentError::Http { status: 429, .. }), "{err:?}");
    assert!(err.is_retryable());
    assert_eq!(err.retry_after(), Some(Duration::from_millis(30)));
    assert!(
        err.to_string().contains("tokens: Rate limit reached for gpt-4o"),
        "{err}"
    );
    assert!(err.to_string().contains("request id req_429"), "{err}");

    let server = MockServer::start(vec![limited(), Reply::sse(pieces(ANSWER.as_bytes(), 64))]).await;
    let agent = retrying(model(&server), 3);
    let answer = agent.reply(Msg::user("user", "Hi")).await.unwrap();
    assert!(answer.text_content().is_some_and(|t| t.starts_with("Paris is sunny")));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_500_is_retried_and_a_bad_key_is_not() {
    let server = MockServer::start(vec![
        Reply::json(500, r#"{"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": null, "code": null}}"#),
        Reply::sse(pieces(ANSWER.as_bytes(), 64)),
    ])
    .await;
    let agent = retrying(model(&server), 3);
    assert!(agent.reply(Msg::user("user", "Hi")).await.is_ok());
    assert_eq!(server.requests().len(), 2);

    let server = MockServer::start(vec![
        // The whole key echoed, as some proxies do.
        Reply::json(401, &format!(r#"{{"error": {{"message": "Incorrect API key provided: {KEY}.", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}}}"#))
            .header("x-request-id", "req_401"),
    ])
    .await;
    let model = model(&server);
    let agent = retrying(model.clone(), 3);
    let err = agent.reply(Msg::user("user", "Hi")).await.unwrap_err();
    assert_eq!(server.requests().len(), 1, "a 4xx is not retried");
    assert!(!err.is_retryable());
    let text = err.to_string();
    assert!(
        text.contains("HTTP 401 from http://127.0.0.1:")
            && text.contains("/v1/chat/completions: invalid_request_error: Incorrect API key provided: ***.")
            && text.contains("code invalid_api_key, request id req_401"),
        "{text}"
    );
    for shown in [text, format!("{err:?}"), format!("{model:?}")] {
        assert!(!shown.contains(KEY), "the key leaked: {shown}");
    }
}

/// A key given with `.header(..)` (Azure's `api-key`, a gateway's `authorization`) is hidden
/// like the builder's own: a proxy that echoes the key it refused does not put it in the error.
#[tokio::test]
async fn a_key_given_as_a_header_stays_out_of_errors() {
    const SECRET: &str = "azure-secret-0123456789abcdef";
    for (name, value) in [
        ("api-key", SECRET.to_owned()),
        ("Authorization", format!("Bearer {SECRET}")),
        ("Ocp-Apim-Subscription-Key", SECRET.to_owned()),
    ] {
        let server = MockServer::start(vec![Reply::json(
            401,
            &format!(r#"{{"error": {{"message": "Access denied: invalid key {SECRET}.", "type": "invalid_request_error", "code": "401"}}}}"#),
        )])
        .await;
        let model = OpenAiChatModel::builder("gpt-4o")
            .base_url(format!("{}/v1", server.base))
            .header(name, value)
            .from_env(false)
            .build()
            .unwrap();
        let err = agent(model).reply(Msg::user("user", "Hi")).await.unwrap_err();
        let text = err.to_string();
        assert!(text.contains("Access denied: invalid key ***."), "{name}: {text}");
        assert!(
            !format!("{text} {err:?}").contains(SECRET),
            "{name}: the key leaked: {text}"
        );
        assert!(
            server.requests()[0].header(name).is_some_and(|v| v.contains(SECRET)),
            "{name} was sent"
        );
    }
}

/// An error message is cut to 512 characters after the keys in it are hidden: a key across
/// the cut showed its first characters.
#[tokio::test]
async fn a_key_across_the_cut_of_a_long_error_message_is_hidden_whole() {
    let message = format!("{} {KEY}", "x".repeat(500));
    let server = MockServer::start(vec![Reply::json(
        401,
        &format!(r#"{{"error": {{"message": "{message}", "type": "invalid_request_error"}}}}"#),
    )])
    .await;
    let err = agent(model(&server)).reply(Msg::user("user", "Hi")).await.unwrap_err();
    let text = err.to_string();
    assert!(!text.contains(&KEY[..8]), "the key's start leaked: {text}");
    assert!(text.contains(&format!("{} ***", "x".repeat(500))), "{text}");
}

/// The key is hidden in what a 200 answer's errors quote too: an error event in the stream
/// (a proxy echoing the key it refused), and the start of a body that is not JSON.
#[tokio::test]
async fn a_key_echoed_in_a_streamed_error_or_a_body_that_is_not_json_is_hidden() {
    let event =
        format!(r#"{{"error": {{"message": "Incorrect API key provided: {KEY}.", "type": "invalid_request_error"}}}}"#);
    let head: String = ANSWER.split_inclusive("\n\n").take(2).collect();
    let streamed = format!("{head}data: {event}\n\n");
    let page = format!("<html>Gateway refused the key {KEY}</html>");
    let server = MockServer::start(vec![
        Reply::sse(pieces(streamed.as_bytes(), 64)),
        Reply::body(200, "application/json", &page),
    ])
    .await;
    let agent = agent(model(&server));
    let streamed = agent.reply(Msg::user("user", "Hi")).await.unwrap_err();
    let page = agent.reply(Msg::user("user", "Hi")).await.unwrap_err();
    assert!(
        streamed.to_string().contains("Incorrect API key provided: ***."),
        "{streamed}"
    );
    assert!(page.to_string().contains("Gateway refused the key ***"), "{page}");
    for err in [streamed, page] {
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains(KEY), "the key leaked: {shown}");
    }
}

#[tokio::test]
async fn an_error_object_mid_stream_falls_back_with_a_restart() {
    let head: String = ANSWER
        .split("\n\n")
        .take(3)
        .map(|event| format!("{event}\n\n"))
        .collect();
    let failing = format!(
        "{head}data: {}\n\n",
        r#"{"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": null, "code": null}}"#
    );
    let server = MockServer::start(vec![Reply::sse(pieces(failing.as_bytes(), 40))]).await;
    let err = agent(model(&server)).reply(Msg::user("user", "Hi")).await.unwrap_err();
    let provider = ProviderError::of(&err).unwrap();
    assert_eq!(
        (provider.kind.as_deref(), provider.status),
        (Some("server_error"), None)
    );
    assert!(err.is_retryable(), "{err}");

    let server = MockServer::start(vec![Reply::sse(pieces(failing.as_bytes(), 40))]).await;
    let backup = ScriptedModel::new("backup", [ScriptedResponse::text("Hello from the backup.")]);
    let agent = Agent::builder("Friday")
        .model(model(&server))
        .on_model_call(FallbackLayer::to(backup))
        .build()
        .unwrap();
    let reply = collect(agent.reply_stream(Msg::user("user", "Hi"))).await;
    assert!(reply.error.is_none(), "{:?}", reply.error);
    let lines = joined(&reply.lines());
    assert_eq!(
        lines[2..],
        [
            "TEXT_BLOCK_START",
            "TEXT_BLOCK_DELTA Paris is sunny (21 °C); London",
            "CUSTOM model_call_restart",
            "TEXT_BLOCK_START",
            "TEXT_BLOCK_DELTA Hello from the backup.",
            "TEXT_BLOCK_END",
            "MODEL_CALL_END in=0 out=0 cached=0 written=0",
            "REPLY_END",
        ]
    );
    assert_eq!(
        agent.state().context[1].text_content().as_deref(),
        Some("Hello from the backup."),
        "the stored answer holds only the fallback's output"
    );
}

#[tokio::test]
async fn a_connection_cut_mid_stream_is_retried() {
    let cut_point = ANSWER.find("London").unwrap();
    let cut = Reply::sse(vec![ANSWER.as_bytes()[..cut_point].to_vec()]).cut();
    let server = MockServer::start(vec![cut.clone()]).await;
    let err = agent(model(&server)).reply(Msg::user("user", "Hi")).await.unwrap_err();
    assert!(matches!(err, AgentError::Stream(_)), "{err:?}");
    assert!(
        err.to_string().contains("response stream of http://127.0.0.1:"),
        "{err}"
    );

    let server = MockServer::start(vec![cut, Reply::sse(pieces(ANSWER.as_bytes(), 64))]).await;
    let agent = retrying(model(&server), 2);
    let reply = collect(agent.reply_stream(Msg::user("user", "Hi"))).await;
    assert!(reply.error.is_none(), "{:?}", reply.error);
    assert!(reply.lines().contains(&"CUSTOM model_call_restart".to_owned()));
    assert_eq!(
        reply.final_text().as_deref(),
        Some("Paris is sunny (21 °C); London has drizzle (14 °C).")
    );
    assert_eq!(server.requests().len(), 2);
}

/// Where [`ANSWER`]'s event with the finish reason starts: the answer cut there lacks its end.
fn before_finish() -> usize {
    ANSWER
        .find(r#""finish_reason":"stop""#)
        .and_then(|at| ANSWER[..at].rfind("data: "))
        .unwrap()
}

#[tokio::test]
async fn a_stream_that_ends_before_its_finish_reason_is_an_error_and_one_without_done_is_whole() {
    // Cut mid-answer, the connection closed cleanly: the chunks so far, then an error.
    let cut = before_finish();
    let server = MockServer::start(vec![Reply::sse(vec![ANSWER.as_bytes()[..cut].to_vec()]).until_close()]).await;
    let reply = collect(agent(model(&server)).reply_stream(Msg::user("user", "Hi"))).await;
    let err = reply.error.as_ref().unwrap();
    assert!(matches!(err, AgentError::Stream(_)) && err.is_retryable(), "{err:?}");
    assert!(
        err.to_string().contains("ended mid-answer, before its finish reason"),
        "{err}"
    );
    assert!(
        reply.lines().contains(&"TEXT_BLOCK_DELTA Paris is sunny".to_owned()),
        "the chunks before the end were delivered"
    );

    // Whole but for `[DONE]`: without it, or with its blank line missing at the end of the body
    // (the official SDKs read both as the end).
    for ending in ["", "data: [DONE]\n"] {
        let body = ANSWER.replace("data: [DONE]\n\n", ending);
        let server = MockServer::start(vec![Reply::sse(vec![body.into_bytes()]).until_close()]).await;
        let msg = agent(model(&server)).reply(Msg::user("user", "Hi")).await.unwrap();
        assert_eq!(
            msg.text_content().as_deref(),
            Some("Paris is sunny (21 °C); London has drizzle (14 °C)."),
            "{ending:?}"
        );
        assert_eq!(msg.usage.map(|u| u.input_tokens), Some(190), "{ending:?}");
    }
}

/// A server that stops mid-answer and still closes the stream with `[DONE]` (llama.cpp after a
/// failure) sent no whole answer: the call fails as a cut stream does, after the chunks so far,
/// and a retry asks again instead of storing the part.
#[tokio::test]
async fn a_done_before_any_finish_reason_fails_the_call_and_is_retried() {
    let cut = before_finish();
    let stopped = format!("{}data: [DONE]\n\n", &ANSWER[..cut]);
    let server = MockServer::start(vec![Reply::sse(pieces(stopped.as_bytes(), 64))]).await;
    let reply = collect(agent(model(&server)).reply_stream(Msg::user("user", "Hi"))).await;
    let err = reply.error.as_ref().expect("the call fails");
    assert!(matches!(err, AgentError::Stream(_)) && err.is_retryable(), "{err:?}");
    assert!(err.to_string().contains("before its finish reason"), "{err}");
    assert!(
        reply.lines().contains(&"TEXT_BLOCK_DELTA Paris is sunny".to_owned()),
        "the chunks before the end were delivered"
    );

    // Nothing before `[DONE]` but the role: no answer at all, not an empty one.
    let empty = format!("{}data: [DONE]\n\n", ANSWER.split_inclusive("\n\n").next().unwrap());
    let server = MockServer::start(vec![
        Reply::sse(vec![empty.into_bytes()]),
        Reply::sse(vec![stopped.into_bytes()]),
        Reply::sse(pieces(ANSWER.as_bytes(), 64)),
    ])
    .await;
    let agent = retrying(model(&server), 3);
    let msg = agent.reply(Msg::user("user", "Hi")).await.unwrap();
    assert_eq!(
        msg.text_content().as_deref(),
        Some("Paris is sunny (21 °C); London has drizzle (14 °C).")
    );
    assert_eq!(server.requests().len(), 3);
}

/// llama.cpp's server reports a failure mid-stream on an `error:` line (a field the SSE
/// standard ignores), then closes with `[DONE]`: the call fails with the server's error, not
/// with the part answered so far.
#[tokio::test]
async fn a_stream_cut_by_a_server_error_fails_the_call() {
    let head: String = ANSWER.split_inclusive("\n\n").take(2).collect();
    let failing = format!(
        "{head}error: {}\n\ndata: [DONE]\n\n",
        r#"{"code":500,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}"#
    );
    let server = MockServer::start(vec![Reply::sse(pieces(failing.as_bytes(), 16))]).await;
    let reply = collect(agent(model(&server)).reply_stream(Msg::user("user", "Hi"))).await;
    assert!(reply.final_msg.is_none(), "no answer is stored: {:?}", reply.final_msg);
    let err = reply.error.as_ref().expect("the call fails");
    assert!(
        err.to_string()
            .contains("exceed_context_size_error: the request exceeds the available context size"),
        "{err}"
    );
    let provider = ProviderError::of(err).expect("the server's error");
    assert_eq!(
        (provider.kind.as_deref(), provider.code.as_deref(), provider.status),
        (Some("exceed_context_size_error"), Some("500"), None)
    );
}

#[tokio::test]
async fn bodies_that_are_not_json() {
    let server = MockServer::start(vec![Reply::body(
        502,
        "text/html",
        "<html><body>Bad Gateway</body></html>",
    )])
    .await;
    let err = agent(model(&server)).reply(Msg::user("user", "Hi")).await.unwrap_err();
    assert!(
        matches!(err, AgentError::Http { status: 502, .. }) && err.is_retryable(),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("(not JSON) <html><body>Bad Gateway</body></html>"),
        "{err}"
    );

    let server = MockServer::start(vec![Reply::body(200, "application/json", "<html>maintenance</html>")]).await;
    let err = agent(model(&server)).reply(Msg::user("user", "Hi")).await.unwrap_err();
    assert!(matches!(err, AgentError::Decode { .. }), "{err:?}");
    assert!(
        err.to_string().contains("chat completion from http://127.0.0.1:"),
        "{err}"
    );

    let server = MockServer::start(vec![Reply::sse(vec![b"data: {\"choices\": [oops\n\n".to_vec()])]).await;
    let err = agent(model(&server)).reply(Msg::user("user", "Hi")).await.unwrap_err();
    assert!(matches!(err, AgentError::Decode { .. }), "{err:?}");
    assert!(err.to_string().contains("stream chunk"), "{err}");
}

#[test]
fn the_builder_reads_the_environment_only_when_asked() {
    let err = OpenAiChatModel::builder("gpt-4o").from_env(false).build().unwrap_err();
    assert!(
        err.to_string().contains("set OPENAI_API_KEY or call .api_key()"),
        "{err}"
    );
    let model = OpenAiChatModel::builder("gpt-4o")
        .base_url("http://127.0.0.1:9/v1/")
        .from_env(false)
        .organization("org-1")
        .build()
        .unwrap();
    assert_eq!(model.endpoint(), "http://127.0.0.1:9/v1/chat/completions");
    assert_eq!(model.provider(), "openai");
    let err = OpenAiChatModel::builder("m")
        .base_url("ftp://x")
        .from_env(false)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("must be http or https"), "{err}");
    let err = OpenAiChatModel::builder("m")
        .base_url("http://x")
        .header("bad header", "v")
        .from_env(false)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("invalid header name 'bad header'"), "{err}");
}

/// An answer past `max_answer_bytes` fails with an error naming the limit, whole or streamed
/// (a server streaming deltas without end holds at most that much), and one at the limit is
/// read in full.
#[tokio::test]
async fn an_answer_past_its_byte_limit_fails_whole_or_streamed() {
    let limited = |server: &MockServer, stream: bool, limit: usize| {
        OpenAiChatModel::builder("gpt-4o")
            .base_url(format!("{}/v1", server.base))
            .api_key(KEY)
            .from_env(false)
            .stream(stream)
            .max_answer_bytes(limit)
            .build()
            .unwrap()
    };
    let completion = json!({
        "id": "chatcmpl-whole", "object": "chat.completion", "created": 1731000000, "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "x".repeat(4000)}}],
    })
    .to_string();
    // Whole: a fixed-length body (refused before it is read) and one sent until the connection
    // closes (refused as it passes the limit).
    for reply in [
        Reply::json(200, &completion),
        Reply::json(200, &completion).until_close(),
    ] {
        let server = MockServer::start(vec![reply]).await;
        let err = agent(limited(&server, false, 1024))
            .reply(Msg::user("user", "Hi"))
            .await
            .err()
            .unwrap();
        assert!(matches!(err, AgentError::Decode { .. }), "{err:?}");
        assert!(err.to_string().contains("larger than 1024 bytes"), "{err}");
    }
    let server = MockServer::start(vec![Reply::json(200, &completion)]).await;
    let answer = agent(limited(&server, false, completion.len()))
        .reply(Msg::user("user", "Hi"))
        .await
        .unwrap();
    assert_eq!(
        answer.text_content().map(|t| t.len()),
        Some(4000),
        "an answer at the limit is read in full"
    );

    // Streamed: the transcript is 1,704 bytes; 1 KB of it passes through, then the error.
    let server = MockServer::start(vec![Reply::sse(pieces(ANSWER.as_bytes(), 64))]).await;
    let reply = collect(agent(limited(&server, true, 1024)).reply_stream(Msg::user("user", "Hi"))).await;
    let err = reply.error.as_ref().unwrap();
    assert!(matches!(err, AgentError::Decode { .. }), "{err:?}");
    assert!(err.to_string().contains("larger than 1024 bytes"), "{err}");
    let server = MockServer::start(vec![Reply::sse(pieces(ANSWER.as_bytes(), 64))]).await;
    let reply = collect(agent(limited(&server, true, ANSWER.len())).reply_stream(Msg::user("user", "Hi"))).await;
    assert!(reply.error.is_none(), "{:?}", reply.error);
}

/// Decodes SSE `data:` events (`[DONE]` included) in memory, as the model reads a body.
async fn decoded(events: &[String]) -> Vec<Result<towerscope_core::ChatResponse, AgentError>> {
    use futures_util::StreamExt;
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    let body = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(body.into_bytes())]);
    towerscope_models::openai::decode_stream(body).collect().await
}

/// The (id, name, arguments) of each tool call block of `response`.
fn call_blocks(response: &towerscope_core::ChatResponse) -> Vec<(String, String, String)> {
    response
        .tool_calls()
        .map(|c| (c.id.to_string(), c.name.clone(), c.input.clone()))
        .collect()
}

#[tokio::test]
async fn calls_a_server_gives_one_index_or_none_are_one_call_per_id() {
    // Ollama gives every call index 0; older builds and some proxies give none.
    for index in [Some(0), None] {
        let chunk = |call: serde_json::Value| {
            let mut call = call;
            if let Some(index) = index {
                call["index"] = json!(index);
            }
            json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}).to_string()
        };
        let events = [
            chunk(json!({"id": "call_a", "type": "function", "function": {"name": "read", "arguments": "{\"p\": "}})),
            // A continuation under another id (some proxies give each chunk one) and no name.
            chunk(json!({"id": "chunk_2", "function": {"arguments": "\"a\"}"}})),
            chunk(
                json!({"id": "call_b", "type": "function", "function": {"name": "read", "arguments": "{\"p\": \"b\"}"}}),
            ),
            json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
                .to_string(),
            "[DONE]".to_owned(),
        ];
        let items = decoded(&events).await;
        let responses: Vec<_> = items.iter().map(|i| i.as_ref().unwrap()).collect();
        let (last, chunks) = responses.split_last().unwrap();
        assert!(last.is_last);
        let call = |id: &str, name: &str, input: &str| (id.to_owned(), name.to_owned(), input.to_owned());
        assert_eq!(
            call_blocks(last),
            [
                call("call_a", "read", r#"{"p": "a"}"#),
                call("call_b", "read", r#"{"p": "b"}"#)
            ],
            "index {index:?}"
        );
        // The name comes with a call's first chunk; merging the chunks keeps it.
        let streamed: Vec<_> = chunks.iter().flat_map(|c| call_blocks(c)).collect();
        assert_eq!(
            streamed,
            [
                call("call_a", "read", r#"{"p": "#),
                call("call_a", "", r#""a"}"#),
                call("call_b", "read", r#"{"p": "b"}"#)
            ]
        );
        let mut merged = chunks[0].clone();
        for c in &chunks[1..] {
            merged.append_chat_response(c);
        }
        assert_eq!(call_blocks(&merged), call_blocks(last));
    }

    // More shapes under one index: what arrives, and the calls it makes.
    let delta = |id: Option<&str>, name: Option<&str>, arguments: &str| {
        let mut call = json!({"index": 0, "function": {"arguments": arguments}});
        if let Some(id) = id {
            call["id"] = json!(id);
        }
        if let Some(name) = name {
            call["function"]["name"] = json!(name);
        }
        json!({"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}).to_string()
    };
    /// What a case is called, the chunks it sends, and the (id, arguments) of the calls.
    type Case<'a> = (&'a str, Vec<String>, &'a [(&'a str, &'a str)]);
    let cases: [Case<'_>; 4] = [
        (
            // A second call here would run a tool the model asked for once.
            "the call's id and name again after its arguments",
            vec![
                delta(Some("c"), Some("read"), r#"{"p": "a"}"#),
                delta(Some("c"), Some("read"), ""),
            ],
            &[("c", r#"{"p": "a"}"#)],
        ),
        (
            "a proxy naming every chunk under an id of its own",
            vec![
                delta(Some("x1"), Some("read"), r#"{"p": "#),
                delta(Some("x2"), Some("read"), r#""a"}"#),
            ],
            &[("x1", r#"{"p": "a"}"#)],
        ),
        (
            "two calls under one id",
            vec![
                delta(Some("c"), Some("read"), r#"{"p": "a"}"#),
                delta(Some("c"), Some("read"), r#"{"p": "b"}"#),
            ],
            &[("c", r#"{"p": "a"}"#), ("c", r#"{"p": "b"}"#)],
        ),
        (
            "names first, arguments after",
            vec![
                delta(Some("a"), Some("read"), ""),
                delta(None, None, r#"{"p": "a"}"#),
                delta(Some("b"), Some("read"), ""),
                delta(None, None, r#"{"p": "b"}"#),
            ],
            &[("a", r#"{"p": "a"}"#), ("b", r#"{"p": "b"}"#)],
        ),
    ];
    for (case, mut events, expected) in cases {
        events.push(
            json!({"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
                .to_string(),
        );
        events.push("[DONE]".to_owned());
        let items = decoded(&events).await;
        let last = items.last().unwrap().as_ref().unwrap();
        let calls: Vec<(String, String)> = call_blocks(last)
            .into_iter()
            .map(|(id, _, input)| (id, input))
            .collect();
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(id, input)| ((*id).to_owned(), (*input).to_owned()))
            .collect();
        assert_eq!(calls, expected, "{case}");
    }
}

/// Azure OpenAI's first streamed chunk holds only its prompt filter results, with an empty id
/// and `"model": ""`: the response's model and id are the later chunks'.
#[tokio::test]
async fn an_azure_stream_names_the_model_its_first_chunk_leaves_empty() {
    let events = [
        json!({"choices": [], "created": 0, "id": "", "model": "", "object": "",
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}]})
        .to_string(),
        json!({"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": null}],
            "id": "chatcmpl-1", "model": "gpt-4o-2024-08-06", "object": "chat.completion.chunk"})
        .to_string(),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "id": "chatcmpl-1", "model": "gpt-4o-2024-08-06", "object": "chat.completion.chunk"})
        .to_string(),
        "[DONE]".to_owned(),
    ];
    let items = decoded(&events).await;
    let last = items.last().unwrap().as_ref().unwrap();
    assert_eq!(last.metadata["model"], "gpt-4o-2024-08-06");
    assert_eq!(last.id.to_string(), "chatcmpl-1");
    assert_eq!(last.text().as_deref(), Some("Hi"));
}

#[tokio::test]
async fn arguments_sent_as_an_object_are_taken_as_their_json() {
    let events = [
        json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
        ]}, "finish_reason": "tool_calls"}]})
        .to_string(),
        "[DONE]".to_owned(),
    ];
    let items = decoded(&events).await;
    let last = items.last().unwrap().as_ref().unwrap();
    assert_eq!(
        call_blocks(last),
        [(
            "call_a".to_owned(),
            "get_weather".to_owned(),
            r#"{"city":"Paris"}"#.to_owned()
        )]
    );

    // Whole, through the agent: the tool runs with them.
    let completion = |message: serde_json::Value| {
        json!({"id": "chatcmpl-w", "object": "chat.completion", "model": "m",
               "choices": [{"index": 0, "finish_reason": "stop", "message": message}]})
        .to_string()
    };
    let server = MockServer::start(vec![
        Reply::json(
            200,
            &completion(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
            ]})),
        ),
        Reply::json(200, &completion(json!({"role": "assistant", "content": "Sunny."}))),
    ])
    .await;
    let model = OpenAiChatModel::builder("gpt-4o")
        .base_url(format!("{}/v1", server.base))
        .api_key(KEY)
        .from_env(false)
        .stream(false)
        .build()
        .unwrap();
    let answer = agent(model).reply(Msg::user("user", "Weather?")).await.unwrap();
    assert_eq!(answer.text_content().as_deref(), Some("Sunny."));
    let second = server.requests()[1].json();
    let (messages, _) = support::without_hints(&second["messages"]);
    assert_eq!(messages[3]["content"], r#"{"celsius":21,"city":"Paris","sky":"sunny"}"#);
}

#[test]
fn a_base_url_with_credentials_is_refused_without_showing_them() {
    let builder = OpenAiChatModel::builder("gpt-4o")
        .base_url("http://alice:s3cret@127.0.0.1:9/v1")
        .from_env(false);
    let shown = format!("{builder:?}");
    assert!(
        !shown.contains("s3cret") && shown.contains("http://***@127.0.0.1:9/v1"),
        "{shown}"
    );
    let err = builder.build().unwrap_err();
    assert!(matches!(err, AgentError::Validation(_)), "{err:?}");
    let text = format!("{err} {err:?}");
    assert!(
        text.contains("user name or password") && !text.contains("s3cret"),
        "{text}"
    );
    let err = OpenAiChatModel::builder("m")
        .base_url("http://alice:s3cret@[::1")
        .from_env(false)
        .build()
        .unwrap_err();
    assert!(!err.to_string().contains("s3cret"), "{err}");
}

#[tokio::test]
async fn a_connection_error_names_the_endpoint_without_the_urls_query() {
    // A gateway's key in the query (`?subscription-key=`): reqwest's error quotes the URL.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let model = OpenAiChatModel::builder("gpt-4o")
        .base_url(format!("http://127.0.0.1:{port}/v1?subscription-key=TOPSECRET"))
        .api_key(KEY)
        .from_env(false)
        .build()
        .unwrap();
    let err = agent(model).reply(Msg::user("user", "Hi")).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&format!(
            "could not connect to http://127.0.0.1:{port}/v1/chat/completions"
        )),
        "{text}"
    );
    assert!(
        !text.contains("TOPSECRET") && !format!("{err:?}").contains("TOPSECRET"),
        "{text}"
    );
}

#[tokio::test]
async fn a_silent_server_times_out_and_one_sending_only_pings_meets_the_layer_deadlines() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use towerscope_layers::TimeoutLayer;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut silent = Vec::new();
        for pings in [false, true] {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut request = vec![0u8; 64 * 1024];
            let _ = socket.read(&mut request).await;
            if !pings {
                // Accepts the request and says nothing.
                silent.push(socket);
                continue;
            }
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
            let _ = socket.write_all(head.as_bytes()).await;
            tokio::spawn(async move {
                // A keep-alive comment every 50 ms, forever: bytes, never a chunk of an answer.
                while socket.write_all(b"8\r\n: ping\n\n\r\n").await.is_ok() {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            });
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
        drop(silent);
    });
    let model = || {
        OpenAiChatModel::builder("gpt-4o")
            .base_url(&base)
            .api_key(KEY)
            .from_env(false)
            .read_timeout(Some(Duration::from_millis(300)))
            .build()
            .unwrap()
    };
    // By default, 10 minutes without a byte (too long to wait for here).
    let default = format!("{:?}", OpenAiChatModel::builder("gpt-4o"));
    assert!(default.contains("read_timeout: Some(600s)"), "{default}");
    let silent = tokio::time::timeout(Duration::from_secs(20), agent(model()).reply(Msg::user("user", "Hi")))
        .await
        .expect("the read timeout ends the call");
    let err = silent.unwrap_err();
    assert!(matches!(err, AgentError::Timeout { .. }), "{err:?}");

    let pinging = Agent::builder("Friday")
        .model(model())
        .on_model_call(
            TimeoutLayer::none()
                .first_chunk(Duration::from_millis(500))
                .idle(Duration::from_millis(500)),
        )
        .build()
        .unwrap();
    let err = tokio::time::timeout(Duration::from_secs(20), pinging.reply(Msg::user("user", "Hi")))
        .await
        .expect("the first-chunk deadline ends the call")
        .unwrap_err();
    assert!(matches!(err, AgentError::Timeout { .. }), "{err:?}");
}

/// One small event listing a hundred thousand tool calls (`{}` each, three bytes on the wire,
/// about 260 in memory) is refused past 1,024 calls, not turned into a hundred thousand calls
/// the agent would then run.
#[tokio::test]
async fn an_answer_past_1024_tool_calls_is_refused() {
    let calls = vec!["{}"; 100_000].join(",");
    let event = format!(r#"{{"choices":[{{"delta":{{"tool_calls":[{calls}]}}}}]}}"#);
    let items = decoded(&[event, "[DONE]".to_owned()]).await;
    let error = items
        .iter()
        .find_map(|i| i.as_ref().err())
        .expect("the answer is refused");
    assert!(error.to_string().contains("more than 1024 tool calls"), "{error}");
    assert!(
        items
            .iter()
            .filter_map(|i| i.as_ref().ok())
            .all(|c| c.content.len() <= 1024),
        "no chunk of a hundred thousand calls"
    );
}
