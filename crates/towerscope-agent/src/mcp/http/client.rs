//! The HTTP client under the SDK's streamable-HTTP transport: reqwest, with every answer bounded
//! (see `bound.rs`). The SDK's own client reads a JSON answer whole, and its event-stream parser
//! keeps an event whole, however long.
//!
//! - **A request's answer is read off the SDK's worker.** The worker sends every message in
//!   turn, and waits for `post_message`: a JSON answer read there (as the SDK's own client
//!   does) held back every later request, and the call's own timeout too, as long as the server
//!   kept it coming. So a request's JSON answer is handed over as an event stream of one event,
//!   read in the stream's own task; `initialize`'s is read in place (connecting has its own
//!   timeout, and the SDK takes a JSON error answer to it only that way).
//! - **Past the limit**, a request's answer (JSON, or an event of its stream) is replaced by an
//!   error answer that names the limit (made here: the server's could not be read), so that its
//!   caller hears at once rather than at its timeout; the connection stays usable.
//! - **The server's own stream** (`GET`), once an event of it passed the limit, is not opened
//!   again: the SDK would reconnect at once, and each time read the limit's worth again.
//! - **An error status** keeps its status and the first [`ERROR_TEXT_BYTES`] of its body.
//! - Errors name no URL (reqwest's do; a URL may carry a key), and redirects are not followed
//!   (headers would go to another host), as the SDK's own client does not.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue, WWW_AUTHENTICATE};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};

use super::bound::{BodyError, EventBound, StreamError, TooLong, read_bounded, read_prefix};
use crate::mcp::stdio::Overflow;

/// How much of an error answer's body is read (its text is shown cut anyway).
pub(in crate::mcp) const ERROR_TEXT_BYTES: usize = 64 << 10;

/// How long an error answer's body is read.
const ERROR_TEXT_WAIT: Duration = Duration::from_secs(10);

const SESSION_ID: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";

/// reqwest with answers of at most `max` bytes (an event of a stream, a JSON answer).
#[derive(Clone)]
pub(in crate::mcp) struct BoundedClient {
    client: reqwest::Client,
    max: usize,
    /// Raised when any answer passed the limit (read by connecting, whose failure then says so).
    overflow: Overflow,
    /// Set once an event of the server's own stream passed the limit: it is not opened again.
    stream_overflowed: Arc<AtomicBool>,
}

impl BoundedClient {
    pub(super) fn new(client: reqwest::Client, max: usize, overflow: Overflow) -> Self {
        Self {
            client,
            max,
            overflow,
            stream_overflowed: Arc::default(),
        }
    }
}

/// An error of [`BoundedClient`]: the connection's, or an answer past the limit.
#[derive(Debug)]
pub(in crate::mcp) enum HttpError {
    /// The request failed (connecting, sending, reading).
    Request(reqwest::Error),
    /// The answer passed the limit.
    TooLong(TooLong),
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Request(e) => e.fmt(f),
            Self::TooLong(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Request(e) => Some(e),
            Self::TooLong(e) => Some(e),
        }
    }
}

type Error = StreamableHttpError<HttpError>;

fn request_error(e: reqwest::Error) -> Error {
    StreamableHttpError::Client(HttpError::Request(e.without_url()))
}

impl From<BodyError> for Error {
    fn from(e: BodyError) -> Self {
        match e {
            BodyError::TooLong(e) => StreamableHttpError::Client(HttpError::TooLong(e)),
            BodyError::Read(e) => request_error(e),
        }
    }
}

/// Adds the caller's headers (the transport's own were refused when it was configured, except
/// the protocol version, which the SDK sets through them).
fn with_headers(
    mut request: reqwest::RequestBuilder,
    headers: &HashMap<HeaderName, HeaderValue>,
) -> reqwest::RequestBuilder {
    for (name, value) in headers {
        request = request.header(name, value.clone());
    }
    request
}

