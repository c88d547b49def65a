//! [`HttpTarget`]: where a provider's requests go, and the steps of one call over HTTP.

use std::fmt;
use std::time::Duration;

use futures_core::Stream;
use futures_util::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use tower::ServiceExt;
use towerscope_core::{AgentError, ChatResponse, ModelOutput};

use super::error::{CallSite, ProviderError, transport_error};
use super::names::{Names, hide_credentials};
use super::sse::{ChatChunks, StreamDecoder};
use super::transport::HttpService;

/// The most of an error body read.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// The default limit on an answer's body (a whole JSON answer, or all the events of a streamed
/// one): 64 MiB. See the builders' `max_answer_bytes`.
pub(crate) const DEFAULT_MAX_ANSWER_BYTES: usize = 64 << 20;

/// A provider's endpoint: URL, headers (credentials marked sensitive), transport and names.
#[derive(Clone)]
pub(crate) struct HttpTarget {
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) url: Url,
    /// The URL without credentials or query, for errors.
    pub(crate) endpoint: String,
    pub(crate) headers: HeaderMap,
    pub(crate) transport: HttpService,
    pub(crate) read_timeout: Option<Duration>,
    /// The most bytes an answer's body may have; past it the answer fails.
    pub(crate) max_answer_bytes: usize,
}

