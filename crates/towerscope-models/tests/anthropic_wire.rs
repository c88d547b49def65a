//! The Anthropic provider against a loopback server replaying SSE transcripts written from the
//! Messages streaming documentation, byte for byte: extended thinking with its signature sent
//! back in the tool round, `ping`, cache tokens, prompt caching, an `error` event mid-stream,
//! 529 and 400 answers.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use serde_json::json;
use support::{MockServer, Reply, collect, joined, pieces};
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{AgentError, ContentBlock, Msg};
use towerscope_layers::RetryLayer;
use towerscope_layers::retry::Backoff;
use towerscope_models::anthropic::{AnthropicChatModel, AnthropicChatModelBuilder, SIGNATURE};
use towerscope_models::http::ProviderError;

const THINKING_TOOL: &str = include_str!("transcripts/anthropic_thinking_tool.sse");
const ANSWER: &str = include_str!("transcripts/anthropic_answer.sse");
const OVERLOADED: &str = include_str!("transcripts/anthropic_overloaded.sse");
const KEY: &str = "sk-ant-test-0123456789secret";
const SIG: &str = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds=";

/// Get the current weather of a city.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct GetWeather {
    /// The city.
    city: String,
}

async fn get_weather(args: GetWeather) -> String {
    format!("{}: sunny, 21 °C", args.city)
}

fn builder(server: &MockServer) -> AnthropicChatModelBuilder {
    AnthropicChatModel::builder("claude-sonnet-4-5")
        .base_url(&server.base)
        .api_key(KEY)
        .from_env(false)
}

fn agent(model: AnthropicChatModel) -> Agent {
    Agent::builder("Friday")
        .system_prompt("You are Friday, a weather assistant.")
        .model(model)
        .tool(FunctionTool::new("get_weather", get_weather))
        .build()
        .unwrap()
}

#[tokio::test]
async fn thinking_and_a_tool_round_send_the_signed_thinking_back() {
    let server = MockServer::start(vec![
        Reply::sse(pieces(THINKING_TOOL.as_bytes(), 9)),
        Reply::sse(pieces(ANSWER.as_bytes(), 7)),
    ])
    .await;
    let model = builder(&server)
        .max_tokens(8000)
        .thinking(4000)
        .prompt_caching(true)
        .build()
        .unwrap();
    let agent = agent(model);
    let reply = collect(agent.reply_stream(Msg::user("alice", "Weather in Paris?"))).await;
    assert!(reply.error.is_none(), "{:?}", reply.error);
    assert_eq!(
        joined(&reply.lines()),
        [
            "REPLY_START",
            "MODEL_CALL_START",
            "THINKING_BLOCK_START",
            "THINKING_BLOCK_DELTA The user wants the weather in Paris; I'll call get_weather.",
            "THINKING_BLOCK_END",
            "TOOL_CALL_START toolu_01Paris get_weather",
            r#"TOOL_CALL_DELTA {"city": "Paris"}"#,
            "TOOL_CALL_END toolu_01Paris",
            "MODEL_CALL_END in=1436 out=87 cached=1024 written=0",
            "TOOL_RESULT_START toolu_01Paris",
            "TOOL_RESULT_TEXT_DELTA Paris: sunny, 21 °C",
            "TOOL_RESULT_END success",
            "MODEL_CALL_START",
            "TEXT_BLOCK_START",
            "TEXT_BLOCK_DELTA Il fait beau à Paris : 21 °C ☀️.",
            "TEXT_BLOCK_END",
            "MODEL_CALL_END in=1524 out=15 cached=0 written=1489",
            "REPLY_END",
        ]
    );

    // The stored reply keeps the signature.
    let context = agent.state().context;
    // After the runtime-state hint, the reply starts with its thinking.
    assert!(matches!(&context[1].content[0], ContentBlock::Hint(_)));
    let ContentBlock::Thinking(thinking) = &context[1].content[1] else {
        panic!("the reply starts with its thinking: {:?}", context[1].content)
    };
    assert_eq!(thinking.extra[SIGNATURE], SIG);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert_eq!(first.path, "/v1/messages");
    assert_eq!(first.header("x-api-key"), Some(KEY));
    assert_eq!(first.header("anthropic-version"), Some("2023-06-01"));
    let body = first.json();
    assert_eq!(
        (&body["max_tokens"], &body["thinking"], &body["stream"]),
        (
            &json!(8000),
            &json!({"type": "enabled", "budget_tokens": 4000}),
            &json!(true)
        )
    );
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You are Friday, a weather assistant.", "cache_control": ephemeral}])
    );
    assert_eq!(body["tools"][0]["name"], "get_weather");
    assert_eq!(body["tools"][0]["cache_control"], ephemeral);

    let second = requests[1].json();
    // The hint joins the user turn before the assistant's, so the assistant turn still starts
    // with its signed thinking, as the API requires.
    let (messages, hints) = support::without_hints(&second["messages"]);
    assert_eq!(hints, 1);
    assert_eq!(second["messages"][0]["content"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        messages,
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "The user wants the weather in Paris; I'll call get_weather.", "signature": SIG},
                {"type": "tool_use", "id": "toolu_01Paris", "name": "get_weather", "input": {"city": "Paris"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01Paris", "content": [{"type": "text", "text": "Paris: sunny, 21 °C"}], "cache_control": ephemeral}
            ]}
        ])
    );
}

