//! What a model call replayed from a cassette costs, against the scripted model: the answer a
//! test gets from each, streamed and read to its last chunk.
//!
//! - `scripted`: [`ScriptedModel`] answering "Paris is sunny (21 °C); London has drizzle
//!   (14 °C)." streamed, word by word (10 chunks and the final response);
//! - `transport`: [`OpenAiChatModel`] whose transport answers at once from memory with the same
//!   SSE body, in the same chunks, without a cassette: what the provider's request building and
//!   SSE decoding cost, which a replayed test exercises on purpose;
//! - `replay`: [`OpenAiChatModel`] whose transport is a [`Cassette`] in replay mode holding
//!   that answer as OpenAI sent it (`crates/towerscope-models/tests/transcripts/openai_answer.sse`:
//!   7 SSE events, one chunk each): the request redacted and matched, the response rebuilt,
//!   its SSE decoded. A cassette answers each recorded call once, so each call gets a cassette
//!   opened before its clock starts (opening reads the file: a test pays it once).
//!
//! ```text
//! cargo bench --bench cassette --features cassette,openai
//! ```

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::StreamExt;
use tokio::runtime::Runtime;
use tower::{Layer, service_fn};
use towerscope::models::cassette::{Cassette, CassetteMode};
use towerscope::models::http::http_service;
use towerscope::prelude::*;
use towerscope::{AgentContext, Messages, ModelCallRequest, ModelOutput};

const ANSWER_SSE: &str = include_str!("../crates/towerscope-models/tests/transcripts/openai_answer.sse");
const ANSWER: &str = "Paris is sunny (21 °C); London has drizzle (14 °C).";
const SYSTEM: &str = "You are Friday, a weather assistant.";
const QUESTION: &str = "Weather in Paris and London?";

/// A cassette of one call answered with `ANSWER_SSE`, one SSE event per chunk.
fn write_cassette(path: &std::path::Path) {
    let request = serde_json::json!({"n": 1, "request": {
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": {"authorization": "[REDACTED]", "content-type": "application/json"},
        "body": {"model": "gpt-4o", "stream": true, "stream_options": {"include_usage": true}, "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "name": "user", "content": QUESTION}
        ]}
    }});
    let mut lines = vec![
        request,
        serde_json::json!({"n": 1, "response": {"status": 200, "headers": {"content-type": "text/event-stream"}}}),
    ];
    for event in ANSWER_SSE.split_inclusive("\n\n") {
        lines.push(serde_json::json!({"n": 1, "chunk": event}));
    }
    lines.push(serde_json::json!({"n": 1, "end": "complete"}));
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).expect("write the cassette");
}

fn request(model: ModelRef) -> ModelCallRequest {
    ModelCallRequest {
        ctx: AgentContext::new("Friday", "session", "reply"),
        model,
        messages: Messages::from(vec![Msg::system("system", SYSTEM), Msg::user("user", QUESTION)]),
        tools: Arc::from(Vec::new()),
        tool_choice: None,
    }
}

/// Calls the model and reads its answer to the end; the answer's text.
async fn call(model: &ModelRef) -> String {
    match model.call(request(Arc::clone(model))).await.expect("an answer") {
        ModelOutput::Stream(mut stream) => {
            let mut last = None;
            while let Some(chunk) = stream.next().await {
                last = Some(chunk.expect("a chunk"));
            }
            last.and_then(|r| r.text()).unwrap_or_default()
        }
        ModelOutput::Complete(response) => response.text().unwrap_or_default(),
    }
}

/// The OpenAI model over `cassette`, whose transport behind it fails if ever called.
fn replaying(cassette: &Cassette) -> ModelRef {
    let offline = service_fn(|_: reqwest_request::Request| async {
        Err::<reqwest_request::Response, _>("the network is not used in replay")
    });
    let model = OpenAiChatModel::builder("gpt-4o")
        .base_url("http://127.0.0.1:9/v1")
        .api_key("sk-bench")
        .from_env(false)
        .http_service(http_service(cassette.layer().layer(offline)))
        .build()
        .expect("the model");
    Arc::new(model)
}

/// The OpenAI model over a transport answering `ANSWER_SSE` from memory, one event per chunk.
fn in_memory() -> ModelRef {
    let answer = service_fn(|_: reqwest_request::Request| async {
        let chunks: Vec<Result<Vec<u8>, std::convert::Infallible>> = ANSWER_SSE
            .split_inclusive("\n\n")
            .map(|e| Ok(e.as_bytes().to_vec()))
            .collect();
        let body = towerscope::models::http::reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
        let response = http::Response::builder()
            .header("content-type", "text/event-stream")
            .body(body)
            .expect("a response");
        Ok::<_, std::convert::Infallible>(reqwest_request::Response::from(response))
    });
    let model = OpenAiChatModel::builder("gpt-4o")
        .base_url("http://127.0.0.1:9/v1")
        .api_key("sk-bench")
        .from_env(false)
        .http_service(http_service(answer))
        .build()
        .expect("the model");
    Arc::new(model)
}

/// reqwest as the providers re-export it.
mod reqwest_request {
    pub(crate) use towerscope::models::http::reqwest::{Request, Response};
}

fn model_call(c: &mut Criterion) {
    let rt = Runtime::new().expect("a runtime");
    let dir = std::env::temp_dir().join(format!("towerscope-bench-cassette-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let path = dir.join("answer.jsonl");
    write_cassette(&path);
    let open = || {
        Cassette::builder(&path)
            .mode(CassetteMode::Replay)
            .open()
            .expect("the cassette")
    };

    // Both answer the same text.
    let scripted: ModelRef = Arc::new(ScriptedModel::cycle(
        "gpt-4o",
        [ScriptedResponse::text(ANSWER).streamed()],
    ));
    assert_eq!(rt.block_on(call(&scripted)), ANSWER);
    let transport = in_memory();
    assert_eq!(rt.block_on(call(&transport)), ANSWER);
    assert_eq!(rt.block_on(call(&replaying(&open()))), ANSWER);

    let mut group = c.benchmark_group("cassette/model_call");
    group.bench_function("scripted", |b| {
        b.to_async(&rt).iter(|| async { black_box(call(&scripted).await) })
    });
    group.bench_function("transport", |b| {
        b.to_async(&rt).iter(|| async { black_box(call(&transport).await) })
    });
    group.bench_function("replay", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let open = &open;
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let model = replaying(&open());
                    let start = Instant::now();
                    black_box(call(&model).await);
                    total += start.elapsed();
                }
                total
            }
        })
    });
    group.finish();
    let _ = std::fs::remove_dir_all(dir);
}

criterion_group!(benches, model_call);
criterion_main!(benches);
