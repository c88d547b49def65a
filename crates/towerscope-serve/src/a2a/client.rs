//! [`A2aClient`]: speaks A2A v1.0 (JSON-RPC) to any agent, ours or another framework's.

use std::pin::Pin;
use std::time::Duration;

use futures_core::Stream;
use futures_util::StreamExt;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use towerscope_core::sse::{SseDecoder, SseStream, SseStreamError};

use super::config::CARD_PATH;
use super::error::RpcError;
use super::wire::{
    AgentCard, CancelTaskRequest, GetTaskRequest, Message, PROTOCOL_VERSION, Role, SendMessageRequest,
    SendMessageResponse, StreamResponse, Task,
};

/// The largest answer body read (16 MiB); a larger one fails with [`ClientError::Decode`].
pub(crate) const MAX_ANSWER_BYTES: usize = 16 << 20;

/// How long connecting to a remote agent may take by default (10 s).
pub const CLIENT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a remote agent may stay silent by default while it answers (10 minutes): past this
/// the request or the stream fails with [`ClientError::Transport`], so an agent that accepts a
/// request and never answers cannot hold a reply for ever. A streamed answer's keep-alive
/// comments count as speaking.
pub const CLIENT_READ_TIMEOUT: Duration = Duration::from_secs(600);

/// What can go wrong talking to a remote agent.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientError {
    /// The connection failed (refused, reset, timed out).
    Transport(String),
    /// The server answered with an HTTP error status.
    Http(u16),
    /// The server answered with a JSON-RPC error.
    Rpc(RpcError),
    /// The answer is not what the protocol says (or too large).
    Decode(String),
    /// The agent card lists no JSON-RPC interface.
    NoJsonRpc,
    /// The bearer token given to [`A2aClient::with_bearer_token`] cannot be sent in a header
    /// (it holds a line break or another control character).
    InvalidToken,
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport(e) => write!(f, "could not reach the A2A agent: {e}"),
            Self::Http(401) => f.write_str(
                "the A2A agent answered HTTP 401: it wants credentials (see the card's securitySchemes; \
                 A2aClient::with_bearer_token sends a token)",
            ),
            Self::Http(status) => write!(f, "the A2A agent answered HTTP {status}"),
            Self::Rpc(e) => write!(f, "the A2A agent refused the request: {e}"),
            Self::Decode(e) => write!(f, "the A2A agent's answer is not valid A2A: {e}"),
            Self::NoJsonRpc => f.write_str("the agent card lists no JSONRPC interface"),
            Self::InvalidToken => f.write_str("the bearer token holds a character a header cannot carry"),
        }
    }
}

impl std::error::Error for ClientError {}

impl From<reqwest::Error> for ClientError {
    fn from(e: reqwest::Error) -> Self {
        // Without the URL: it may carry credentials.
        Self::Transport(e.without_url().to_string())
    }
}

/// The updates of `SendStreamingMessage`, as they arrive.
pub type UpdateStream = Pin<Box<dyn Stream<Item = Result<StreamResponse, ClientError>> + Send>>;

/// A client of one A2A agent, found through its card.
///
/// See the [module example](super#example).
#[derive(Debug, Clone)]
pub struct A2aClient {
    http: reqwest::Client,
    card: AgentCard,
    url: String,
    /// `Authorization: Bearer <token>`, marked sensitive (its `Debug` hides it).
    authorization: Option<HeaderValue>,
}

impl A2aClient {
    /// Fetches the card at `<base_url>/.well-known/agent-card.json` and uses its JSON-RPC
    /// interface.
    pub async fn connect(base_url: &str) -> Result<Self, ClientError> {
        let http = http_client()?;
        let url = format!("{}{CARD_PATH}", base_url.trim_end_matches('/'));
        let answer = http.get(url).send().await?;
        let status = answer.status();
        if !status.is_success() {
            return Err(ClientError::Http(status.as_u16()));
        }
        let card: AgentCard = decode(&read_capped(answer).await?)?;
        Self::with_client(http, card)
    }

