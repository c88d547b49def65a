//! [`OpenAiChatModelBuilder`]: endpoint, credentials, parameters and transport of an
//! [`OpenAiChatModel`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue, USER_AGENT};
use serde_json::{Map, Value};
use towerscope_core::{AgentError, GenerationParams};

use super::model::{Inner, OpenAiChatModel};
use super::request::{MaxTokensField, Options, ReasoningEffort};
use crate::http::target::{HttpTarget, env_var, insert_headers};
use crate::http::{ApiKey, HttpService, http_client, http_service};

/// Where requests go when neither the builder nor `OPENAI_BASE_URL` says otherwise.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The connect timeout of the default client.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Builds an [`OpenAiChatModel`]; see [`OpenAiChatModel::builder`].
///
/// Settings left unset are read from the environment when the model is built (unless
/// [`from_env(false)`](Self::from_env)): `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_ORG_ID`,
/// `OPENAI_PROJECT_ID`. A key is required for the default base URL only; a local compatible
/// server usually needs none.
#[derive(Clone)]
pub struct OpenAiChatModelBuilder {
    model: String,
    api_key: Option<ApiKey>,
    base_url: Option<String>,
    organization: Option<String>,
    project: Option<String>,
    headers: Vec<(String, String)>,
    params: GenerationParams,
    options: Options,
    provider: String,
    connect_timeout: Option<Duration>,
    read_timeout: Option<Duration>,
    max_answer_bytes: usize,
    transport: Option<HttpService>,
    from_env: bool,
}

impl fmt::Debug for OpenAiChatModelBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiChatModelBuilder")
            .field("model", &self.model)
            .field("api_key", &self.api_key)
            .field(
                "base_url",
                &self.base_url.as_deref().map(crate::http::target::shown_url),
            )
            .field("params", &self.params)
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .finish_non_exhaustive()
    }
}

impl OpenAiChatModelBuilder {
    pub(super) fn new(model: String) -> Self {
        Self {
            model,
            api_key: None,
            base_url: None,
            organization: None,
            project: None,
            headers: Vec::new(),
            params: GenerationParams::new(),
            options: Options {
                stream: true,
                include_usage: true,
                send_names: true,
                max_tokens_field: MaxTokensField::default(),
                parallel_tool_calls: None,
                reasoning_effort: None,
                extra: Map::new(),
            },
            provider: "openai".to_owned(),
            connect_timeout: Some(DEFAULT_CONNECT_TIMEOUT),
            read_timeout: Some(crate::http::DEFAULT_READ_TIMEOUT),
            max_answer_bytes: crate::http::target::DEFAULT_MAX_ANSWER_BYTES,
            transport: None,
            from_env: true,
        }
    }

    /// The API key (default: `OPENAI_API_KEY`), sent as `Authorization: Bearer`.
    pub fn api_key(mut self, key: impl Into<ApiKey>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The base URL the `/chat/completions` path is added to (default: `OPENAI_BASE_URL`, then
    /// [`DEFAULT_BASE_URL`]). Any OpenAI-compatible server: `http://127.0.0.1:8080/v1`.
    /// A URL with a user name or password (`http://user:pass@host`) is refused at `build`:
    /// give credentials with [`header`](Self::header).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// The organization (`OpenAI-Organization`; default: `OPENAI_ORG_ID`).
    pub fn organization(mut self, organization: impl Into<String>) -> Self {
        self.organization = Some(organization.into());
        self
    }

    /// The project (`OpenAI-Project`; default: `OPENAI_PROJECT_ID`).
    pub fn project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self
    }

    /// A header sent with every request.
    ///
    /// A header whose name says it holds a credential (`authorization`, `proxy-authorization`,
    /// `cookie`, `api-key`, `x-api-key`, `x-functions-key`, a name whose word is `token`,
    /// `secret` or `password`; not `idempotency-key` nor `x-max-tokens`) is
    /// marked sensitive, as the API key's is: `Debug` of a request (a logging transport layer)
    /// prints `Sensitive` for it, and an error quoting its value (a proxy echoing the key it
    /// refused) shows `***`.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sampling temperature.
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.params.temperature = Some(temperature);
        self
    }

    /// Nucleus sampling.
    pub fn top_p(mut self, top_p: f64) -> Self {
        self.params.top_p = Some(top_p);
        self
    }

