//! What serving a reply over HTTP costs on top of calling the agent in process.
//!
//! One scenario, three ways, each building the session's agent with the same factory (scripted
//! model answering "Hello!", no tool, no session store, so no file or network I/O but the
//! HTTP itself):
//!
//! - `serve/in_process`: `factory(thread)` then `agent.reply_stream(..)` read to its end;
//! - `serve/router`: the router called as a tower service (`oneshot`, no socket): the JSON body
//!   parsed, the run read, the events mapped to AG-UI and encoded as SSE, the body collected;
//! - `serve/loopback`: a real HTTP/1.1 request over a new loopback TCP connection to the router
//!   served by axum on the same runtime, the answer read to its end.
//!
//! The difference between `router` and `in_process` is the AG-UI layer; between `loopback` and
//! `router`, hyper and the socket. A two-worker tokio runtime runs all three.
//!
//! - `serve/loopback_64_at_once`: 64 clients at once (one thread each), reported as replies per
//!   second: what one process sustains on this machine;
//! - `serve/pydantic_ai_loopback` (with `TOWERSCOPE_AGUI_PEER_ADDR`, as `scripts/bench-serve.sh`
//!   sets it): the same request, the same client, to Pydantic AI's AG-UI app on the same
//!   scenario (`benches/python/pydantic_ai_agui.py`, uvicorn, one process).
//!
//! ```text
//! cargo bench --bench serve --features serve
//! bash scripts/bench-serve.sh                 # with the Pydantic AI peer
//! ```

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tower::ServiceExt;
use towerscope::models::{ScriptedModel, ScriptedResponse};
use towerscope::serve::axum::body::Body;
use towerscope::serve::axum::http::{Request, header};
use towerscope::{AgentError, Msg, agent::Agent};

const BODY: &str = r#"{"threadId":"bench","runId":"r","messages":[{"id":"u1","role":"user","content":"Hi"}]}"#;

fn factory() -> impl Fn(&str) -> Result<Agent, AgentError> + Send + Sync + Clone + 'static {
    let model = ScriptedModel::cycle("scripted", [ScriptedResponse::text("Hello!")]).record(false);
    move |_thread: &str| Agent::builder("assistant").model(model.clone()).build()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let mut group = c.benchmark_group("serve");
    group.measurement_time(Duration::from_secs(5));

    let make = factory();
    group.bench_function("in_process", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let make = make.clone();
            async move {
                let start = Instant::now();
                for _ in 0..iters {
                    let agent = make("bench").expect("an agent");
                    let mut stream = agent.reply_stream(Msg::user("user", "Hi"));
                    while let Some(item) = stream.next().await {
                        std::hint::black_box(item.expect("a reply"));
                    }
                }
                start.elapsed()
            }
        });
    });

    let router = towerscope::serve::router(factory());
    group.bench_function("router", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let router = router.clone();
            async move {
                let start = Instant::now();
                for _ in 0..iters {
                    let request = Request::post("/agui")
                        .header(header::CONTENT_TYPE, "application/json")
                        .body(Body::from(BODY))
                        .expect("a request");
                    let response = router.clone().oneshot(request).await.expect("a response");
                    let sse = towerscope::serve::axum::body::to_bytes(response.into_body(), usize::MAX)
                        .await
                        .expect("the body");
                    std::hint::black_box(sse);
                }
                start.elapsed()
            }
        });
    });

    let addr = serve_on_loopback(&rt);
    bench_loopback(&mut group, &rt, "loopback", addr);
    if let Ok(peer) = std::env::var("TOWERSCOPE_AGUI_PEER_ADDR") {
        let peer = peer.parse().expect("TOWERSCOPE_AGUI_PEER_ADDR is host:port");
        bench_loopback(&mut group, &rt, "pydantic_ai_loopback", peer);
    }
    // Last: it sets the group's throughput.
    bench_concurrent(&mut group, &rt, addr);
    group.finish();
}

/// Clients sending at once, for the replies per second one process sustains.
const CLIENTS: usize = 64;

/// `CLIENTS` requests at once, each on its own connection; criterion reports replies per second.
fn bench_concurrent(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &Runtime,
    addr: std::net::SocketAddr,
) {
    // One thread per client: a thread takes one run at a time.
    let requests: std::sync::Arc<Vec<String>> = std::sync::Arc::new(
        (0..CLIENTS)
            .map(|i| {
                let body = BODY.replace("\"threadId\":\"bench\"", &format!("\"threadId\":\"bench-{i}\""));
                format!(
                    "POST /agui HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
            })
            .collect(),
    );
    group.throughput(criterion::Throughput::Elements(CLIENTS as u64));
    group.bench_function("loopback_64_at_once", |b| {
        b.to_async(rt).iter_custom(|iters| {
            let requests = std::sync::Arc::clone(&requests);
            async move {
                let start = Instant::now();
                for _ in 0..iters {
                    let mut clients = Vec::with_capacity(CLIENTS);
                    for i in 0..CLIENTS {
                        let requests = std::sync::Arc::clone(&requests);
                        clients.push(tokio::spawn(async move {
                            let request = &requests[i];
                            let mut socket = TcpStream::connect(addr).await.expect("a connection");
                            socket.write_all(request.as_bytes()).await.expect("the request");
                            let mut answer = Vec::with_capacity(4096);
                            socket.read_to_end(&mut answer).await.expect("the answer");
                            assert!(answer.windows(12).any(|w| w == b"RUN_FINISHED"), "a finished run");
                        }));
                    }
                    for client in clients {
                        client.await.expect("a client");
                    }
                }
                start.elapsed()
            }
        });
    });
}

/// One request per new connection to `addr`, read to the end of its chunked answer.
fn bench_loopback(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &Runtime,
    name: &str,
    addr: std::net::SocketAddr,
) {
    let request = format!(
        "POST /agui HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    group.bench_function(name, |b| {
        b.to_async(rt).iter_custom(|iters| {
            let request = request.clone();
            async move {
                let start = Instant::now();
                let mut answer = Vec::with_capacity(4096);
                for _ in 0..iters {
                    let mut socket = TcpStream::connect(addr).await.expect("a connection");
                    socket.write_all(request.as_bytes()).await.expect("the request");
                    answer.clear();
                    socket.read_to_end(&mut answer).await.expect("the answer");
                    assert!(answer.ends_with(b"\r\n0\r\n\r\n"), "a whole chunked answer");
                    assert!(answer.windows(12).any(|w| w == b"RUN_FINISHED"), "a finished run");
                }
                start.elapsed()
            }
        });
    });
}

fn serve_on_loopback(rt: &Runtime) -> std::net::SocketAddr {
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    let router = towerscope::serve::router(factory());
    rt.spawn(towerscope::serve::run_until(listener, router, std::future::pending()));
    addr
}

criterion_group!(benches, bench);
criterion_main!(benches);
