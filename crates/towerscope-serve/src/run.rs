//! [`run`]: serve a router on an address until Ctrl-C or SIGTERM, then shut down gracefully.

use std::future::{Future, IntoFuture};
use std::io;
use std::time::Duration;

use axum::Router;
use tokio::net::{TcpListener, ToSocketAddrs};

/// Serves `router` on `addr` until Ctrl-C (or SIGTERM on Unix); in-flight requests finish first,
/// for at most [`SHUTDOWN_GRACE`].
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

/// How long a shutdown waits for the requests in flight: 30 seconds. Past it, [`run`] and
/// [`run_until`] return and the connections left are cut (a client that stopped sending
/// mid-request, a reply still streaming), so that a process told to stop does stop. A reply
/// cut so is saved to its session from a task of its own, which a process that exits at once
/// may not let finish: give replies that run long more time with [`run_until_with_grace`].
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Serves `router` on `listener` until `shutdown` resolves; in-flight requests finish first,
/// for at most [`SHUTDOWN_GRACE`].
pub async fn run_until(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_until(listener, router, shutdown, SHUTDOWN_GRACE).await
}

/// [`run_until`], waiting `grace` instead of [`SHUTDOWN_GRACE`] for the requests in flight once
/// `shutdown` resolves.
pub async fn run_until_with_grace(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> io::Result<()> {
    serve_until(listener, router, shutdown, grace).await
}

async fn serve_until(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> io::Result<()> {
    let (signalled, on_signal) = tokio::sync::oneshot::channel::<()>();
    let shutdown = async move {
        shutdown.await;
        let _ = signalled.send(());
    };
    let serving = axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .into_future();
    let grace_over = async move {
        match on_signal.await {
            Ok(()) => tokio::time::sleep(grace).await,
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        served = serving => served,
        () = grace_over => {
            tracing::warn!(?grace, "shutting down: requests still in flight after the grace period were cut");
            Ok(())
        }
    }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tokio::io::AsyncWriteExt;

    use super::*;

    /// A client that sent half a request and went silent holds its connection; a shutdown
    /// still ends after the grace period.
    #[tokio::test]
    async fn a_shutdown_ends_after_its_grace_whatever_a_stalled_client_holds() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = Router::new().route("/", axum::routing::post(|body: String| async move { body }));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(run_until_with_grace(
            listener,
            router,
            async move {
                let _ = stopped.await;
            },
            Duration::from_millis(200),
        ));
        let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n{\"thr")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.send(()).unwrap();
        let ended = tokio::time::timeout(Duration::from_secs(10), server).await;
        assert!(matches!(ended, Ok(Ok(Ok(())))), "{ended:?}");
        drop(client);
    }
}
