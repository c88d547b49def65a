//! Spans exported over OTLP/HTTP by [`init_otlp`] to a real collector (rotel, started by
//! `scripts/otlp-collector.sh`), read back from the JSON lines its span processor writes.
//!
//! `./scripts/test.sh` starts the collector and exports `TOWERSCOPE_OTLP_ENDPOINT` and
//! `SPANS_JSONL`. Without them (a plain `cargo test`), this test starts a collector of its own
//! on free ports with the same script, and stops it at the end. It installs the process-wide
//! providers, so it is the only test of this binary.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::*;
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::Msg;
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_otel::{OtlpConfig, TracingMiddleware, init_otlp};

/// A collector: the one `scripts/test.sh` runs, or one started (and stopped) by this test.
struct Collector {
    endpoint: String,
    #[cfg_attr(not(feature = "grpc"), allow(dead_code))]
    grpc_endpoint: String,
    spans: PathBuf,
    /// The `OTLP_RUN_DIR` of a collector this test started.
    own_run_dir: Option<PathBuf>,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/otlp-collector.sh")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Collector {
    fn get() -> Self {
        if let (Ok(endpoint), Ok(spans)) = (std::env::var("TOWERSCOPE_OTLP_ENDPOINT"), std::env::var("SPANS_JSONL")) {
            return Self {
                grpc_endpoint: std::env::var("TOWERSCOPE_OTLP_GRPC_ENDPOINT")
                    .unwrap_or_else(|_| endpoint.replace("14318", "14317")),
                endpoint,
                spans: PathBuf::from(spans),
                own_run_dir: None,
            };
        }
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let run_dir =
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("otlp-collector-{}-{n}", std::process::id()));
        let output = Command::new("bash")
            .arg(script())
            .arg("start")
            .env("OTLP_RUN_DIR", &run_dir)
            .env("OTLP_HTTP_PORT", free_port().to_string())
            .env("OTLP_GRPC_PORT", free_port().to_string())
            .env_remove("SPANS_JSONL")
            .output()
            .unwrap_or_else(|e| panic!("could not run {}: {e}; run ./scripts/test.sh", script().display()));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "could not start the OTLP collector for this test ({}). It needs Python 3.11 and PyPI; \
             run ./scripts/test.sh, which sets it up. The script said:\n{stderr}",
            output.status
        );
        let exports: HashMap<String, String> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Self {
            endpoint: exports["TOWERSCOPE_OTLP_ENDPOINT"].clone(),
            grpc_endpoint: exports["TOWERSCOPE_OTLP_GRPC_ENDPOINT"].clone(),
            spans: PathBuf::from(&exports["SPANS_JSONL"]),
            own_run_dir: Some(run_dir),
        }
    }

    /// The spans of `service`, waiting up to 20 s for `count` of them.
    fn wait_for(&self, service: &str, count: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let spans = self.spans_of(service);
            if spans.len() >= count || Instant::now() > deadline {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The spans of `service` received so far.
    fn spans_of(&self, service: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.spans).unwrap_or_default();
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|span| span["resource"]["service.name"] == service)
            .collect()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some(run_dir) = &self.own_run_dir {
            let _ = Command::new("bash")
                .arg(script())
                .arg("stop")
                .env("OTLP_RUN_DIR", run_dir)
                .status();
            let _ = std::fs::remove_dir_all(run_dir);
        }
    }
}

/// Get the current weather of a city.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct GetWeather {
    /// The city.
    city: String,
}