#[tokio::test]
async fn an_overloaded_error_event_mid_stream_is_retried() {
    let server = MockServer::start(vec![Reply::sse(pieces(OVERLOADED.as_bytes(), 13))]).await;
    let reply = collect(agent(builder(&server).build().unwrap()).reply_stream(Msg::user("u", "Hi"))).await;
    let err = reply.error.as_ref().unwrap();
    let provider = ProviderError::of(err).unwrap();
    assert_eq!(
        (provider.kind.as_deref(), provider.message.as_str()),
        (Some("overloaded_error"), "Overloaded")
    );
    assert!(err.is_retryable(), "{err}");
    assert!(reply.lines().contains(&"TEXT_BLOCK_DELTA Let me".to_owned()));

    let server = MockServer::start(vec![
        Reply::sse(pieces(OVERLOADED.as_bytes(), 13)),
        Reply::sse(pieces(ANSWER.as_bytes(), 64)),
    ])
    .await;
    let agent = Agent::builder("Friday")
        .model(builder(&server).build().unwrap())
        .on_model_call(RetryLayer::new(2).backoff(Backoff::new(Duration::from_millis(5), Duration::from_millis(5))))
        .build()
        .unwrap();
    let reply = collect(agent.reply_stream(Msg::user("u", "Hi"))).await;
    assert!(reply.error.is_none(), "{:?}", reply.error);
    assert_eq!(
        joined(&reply.lines())[2..6],
        [
            "TEXT_BLOCK_START",
            "TEXT_BLOCK_DELTA Let me",
            "CUSTOM model_call_restart",
            "TEXT_BLOCK_START",
        ]
    );
    assert_eq!(reply.final_text().as_deref(), Some("Il fait beau à Paris : 21 °C ☀️."));
}

#[tokio::test]
async fn http_errors_529_and_400() {
    let overloaded = Reply::json(529, r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}"#)
        .header("retry-after", "1")
        .header("request-id", "req_011CSHoEeqs5C35K2UUqR7Fy");
    let server = MockServer::start(vec![overloaded]).await;
    let err = agent(builder(&server).build().unwrap())
        .reply(Msg::user("u", "Hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, AgentError::Http { status: 529, .. }) && err.is_retryable(),
        "{err:?}"
    );
    assert_eq!(err.retry_after(), Some(Duration::from_secs(1)));
    assert!(
        err.to_string()
            .contains("overloaded_error: Overloaded (request id req_011CSHoEeqs5C35K2UUqR7Fy)"),
        "{err}"
    );

    let too_long = Reply::json(
        400,
        r#"{"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 215000 tokens > 200000 maximum"}, "request_id": "req_400"}"#,
    );
    let server = MockServer::start(vec![too_long]).await;
    let agent = Agent::builder("Friday")
        .model(builder(&server).build().unwrap())
        .on_model_call(RetryLayer::new(3))
        .build()
        .unwrap();
    let err = agent.reply(Msg::user("u", "Hi")).await.unwrap_err();
    assert!(!err.is_retryable());
    assert_eq!(server.requests().len(), 1);
    assert!(
        err.to_string()
            .contains("invalid_request_error: prompt is too long: 215000 tokens > 200000 maximum (request id req_400)"),
        "{err}"
    );
    assert!(!format!("{err} {err:?}").contains(KEY));
}

#[tokio::test]
async fn a_whole_message_without_streaming() {
    let message = json!({
        "id": "msg_whole", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
        "content": [
            {"type": "thinking", "thinking": "Simple.", "signature": "EqSig"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Rome"}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 20, "output_tokens": 12, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 0}
    });
    let server = MockServer::start(vec![
        Reply::json(200, &message.to_string()),
        Reply::sse(pieces(ANSWER.as_bytes(), 64)),
    ])
    .await;
    let model = builder(&server)
        .stream(false)
        .parallel_tool_calls(false)
        .build()
        .unwrap();
    let agent = agent(model);
    let reply = collect(agent.reply_stream(Msg::user("u", "Rome?"))).await;
    assert!(reply.error.is_none(), "{:?}", reply.error);
    assert_eq!(
        joined(&reply.lines())[2..10],
        [
            "THINKING_BLOCK_START",
            "THINKING_BLOCK_DELTA Simple.",
            "TEXT_BLOCK_START",
            "TEXT_BLOCK_DELTA Checking.",
            "TOOL_CALL_START toolu_9 get_weather",
            r#"TOOL_CALL_DELTA {"city":"Rome"}"#,
            "TEXT_BLOCK_END",
            "THINKING_BLOCK_END",
        ]
    );
    let requests = server.requests();
    let first = requests[0].json();
    assert_eq!(first["stream"], false);
    assert_eq!(
        first["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
    let second = requests[1].json();
    assert_eq!(
        second["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "Simple.", "signature": "EqSig"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Rome"}}
        ])
    );
}

#[tokio::test]
async fn a_stream_cut_before_message_stop() {
    let cut = ANSWER.find("event: message_delta").unwrap();
    let server = MockServer::start(vec![Reply::sse(vec![ANSWER.as_bytes()[..cut].to_vec()]).until_close()]).await;
    let err = agent(builder(&server).build().unwrap())
        .reply(Msg::user("u", "Hi"))
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::Stream(_)) && err.is_retryable(), "{err:?}");
    assert!(
        err.to_string()
            .contains("ended without its message_stop event, before its stop reason"),
        "{err}"
    );

    // Cut after the stop reason, only `message_stop` missing: the message is whole.
    let cut = ANSWER.find("event: message_stop").unwrap();
    let server = MockServer::start(vec![Reply::sse(vec![ANSWER.as_bytes()[..cut].to_vec()]).until_close()]).await;
    let msg = agent(builder(&server).build().unwrap())
        .reply(Msg::user("u", "Hi"))
        .await
        .unwrap();
    assert!(msg.text_content().is_some_and(|t| !t.is_empty()), "{msg:?}");
    assert_eq!(
        msg.finished_reason,
        Some(towerscope_core::ReplyFinishedReason::Completed)
    );
}

