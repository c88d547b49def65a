//! The chat page in a real browser: headless Chromium (Debian's package, driven by
//! playwright-core) loads `GET /`, sends a message, confirms a tool call (again after the first
//! answer failed), sees a retried model call's first attempt taken away and stops a reply, with
//! any JavaScript error a failure (tests/web/chat_page.cjs). The screenshot is kept at
//! `$CARGO_TARGET_TMPDIR/serve-chat-page.png`.
#![allow(clippy::unwrap_used)]

mod support;

use support::{model, node_modules, retrying_factory, serve, session_dir};
use towerscope_agent::session::{JsonFileStore, SessionKey, SessionStore};
use towerscope_core::{ReplyFinishedReason, Role};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_page_streams_confirms_and_stops_in_headless_chromium() {
    let Some(modules) = node_modules("the_chat_page_streams_confirms_and_stops_in_headless_chromium") else {
        return;
    };
    // Served at the root, and mounted under a path as the router's docs suggest
    // (`Router::nest`), where the page is at `/chat`, without a trailing slash.
    for mount in ["/", "/chat"] {
        let dir = session_dir(&format!("chat-page{}", mount.replace('/', "-")));
        let router = towerscope_serve::router(retrying_factory(model(), dir.clone()));
        let router = match mount {
            "/" => router,
            path => axum::Router::new().nest(path, router),
        };
        check_the_page(&modules, router, mount, &dir).await;
    }
}

async fn check_the_page(modules: &str, router: axum::Router, mount: &str, dir: &std::path::Path) {
    let (addr, stop, server) = serve(router).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/web/chat_page.cjs");
    let screenshot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-chat-page.png");
    let _ = std::fs::remove_file(&screenshot);
    let output = tokio::process::Command::new("node")
        .arg(script)
        .arg(format!("http://{addr}{mount}"))
        .arg(&screenshot)
        .env("TOWERSCOPE_NODE_MODULES", modules)
        .kill_on_drop(true)
        .output()
        .await
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{mount}: {stdout}\nscreenshot: {}", screenshot.display());
    assert!(
        output.status.success(),
        "the page at {mount} failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("passed, 0 failed"), "{mount}: {stdout}");
    assert!(screenshot.exists(), "the screenshot was kept");
    let _ = stop.send(());
    server.await.unwrap().unwrap();

    // What the server kept: the stop interrupted the reply there too, and a message the server
    // refused while the thread was closing that reply was not sent again with the next one.
    let store = JsonFileStore::new(dir);
    let sessions = store.list("web").await.unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let key = SessionKey::new("web", sessions[0].as_str()).unwrap();
    let context = store.load(&key).await.unwrap().unwrap().document.agent.context;
    let hellos = context
        .iter()
        .filter(|m| m.role == Role::User && m.text_content().as_deref() == Some("hello"))
        .count();
    assert_eq!(hellos, 1);
    assert!(
        context
            .iter()
            .any(|m| m.finished_reason == Some(ReplyFinishedReason::Interrupted)),
        "the stopped reply was interrupted on the server"
    );
}
