//! The binary to run under `valgrind --tool=callgrind` for the instructions one AG-UI request
//! costs through the router (the `serve/router` scenario of `benches/serve.rs`: a scripted
//! model answering "Hello!", no session store), independent of the machine's load:
//!
//! ```sh
//! cargo bench --bench serve_profile --features serve --no-run
//! valgrind --tool=callgrind target/release/deps/serve_profile-<hash> 100   # and 300 (the binary, not its .d file):
//! # (instructions at 300 - instructions at 100) / 200 = one request
//! ```
//!
//! The argument is the number of requests (default 100).

use tower::ServiceExt;
use towerscope::agent::Agent;
use towerscope::models::{ScriptedModel, ScriptedResponse};
use towerscope::serve::axum::body::Body;
use towerscope::serve::axum::http::{Request, header};

const BODY: &str = r#"{"threadId":"bench","runId":"r","messages":[{"id":"u1","role":"user","content":"Hi"}]}"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).map(|a| a.parse()).transpose()?.unwrap_or(100);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let model = ScriptedModel::cycle("scripted", [ScriptedResponse::text("Hello!")]).record(false);
    let router =
        towerscope::serve::router(move |_thread: &str| Agent::builder("assistant").model(model.clone()).build());
    rt.block_on(async {
        for _ in 0..n {
            let request = Request::post("/agui")
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(BODY))?;
            let response = router.clone().oneshot(request).await?;
            let sse = towerscope::serve::axum::body::to_bytes(response.into_body(), usize::MAX).await?;
            assert!(sse.ends_with(b"\n\n"), "a whole SSE body");
            std::hint::black_box(sse);
        }
        Ok(())
    })
}
