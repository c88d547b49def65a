//! Cassettes against the scripted loopback server, for both providers: a rate-limited call
//! (429 with retry-after) and a stream cut mid-answer, each retried, recorded and then replayed
//! against a server that must receive nothing: the same events and stored conversation, no request sent. A
//! hand-edited cassette fails with a readable diff, and a recorded cassette holds no key, not even
//! one the server echoed split across two chunks.
//! The real server's cassettes are in `cassette_llm.rs`.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::PathBuf;
use std::time::Duration;

use support::{MockServer, Reply, cut_at, pieces};
use towerscope_agent::Agent;
use towerscope_core::{AgentError, ChatModel, Msg};
use towerscope_layers::RetryLayer;
use towerscope_layers::retry::Backoff;
use towerscope_models::anthropic::AnthropicChatModel;
use towerscope_models::cassette::{Cassette, CassetteError, CassetteMode};
use towerscope_models::openai::OpenAiChatModel;

const OPENAI_ANSWER: &str = include_str!("transcripts/openai_answer.sse");
const ANTHROPIC_ANSWER: &str = include_str!("transcripts/anthropic_answer.sse");
const KEY: &str = "sk-test-0123456789cassette";
const TEAM_TOKEN: &str = "team-token-0123456789";

#[derive(Clone, Copy, Debug)]
enum Provider {
    OpenAi,
    Anthropic,
}

impl Provider {
    fn chat_model(self, base: &str, cassette: &Cassette) -> std::sync::Arc<dyn ChatModel> {
        let transport = cassette.http_service().unwrap();
        match self {
            Self::OpenAi => std::sync::Arc::new(
                OpenAiChatModel::builder("gpt-4o")
                    .base_url(format!("{base}/v1"))
                    .api_key(KEY)
                    .header("x-team-token", TEAM_TOKEN)
                    .from_env(false)
                    .http_service(transport)
                    .build()
                    .unwrap(),
            ),
            Self::Anthropic => std::sync::Arc::new(
                AnthropicChatModel::builder("claude-sonnet-4-5")
                    .base_url(base)
                    .api_key(KEY)
                    .header("x-team-token", TEAM_TOKEN)
                    .max_tokens(256)
                    .from_env(false)
                    .http_service(transport)
                    .build()
                    .unwrap(),
            ),
        }
    }

    fn answer(self) -> &'static str {
        match self {
            Self::OpenAi => OPENAI_ANSWER,
            Self::Anthropic => ANTHROPIC_ANSWER,
        }
    }

    fn rate_limited(self) -> Reply {
        let body = match self {
            Self::OpenAi => {
                r#"{"error": {"message": "Rate limit reached.", "type": "tokens", "param": null, "code": "rate_limit_exceeded"}}"#
            }
            Self::Anthropic => {
                r#"{"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limit reached."}}"#
            }
        };
        Reply::json(429, body)
            .header("retry-after-ms", "30")
            .header("x-request-id", "req_429")
            .header("set-cookie", "session=abc123secretcookie")
    }

    fn cut(self) -> Reply {
        let answer = self.answer();
        let marker = match self {
            Self::OpenAi => "London",
            Self::Anthropic => "21 °C",
        };
        let at = answer.find(marker).unwrap();
        Reply::sse(vec![answer.as_bytes()[..at].to_vec()]).cut()
    }
}

/// The cassette's error inside an agent error.
fn cassette_error(err: &AgentError) -> &CassetteError {
    let AgentError::Other {
        source: Some(source), ..
    } = err
    else {
        panic!("{err:?}")
    };
    source.get().downcast_ref::<CassetteError>().unwrap()
}

fn cassette_path(name: &str) -> PathBuf {
    std::env::temp_dir()
        .join(format!("towerscope-cassettes-{}", std::process::id()))
        .join(format!("{name}.jsonl"))
}