fn content_type(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

fn is(content_type: Option<&str>, mime: &str) -> bool {
    content_type.is_some_and(|ct| ct.as_bytes().starts_with(mime.as_bytes()))
}

/// The `WWW-Authenticate` header of a 401 or 403, as the SDK's errors carry it.
fn www_authenticate(response: &reqwest::Response) -> Result<Option<String>, Error> {
    match response.headers().get(WWW_AUTHENTICATE) {
        None => Ok(None),
        Some(value) => value.to_str().map(|v| Some(v.to_owned())).map_err(|_| {
            StreamableHttpError::UnexpectedServerResponse(Cow::Borrowed("invalid www-authenticate header value"))
        }),
    }
}

/// The `scope` a `WWW-Authenticate` header asks for (`scope="a b"` or `scope=a`).
fn scope(header: &str) -> Option<String> {
    let at = header.to_ascii_lowercase().find("scope=")? + "scope=".len();
    let rest = header.get(at..)?;
    let value = match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next()?,
        None => rest.split([',', ';', ' ', '\t']).next()?,
    };
    (!value.is_empty()).then(|| value.to_owned())
}

/// An event stream of `response`, each event bounded; once one passes the limit, `overflowed`
/// is told, and the stream yields `answer` (an error answer for the request it answers, if any)
/// and ends.
fn events(
    response: reqwest::Response,
    max: usize,
    answer: Option<ServerJsonRpcMessage>,
    overflowed: impl FnOnce() + Send + 'static,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let bounded = EventBound::new(response.bytes_stream(), max);
    let mut answer = answer.and_then(|a| serde_json::to_string(&a).ok());
    let mut overflowed = Some(overflowed);
    SseStream::from_bytes_stream(bounded)
        .scan(false, move |ended, item| {
            if *ended {
                return std::future::ready(None);
            }
            let too_long = matches!(
                &item,
                Err(SseError::Body(e)) if e.downcast_ref::<StreamError>().is_some_and(|e| matches!(e, StreamError::TooLong(_)))
            );
            if !too_long {
                return std::future::ready(Some(item));
            }
            *ended = true;
            if let Some(told) = overflowed.take() {
                told();
            }
            std::future::ready(Some(match answer.take() {
                Some(data) => Ok(event(data)),
                None => item,
            }))
        })
        .boxed()
}

fn event(data: String) -> Sse {
    Sse {
        event: None,
        data: Some(data),
        id: None,
        retry: None,
    }
}

/// A request's JSON answer as a stream of one event, read (bounded) when the stream is first
/// polled: past the limit, or cut off, it is an error answer saying so.
fn json_answer(
    response: reqwest::Response,
    max: usize,
    id: rmcp::model::RequestId,
    overflow: Overflow,
) -> BoxStream<'static, Result<Sse, SseError>> {
    futures_util::stream::once(async move {
        let failure = match read_bounded(response, max).await {
            Ok(body) => match String::from_utf8(body) {
                Ok(text) => return Ok(event(text)),
                Err(_) => "the server's answer is not UTF-8 text".to_owned(),
            },
            Err(BodyError::TooLong(e)) => {
                overflow.raise();
                e.to_string()
            }
            Err(BodyError::Read(e)) => format!("the server's answer could not be read: {e}"),
        };
        let error = ErrorData::new(ErrorCode::INTERNAL_ERROR, failure, None);
        let answer = ServerJsonRpcMessage::error(error, Some(id));
        Ok(event(serde_json::to_string(&answer).unwrap_or_default()))
    })
    .boxed()
}

/// The error answer to `message` (a request) for an answer past the limit.
fn too_long_answer(message: &ClientJsonRpcMessage, max: usize) -> Option<ServerJsonRpcMessage> {
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let error = ErrorData::new(ErrorCode::INTERNAL_ERROR, TooLong { max }.to_string(), None);
    Some(ServerJsonRpcMessage::error(error, Some(request.id.clone())))
}

