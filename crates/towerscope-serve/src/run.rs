//! [`run`]: serve a router on an address until Ctrl-C or SIGTERM, then shut down gracefully.

use std::future::Future;
use std::io;

use axum::Router;
use tokio::net::{TcpListener, ToSocketAddrs};

/// Serves `router` on `addr` until Ctrl-C (or SIGTERM on Unix); in-flight requests finish first.
///
/// ```no_run
/// use towerscope_agent::Agent;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
///
/// # #[tokio::main]
/// # async fn main() -> std::io::Result<()> {
/// let model = ScriptedModel::cycle("scripted", [ScriptedResponse::text("Hello!")]);
/// let router = towerscope_serve::router(move |_: &str| Agent::builder("assistant").model(model.clone()).build());
/// towerscope_serve::run("127.0.0.1:3000", router).await
/// # }
/// ```
pub async fn run(addr: impl ToSocketAddrs, router: Router) -> io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    run_until(listener, router, shutdown_signal()).await
}

/// Serves `router` on `listener` until `shutdown` resolves; in-flight requests finish first.
pub async fn run_until(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    axum::serve(listener, router).with_graceful_shutdown(shutdown).await
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
    tracing::info!("shutting down: finishing the requests in flight");
}