/// What a reply produced, rendered: every event as JSON, the final message or error, and the
/// stored conversation. The base URL reads `<server>`.
async fn run(provider: Provider, base: &str, cassette: &Cassette, retries: u32) -> String {
    let model = provider.chat_model(base, cassette);
    let rendered = cassette
        .scope(async {
            let agent = Agent::builder("Friday")
                .system_prompt("You are Friday, a weather assistant.")
                .model_ref(model)
                .on_model_call(
                    RetryLayer::new(retries).backoff(Backoff::new(Duration::from_millis(5), Duration::from_millis(20))),
                )
                .build()
                .unwrap();
            let reply = support::collect(agent.reply_stream(Msg::user("user", "Weather in Paris and London?"))).await;
            reply.transcript(&agent.state().context)
        })
        .await;
    rendered.replace(base, "<server>")
}

/// Records `replies` (the server then stops), then replays with a server that has no reply:
/// the same rendering, and nothing reaches it.
async fn record_then_replay(provider: Provider, name: &str, replies: Vec<Reply>) -> String {
    let path = cassette_path(name);
    let server = MockServer::start(replies).await;
    let recording = Cassette::builder(&path).mode(CassetteMode::Record).open().unwrap();
    let recorded = run(provider, &server.base, &recording, 2).await;
    assert_eq!(server.requests().len(), 2, "a failure, then the retry");
    drop(server);

    let trap = MockServer::start(Vec::new()).await;
    let replaying = Cassette::builder(&path).mode(CassetteMode::Replay).open().unwrap();
    assert_eq!(replaying.len(), 2);
    let replayed = run(provider, &trap.base, &replaying, 2).await;
    assert!(trap.requests().is_empty(), "replay sent nothing");
    assert!(replaying.unplayed().is_empty());
    assert_eq!(
        replayed, recorded,
        "the replay emits and stores what the recorded run did"
    );
    recorded
}

#[tokio::test]
async fn a_429_then_the_answer_replays_for_both_providers() {
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let name = format!("{provider:?}_429");
        let replies = vec![
            provider.rate_limited(),
            Reply::sse(pieces(provider.answer().as_bytes(), 61)),
        ];
        let rendered = record_then_replay(provider, &name, replies).await;
        assert!(rendered.contains("error: None"), "{rendered}");
        assert!(rendered.contains("21 °C"), "{rendered}");
        let file = std::fs::read_to_string(cassette_path(&name)).unwrap();
        assert!(
            file.contains(r#""status":429"#) && file.contains(r#""retry-after-ms":"30""#),
            "{file}"
        );
        assert!(!file.contains("abc123secretcookie"), "cookies are redacted: {file}");
    }
}

