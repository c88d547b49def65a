//! [`run`]: serve a router on an address until Ctrl-C or SIGTERM, then shut down gracefully;
//! [`Server`] for the timeouts.
//!
//! ```text
//! accept ─▶ HTTP/1.1 connection ─▶ router          (one task per connection)
//!             │ the next request's head must arrive within `header_timeout`
//!             │ (a silent or trickling client, an idle keep-alive connection: closed)
//! shutdown ─▶ stop accepting ─▶ connections end after their current request
//!           ─▶ after `grace`, the connections left are cut
//! ```

use std::future::Future;
use std::io;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::task::JoinSet;

/// Serves `router` on `addr` until Ctrl-C (or SIGTERM on Unix); in-flight requests finish first,
/// for at most [`SHUTDOWN_GRACE`]. [`Server`] sets the timeouts.
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
    Server::new().run(addr, router).await
}

/// Serves `router` on `listener` until `shutdown` resolves; in-flight requests finish first,
/// for at most [`SHUTDOWN_GRACE`]. [`Server`] sets the timeouts.
pub async fn run_until(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    Server::new().run_until(listener, router, shutdown).await
}

/// How long a shutdown waits for the requests in flight: 30 seconds. Past it, [`run`] and
/// [`run_until`] return and the connections left are cut (a client that stopped sending
/// mid-request, a reply still streaming), so that a process told to stop does stop. A reply
/// cut so is saved to its session from a task of its own, which a process that exits at once
/// may not let finish: give replies that run long more time with [`Server::grace`].
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// How long a connection may take to send a request's head (its request line and headers):
/// 30 seconds, counted from when the server is ready to read it. A client that connects and
/// sends nothing, trickles its headers, or keeps an idle keep-alive connection open longer is
/// disconnected, so that silent clients cannot hold the process's sockets. A request's body and
/// a streamed answer have no such limit (a reply may stream for minutes). Behind a proxy that
/// keeps idle connections to its backends open longer (60 s is a common default), set
/// [`Server::header_timeout`] above the proxy's idle timeout, or the proxy may send a request
/// on a connection being closed.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// The server behind [`run`] and [`run_until`], with its timeouts: HTTP/1.1 on a
/// [`TcpListener`], one task per connection, `TCP_NODELAY` on (streamed events leave at once).
///
/// ```no_run
/// use std::time::Duration;
/// use towerscope_agent::Agent;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
/// use towerscope_serve::Server;
///
/// # #[tokio::main]
/// # async fn main() -> std::io::Result<()> {
/// let model = ScriptedModel::cycle("scripted", [ScriptedResponse::text("Hello!")]);
/// let router = towerscope_serve::router(move |_: &str| Agent::builder("assistant").model(model.clone()).build());
/// Server::new()
///     .grace(Duration::from_secs(120)) // replies that run long finish on shutdown
///     .header_timeout(Duration::from_secs(10))
///     .run("127.0.0.1:3000", router)
///     .await
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Server {
    grace: Duration,
    header_timeout: Duration,
}

impl Default for Server {
    fn default() -> Self {
        Self::new()
    }
}

impl Server {
    /// A server with [`SHUTDOWN_GRACE`] and [`HEADER_TIMEOUT`].
    pub fn new() -> Self {
        Self {
            grace: SHUTDOWN_GRACE,
            header_timeout: HEADER_TIMEOUT,
        }
    }

    /// How long a shutdown waits for the requests in flight before cutting them
    /// ([`SHUTDOWN_GRACE`] by default).
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// How long a connection may take to send a request's head, or stay idle between two
    /// requests ([`HEADER_TIMEOUT`] by default). A zero timeout is taken as one millisecond.
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Serves `router` on `addr` until Ctrl-C (or SIGTERM on Unix).
    pub async fn run(self, addr: impl ToSocketAddrs, router: Router) -> io::Result<()> {
        let listener = TcpListener::bind(addr).await?;
        self.run_until(listener, router, shutdown_signal()).await
    }