    /// A client for the agent `card` describes.
    pub fn from_card(card: AgentCard) -> Result<Self, ClientError> {
        Self::with_client(http_client()?, card)
    }

    fn with_client(http: reqwest::Client, card: AgentCard) -> Result<Self, ClientError> {
        let url = card.jsonrpc_url().ok_or(ClientError::NoJsonRpc)?.to_owned();
        Ok(Self {
            http,
            card,
            url,
            authorization: None,
        })
    }

    /// This client with other timeouts: how long connecting may take, and how long the agent
    /// may stay silent while it answers (`None`: for ever). The defaults are
    /// [`CLIENT_CONNECT_TIMEOUT`] and [`CLIENT_READ_TIMEOUT`].
    pub fn with_timeouts(self, connect: Duration, read: Option<Duration>) -> Result<Self, ClientError> {
        Ok(Self {
            http: http_client_with(connect, read)?,
            ..self
        })
    }

    /// This client sending `Authorization: Bearer <token>` with every request (the card is
    /// fetched without it: it is public). A card that wants one says so in its
    /// `securitySchemes` ([`AgentCard::wants_bearer_token`]); without the token such an agent
    /// answers [`ClientError::Http`] 401.
    ///
    /// The token is kept out of this client's `Debug` output and out of its errors.
    pub fn with_bearer_token(self, token: &str) -> Result<Self, ClientError> {
        let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| ClientError::InvalidToken)?;
        value.set_sensitive(true);
        Ok(Self {
            authorization: Some(value),
            ..self
        })
    }

    /// The agent's card.
    pub fn card(&self) -> &AgentCard {
        &self.card
    }

    /// `SendMessage`: the task once it stopped (or the agent's direct message).
    pub async fn send(&self, message: Message) -> Result<SendMessageResponse, ClientError> {
        self.call("SendMessage", &request(message)).await
    }

    /// Sends `text` as a user message, in `context` and continuing `task` when given.
    pub async fn send_text(
        &self,
        text: &str,
        context: Option<&str>,
        task: Option<&str>,
    ) -> Result<SendMessageResponse, ClientError> {
        self.send(user_message(text, context, task)).await
    }

    /// `SendStreamingMessage`: the task's updates until it stops.
    pub async fn stream(&self, message: Message) -> Result<UpdateStream, ClientError> {
        self.call_streaming("SendStreamingMessage", &request(message)).await
    }

    /// `SubscribeToTask`: the task as it is, then its updates until it stops.
    pub async fn subscribe(&self, id: &str) -> Result<UpdateStream, ClientError> {
        let params = GetTaskRequest {
            id: id.to_owned(),
            history_length: None,
        };
        self.call_streaming("SubscribeToTask", &params).await
    }

    async fn call_streaming(&self, method: &str, params: &impl serde::Serialize) -> Result<UpdateStream, ClientError> {
        let body = envelope(method, params);
        let answer = self
            .post()
            .header("Accept", "text/event-stream")
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .await?;
        let status = answer.status();
        if !status.is_success() {
            return Err(ClientError::Http(status.as_u16()));
        }
        let is_sse = answer
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            // An error answered before the stream began.
            let value: Value = decode(&read_capped(answer).await?)?;
            let item = unwrap_result::<StreamResponse>(value);
            return Ok(Box::pin(futures_util::stream::iter([item])));
        }
        // One event is capped as a whole answer is.
        let decoder = SseDecoder::with_max_event_bytes(MAX_ANSWER_BYTES);
        let events = SseStream::with_decoder(answer.bytes_stream(), decoder).filter_map(|event| async move {
            match event {
                Ok(e) if e.data.is_empty() => None,
                Ok(e) => Some(decode::<Value>(e.data.as_bytes()).and_then(unwrap_result::<StreamResponse>)),
                Err(SseStreamError::Transport(e)) => Some(Err(ClientError::Transport(e.to_string()))),
                Err(SseStreamError::Sse(e)) => Some(Err(ClientError::Decode(e.to_string()))),
            }
        });
        Ok(Box::pin(events))
    }

    /// `GetTask`.
    pub async fn get_task(&self, id: &str) -> Result<Task, ClientError> {
        let params = GetTaskRequest {
            id: id.to_owned(),
            history_length: None,
        };
        self.call("GetTask", &params).await
    }

    /// `CancelTask`.
    pub async fn cancel_task(&self, id: &str) -> Result<Task, ClientError> {
        self.call("CancelTask", &CancelTaskRequest { id: id.to_owned() }).await
    }

    /// A POST to the endpoint with the protocol version and the token, if any.
    fn post(&self) -> reqwest::RequestBuilder {
        let post = self.http.post(&self.url).header("A2A-Version", PROTOCOL_VERSION);
        match &self.authorization {
            Some(value) => post.header(AUTHORIZATION, value.clone()),
            None => post,
        }
    }

    async fn call<T: DeserializeOwned>(&self, method: &str, params: &impl serde::Serialize) -> Result<T, ClientError> {
        let answer = self
            .post()
            .header("Content-Type", "application/json")
            .body(envelope(method, params).to_string())
            .send()
            .await?;
        let status = answer.status();
        if !status.is_success() {
            return Err(ClientError::Http(status.as_u16()));
        }
        unwrap_result(decode(&read_capped(answer).await?)?)
    }
}