#[tokio::test]
async fn a_cut_stream_then_the_answer_replays_for_both_providers() {
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let name = format!("{provider:?}_cut");
        let replies = vec![provider.cut(), Reply::sse(pieces(provider.answer().as_bytes(), 53))];
        let rendered = record_then_replay(provider, &name, replies).await;
        assert!(rendered.contains(r#""name":"model_call_restart""#), "{rendered}");
        assert!(rendered.contains("error: None"), "{rendered}");
        let file = std::fs::read_to_string(cassette_path(&name)).unwrap();
        assert!(file.contains(r#""end":{"broke":"#), "the cut is recorded: {file}");
    }
}

#[tokio::test]
async fn a_failure_replays_as_the_same_typed_error() {
    let path = cassette_path("openai_cut_unretried");
    let server = MockServer::start(vec![Provider::OpenAi.cut()]).await;
    let recording = Cassette::builder(&path).mode(CassetteMode::Record).open().unwrap();
    let recorded = run(Provider::OpenAi, &server.base, &recording, 1).await;
    drop(server);
    let replaying = Cassette::builder(&path).mode(CassetteMode::Replay).open().unwrap();
    let replayed = run(Provider::OpenAi, "http://127.0.0.1:9", &replaying, 1).await;
    assert_eq!(replayed, recorded);
    assert!(
        recorded.contains(
            "error: Some(\"model stream broke: the openai response stream of <server>/v1/chat/completions broke"
        ),
        "{recorded}"
    );
}

#[tokio::test]
async fn a_recorded_cassette_holds_no_key() {
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let path = cassette_path(&format!("{provider:?}_keys"));
        // The server echoes the key, in two chunks that split it.
        let answer = provider.answer().replacen("Paris", KEY, 1);
        let at = answer.find(KEY).unwrap() + 6;
        let server = MockServer::start(vec![Reply::sse(cut_at(answer.as_bytes(), &[at]))]).await;
        let cassette = Cassette::builder(&path).mode(CassetteMode::Record).open().unwrap();
        let rendered = run(provider, &server.base, &cassette, 1).await;
        assert!(rendered.contains(KEY), "the client got the answer whole: {rendered}");
        let sent = server.requests();
        let key_header = match provider {
            Provider::OpenAi => "authorization",
            Provider::Anthropic => "x-api-key",
        };
        assert!(
            sent[0].header(key_header).is_some_and(|v| v.contains(KEY)),
            "the key was sent"
        );
        let file = std::fs::read_to_string(&path).unwrap();
        assert!(!file.contains(KEY) && !file.contains("0123456789cassette"), "{file}");
        assert!(!file.contains(TEAM_TOKEN), "configured headers are redacted: {file}");
        assert!(file.contains(&format!(r#""{key_header}":"[REDACTED]""#)), "{file}");
        assert!(file.contains(r#""x-team-token":"[REDACTED]""#), "{file}");
        // The body's chunks, joined: the answer with the key replaced where it began.
        let body: String = file
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter_map(|line| line["chunk"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(body, answer.replacen(KEY, "[REDACTED]", 1));
    }
}

#[tokio::test]
async fn a_hand_edited_cassette_fails_with_a_readable_diff() {
    let path = cassette_path("edited");
    let server = MockServer::start(vec![Reply::sse(pieces(OPENAI_ANSWER.as_bytes(), 64))]).await;
    let recording = Cassette::builder(&path).mode(CassetteMode::Record).open().unwrap();
    run(Provider::OpenAi, &server.base, &recording, 1).await;
    drop(server);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("Weather in Paris and London?", "Weather in Rome?")).unwrap();

    let trap = MockServer::start(Vec::new()).await;
    let replaying = Cassette::builder(&path).mode(CassetteMode::Replay).open().unwrap();
    let rendered = run(Provider::OpenAi, &trap.base, &replaying, 3).await;
    assert!(trap.requests().is_empty(), "nothing was sent");
    let expected = concat!(
        "holds no request like this one, and nothing was sent.\\nThe closest is interaction 1 (POST /v1/chat/completions); ",
        "it differs in:\\n  messages[1]:\\n    - user: Weather in Rome?\\n    + user: Weather in Paris and London?\\nRecord it ",
        "again with TOWERSCOPE_CASSETTE=record"
    );
    assert!(rendered.contains(expected), "{rendered}");
    assert!(
        rendered.contains(&format!("cassette {} (replay)", path.display())),
        "{rendered}"
    );
    assert_eq!(replaying.unplayed(), [1]);

    // The error is typed, not retried (the retry layer above made one call), and says which
    // part differed.
    let model = Provider::OpenAi.chat_model(&trap.base, &replaying);
    let err = Agent::builder("Friday")
        .system_prompt("You are Friday, a weather assistant.")
        .model_ref(model)
        .build()
        .unwrap()
        .reply(Msg::user("user", "Weather in Paris and London?"))
        .await
        .unwrap_err();
    assert!(!err.is_retryable());
    let cassette_error = cassette_error(&err);
    assert_eq!(cassette_error.differences, ["messages[1]"]);
}

/// A request that differs from the recording only in a generation parameter is not answered
/// with the recorded reply (the recorded answer may not be what the model would say now).
#[tokio::test]
async fn a_changed_generation_parameter_is_not_replayed() {
    let path = cassette_path("temperature");
    let server = MockServer::start(vec![Reply::sse(pieces(OPENAI_ANSWER.as_bytes(), 64))]).await;
    let recording = Cassette::builder(&path).mode(CassetteMode::Record).open().unwrap();
    run(Provider::OpenAi, &server.base, &recording, 1).await;
    drop(server);

    let trap = MockServer::start(Vec::new()).await;
    let replaying = Cassette::builder(&path).mode(CassetteMode::Replay).open().unwrap();
    let cooler = OpenAiChatModel::builder("gpt-4o")
        .base_url(format!("{}/v1", trap.base))
        .api_key(KEY)
        .temperature(0.2)
        .from_env(false)
        .http_service(replaying.http_service().unwrap())
        .build()
        .unwrap();
    let err = Agent::builder("Friday")
        .system_prompt("You are Friday, a weather assistant.")
        .model(cooler)
        .build()
        .unwrap()
        .reply(Msg::user("user", "Weather in Paris and London?"))
        .await
        .unwrap_err();
    assert!(trap.requests().is_empty(), "nothing was sent");
    let cassette_error = cassette_error(&err);
    assert_eq!(cassette_error.differences, ["temperature"]);
    assert!(
        cassette_error
            .message
            .contains("  temperature:\n    - (none)\n    + 0.2\n"),
        "{}",
        cassette_error.message
    );
    assert_eq!(replaying.unplayed(), [1]);
}

#[tokio::test]
async fn record_missing_replays_what_it_holds_and_records_the_rest() {
    let path = cassette_path("missing");
    let server = MockServer::start(vec![Reply::sse(pieces(OPENAI_ANSWER.as_bytes(), 64))]).await;
    let first = Cassette::builder(&path)
        .mode(CassetteMode::RecordMissing)
        .open()
        .unwrap();
    let recorded = run(Provider::OpenAi, &server.base, &first, 1).await;
    assert_eq!(server.requests().len(), 1);
    let again = Cassette::builder(&path)
        .mode(CassetteMode::RecordMissing)
        .open()
        .unwrap();
    let replayed = run(Provider::OpenAi, &server.base, &again, 1).await;
    assert_eq!(server.requests().len(), 1, "known: replayed");
    assert_eq!(replayed, recorded);

    let missing = Cassette::builder(cassette_path("never_recorded"))
        .mode(CassetteMode::Replay)
        .open()
        .unwrap_err();
    assert!(
        missing
            .to_string()
            .contains("record it with TOWERSCOPE_CASSETTE=record"),
        "{missing}"
    );
}

#[tokio::test]
async fn a_whole_answer_replays_with_its_body() {
    let path = cassette_path("whole");
    let body = r#"{"id": "chatcmpl-whole", "object": "chat.completion", "model": "gpt-4o", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Sunny, 21 °C."}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}}"#;
    let answer = |base: &str, cassette: &Cassette| {
        OpenAiChatModel::builder("gpt-4o")
            .base_url(format!("{base}/v1"))
            .from_env(false)
            .stream(false)
            .http_service(cassette.http_service().unwrap())
            .build()
            .unwrap()
    };
    let reply = |model: OpenAiChatModel, cassette: Cassette| async move {
        cassette
            .scope(async {
                let agent = Agent::builder("Friday").model(model).build().unwrap();
                let answer = agent.reply(Msg::user("user", "Weather?")).await.unwrap();
                serde_json::to_string(&(answer, agent.state().context)).unwrap()
            })
            .await
    };
    let server = MockServer::start(vec![Reply::json(200, body)]).await;
    let recording = Cassette::builder(&path).mode(CassetteMode::Record).open().unwrap();
    let recorded = reply(answer(&server.base, &recording), recording.clone()).await;
    drop(server);
    let replaying = Cassette::builder(&path).mode(CassetteMode::Replay).open().unwrap();
    let replayed = reply(answer("http://127.0.0.1:9", &replaying), replaying.clone()).await;
    assert_eq!(replayed, recorded);
    assert!(recorded.contains("Sunny, 21 °C."), "{recorded}");
    let file = std::fs::read_to_string(&path).unwrap();
    assert!(
        file.contains(r#""end":"complete""#),
        "a whole body is read to its end: {file}"
    );
}

/// Record mode empties the file only when it has something to write: a run that records
/// nothing (no key, a test that fails first) leaves the old recording whole, and one that
/// records replaces it.
#[tokio::test]
async fn record_mode_keeps_the_old_recording_until_it_writes_a_new_one() {
    let path = cassette_path("kept");
    let server = MockServer::start(vec![Reply::sse(pieces(OPENAI_ANSWER.as_bytes(), 64))]).await;
    let first = Cassette::builder(&path).mode(CassetteMode::Record).open().unwrap();
    run(Provider::OpenAi, &server.base, &first, 1).await;
    let recorded = std::fs::read_to_string(&path).unwrap();
    assert!(!recorded.is_empty());

    let idle = Cassette::builder(&path).mode(CassetteMode::Record).open().unwrap();
    drop(idle);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        recorded,
        "nothing recorded, nothing lost"
    );

    let server = MockServer::start(vec![Reply::sse(pieces(OPENAI_ANSWER.as_bytes(), 16))]).await;
    let again = Cassette::builder(&path).mode(CassetteMode::Record).open().unwrap();
    run(Provider::OpenAi, &server.base, &again, 1).await;
    let replaced = std::fs::read_to_string(&path).unwrap();
    assert_ne!(replaced, recorded, "chunked differently");
    assert_eq!(
        Cassette::builder(&path)
            .mode(CassetteMode::Replay)
            .open()
            .unwrap()
            .len(),
        1,
        "one interaction: the old one is gone"
    );
}

/// A file with an interaction numbered twice (two recorders on one file, a hand edit) is
/// refused instead of losing one; numbers at their end refuse to go on; and a file whose last
/// newline was lost still takes new interactions on lines of their own.
#[tokio::test]
async fn broken_numbering_is_refused_and_a_missing_last_newline_is_mended() {
    let path = cassette_path("numbering");
    let server = MockServer::start(vec![Reply::sse(pieces(OPENAI_ANSWER.as_bytes(), 64))]).await;
    let first = Cassette::builder(&path).mode(CassetteMode::Record).open().unwrap();
    run(Provider::OpenAi, &server.base, &first, 1).await;
    let text = std::fs::read_to_string(&path).unwrap();

    let doubled = cassette_path("doubled");
    std::fs::write(&doubled, format!("{text}{text}")).unwrap();
    let err = Cassette::builder(&doubled)
        .mode(CassetteMode::Replay)
        .open()
        .unwrap_err();
    assert!(err.to_string().contains("interaction 1 is recorded twice"), "{err}");

    let last = cassette_path("last");
    std::fs::write(&last, text.replace("\"n\":1", &format!("\"n\":{}", u32::MAX))).unwrap();
    let err = Cassette::builder(&last)
        .mode(CassetteMode::RecordMissing)
        .open()
        .unwrap_err();
    assert!(err.to_string().contains("interaction numbers are used up"), "{err}");

    let unended = cassette_path("unended");
    std::fs::write(&unended, text.trim_end()).unwrap();
    let server = MockServer::start(vec![Reply::sse(pieces(OPENAI_ANSWER.as_bytes(), 64))]).await;
    let more = Cassette::builder(&unended)
        .mode(CassetteMode::RecordMissing)
        .open()
        .unwrap();
    // Another question: not in the cassette, so recorded after the first.
    let model = Provider::OpenAi.chat_model(&server.base, &more);
    more.scope(async {
        let agent = Agent::builder("Friday").model_ref(model).build().unwrap();
        agent.reply(Msg::user("user", "Something else?")).await.unwrap();
    })
    .await;
    let reread = Cassette::builder(&unended).mode(CassetteMode::Replay).open().unwrap();
    assert_eq!(reread.len(), 2, "both interactions read back");
}

/// A request that fails before any response is recorded with its error's text, which quotes
/// the URL (reqwest's "for url (...)"): the cassette writes it as the request's redacted path,
/// so the URL's password, its credential query values and its host stay out of the file.
#[tokio::test]
async fn a_failed_request_writes_no_url_credential() {
    use tower::ServiceExt;
    let path = cassette_path("failed_url");
    let cassette = Cassette::builder(&path).mode(CassetteMode::Record).open().unwrap();
    let url = "http://alice:hunter2pw@127.0.0.1:9/v1/chat/completions?api_key=qsecret0123456789&x=1";
    let mut request = reqwest::Request::new(reqwest::Method::POST, url.parse().unwrap());
    *request.body_mut() = Some(r#"{"model":"m","messages":[{"role":"user","content":"Hi"}]}"#.into());
    let err = cassette.http_service().unwrap().oneshot(request).await.unwrap_err();
    assert!(
        err.to_string().contains("hunter2pw"),
        "the caller's error is reqwest's: {err}"
    );
    let file = std::fs::read_to_string(&path).unwrap();
    assert!(file.contains(r#""failed":"#), "{file}");
    for secret in ["qsecret0123456789", "hunter2pw", "alice", "127.0.0.1"] {
        assert!(!file.contains(secret), "{secret} in {file}");
    }
    assert!(file.contains("/v1/chat/completions?api_key=[REDACTED]&x=1"), "{file}");
}

/// The turns of a conversation, each in a scope of its own, get ids of their own (the count goes
/// on from scope to scope: it started again at 1, so a second turn's messages took the first's
/// ids), and the same ids on every run.
#[tokio::test]
async fn turns_in_scopes_of_one_cassette_get_ids_of_their_own_and_the_same_each_run() {
    use towerscope_models::{ScriptedModel, ScriptedResponse};
    let run = || async {
        let cassette = Cassette::builder(cassette_path("turns"))
            .mode(CassetteMode::Record)
            .open()
            .unwrap();
        let model = ScriptedModel::new("m", [ScriptedResponse::text("one"), ScriptedResponse::text("two")]);
        let agent = Agent::builder("Friday").model(model).build().unwrap();
        for question in ["first?", "second?"] {
            cassette
                .scope(async { agent.reply(Msg::user("user", question)).await.unwrap() })
                .await;
        }
        agent
            .state()
            .context
            .iter()
            .map(|m| m.id.to_string())
            .collect::<Vec<_>>()
    };
    let ids = run().await;
    assert_eq!(ids.len(), 4, "{ids:?}");
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), 4, "each message has an id of its own: {ids:?}");
    assert_eq!(run().await, ids, "the same ids on every run");
}

/// A request that timed out, or could not connect, replays as the same error: a timeout, and a
/// model error saying it could not connect (the replay was a model error saying the request
/// failed, of another kind, which retry and fallback rules may treat otherwise).
#[tokio::test]
async fn a_timeout_and_a_refused_connection_replay_as_the_same_errors() {
    use towerscope_models::http::{http_client, http_service};

    async fn once(cassette: &Cassette, base: &str) -> Option<(String, String)> {
        let client = http_client(None, Some(Duration::from_millis(300))).unwrap();
        let transport = http_service(tower::Layer::layer(&cassette.layer(), client));
        let model = OpenAiChatModel::builder("gpt-4o")
            .base_url(format!("{base}/v1"))
            .api_key(KEY)
            .from_env(false)
            .http_service(transport)
            .build()
            .unwrap();
        cassette
            .scope(async {
                let agent = Agent::builder("a").model(model).build().unwrap();
                let reply = support::collect(agent.reply_stream(Msg::user("user", "hi"))).await;
                reply
                    .error
                    .map(|e| (e.kind().to_owned(), e.to_string().replace(base, "<server>")))
            })
            .await
    }

    // A server that takes connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_base = format!("http://{}", silent.local_addr().unwrap());
    let _holding = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    // An address nobody listens on.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let closed_base = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);

    for (name, base, kind, says) in [
        ("timeout", &silent_base, "timeout", "timed out"),
        ("refused", &closed_base, "model_error", "could not connect to <server>"),
    ] {
        let path = cassette_path(&format!("failure_{name}"));
        let recording = Cassette::builder(&path).mode(CassetteMode::Record).open().unwrap();
        let recorded = once(&recording, base).await.unwrap();
        assert_eq!(recorded.0, kind, "{recorded:?}");
        assert!(recorded.1.contains(says), "{recorded:?}");
        let replaying = Cassette::builder(&path).mode(CassetteMode::Replay).open().unwrap();
        let replayed = once(&replaying, base).await.unwrap();
        // The same error; its text may name the endpoint where the live one named the URL.
        assert_eq!(replayed.0, recorded.0, "{replayed:?}");
        assert!(replayed.1.contains(says), "{replayed:?}");
    }
}