    /// Serves `router` on `listener` until `shutdown` resolves, then lets the requests in
    /// flight finish for at most the grace period. Errors accepting a connection (a process
    /// out of file descriptors) are logged and retried, never returned.
    pub async fn run_until(
        self,
        listener: TcpListener,
        router: Router,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new()).header_read_timeout(self.header_timeout);
        let service = TowerToHyperService::new(router);
        // Told once the shutdown comes: each connection then ends after its current request.
        let (stopping, stop) = tokio::sync::watch::channel(false);
        let mut connections = JoinSet::new();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        let _ = stream.set_nodelay(true);
                        // With upgrades (a WebSocket route merged into the router), as
                        // axum's server serves them.
                        let connection = http.serve_connection(TokioIo::new(stream), service.clone()).with_upgrades();
                        let mut stop = stop.clone();
                        connections.spawn(async move {
                            let mut connection = std::pin::pin!(connection);
                            let ended = tokio::select! {
                                ended = connection.as_mut() => ended,
                                () = async { drop(stop.wait_for(|stopping| *stopping).await) } => {
                                    connection.as_mut().graceful_shutdown();
                                    connection.await
                                }
                            };
                            if let Err(error) = ended {
                                tracing::debug!(%error, "connection ended with an error");
                            }
                        });
                    }
                    Err(error) => accept_failed(&error).await,
                },
            }
        }
        drop(listener);
        tracing::info!(
            connections = connections.len(),
            "shutting down: finishing the requests in flight"
        );
        let _ = stopping.send(true);
        let drained = async { while connections.join_next().await.is_some() {} };
        if tokio::time::timeout(self.grace, drained).await.is_err() {
            tracing::warn!(grace = ?self.grace, "shutting down: requests still in flight after the grace period were cut");
        }
        Ok(())
    }
}