impl StreamableHttpClient for BoundedClient {
    type Error = HttpError;

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        if self.stream_overflowed.load(Ordering::Relaxed) {
            // The SDK then backs off, and gives up after its retries.
            return Err(StreamableHttpError::Client(HttpError::TooLong(TooLong {
                max: self.max,
            })));
        }
        let mut request = self
            .client
            .get(uri.as_ref())
            .header(ACCEPT, format!("{EVENT_STREAM}, {JSON}"))
            .header(SESSION_ID, session_id.as_ref());
        if let Some(id) = last_event_id {
            request = request.header(LAST_EVENT_ID, id);
        }
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        let response = with_headers(request, &custom_headers)
            .send()
            .await
            .map_err(request_error)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let response = response.error_for_status().map_err(request_error)?;
        let kind = content_type(&response);
        if !is(kind.as_deref(), EVENT_STREAM) && !is(kind.as_deref(), JSON) {
            return Err(StreamableHttpError::UnexpectedContentType(kind));
        }
        let (overflow, stopped) = (self.overflow.clone(), Arc::clone(&self.stream_overflowed));
        Ok(events(response, self.max, None, move || {
            overflow.raise();
            stopped.store(true, Ordering::Relaxed);
        }))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let mut request = self.client.delete(uri.as_ref()).header(SESSION_ID, session_id.as_ref());
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        let response = with_headers(request, &custom_headers)
            .send()
            .await
            .map_err(request_error)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        response.error_for_status().map_err(request_error)?;
        Ok(())
    }

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let body = serde_json::to_vec(&message)?;
        let mut request = with_headers(
            self.client
                .post(uri.as_ref())
                .header(ACCEPT, format!("{EVENT_STREAM}, {JSON}")),
            &custom_headers,
        );
        if !custom_headers.contains_key(&CONTENT_TYPE) {
            request = request.header(CONTENT_TYPE, JSON);
        }
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        let had_session = session_id.is_some();
        if let Some(id) = session_id {
            request = request.header(SESSION_ID, id.as_ref());
        }
        let response = request.body(body).send().await.map_err(request_error)?;
        let status = response.status();
        if status == StatusCode::UNAUTHORIZED
            && let Some(header) = www_authenticate(&response)?
        {
            return Err(StreamableHttpError::AuthRequired(AuthRequiredError::new(header)));
        }
        if status == StatusCode::FORBIDDEN
            && let Some(header) = www_authenticate(&response)?
        {
            let required = scope(&header);
            return Err(StreamableHttpError::InsufficientScope(InsufficientScopeError::new(
                header, required,
            )));
        }
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && had_session {
            return Err(StreamableHttpError::SessionExpired);
        }
        let kind = content_type(&response);
        let session = response
            .headers()
            .get(SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let request_id = match &message {
            JsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        if !status.is_success() {
            // An error may come as a JSON-RPC error answer; anything else fails the request
            // with the status and the start of the body's text.
            let (body, whole) = read_prefix(response, ERROR_TEXT_BYTES, ERROR_TEXT_WAIT).await;
            if whole
                && is(kind.as_deref(), JSON)
                && let Ok(answer @ JsonRpcMessage::Error(_)) = serde_json::from_slice::<ServerJsonRpcMessage>(&body)
            {
                return Ok(StreamableHttpPostResponse::Json(answer, session));
            }
            let text = String::from_utf8_lossy(&body);
            let more = if whole { "" } else { "…" };
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
                "HTTP {status}: {text}{more}"
            ))));
        }
        // A notification's answer (some servers send an empty 200 instead of 202) is not read:
        // nothing waits for it.
        let Some(id) = request_id else {
            return Ok(StreamableHttpPostResponse::Accepted);
        };
        if is(kind.as_deref(), EVENT_STREAM) {
            let answer = too_long_answer(&message, self.max);
            let overflow = self.overflow.clone();
            let stream = events(response, self.max, answer, move || overflow.raise());
            return Ok(StreamableHttpPostResponse::Sse(stream, session));
        }
        if !is(kind.as_deref(), JSON) {
            return Err(StreamableHttpError::UnexpectedContentType(kind));
        }
        let initialize =
            matches!(&message, JsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::InitializeRequest(_)));
        if !initialize {
            let stream = json_answer(response, self.max, id, self.overflow.clone());
            return Ok(StreamableHttpPostResponse::Sse(stream, session));
        }
        let body = read_bounded(response, self.max).await.inspect_err(|e| {
            if matches!(e, BodyError::TooLong(_)) {
                self.overflow.raise();
            }
        })?;
        match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
            Ok(answer) => Ok(StreamableHttpPostResponse::Json(answer, session)),
            // A body that is no JSON-RPC message is taken as accepted, as the SDK's own
            // client does.
            Err(e) => {
                tracing::warn!("an MCP server's JSON answer is no JSON-RPC message, taken as accepted: {e}");
                Ok(StreamableHttpPostResponse::Accepted)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::scope;

    #[test]
    fn the_scope_asked_for_is_read_quoted_or_not() {
        assert_eq!(
            scope(r#"Bearer error="insufficient_scope", scope="files:read files:write""#).as_deref(),
            Some("files:read files:write")
        );
        assert_eq!(scope("Bearer Scope=read:data, realm=x").as_deref(), Some("read:data"));
        assert_eq!(scope("Bearer realm=x"), None);
        assert_eq!(scope("Bearer scope=\"\""), None);
    }
}
