//! What the HTTP providers share: the transport as a tower service, the API key, the errors
//! a provider reports, and the decoding of server-sent events.
//!
//! Every provider sends its requests through an [`HttpService`]: a tower service from
//! `reqwest::Request` to `reqwest::Response`. The default is a `reqwest::Client` made by
//! [`http_client`] with the configured connect and read timeouts; a builder's `http_service`
//! takes any other, so HTTP-level concerns (headers, a proxy, recording, rate limits) are layers
//! like everything else:
//!
//! ```text
//!  agent ─▶ on_model_call layers ─▶ OpenAiChatModel ─▶ HttpService layers ─▶ reqwest::Client
//!           (retry, fallback, ...)     (JSON, SSE)        (headers, recording)
//! ```
//!
//! Failures become [`AgentError`](towerscope_core::AgentError)s that the retry and fallback
//! layers act on: see [`ProviderError`]. The API key is an [`ApiKey`], which prints as `***`.
//!
//! # Example
//!
//! A transport that adds a header to every request, stacked with tower's `map_request`:
//!
//! ```
//! use tower::ServiceBuilder;
//! use towerscope_models::http::{http_client, http_service};
//!
//! # fn main() -> Result<(), towerscope_core::AgentError> {
//! let client = http_client(Some(std::time::Duration::from_secs(10)), None)?;
//! let transport = http_service(
//!     ServiceBuilder::new()
//!         .map_request(|mut request: reqwest::Request| {
//!             request.headers_mut().insert("x-team", reqwest::header::HeaderValue::from_static("search"));
//!             request
//!         })
//!         .service(client),
//! );
//! # let _ = transport;
//! # Ok(()) }
//! ```

// With only the `cassette` feature, the parts the providers share are compiled but unused.
#![cfg_attr(not(any(feature = "openai", feature = "anthropic")), allow(dead_code))]

mod api_key;
pub(crate) mod chunk;
mod error;
pub(crate) mod names;
mod retry_after;
pub(crate) mod sse;
pub(crate) mod target;
pub(crate) mod text;
mod transport;

pub use api_key::ApiKey;
pub use error::ProviderError;
pub use reqwest;
pub use transport::{DEFAULT_READ_TIMEOUT, HttpService, http_client, http_service};