#[test]
fn spans_reach_a_real_collector_with_their_tree_and_attributes() {
    let collector = Collector::get();
    let service = format!("towerscope-otel-collector-test-{}", std::process::id());
    let guard = init_otlp(
        OtlpConfig::default()
            .service_name(&service)
            .endpoint(&collector.endpoint)
            .timeout(Duration::from_secs(5)),
    )
    .unwrap();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let session = runtime.block_on(async {
        let agent = Agent::builder("Friday")
            .model(ScriptedModel::new(
                "scripted-weather",
                [
                    ScriptedResponse::tool_call("call-1", "get_weather", r#"{"city": "Paris"}"#).with_usage(112, 31),
                    ScriptedResponse::text("Sunny in Paris.").with_usage(168, 24),
                ],
            ))
            .tool(FunctionTool::new("get_weather", |w: GetWeather| async move {
                format!("sunny in {}", w.city)
            }))
            .middleware(TracingMiddleware::new())
            .build()
            .unwrap();
        agent.reply(Msg::user("user", "Weather in Paris?")).await.unwrap();
        agent.session_id()
    });
    // Shutting down inside the runtime's thread must not deadlock: the guard works off-thread.
    runtime.block_on(async { guard.shutdown() }).unwrap();
    assert!(
        !towerscope_otel::tracing_installed(),
        "the guard uninstalls its providers"
    );

    let spans = collector.wait_for(&service, 4);
    let mut names: Vec<&str> = spans.iter().map(|s| s["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "chat scripted-weather",
            "chat scripted-weather",
            "execute_tool get_weather",
            "invoke_agent Friday"
        ],
        "spans read back from {}",
        collector.spans.display()
    );
    assert!(spans.iter().all(|s| s.get("error").is_none()), "{spans:?}");

    let root = spans.iter().find(|s| s["name"] == "invoke_agent Friday").unwrap();
    assert_eq!(root["parent_span_id"], "");
    assert_eq!(root["kind"], 1, "INTERNAL");
    assert_eq!(root["scope"]["name"], "towerscope");
    assert!(spans.iter().all(|s| s["trace_id"] == root["trace_id"]), "one trace");
    for child in spans.iter().filter(|s| s["name"] != "invoke_agent Friday") {
        assert_eq!(child["parent_span_id"], root["span_id"], "{}", child["name"]);
        assert_eq!(child["attributes"]["gen_ai.conversation.id"], session.to_string());
    }
    assert_eq!(root["attributes"]["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(root["attributes"]["gen_ai.agent.name"], "Friday");
    assert_eq!(root["attributes"]["gen_ai.conversation.id"], session.to_string());
    assert_eq!(root["status"]["code"], 1, "OK");

    let chats: Vec<&Value> = spans.iter().filter(|s| s["name"] == "chat scripted-weather").collect();
    let mut usage: Vec<(i64, i64)> = chats
        .iter()
        .map(|c| {
            let attrs = &c["attributes"];
            assert_eq!(c["kind"], 3, "CLIENT");
            assert_eq!(attrs["gen_ai.operation.name"], "chat");
            assert_eq!(attrs["gen_ai.request.model"], "scripted-weather");
            assert_eq!(attrs["gen_ai.provider.name"], "scripted");
            assert_eq!(attrs["gen_ai.request.stream"], true);
            assert!(attrs["gen_ai.response.finish_reasons"].is_array());
            (
                attrs["gen_ai.usage.input_tokens"].as_i64().expect("an int"),
                attrs["gen_ai.usage.output_tokens"].as_i64().expect("an int"),
            )
        })
        .collect();
    usage.sort_unstable();
    assert_eq!(usage, [(112, 31), (168, 24)]);

    let tool = spans.iter().find(|s| s["name"] == "execute_tool get_weather").unwrap();
    assert_eq!(tool["attributes"]["gen_ai.operation.name"], "execute_tool");
    assert_eq!(tool["attributes"]["gen_ai.tool.name"], "get_weather");
    assert_eq!(tool["attributes"]["gen_ai.tool.call.id"], "call-1");
    assert_eq!(
        tool["attributes"]["gen_ai.tool.description"],
        "Get the current weather of a city."
    );

    // Nothing of the in-memory helpers was needed; keep the shared module's items referenced.
    let _ = in_memory;
}

#[cfg(feature = "grpc")]
#[test]
fn spans_reach_the_collector_over_grpc() {
    use towerscope_otel::Protocol;

    let collector = Collector::get();
    let service = format!("towerscope-otel-grpc-test-{}", std::process::id());
    // gRPC needs a tokio runtime when the exporter is built; a multi-thread one for the shutdown.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let _entered = runtime.enter();
    let guard = init_otlp(
        OtlpConfig::default()
            .service_name(&service)
            .endpoint(&collector.grpc_endpoint)
            .protocol(Protocol::Grpc)
            .metrics(false)
            .install_global(false),
    )
    .unwrap();
    let tracing = TracingMiddleware::builder()
        .tracer_provider(guard.tracer_provider().unwrap())
        .build();
    runtime.block_on(async {
        let agent = Agent::builder("grpc-agent")
            .model(ScriptedModel::new("m", [ScriptedResponse::text("hi").with_usage(3, 1)]))
            .middleware(tracing)
            .build()
            .unwrap();
        agent.reply(Msg::user("user", "hi")).await.unwrap();
    });
    guard.shutdown().unwrap();
    let spans = collector.wait_for(&service, 2);
    let mut names: Vec<&str> = spans.iter().map(|s| s["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["chat m", "invoke_agent grpc-agent"]);
    let chat = spans.iter().find(|s| s["name"] == "chat m").unwrap();
    assert_eq!(chat["attributes"]["gen_ai.usage.input_tokens"], 3);
}