impl fmt::Debug for HttpTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTarget")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl HttpTarget {
    /// A target at `base` joined with `path` (`/chat/completions`, `/v1/messages`).
    pub(crate) fn new(
        provider: &str,
        model: &str,
        base: &str,
        path: &str,
        headers: HeaderMap,
        transport: HttpService,
        read_timeout: Option<Duration>,
    ) -> Result<Self, AgentError> {
        // The URL is not quoted: it may hold credentials.
        let mut url =
            Url::parse(base).map_err(|e| AgentError::validation(format!("invalid {provider} base URL ({e})")))?;
        // The path goes after the base's path; a query (Azure's `?api-version=...`) stays the
        // query, and a fragment is dropped.
        url.set_fragment(None);
        let joined_path = format!("{}{path}", url.path().trim_end_matches('/'));
        url.set_path(&joined_path);
        if !url.username().is_empty() || url.password().is_some() {
            // reqwest sends a URL's credentials only for requests made with its builder, which
            // these are not; they would show in transport errors.
            return Err(AgentError::validation(format!(
                "the {provider} base URL holds a user name or password, which would not be sent: give the \
                 credentials as a header (`.header(\"authorization\", ...)`) instead"
            )));
        }
        if !matches!(url.scheme(), "http" | "https") {
            return Err(AgentError::validation(format!(
                "the {provider} base URL must be http or https, found '{}'",
                url.scheme()
            )));
        }
        let endpoint = endpoint_of(&url);
        Ok(Self {
            provider: provider.to_owned(),
            model: model.to_owned(),
            url,
            endpoint,
            headers,
            transport,
            read_timeout,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
        })
    }

    /// The same target with another limit on an answer's body.
    pub(crate) fn with_max_answer_bytes(mut self, limit: usize) -> Self {
        self.max_answer_bytes = limit;
        self
    }

    /// The error of an answer whose body passed [`max_answer_bytes`](Self::max_answer_bytes).
    fn too_large(&self) -> AgentError {
        too_large(&self.endpoint, self.max_answer_bytes)
    }

    /// The host, for `server.address`.
    pub(crate) fn host(&self) -> Option<&str> {
        self.url.host_str()
    }

    /// The port (the URL's, or its scheme's default), for `server.port`.
    pub(crate) fn port(&self) -> Option<u16> {
        self.url.port_or_known_default()
    }

    pub(crate) fn names(&self) -> Names {
        Names {
            provider: self.provider.clone(),
            model: self.model.clone(),
            endpoint: self.endpoint.clone(),
            credentials: self.headers.values().filter(|v| v.is_sensitive()).cloned().collect(),
        }
    }

    pub(crate) fn site(&self) -> CallSite<'_> {
        CallSite {
            provider: &self.provider,
            model: &self.model,
            endpoint: &self.endpoint,
            read_timeout: self.read_timeout,
        }
    }

    /// POSTs a JSON body; a non-2xx answer becomes the provider's error.
    pub(crate) async fn post(&self, body: Vec<u8>, stream: bool) -> Result<reqwest::Response, AgentError> {
        let mut request = reqwest::Request::new(Method::POST, self.url.clone());
        let headers = request.headers_mut();
        headers.clone_from(&self.headers);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let accept = if stream {
            "text/event-stream"
        } else {
            "application/json"
        };
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
        *request.body_mut() = Some(body.into());
        let response = self
            .transport
            .clone()
            .oneshot(request)
            .await
            .map_err(|e| match e.downcast::<AgentError>() {
                // A transport layer's own error (a cassette's) is passed on as it is.
                Ok(own) => *own,
                Err(e) => transport_error(&*e, &self.site(), false),
            })?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let headers = response.headers().clone();
        let body = self.read_capped(response).await;
        // A proxy may echo the key it refused.
        let error =
            ProviderError::from_body_hiding(&self.provider, Some(status.as_u16()), Some(&headers), &body, |text| {
                hide_credentials(self.headers.values(), text);
            });
        Err(error.into_agent_error(&self.model, &self.endpoint))
    }

    /// The whole body of a successful response, at most
    /// [`max_answer_bytes`](Self::max_answer_bytes) of it.
    pub(crate) async fn read(&self, mut response: reqwest::Response) -> Result<Vec<u8>, AgentError> {
        if response
            .content_length()
            .is_some_and(|n| n > self.max_answer_bytes as u64)
        {
            return Err(self.too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| transport_error(&e, &self.site(), true))?
        {
            if body.len() + chunk.len() > self.max_answer_bytes {
                return Err(self.too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// At most [`MAX_ERROR_BODY`] bytes of an error body (whatever could be read).
    async fn read_capped(&self, mut response: reqwest::Response) -> Vec<u8> {
        let mut body = Vec::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            body.extend_from_slice(&chunk);
            if body.len() >= MAX_ERROR_BODY {
                body.truncate(MAX_ERROR_BODY);
                break;
            }
        }
        body
    }

    /// Posts `body` and answers as the server did: a server-sent event stream decoded chunk by
    /// chunk with the decoder `stream` makes, or a whole body read by `whole`.
    pub(crate) async fn answer<D>(
        &self,
        body: Vec<u8>,
        streamed: bool,
        stream: impl FnOnce(Names) -> D,
        whole: impl FnOnce(&Names, &[u8]) -> Result<ChatResponse, AgentError>,
    ) -> Result<ModelOutput, AgentError>
    where
        D: StreamDecoder + Send + 'static,
    {
        let response = self.post(body, streamed).await?;
        if is_event_stream(&response) {
            let chunks = ChatChunks::new(self.body_stream(response), stream(self.names()));
            return Ok(ModelOutput::Stream(Box::pin(chunks)));
        }
        let body = self.read(response).await?;
        Ok(ModelOutput::Complete(whole(&self.names(), &body)?))
    }

    /// The body as a stream of byte chunks, transport failures mapped to the agent's errors; an
    /// error item once the body passes [`max_answer_bytes`](Self::max_answer_bytes) (the
    /// decoder ends the stream at its first error).
    pub(crate) fn body_stream(
        &self,
        response: reqwest::Response,
    ) -> impl Stream<Item = Result<impl AsRef<[u8]> + Send + use<>, AgentError>> + Send + 'static + use<> {
        let provider = self.provider.clone();
        let model = self.model.clone();
        let endpoint = self.endpoint.clone();
        let read_timeout = self.read_timeout;
        let limit = self.max_answer_bytes;
        let mut total = 0usize;
        response.bytes_stream().map(move |item| {
            let bytes = item.map_err(|e| {
                let site = CallSite {
                    provider: &provider,
                    model: &model,
                    endpoint: &endpoint,
                    read_timeout,
                };
                transport_error(&e, &site, true)
            })?;
            total = total.saturating_add(bytes.len());
            if total > limit {
                return Err(too_large(&endpoint, limit));
            }
            Ok(bytes)
        })
    }
}

/// Adds `(name, value)` headers, checking each; a credential's (see [`is_credential_header`])
/// is marked sensitive.
pub(crate) fn insert_headers(
    headers: &mut HeaderMap,
    pairs: impl IntoIterator<Item = (String, String)>,
) -> Result<(), AgentError> {
    for (name, value) in pairs {
        let header = HeaderName::try_from(name.as_str())
            .map_err(|_| AgentError::validation(format!("invalid header name '{name}'")))?;
        let mut value = HeaderValue::try_from(value)
            .map_err(|_| AgentError::validation(format!("invalid value for header '{name}'")))?;
        if is_credential_header(header.as_str()) {
            value.set_sensitive(true);
        }
        headers.insert(header, value);
    }
    Ok(())
}

/// Whether a header's name (lower case) says it holds a credential, word by word as the
/// redaction rules read keys (`authorization`, `proxy-authorization`, `cookie`, `api-key`,
/// `x-api-key`, `x-team-token`, `x-client-secret`), and a name whose last word is `key`
/// (Azure API Management's `ocp-apim-subscription-key`, Azure Functions' `x-functions-key`)
/// unless the word before says it is no credential (`idempotency-key`, a cache key). Not a
/// name that merely contains such letters (`x-portkey-provider`, `x-max-tokens`): marked
/// sensitive, a value is also scrubbed from recorded request bodies, where it may be an
/// ordinary word.
fn is_credential_header(name: &str) -> bool {
    /// The words before `-key` of keys that are no credentials.
    const NOT_SECRET: [&str; 8] = [
        "idempotency",
        "cache",
        "public",
        "partition",
        "routing",
        "sort",
        "dedup",
        "deduplication",
    ];
    if towerscope_core::redact::is_sensitive_key(name) {
        return true;
    }
    match name.strip_suffix("-key") {
        Some(rest) => !NOT_SECRET.contains(&rest.rsplit('-').next().unwrap_or(rest)),
        None => name == "key",
    }
}

/// An environment variable that is set and not blank, when `read` allows.
pub(crate) fn env_var(read: bool, name: &str) -> Option<String> {
    read.then(|| std::env::var(name).ok())
        .flatten()
        .filter(|v| !v.trim().is_empty())
}

/// Whether a response is an SSE stream.
fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        // Media types are case-insensitive (`Text/Event-Stream`).
        .is_some_and(|v| {
            v.trim_start()
                .get(.."text/event-stream".len())
                .is_some_and(|t| t.eq_ignore_ascii_case("text/event-stream"))
        })
}

/// `scheme://host[:port]/path`, without user, password or query.
fn endpoint_of(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{}://{host}:{port}{}", url.scheme(), url.path()),
        None => format!("{}://{host}{}", url.scheme(), url.path()),
    }
}