#[test]
fn the_builder_checks_its_settings() {
    let err = AnthropicChatModel::builder("claude")
        .from_env(false)
        .build()
        .unwrap_err();
    assert!(
        err.to_string().contains("set ANTHROPIC_API_KEY or call .api_key()"),
        "{err}"
    );
    let err = AnthropicChatModel::builder("claude")
        .api_key("k")
        .from_env(false)
        .max_tokens(1024)
        .thinking(2048)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("must be below max_tokens (1024)"), "{err}");
    // What the API refuses beside thinking is refused when the model is built.
    for refused in [
        AnthropicChatModel::builder("claude").temperature(0.5),
        AnthropicChatModel::builder("claude").top_k(40),
        AnthropicChatModel::builder("claude").top_p(0.9),
    ] {
        let err = refused
            .api_key("k")
            .from_env(false)
            .max_tokens(4096)
            .thinking(2048)
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("with thinking"), "{err}");
    }
    AnthropicChatModel::builder("claude")
        .api_key("k")
        .from_env(false)
        .max_tokens(4096)
        .thinking(2048)
        .temperature(1.0)
        .top_p(0.95)
        .build()
        .unwrap();
    let model = AnthropicChatModel::builder("claude")
        .base_url("http://127.0.0.1:9")
        .from_env(false)
        .beta("prompt-caching-2024-07-31")
        .build()
        .unwrap();
    assert_eq!(model.endpoint(), "http://127.0.0.1:9/v1/messages");
}

/// Decodes SSE events `(name, data)` in memory, as the model reads a body.
async fn decoded(events: &[(&str, serde_json::Value)]) -> Vec<Result<towerscope_core::ChatResponse, AgentError>> {
    use futures_util::StreamExt;
    let body: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    let body = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(body.into_bytes())]);
    towerscope_models::anthropic::decode_stream(body).collect().await
}