    /// The most output tokens (sent as `max_completion_tokens`, see
    /// [`max_tokens_field`](Self::max_tokens_field)).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.params.max_tokens = Some(max_tokens);
        self
    }

    /// Which field carries [`max_tokens`](Self::max_tokens).
    pub fn max_tokens_field(mut self, field: MaxTokensField) -> Self {
        self.options.max_tokens_field = field;
        self
    }

    /// The sampling seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.params.seed = Some(seed);
        self
    }

    /// Stop sequences.
    pub fn stop(mut self, stop: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.params.stop_sequences = stop.into_iter().map(Into::into).collect();
        self
    }

    /// Presence penalty.
    pub fn presence_penalty(mut self, penalty: f64) -> Self {
        self.params.presence_penalty = Some(penalty);
        self
    }

    /// Frequency penalty.
    pub fn frequency_penalty(mut self, penalty: f64) -> Self {
        self.params.frequency_penalty = Some(penalty);
        self
    }

    /// Whether the model may call several tools in one answer (sent when tools are offered).
    pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.options.parallel_tool_calls = Some(parallel);
        self
    }

    /// How much a reasoning model reasons.
    pub fn reasoning_effort(mut self, effort: ReasoningEffort) -> Self {
        self.options.reasoning_effort = Some(effort);
        self
    }

    /// Any other body field (`user`, `logit_bias`, a compatible server's own parameters).
    pub fn param(mut self, key: impl Into<String>, value: Value) -> Self {
        self.options.extra.insert(key.into(), value);
        self
    }

    /// Whether to stream the answer (default `true`).
    pub fn stream(mut self, stream: bool) -> Self {
        self.options.stream = stream;
        self
    }

    /// Whether a streamed answer asks for usage (`stream_options.include_usage`, default `true`).
    pub fn include_usage(mut self, include: bool) -> Self {
        self.options.include_usage = include;
        self
    }

    /// Whether messages carry their sender's `name` (default `true`).
    pub fn send_names(mut self, send: bool) -> Self {
        self.options.send_names = send;
        self
    }

    /// The provider name reported to tracing as `gen_ai.provider.name` (default `openai`).
    pub fn provider_name(mut self, provider: impl Into<String>) -> Self {
        self.provider = provider.into();
        self
    }

    /// The connect timeout of the default client (default 30 s; `None`: no limit).
    pub fn connect_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The read timeout of the default client: the most time without a byte of the response,
    /// its headers included (default [`DEFAULT_READ_TIMEOUT`](crate::http::DEFAULT_READ_TIMEOUT),
    /// 10 minutes; `None`: no limit). Keep-alive comments and pings are bytes: a server that
    /// sends only those is stopped by `TimeoutLayer`'s first-chunk and idle deadlines.
    pub fn read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// The most bytes an answer's body may have (default 64 MiB): a whole JSON answer, or all the
    /// events of a streamed one. Past it the call fails with [`AgentError::Decode`] naming the
    /// limit, instead of holding whatever a server sends.
    pub fn max_answer_bytes(mut self, limit: usize) -> Self {
        self.max_answer_bytes = limit;
        self
    }

    /// The HTTP transport instead of the default client (see [`crate::http`]); the timeouts
    /// above then do not apply, nor does the default client's rule of following redirects only
    /// within the request's origin (a `reqwest::Client` of your own forwards the key headers to
    /// another host unless its redirect policy says otherwise; [`crate::http::http_client`]
    /// builds one that does not).
    pub fn http_service(mut self, transport: HttpService) -> Self {
        self.transport = Some(transport);
        self
    }

    /// Whether unset settings are read from `OPENAI_*` environment variables (default `true`).
    pub fn from_env(mut self, read: bool) -> Self {
        self.from_env = read;
        self
    }

    /// Builds the model: checks the URL and headers and makes the default client.
    pub fn build(self) -> Result<OpenAiChatModel, AgentError> {
        let env = |name: &str| env_var(self.from_env, name);
        let base_url = self
            .base_url
            .clone()
            .or_else(|| env("OPENAI_BASE_URL"))
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        let api_key = self.api_key.clone().or_else(|| env("OPENAI_API_KEY").map(ApiKey::new));
        if api_key.is_none() && base_url.trim_end_matches('/') == DEFAULT_BASE_URL {
            return Err(AgentError::validation(
                "no OpenAI API key: set OPENAI_API_KEY or call .api_key(); a compatible server needs .base_url()",
            ));
        }
        let mut headers = HeaderMap::new();
        headers.insert(
            USER_AGENT,
            HeaderValue::from_static(concat!("towerscope/", env!("CARGO_PKG_VERSION"))),
        );
        if let Some(key) = &api_key {
            headers.insert(AUTHORIZATION, key.header("Bearer ")?);
        }
        let organization = self.organization.clone().or_else(|| env("OPENAI_ORG_ID"));
        let project = self.project.clone().or_else(|| env("OPENAI_PROJECT_ID"));
        let named = [("openai-organization", organization), ("openai-project", project)];
        let extra = named
            .into_iter()
            .filter_map(|(name, value)| Some((name.to_owned(), value?)))
            .chain(self.headers.iter().cloned());
        insert_headers(&mut headers, extra)?;
        let transport = match self.transport {
            Some(transport) => transport,
            None => http_service(http_client(self.connect_timeout, self.read_timeout)?),
        };
        let target = HttpTarget::new(
            &self.provider,
            &self.model,
            &base_url,
            "/chat/completions",
            headers,
            transport,
            self.read_timeout,
        )?
        .with_max_answer_bytes(self.max_answer_bytes);
        Ok(OpenAiChatModel::from_inner(Arc::new(Inner {
            target,
            params: self.params,
            options: self.options,
        })))
    }
}
