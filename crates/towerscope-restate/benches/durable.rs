//! What durability costs: one reply of 5 journaled steps (3 model calls, 2 tool calls, on the
//! scripted model) through a Restate server on loopback, against the same reply in process;
//! and how many such replies one endpoint process serves with 1,000 sessions in flight.
//!
//! - `durable/reply/plain`: the agent built and its reply run in process (no Restate);
//! - `durable/reply/restate`: the same reply as an ingress call to `Agent/{session}/reply`
//!   (a new session each time), the endpoint in this process: the HTTP round trip, the
//!   invocation, 5 `ctx.run` steps journaled by the server, the state read and written;
//!   (restate − plain) / 5 is the cost per journaled step, an upper bound (it includes the
//!   per-reply invocation);
//! - `durable/in_flight/1000`: 1,000 replies on 1,000 sessions started at once (throughput in
//!   replies per second).
//!
//! ```text
//! eval "$(scripts/restate-server.sh start)"
//! cargo bench -p towerscope-restate --bench durable
//! ```
//!
//! Skipped (with a message) without `TOWERSCOPE_RESTATE_INGRESS`, unless
//! `TOWERSCOPE_REQUIRE_RESTATE=1` (as `scripts/test.sh` sets), which makes that a failure.

#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_agent::{Agent, AgentBuilder, HintConfig};
use towerscope_core::{AgentError, Msg};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_restate::DurableAgent;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

/// Three model calls, two tool calls.
fn agent(builder: AgentBuilder) -> Result<Agent, AgentError> {
    builder
        .hints(HintConfig::disabled())
        .model(ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
                ScriptedResponse::tool_call("c2", "add", r#"{"a": 3, "b": 4}"#),
                ScriptedResponse::text("3 and 7"),
            ],
        ))
        .tool(FunctionTool::new(
            "add",
            |x: Add| async move { (x.a + x.b).to_string() },
        ))
        .build()
}

fn bench(c: &mut Criterion) {
    let (Ok(ingress), Ok(admin)) = (
        std::env::var("TOWERSCOPE_RESTATE_INGRESS"),
        std::env::var("TOWERSCOPE_RESTATE_ADMIN"),
    ) else {
        // scripts/test.sh starts the server and asks for it: there, a missing one fails.
        assert!(
            std::env::var("TOWERSCOPE_REQUIRE_RESTATE").as_deref() != Ok("1"),
            "TOWERSCOPE_REQUIRE_RESTATE=1, but TOWERSCOPE_RESTATE_INGRESS/ADMIN are not set"
        );
        eprintln!("durable: skipped, no Restate server (eval \"$(scripts/restate-server.sh start)\")");
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // reqwest may be built without a crypto provider of its own (workspace features).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let durable = DurableAgent::new(|ctx| agent(ctx.agent_builder("bench")));
        tokio::spawn(durable.serve(listener));
        let registered = client
            .post(format!("{admin}/deployments"))
            .json(&json!({"uri": format!("http://127.0.0.1:{port}"), "force": true}))
            .send()
            .await
            .unwrap();
        assert!(registered.status().is_success(), "{}", registered.text().await.unwrap());
    });
    let run = format!("{:x}", SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos());
    let sessions = Arc::new(AtomicU64::new(0));
    let reply = move |n: u64| {
        let (client, url) = (client.clone(), format!("{ingress}/Agent/bench-{run}-{n}/reply"));
        async move {
            let response = client.post(url).json(&json!({"text": "add"})).send().await.unwrap();
            assert!(response.status().is_success(), "{}", response.text().await.unwrap());
        }
    };

    let mut group = c.benchmark_group("durable/reply");
    group.throughput(Throughput::Elements(1));
    group.bench_function("plain", |b| {
        b.to_async(&runtime).iter(|| async {
            let agent = agent(Agent::builder("bench")).unwrap();
            agent.reply(Msg::user("user", "add")).await.unwrap()
        })
    });
    group.bench_function("restate", |b| {
        b.to_async(&runtime)
            .iter(|| reply(sessions.fetch_add(1, Ordering::Relaxed)))
    });
    group.finish();

    let mut group = c.benchmark_group("durable/in_flight");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30))
        .throughput(Throughput::Elements(1000));
    group.bench_function("1000", |b| {
        b.to_async(&runtime).iter(|| {
            let first = sessions.fetch_add(1000, Ordering::Relaxed);
            let replies: Vec<_> = (first..first + 1000).map(|n| tokio::spawn(reply(n))).collect();
            async move {
                for r in replies {
                    r.await.unwrap();
                }
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