#[tokio::test]
async fn a_tool_call_is_named_at_its_start_and_counts_that_overflow_saturate() {
    let delta = |json: &str| json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": json}});
    let items = decoded(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude", "usage": {
                "input_tokens": u64::MAX, "cache_read_input_tokens": 1, "output_tokens": 0}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}}),
        ),
        ("content_block_delta", delta("{\"city\": ")),
        ("content_block_delta", delta("\"Paris\"}")),
        ("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ])
    .await;
    let responses: Vec<_> = items.iter().map(|i| i.as_ref().unwrap()).collect();
    let (last, chunks) = responses.split_last().unwrap();
    let calls = |r: &towerscope_core::ChatResponse| -> Vec<(String, String)> {
        r.tool_calls().map(|c| (c.name.clone(), c.input.clone())).collect()
    };
    // The name comes with the block's start; the fragments' chunks leave it to merging.
    let streamed: Vec<_> = chunks.iter().flat_map(|c| calls(c)).collect();
    let pair = |name: &str, input: &str| (name.to_owned(), input.to_owned());
    assert_eq!(
        streamed,
        [pair("get_weather", ""), pair("", "{\"city\": "), pair("", "\"Paris\"}")]
    );
    let mut merged = chunks[0].clone();
    for c in &chunks[1..] {
        merged.append_chat_response(c);
    }
    assert_eq!(calls(&merged), [pair("get_weather", r#"{"city": "Paris"}"#)]);
    assert_eq!(calls(last), calls(&merged));
    // A count past u64 (the sum of the input and cache counts) saturates, not panics or wraps.
    assert_eq!(last.usage.as_ref().map(|u| u.input_tokens), Some(u64::MAX));
}

#[test]
fn the_default_read_timeout_is_ten_minutes() {
    let default = format!("{:?}", AnthropicChatModel::builder("claude"));
    assert!(default.contains("read_timeout: Some(600s)"), "{default}");
}

/// A redirect to another origin is not followed: reqwest would send `x-api-key` (and the
/// builder's headers) on to the other host. One within the origin is followed.
#[tokio::test]
async fn the_key_does_not_follow_a_redirect_to_another_origin() {
    let elsewhere = MockServer::start(vec![Reply::sse(pieces(ANSWER.as_bytes(), 64))]).await;
    let server = MockServer::start(vec![
        Reply::json(307, "{}").header("location", &format!("{}/v1/messages", elsewhere.base)),
        Reply::json(307, "{}").header("location", "/v1/messages?moved=1"),
        Reply::sse(pieces(ANSWER.as_bytes(), 64)),
    ])
    .await;
    let model = builder(&server)
        .header("x-team-token", "team-0123456789")
        .build()
        .unwrap();
    let agent = agent(model);
    let err = agent.reply(Msg::user("alice", "Weather in Paris?")).await.unwrap_err();
    assert!(elsewhere.requests().is_empty(), "nothing reached the other origin");
    assert!(err.to_string().contains("307"), "{err}");

    let answer = agent.reply(Msg::user("alice", "Weather in Paris?")).await.unwrap();
    assert!(answer.text_content().is_some());
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "the redirect within the origin was followed");
    assert_eq!(requests[2].header("x-api-key"), Some(KEY));
}

/// Deltas for thousands of blocks never started (a broken proxy) each open their block once,
/// found by index (the search through every block so far made this quadratic); an answer
/// whose server sent no usage has none, rather than a free call.
#[tokio::test]
async fn deltas_of_thousands_of_unstarted_blocks_and_an_answer_without_usage() {
    let n = 5_000u32;
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude"}}),
    )];
    for index in 0..n {
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": format!("t{index} ")}}),
        ));
    }
    for index in 0..n {
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": "again"}}),
        ));
    }
    events.push(("message_stop", json!({"type": "message_stop"})));
    let items = decoded(&events).await;
    let last = items.last().unwrap().as_ref().unwrap();
    let texts: Vec<String> = last
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(texts.len(), n as usize, "one block per index");
    assert_eq!(texts[0], "t0 again");
    assert_eq!(texts[4_999], "t4999 again");
    assert!(last.usage.is_none(), "{:?}", last.usage);
}

/// An answer opening thousands of `tool_use` blocks (about eighty bytes each on the wire) is
/// refused past 1,024 calls, not turned into thousands of calls the agent would then run;
/// deltas of tool blocks never started count as their starts would.
#[tokio::test]
async fn an_answer_past_1024_tool_calls_is_refused() {
    let start = |index: u32| {
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": format!("toolu_{index}"), "name": "f", "input": {}}}),
        )
    };
    let unstarted = |index: u32| {
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
        )
    };
    let message_start = (
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude"}}),
    );
    let stop = ("message_stop", json!({"type": "message_stop"}));
    let cases: [(&str, Vec<_>); 2] = [
        ("starts", (0..5_000).map(start).collect()),
        ("unstarted deltas", (0..5_000).map(unstarted).collect()),
    ];
    for (label, calls) in cases {
        let mut events = vec![message_start.clone()];
        events.extend(calls);
        events.push(stop.clone());
        let items = decoded(&events).await;
        let error = items
            .iter()
            .find_map(|i| i.as_ref().err())
            .unwrap_or_else(|| panic!("case {label}: the answer is refused"));
        assert!(error.to_string().contains("more than 1024 tool calls"), "{error}");
        let opened = items
            .iter()
            .filter_map(|i| i.as_ref().ok())
            .filter(|c| c.tool_calls().next().is_some());
        assert!(
            opened.count() <= 2 * 1024,
            "case {label}: the calls stopped at the bound"
        );
    }
    // Exactly 1,024 calls are taken.
    let mut events = vec![message_start];
    events.extend((0..1_024).map(start));
    events.push(stop);
    let items = decoded(&events).await;
    let last = items.last().unwrap().as_ref().unwrap();
    assert_eq!(last.tool_calls().count(), 1_024);
}
