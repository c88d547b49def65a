//! [`CassetteLayer`]: puts a [`Cassette`] in front of an HTTP transport.

use std::time::Duration;

use tower::Layer;
use towerscope_core::AgentError;

use super::mode::CassetteMode;
use super::service::CassetteService;
use super::store::Cassette;
use crate::http::{ApiKey, HttpService, http_client, http_service};

/// Wraps a transport (a tower service from `reqwest::Request` to `reqwest::Response`) in a
/// [`CassetteService`] that records to and replays from `cassette`.
#[derive(Debug, Clone)]
pub struct CassetteLayer {
    cassette: Cassette,
}

impl CassetteLayer {
    /// A layer for `cassette` (also [`Cassette::layer`]).
    pub fn new(cassette: Cassette) -> Self {
        Self { cassette }
    }
}

impl<S> Layer<S> for CassetteLayer {
    type Service = CassetteService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CassetteService::new(inner, self.cassette.clone())
    }
}

impl Cassette {
    /// The layer that records to and replays from this cassette, for any transport.
    pub fn layer(&self) -> CassetteLayer {
        CassetteLayer::new(self.clone())
    }

    /// A provider transport through this cassette: the default client (30 s to connect) in
    /// [`layer`](Self::layer), for a model builder's `http_service`. In replay mode the client
    /// is never called.
    pub fn http_service(&self) -> Result<HttpService, AgentError> {
        let client = http_client(Some(Duration::from_secs(30)), None)?;
        Ok(http_service(self.layer().layer(client)))
    }

    /// The API key in the environment variable `var`; in replay mode, when it is unset, a
    /// placeholder (nothing is sent, so a test replays in CI without the key). The key is never
    /// written to the cassette either way.
    pub fn api_key(&self, var: &str) -> Result<ApiKey, AgentError> {
        match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => Ok(ApiKey::new(key.trim())),
            _ if self.mode() == CassetteMode::Replay => Ok(ApiKey::new("replayed-without-a-key")),
            _ => Err(AgentError::validation(format!(
                "{var} is not set: recording a cassette ({}) sends requests to the provider",
                self.mode()
            ))),
        }
    }
}