/// A user message with one text part.
pub(crate) fn user_message(text: &str, context: Option<&str>, task: Option<&str>) -> Message {
    let mut message = Message::new_text(Role::User, text);
    message.context_id = context.map(str::to_owned);
    message.task_id = task.map(str::to_owned);
    message
}

fn request(message: Message) -> SendMessageRequest {
    SendMessageRequest {
        message,
        configuration: None,
        metadata: None,
    }
}

fn http_client() -> Result<reqwest::Client, ClientError> {
    http_client_with(CLIENT_CONNECT_TIMEOUT, Some(CLIENT_READ_TIMEOUT))
}

fn http_client_with(connect: Duration, read: Option<Duration>) -> Result<reqwest::Client, ClientError> {
    // reqwest panics without a process-wide crypto provider; install ring's when none is (another
    // part of the program may have chosen one).
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let builder = reqwest::Client::builder().connect_timeout(connect);
    let builder = match read {
        Some(read) => builder.read_timeout(read),
        None => builder,
    };
    builder.build().map_err(|e| ClientError::Transport(e.to_string()))
}

fn envelope(method: &str, params: &impl serde::Serialize) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": towerscope_core::id::new_id().to_string(),
        "method": method,
        "params": params,
    })
}

async fn read_capped(mut answer: reqwest::Response) -> Result<Vec<u8>, ClientError> {
    let mut body = Vec::new();
    while let Some(chunk) = answer.chunk().await? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(ClientError::Decode(format!(
                "the answer is larger than {MAX_ANSWER_BYTES} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ClientError> {
    serde_json::from_slice(bytes).map_err(|e| ClientError::Decode(e.to_string()))
}

/// The `result` of a JSON-RPC response, or its `error`.
fn unwrap_result<T: DeserializeOwned>(mut value: Value) -> Result<T, ClientError> {
    if let Some(error) = value.get_mut("error").map(Value::take) {
        let error: RpcError = serde_json::from_value(error).map_err(|e| ClientError::Decode(e.to_string()))?;
        return Err(ClientError::Rpc(error));
    }
    let result = value
        .get_mut("result")
        .map(Value::take)
        .ok_or_else(|| ClientError::Decode("a JSON-RPC response with neither result nor error".to_owned()))?;
    serde_json::from_value(result).map_err(|e| ClientError::Decode(e.to_string()))
}
