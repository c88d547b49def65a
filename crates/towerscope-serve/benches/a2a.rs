//! What serving over A2A costs per reply, against calling the agent in process: the scripted
//! model answers one text (streamed), on loopback.
//!
//! ```sh
//! cargo bench -p towerscope-serve --bench a2a
//! ```
//!
//! - `a2a/in_process`: build the agent for a new session and `reply` (what the server does for
//!   each new context, without HTTP).
//! - `a2a/send`: `SendMessage` in a new context through `A2aClient` (JSON-RPC over HTTP/1.1,
//!   keep-alive), answered when the task completed.
//! - `a2a/stream`: `SendStreamingMessage` in a new context, every SSE update read.

use std::hint::black_box;
use std::sync::Arc;

use axum::serve::ListenerExt;
use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_core::{AgentError, Msg};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_serve::a2a::wire::{Message, Role};
use towerscope_serve::a2a::{A2aClient, A2aConfig};

const ANSWER: &str = "The weather in Paris is sunny, 21 degrees, with a light breeze from the west.";

fn agent(_session: &str) -> Result<Agent, AgentError> {
    Agent::builder("bench")
        .model(ScriptedModel::cycle("m", [ScriptedResponse::text(ANSWER)]))
        .build()
}

fn message() -> Message {
    let mut m = Message::new_text(Role::User, "Weather in Paris?");
    m.context_id = Some(towerscope_core::id::new_id().to_string());
    m
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let client = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let base = format!("http://{}", listener.local_addr().expect("an address"));
        let app = A2aConfig::new("bench").routes(Arc::new(agent));
        // Without TCP_NODELAY each SSE event after the first waits for the client's delayed ACK
        // (about 40 ms per stream on Linux loopback): a server streaming events wants it.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        tokio::spawn(async move { axum::serve(listener, app).await });
        A2aClient::connect(&base).await.expect("the bench server")
    });

    let mut group = c.benchmark_group("a2a");
    group.bench_function("in_process", |b| {
        b.to_async(&rt).iter(|| async {
            let agent = agent("s").expect("the agent");
            black_box(
                agent
                    .reply(Msg::user("user", "Weather in Paris?"))
                    .await
                    .expect("a reply"),
            )
        });
    });
    group.bench_function("send", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(client.send(message()).await.expect("an answer")) });
    });
    group.bench_function("stream", |b| {
        b.to_async(&rt).iter(|| async {
            let updates = client.stream(message()).await.expect("a stream");
            black_box(updates.collect::<Vec<_>>().await)
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
