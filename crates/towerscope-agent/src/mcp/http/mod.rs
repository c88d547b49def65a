//! The streamable-HTTP transport of an MCP server: `http://` or `https://` through reqwest and
//! rustls with the `ring` provider (the providers' stack), with headers, a bearer token, extra
//! trusted certificates, and answers bounded by the server's `max_message_bytes` (our own
//! client under the SDK's transport: `client.rs`, `bound.rs`).

mod bound;
mod client;

use std::collections::HashMap;

use client::BoundedClient;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use towerscope_core::AgentError;

/// What the HTTP transport is built from (the fields of
/// [`McpTransport::Http`](super::McpTransport::Http)).
pub(super) struct HttpTarget<'a> {
    pub(super) server: &'a str,
    pub(super) url: &'a str,
    pub(super) headers: &'a [(String, String)],
    pub(super) bearer: Option<&'a str>,
    pub(super) root_certificates: &'a [String],
    /// The longest answer, or event of a stream, read.
    pub(super) max_message_bytes: usize,
    /// Raised when an answer passes that limit.
    pub(super) overflow: super::stdio::Overflow,
    /// How long a request's answer is read (the server's `timeout`).
    pub(super) answer_wait: Option<std::time::Duration>,
}

/// Headers the transport sets itself (lower case, as `HeaderName` keeps them).
const RESERVED: [&str; 4] = ["accept", "mcp-session-id", "mcp-protocol-version", "last-event-id"];

fn invalid(server: &str, what: impl std::fmt::Display) -> AgentError {
    AgentError::validation(format!("MCP server '{server}': {what}"))
}

impl HttpTarget<'_> {
    /// The transport, or a validation error naming what is wrong (a header HTTP does not allow,
    /// a certificate that does not parse, a URL that is neither `http://` nor `https://`).
    /// Header values are never quoted in the error: they are often credentials.
    pub(super) fn transport(&self) -> Result<StreamableHttpClientTransport<BoundedClient>, AgentError> {
        let server = self.server;
        // Only the scheme goes into the error: a URL may carry a key in its query.
        let scheme = self.url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        if !matches!(scheme.as_deref(), Some("http" | "https")) {
            let shown = scheme.as_deref().unwrap_or("none");
            return Err(invalid(
                server,
                format_args!("the URL's scheme ({shown}) is neither http:// nor https://"),
            ));
        }
        let mut custom = HashMap::new();
        for (name, value) in self.headers {
            let key = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| invalid(server, format_args!("'{name}' is not a valid HTTP header name")))?;
            if RESERVED.contains(&key.as_str()) {
                return Err(invalid(
                    server,
                    format_args!("the header '{name}' is set by the MCP transport itself"),
                ));
            }
            let mut value = HeaderValue::from_str(value).map_err(|_| {
                invalid(
                    server,
                    format_args!("the value of the header '{name}' is not valid in HTTP"),
                )
            })?;
            value.set_sensitive(true);
            custom.insert(key, value);
        }
        if let Some(token) = self.bearer
            && HeaderValue::from_str(&format!("Bearer {token}")).is_err()
        {
            return Err(invalid(
                server,
                "the bearer token has characters HTTP does not allow in a header",
            ));
        }
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Fails only when another thread installed a provider meanwhile, which is as good.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        // No redirects: the headers (keys, often) would follow to another host.
        let mut builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
        for pem in self.root_certificates {
            let certs = reqwest::Certificate::from_pem_bundle(pem.as_bytes())
                .map_err(|e| invalid(server, format_args!("a root certificate is not valid PEM: {e}")))?;
            if certs.is_empty() {
                return Err(invalid(server, "a root certificate holds no PEM certificate"));
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let client = builder
            .build()
            .map_err(|e| invalid(server, format_args!("could not build the HTTP client: {e}")))?;
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.url).custom_headers(custom);
        if let Some(token) = self.bearer {
            config = config.auth_header(token);
        }
        let client = BoundedClient::new(client, self.max_message_bytes, self.overflow.clone(), self.answer_wait);
        Ok(StreamableHttpClientTransport::with_client(client, config))
    }
}
