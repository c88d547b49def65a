//! Cassettes of a real server (llama.cpp's `llama-server` with SmolLM2-135M, as in
//! `llm_server.rs`), for both providers: a forced tool round, a streamed answer, and the
//! server's own error inside a 200 stream.
//!
//! - The cassettes in `tests/cassettes/` were recorded once from the real server
//!   (`TOWERSCOPE_CASSETTE=record` with the server up); every run replays them twice against
//!   a loopback server that must receive nothing, and checks the events and the stored conversation against a snapshot:
//!   the same on every run, and no request sent. With `TOWERSCOPE_CASSETTE=record` these tests
//!   record them again (the server is then required).
//! - With the server up (`scripts/test.sh` starts it and sets `TOWERSCOPE_REQUIRE_LLM=1`), a
//!   tool round is recorded fresh, then replayed: the same events and conversation as the
//!   recorded run.
//!
//! The models are given an API key the server ignores, and no cassette holds it.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::PathBuf;
use std::sync::Arc;

use support::MockServer;
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{ChatModel, ModelCallRequest, ModelOutput, Msg, Next, ToolChoice, from_fn};
use towerscope_models::anthropic::AnthropicChatModel;
use towerscope_models::cassette::{Cassette, CassetteMode};
use towerscope_models::openai::OpenAiChatModel;

const KEY: &str = "sk-cassette-0123456789abcdef";
const MODEL: &str = "smollm2-135m-instruct";
/// Room for a tool call; a text answer cut short (see `llm_server.rs`).
const CALL_TOKENS: u32 = 48;
const TEXT_TOKENS: u32 = 12;