/// A failed `accept`: an error of the connection being accepted (reset before it was taken)
/// is skipped; any other (out of file descriptors) is logged and retried after a second, as
/// hyper's and axum's servers do.
async fn accept_failed(error: &io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(error.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset) {
        return;
    }
    tracing::error!(%error, "accepting a connection failed; retrying in a second");
    tokio::time::sleep(Duration::from_secs(1)).await;
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
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;
    use tokio::sync::oneshot;
    use tokio::task::JoinHandle;

    use super::*;

    fn echo() -> Router {
        Router::new()
            .route("/", axum::routing::post(|body: String| async move { body }))
            .route(
                "/slow",
                axum::routing::get(|| async {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    "done"
                }),
            )
            .route(
                "/stream",
                axum::routing::get(|| async {
                    let pieces = futures_util::stream::unfold(0, |n| async move {
                        if n == 5 {
                            return None;
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        Some((Ok::<_, std::convert::Infallible>(format!("piece {n};")), n + 1))
                    });
                    axum::body::Body::from_stream(pieces)
                }),
            )
    }

    /// A server on loopback with `server`'s settings, stopped by the sender.
    async fn start(server: Server) -> (std::net::SocketAddr, oneshot::Sender<()>, JoinHandle<io::Result<()>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(server.run_until(listener, echo(), async move {
            let _ = stopped.await;
        }));
        (addr, stop, served)
    }

    /// Reads until the server closes the connection (or 10 seconds pass: `None`).
    async fn read_to_close(client: &mut TcpStream) -> Option<String> {
        let mut read = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(10), client.read_to_end(&mut read)).await;
        closed.ok().map(|_| String::from_utf8_lossy(&read).into_owned())
    }

    /// A client that sent half a request and went silent holds its connection; a shutdown
    /// still ends after the grace period.
    #[tokio::test]
    async fn a_shutdown_ends_after_its_grace_whatever_a_stalled_client_holds() {
        let (addr, stop, served) = start(Server::new().grace(Duration::from_millis(200))).await;
        let mut client = TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n{\"thr")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.send(()).unwrap();
        let ended = tokio::time::timeout(Duration::from_secs(10), served).await;
        assert!(matches!(ended, Ok(Ok(Ok(())))), "{ended:?}");
        drop(client);
    }

    /// A client that connects and sends nothing, or trickles its request line, is disconnected
    /// once the header timeout passes, and the server goes on serving others.
    #[tokio::test]
    async fn a_client_that_never_finishes_its_request_head_is_disconnected() {
        let (addr, _stop, _served) = start(Server::new().header_timeout(Duration::from_millis(200))).await;
        let mut silent = TcpStream::connect(addr).await.unwrap();
        let mut trickling = TcpStream::connect(addr).await.unwrap();
        trickling.write_all(b"POST / HT").await.unwrap();
        assert!(
            read_to_close(&mut silent).await.is_some(),
            "a silent connection is kept open"
        );
        let answer = read_to_close(&mut trickling).await;
        assert!(answer.is_some(), "a trickling request head is kept open");

        let mut client = TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"POST / HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: 2\r\n\r\nhi")
            .await
            .unwrap();
        let answer = read_to_close(&mut client).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("hi"), "{answer}");
    }

    /// A keep-alive connection left idle after its request is closed after the header timeout;
    /// a request sent in time on it is answered.
    #[tokio::test]
    async fn an_idle_keep_alive_connection_is_closed_after_the_header_timeout() {
        let (addr, _stop, _served) = start(Server::new().header_timeout(Duration::from_millis(300))).await;
        let mut client = TcpStream::connect(addr).await.unwrap();
        let request = b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\nhi";
        client.write_all(request).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        client.write_all(request).await.unwrap();
        let answers = read_to_close(&mut client).await.unwrap();
        assert_eq!(answers.matches("HTTP/1.1 200").count(), 2, "{answers}");
    }

    /// A route that upgrades its connection (a WebSocket merged into the router) gets the
    /// upgraded connection (without upgrades, hyper refused it after the 101).
    #[tokio::test]
    async fn an_upgraded_connection_reaches_its_route() {
        let router = Router::new().route(
            "/up",
            axum::routing::get(|mut request: axum::extract::Request| async move {
                let upgrade = hyper::upgrade::on(&mut request);
                tokio::spawn(async move {
                    if let Ok(upgraded) = upgrade.await {
                        let mut io = TokioIo::new(upgraded);
                        let _ = io.write_all(b"upgraded!").await;
                        let _ = io.shutdown().await;
                    }
                });
                axum::http::Response::builder()
                    .status(101)
                    .header("connection", "upgrade")
                    .header("upgrade", "echo")
                    .body(axum::body::Body::empty())
                    .unwrap()
            }),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _served = tokio::spawn(Server::new().run_until(listener, router, std::future::pending()));
        let mut client = TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"GET /up HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: echo\r\n\r\n")
            .await
            .unwrap();
        let answer = read_to_close(&mut client).await.unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 101") && answer.ends_with("upgraded!"),
            "{answer:?}"
        );
    }

    /// The header timeout does not cut an answer that streams for longer, nor a request in
    /// flight when the shutdown comes: both finish, and the server returns after them.
    #[tokio::test]
    async fn long_answers_and_requests_in_flight_at_a_shutdown_finish() {
        let (addr, stop, served) = start(Server::new().header_timeout(Duration::from_millis(100))).await;
        let mut streamed = TcpStream::connect(addr).await.unwrap();
        streamed
            .write_all(b"GET /stream HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut slow = TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"GET /slow HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.send(()).unwrap();
        let streamed = read_to_close(&mut streamed).await.unwrap();
        assert!(
            streamed.contains("piece 0;") && streamed.contains("piece 4;"),
            "{streamed}"
        );
        let slow = read_to_close(&mut slow).await.unwrap();
        assert!(slow.starts_with("HTTP/1.1 200") && slow.ends_with("done"), "{slow}");
        let ended = tokio::time::timeout(Duration::from_secs(10), served).await;
        assert!(matches!(ended, Ok(Ok(Ok(())))), "{ended:?}");
        assert!(TcpStream::connect(addr).await.is_err(), "the listener is closed");
    }
}
