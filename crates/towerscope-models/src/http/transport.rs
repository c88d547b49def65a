//! The HTTP transport as a tower service, and the default reqwest client.

use std::time::Duration;

use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceExt};
use towerscope_core::{AgentError, BoxError};

/// The HTTP transport of a provider: any tower service from a `reqwest::Request` to a
/// `reqwest::Response`, erased once when the model is built.
///
/// `reqwest::Client` is one; wrap it in layers to add headers, a proxy, recording or limits,
/// as everywhere else in towerscope.
pub type HttpService = BoxCloneSyncService<reqwest::Request, reqwest::Response, BoxError>;

/// Erases a transport service.
pub fn http_service<S>(service: S) -> HttpService
where
    S: Service<reqwest::Request, Response = reqwest::Response> + Clone + Send + Sync + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    BoxCloneSyncService::new(service.map_err(Into::into))
}

/// The providers' default read timeout: 10 minutes without a byte of the answer (a server that
/// accepted the request and went silent; a whole answer that takes longer needs a longer one).
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(600);

/// A reqwest client with these timeouts, speaking HTTPS through rustls, that follows redirects
/// only within the origin (scheme, host and port) of the request: reqwest takes `Authorization`
/// off a request sent to another host, but not `x-api-key` (Anthropic's key) nor the headers a
/// builder adds, so a redirect elsewhere is answered with the redirect itself (an HTTP error
/// naming its status), not followed.
///
/// rustls needs a process-wide crypto provider; when none is installed yet, this installs
/// rustls' `ring` provider (an application that installs another one first keeps its own).
///
/// Cargo unifies features: with these providers compiled in, every reqwest client of the process
/// has TLS without a provider of its own, and reqwest panics when one is built before a provider
/// is installed. towerscope's other clients (the OTLP exporter, MCP over HTTP) install `ring`
/// first when their `ring` feature is on, which the facade's `openai` and `anthropic` features
/// do; an application that builds reqwest clients of its own should install a provider at start
/// (`rustls::crypto::ring::default_provider().install_default()`).
///
/// - `connect_timeout`: for opening the TCP and TLS connection;
/// - `read_timeout`: for each read of the response, its headers included, so it bounds the wait
///   for the first byte and the silence between two reads. A keep-alive comment or a `ping`
///   event is a read: a server that sends only those is not stopped by it (`TimeoutLayer`'s
///   first-chunk and idle deadlines count the answer's chunks, and are).
pub fn http_client(
    connect_timeout: Option<Duration>,
    read_timeout: Option<Duration>,
) -> Result<reqwest::Client, AgentError> {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Fails only when another thread installed a provider meanwhile, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let mut builder = reqwest::Client::builder().redirect(same_origin_redirects());
    if let Some(timeout) = connect_timeout {
        builder = builder.connect_timeout(timeout);
    }
    if let Some(timeout) = read_timeout {
        builder = builder.read_timeout(timeout);
    }
    builder
        .build()
        .map_err(|e| AgentError::validation(format!("could not build the HTTP client: {e}")))
}

/// Follows at most 10 redirects, each within the origin of the first request.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > 10 {
            attempt.error("too many redirects")
        } else {
            attempt.follow()
        }
    })
}
