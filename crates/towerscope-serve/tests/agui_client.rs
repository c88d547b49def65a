//! The official AG-UI client (`@ag-ui/client`'s `HttpAgent`, from npm, which validates every
//! event against the protocol's schemas and ordering rules) runs a tool round, a front-end tool
//! round, a confirmation interrupt and a model call restarted mid-answer against the router on
//! loopback (tests/web/agui_client.cjs).
#![allow(clippy::unwrap_used)]

mod support;

use support::{model, node_modules, retrying_factory, serve, session_dir};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_ag_ui_client_runs_tool_frontend_and_interrupt_rounds() {
    let Some(modules) = node_modules("the_official_ag_ui_client_runs_tool_frontend_and_interrupt_rounds") else {
        return;
    };
    let router = towerscope_serve::router(retrying_factory(model(), session_dir("agui-client")));
    let (addr, stop, server) = serve(router).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/web/agui_client.cjs");
    let output = tokio::process::Command::new("node")
        .arg(script)
        .arg(format!("http://{addr}/agui"))
        .env("TOWERSCOPE_NODE_MODULES", modules)
        .kill_on_drop(true)
        .output()
        .await
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(output.status.success(), "the client failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("passed, 0 failed"), "{stdout}");
    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