/// `url` as it may be shown (`Debug`): with any user name and password replaced by `***`.
pub(crate) fn shown_url(url: &str) -> std::borrow::Cow<'_, str> {
    let start = url.find("://").map_or(0, |i| i + 3);
    let authority_end = url[start..].find(['/', '?', '#']).map_or(url.len(), |i| start + i);
    match url[start..authority_end].rfind('@') {
        Some(at) => format!("{}***{}", &url[..start], &url[start + at..]).into(),
        None => url.into(),
    }
}

/// The error of an answer from `endpoint` whose body passed `limit` bytes (made only then).
fn too_large(endpoint: &str, limit: usize) -> AgentError {
    AgentError::decode(
        format!("the answer of {endpoint}"),
        format!("it is larger than {limit} bytes (the provider builder's max_answer_bytes)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_credentials() {
        assert_eq!(shown_url("http://alice:s3cret@host:8080/v1"), "http://***@host:8080/v1");
        assert_eq!(shown_url("https://tok@host/v1?x=a@b"), "https://***@host/v1?x=a@b");
        assert_eq!(shown_url("http://host/v1/a@b"), "http://host/v1/a@b");
        assert_eq!(shown_url("not a url"), "not a url");
    }

    /// A header given by name whose name says it holds a credential is marked sensitive, so
    /// `Debug` of a request (a logging transport layer) prints `Sensitive`, and errors hide
    /// its value; other headers stay as they are.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn credential_headers_given_by_name_are_sensitive_and_others_are_not() {
        let credentials = [
            "authorization",
            "Proxy-Authorization",
            "api-key",
            "x-api-key",
            "x-goog-api-key",
            "Ocp-Apim-Subscription-Key",
            "cookie",
            "x-team-token",
            "X-Client-Secret",
            "x-functions-key",
            "dd-application-key",
            "x-key",
        ];
        let ordinary = [
            "openai-organization",
            "openai-project",
            "x-request-id",
            "anthropic-beta",
            "X-Tenant",
            "keep-alive",
            "x-team",
            // Gateways' and others' headers whose names hold such letters, not credentials:
            // marked sensitive, their values were scrubbed from recorded bodies.
            "x-portkey-provider",
            "idempotency-key",
            "x-max-tokens",
            "cf-aig-cache-key",
        ];
        let mut headers = HeaderMap::new();
        let pairs = credentials
            .iter()
            .chain(&ordinary)
            .map(|name| ((*name).to_owned(), format!("value-of-{name}")));
        insert_headers(&mut headers, pairs).unwrap();
        for name in credentials {
            assert!(headers[name].is_sensitive(), "{name}");
        }
        for name in ordinary {
            assert!(!headers[name].is_sensitive(), "{name}");
        }
        let shown = format!("{headers:?}");
        assert!(
            !shown.contains("value-of-api-key") && shown.contains("value-of-X-Tenant"),
            "{shown}"
        );
    }

    /// The endpoint's path goes after the base's path; the base's query stays the query (an
    /// Azure deployment's `?api-version=`: it was joined into the query).
    #[test]
    #[allow(clippy::unwrap_used)]
    fn the_path_joins_the_base_path_and_the_query_stays() {
        let target = |base: &str| {
            let transport = crate::http::http_service(tower::service_fn(|_: reqwest::Request| async {
                Err::<reqwest::Response, towerscope_core::BoxError>("unused".into())
            }));
            HttpTarget::new(
                "openai",
                "m",
                base,
                "/chat/completions",
                HeaderMap::new(),
                transport,
                None,
            )
            .unwrap()
        };
        let azure = target("https://h.example/openai/deployments/d?api-version=2024-10-21");
        assert_eq!(azure.url.path(), "/openai/deployments/d/chat/completions");
        assert_eq!(azure.url.query(), Some("api-version=2024-10-21"));
        assert_eq!(
            azure.endpoint,
            "https://h.example/openai/deployments/d/chat/completions"
        );
        for (base, path) in [
            ("http://127.0.0.1:9", "/chat/completions"),
            ("http://127.0.0.1:9/", "/chat/completions"),
            ("http://127.0.0.1:9/v1", "/v1/chat/completions"),
            ("http://127.0.0.1:9/v1/", "/v1/chat/completions"),
        ] {
            assert_eq!(target(base).url.path(), path, "{base}");
        }
    }
}
