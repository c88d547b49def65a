//! [`AnthropicChatModelBuilder`]: endpoint, credentials, parameters and transport of an
//! [`AnthropicChatModel`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, USER_AGENT};
use serde_json::{Map, Value};
use towerscope_core::{AgentError, GenerationParams};

use super::model::{AnthropicChatModel, Inner};
use super::request::Options;
use crate::http::target::{HttpTarget, env_var, insert_headers};
use crate::http::{ApiKey, HttpService, http_client, http_service};

/// Where requests go when neither the builder nor `ANTHROPIC_BASE_URL` says otherwise.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header sent unless [`version`](AnthropicChatModelBuilder::version)
/// says otherwise.
pub const DEFAULT_VERSION: &str = "2023-06-01";

/// The output token limit when none is set (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Builds an [`AnthropicChatModel`]; see [`AnthropicChatModel::builder`].
///
/// Settings left unset are read from the environment when the model is built (unless
/// [`from_env(false)`](Self::from_env)): `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`. A key is
/// required for the default base URL only.
#[derive(Clone)]
pub struct AnthropicChatModelBuilder {
    model: String,
    api_key: Option<ApiKey>,
    base_url: Option<String>,
    version: String,
    betas: Vec<String>,
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

impl fmt::Debug for AnthropicChatModelBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicChatModelBuilder")
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

impl AnthropicChatModelBuilder {
    pub(super) fn new(model: String) -> Self {
        Self {
            model,
            api_key: None,
            base_url: None,
            version: DEFAULT_VERSION.to_owned(),
            betas: Vec::new(),
            headers: Vec::new(),
            params: GenerationParams::new(),
            options: Options {
                stream: true,
                max_tokens: DEFAULT_MAX_TOKENS,
                thinking_budget: None,
                prompt_caching: false,
                parallel_tool_calls: None,
                extra: Map::new(),
            },
            provider: "anthropic".to_owned(),
            connect_timeout: Some(DEFAULT_CONNECT_TIMEOUT),
            read_timeout: Some(crate::http::DEFAULT_READ_TIMEOUT),
            max_answer_bytes: crate::http::target::DEFAULT_MAX_ANSWER_BYTES,
            transport: None,
            from_env: true,
        }
    }

    /// The API key (default: `ANTHROPIC_API_KEY`), sent as `x-api-key`.
    pub fn api_key(mut self, key: impl Into<ApiKey>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The base URL the `/v1/messages` path is added to (default: `ANTHROPIC_BASE_URL`, then
    /// [`DEFAULT_BASE_URL`]). A URL with a user name or password (`http://user:pass@host`) is
    /// refused at `build`: give credentials with [`header`](Self::header).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// The `anthropic-version` header (default [`DEFAULT_VERSION`]).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// A beta feature, sent in the `anthropic-beta` header.
    pub fn beta(mut self, beta: impl Into<String>) -> Self {
        self.betas.push(beta.into());
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

    /// The most output tokens (the API requires a limit; default [`DEFAULT_MAX_TOKENS`]). With
    /// extended thinking it must exceed the thinking budget.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.params.max_tokens = Some(max_tokens);
        self
    }

    /// Sampling temperature (the API takes none with extended thinking).
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.params.temperature = Some(temperature);
        self
    }

    /// Nucleus sampling.
    pub fn top_p(mut self, top_p: f64) -> Self {
        self.params.top_p = Some(top_p);
        self
    }

    /// Top-k sampling.
    pub fn top_k(mut self, top_k: u32) -> Self {
        self.params.top_k = Some(top_k);
        self
    }

    /// Stop sequences.
    pub fn stop(mut self, stop: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.params.stop_sequences = stop.into_iter().map(Into::into).collect();
        self
    }

    /// Extended thinking with this budget of tokens (at least 1024, below the output limit).
    /// The thinking blocks come back with their signatures and are sent back in later turns. A
    /// call whose tool choice forces a tool (a context summary, the last turns of structured
    /// output) asks with `auto` instead, offering only the tool it names: the API refuses
    /// thinking beside a forcing choice, and a thinking setting must not change within a tool
    /// loop. `build` refuses a temperature other than 1, a `top_k` and a `top_p` under 0.95, as
    /// the API does.
    pub fn thinking(mut self, budget_tokens: u32) -> Self {
        self.options.thinking_budget = Some(budget_tokens);
        self
    }

    /// Prompt caching: cache breakpoints (`cache_control: ephemeral`) on the system prompt, the
    /// last tool and the last turn, so the next call reads the conversation so far from the
    /// cache.
    pub fn prompt_caching(mut self, on: bool) -> Self {
        self.options.prompt_caching = on;
        self
    }

    /// Whether the model may call several tools in one answer (`false` sends
    /// `disable_parallel_tool_use`).
    pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.options.parallel_tool_calls = Some(parallel);
        self
    }