/// The real server's base URL, or `None` (with the reason printed) when there is none.
fn server() -> Option<String> {
    match std::env::var("TOWERSCOPE_LLM_BASE_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim_end_matches('/').to_owned()),
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

#[derive(Clone, Copy, Debug)]
enum Provider {
    OpenAi,
    Anthropic,
}

impl Provider {
    fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    fn model(self, base: &str, cassette: &Cassette, max_tokens: u32) -> Arc<dyn ChatModel> {
        let transport = cassette.http_service().unwrap();
        match self {
            Self::OpenAi => Arc::new(
                OpenAiChatModel::builder(MODEL)
                    .base_url(format!("{base}/v1"))
                    .api_key(KEY)
                    .from_env(false)
                    .temperature(0.0)
                    .seed(7)
                    .max_tokens(max_tokens)
                    .http_service(transport)
                    .build()
                    .unwrap(),
            ),
            Self::Anthropic => Arc::new(
                AnthropicChatModel::builder(MODEL)
                    .base_url(base)
                    .api_key(KEY)
                    .from_env(false)
                    .temperature(0.0)
                    .max_tokens(max_tokens)
                    .http_service(transport)
                    .build()
                    .unwrap(),
            ),
        }
    }
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

#[derive(Clone, Copy, Debug)]
enum Scenario {
    /// The first call must call the tool; the second answers in text, offered no tools.
    ToolRound,
    /// A streamed text answer, cut at `TEXT_TOKENS`.
    StreamedAnswer,
    /// The server's own error inside a 200 stream: with `auto`, it fits the model's free text
    /// to its tool-call format, fails, and says so (see `llm_server.rs`).
    ServerError,
}

/// Runs `scenario` through `cassette` against `base` and renders what it produced: every event
/// as JSON, the final message or error, and the stored conversation.
async fn run(provider: Provider, scenario: Scenario, base: &str, cassette: &Cassette) -> String {
    let caller = provider.model(base, cassette, CALL_TOKENS);
    let answerer = provider.model(base, cassette, TEXT_TOKENS);
    cassette
        .scope(async {
            let agent = match scenario {
                Scenario::ToolRound => {
                    let force_first = from_fn(
                        move |mut req: ModelCallRequest, next: Next<ModelCallRequest, ModelOutput>| {
                            let answerer = Arc::clone(&answerer);
                            async move {
                                if req.ctx.iteration() == 0 {
                                    req.tool_choice = Some(ToolChoice::required());
                                } else {
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
                        .model_ref(caller)
                        .tool(FunctionTool::new("get_weather", get_weather))
                        .on_model_call(force_first)
                        .max_iters(3)
                        .build()
                        .unwrap()
                }
                Scenario::StreamedAnswer => Agent::builder("Guide")
                    .system_prompt("You are a travel guide.")
                    .model_ref(answerer)
                    .build()
                    .unwrap(),
                Scenario::ServerError => Agent::builder("Friday")
                    .model_ref(caller)
                    .tool(FunctionTool::new("get_weather", get_weather))
                    .on_model_call(from_fn(
                        |mut req: ModelCallRequest, next: Next<ModelCallRequest, ModelOutput>| {
                            req.tool_choice = Some(ToolChoice::auto());
                            next.run(req)
                        },
                    ))
                    .max_iters(1)
                    .build()
                    .unwrap(),
            };
            let question = match scenario {
                Scenario::ToolRound => "What is the weather in Paris?",
                Scenario::StreamedAnswer => "Describe Paris in three sentences.",
                Scenario::ServerError => "Say hello.",
            };
            let reply = support::collect(agent.reply_stream(Msg::user("user", question))).await;
            reply.transcript(&agent.state().context)
        })
        .await
}

fn checked_in(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cassettes")
        .join(format!("{name}.jsonl"))
}

/// Replays the checked-in cassette of `scenario` twice against a server that must receive nothing (or records it
/// when `TOWERSCOPE_CASSETTE` says so), and checks the rendering against the snapshot.
async fn checked_in_cassette(provider: Provider, scenario: Scenario) {
    let scenario_name = match scenario {
        Scenario::ToolRound => "tool_round",
        Scenario::StreamedAnswer => "streamed_answer",
        Scenario::ServerError => "server_error",
    };
    let name = format!("{}_{scenario_name}", provider.name());
    let path = checked_in(&name);
    let cassette = Cassette::open(&path).unwrap();
    if cassette.mode() != CassetteMode::Replay {
        let Some(base) = server() else {
            panic!("recording {name} needs the LLM server")
        };
        let rendered = run(provider, scenario, &base, &cassette).await;
        insta::assert_snapshot!(name.clone(), rendered);
        return;
    }
    let trap = MockServer::start(Vec::new()).await;
    let first = run(provider, scenario, &trap.base, &cassette).await;
    let again = Cassette::open(&path).unwrap();
    let second = run(provider, scenario, &trap.base, &again).await;
    assert!(trap.requests().is_empty(), "replay sent nothing");
    assert!(
        cassette.unplayed().is_empty() && again.unplayed().is_empty(),
        "every recorded call was made"
    );
    assert_eq!(first, second, "the same events and conversation run after run");
    match scenario {
        Scenario::ToolRound => assert!(first.contains(r#""type":"TOOL_RESULT_END""#), "the tool ran: {first}"),
        Scenario::StreamedAnswer => assert!(first.contains("error: None"), "{first}"),
        Scenario::ServerError => assert!(first.contains("server_error"), "the server's error: {first}"),
    }
    if !matches!(scenario, Scenario::ServerError) {
        assert!(first.contains("error: None"), "{first}");
    }
    let file = std::fs::read_to_string(&path).unwrap();
    assert!(!file.contains(KEY) && file.contains("[REDACTED]"), "no key in {name}");
    insta::assert_snapshot!(name, first);
}

#[tokio::test]
async fn openai_tool_round_replays_from_its_cassette() {
    checked_in_cassette(Provider::OpenAi, Scenario::ToolRound).await;
}

#[tokio::test]
async fn openai_streamed_answer_replays_from_its_cassette() {
    checked_in_cassette(Provider::OpenAi, Scenario::StreamedAnswer).await;
}

#[tokio::test]
async fn openai_server_error_replays_from_its_cassette() {
    checked_in_cassette(Provider::OpenAi, Scenario::ServerError).await;
}

#[tokio::test]
async fn anthropic_server_error_replays_from_its_cassette() {
    checked_in_cassette(Provider::Anthropic, Scenario::ServerError).await;
}

#[tokio::test]
async fn anthropic_tool_round_replays_from_its_cassette() {
    checked_in_cassette(Provider::Anthropic, Scenario::ToolRound).await;
}

#[tokio::test]
async fn anthropic_streamed_answer_replays_from_its_cassette() {
    checked_in_cassette(Provider::Anthropic, Scenario::StreamedAnswer).await;
}

/// Records a tool round from the real server into a fresh cassette, then replays it with
/// a server that must receive nothing.
async fn record_fresh_then_replay(provider: Provider) {
    let Some(base) = server() else { return };
    let path = std::env::temp_dir()
        .join(format!("towerscope-cassettes-llm-{}", std::process::id()))
        .join(format!("{}.jsonl", provider.name()));
    let recording = Cassette::builder(&path).mode(CassetteMode::Record).open().unwrap();
    let recorded = run(provider, Scenario::ToolRound, &base, &recording).await;
    assert!(recorded.contains(r#""type":"TOOL_RESULT_END""#), "{recorded}");
    assert_eq!(recording.len(), 2, "two model calls recorded");

    let trap = MockServer::start(Vec::new()).await;
    let replaying = Cassette::builder(&path).mode(CassetteMode::Replay).open().unwrap();
    let replayed = run(provider, Scenario::ToolRound, &trap.base, &replaying).await;
    assert!(trap.requests().is_empty(), "replay sent nothing");
    assert_eq!(replayed, recorded.replace(&base, &trap.base));
    assert!(!std::fs::read_to_string(&path).unwrap().contains(KEY));
}

#[tokio::test]
async fn openai_tool_round_recorded_fresh_replays() {
    record_fresh_then_replay(Provider::OpenAi).await;
}

#[tokio::test]
async fn anthropic_tool_round_recorded_fresh_replays() {
    record_fresh_then_replay(Provider::Anthropic).await;
}