    /// Any other body field (`metadata`, `service_tier`, ...).
    pub fn param(mut self, key: impl Into<String>, value: Value) -> Self {
        self.options.extra.insert(key.into(), value);
        self
    }

    /// Whether to stream the answer (default `true`).
    pub fn stream(mut self, stream: bool) -> Self {
        self.options.stream = stream;
        self
    }

    /// The provider name reported to tracing as `gen_ai.provider.name` (default `anthropic`).
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

    /// Whether unset settings are read from `ANTHROPIC_*` environment variables (default
    /// `true`).
    pub fn from_env(mut self, read: bool) -> Self {
        self.from_env = read;
        self
    }

    /// Builds the model: checks the settings, URL and headers and makes the default client.
    pub fn build(self) -> Result<AnthropicChatModel, AgentError> {
        let env = |name: &str| env_var(self.from_env, name);
        let base_url = self
            .base_url
            .clone()
            .or_else(|| env("ANTHROPIC_BASE_URL"))
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        let api_key = self
            .api_key
            .clone()
            .or_else(|| env("ANTHROPIC_API_KEY").map(ApiKey::new));
        if api_key.is_none() && base_url.trim_end_matches('/') == DEFAULT_BASE_URL {
            return Err(AgentError::validation(
                "no Anthropic API key: set ANTHROPIC_API_KEY or call .api_key()",
            ));
        }
        let max_tokens = self.params.max_tokens.unwrap_or(self.options.max_tokens);
        if let Some(budget) = self.options.thinking_budget {
            if budget >= max_tokens {
                return Err(AgentError::validation(format!(
                    "the thinking budget ({budget} tokens) must be below max_tokens ({max_tokens}); raise max_tokens"
                )));
            }
            // What the API refuses beside thinking, refused here rather than at every call.
            let p = &self.params;
            if p.temperature.is_some_and(|t| t != 1.0) || p.top_k.is_some() || p.top_p.is_some_and(|t| t < 0.95) {
                return Err(AgentError::validation(
                    "with thinking, the Anthropic API takes no temperature (but 1), no top_k and a top_p of at least 0.95",
                ));
            }
        }
        let mut headers = HeaderMap::new();
        headers.insert(
            USER_AGENT,
            HeaderValue::from_static(concat!("towerscope/", env!("CARGO_PKG_VERSION"))),
        );
        if let Some(key) = &api_key {
            headers.insert("x-api-key", key.header("")?);
        }
        let mut extra = vec![("anthropic-version".to_owned(), self.version.clone())];
        if !self.betas.is_empty() {
            extra.push(("anthropic-beta".to_owned(), self.betas.join(",")));
        }
        extra.extend(self.headers.iter().cloned());
        insert_headers(&mut headers, extra)?;
        let transport = match self.transport {
            Some(transport) => transport,
            None => http_service(http_client(self.connect_timeout, self.read_timeout)?),
        };
        let target = HttpTarget::new(
            &self.provider,
            &self.model,
            &base_url,
            "/v1/messages",
            headers,
            transport,
            self.read_timeout,
        )?
        .with_max_answer_bytes(self.max_answer_bytes);
        // The limit sent is the one tracing reports.
        let mut params = self.params;
        params.max_tokens = Some(max_tokens);
        Ok(AnthropicChatModel::from_inner(Arc::new(Inner {
            target,
            params,
            options: self.options,
        })))
    }
}
