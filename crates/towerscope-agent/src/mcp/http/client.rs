//! The HTTP client under the SDK's streamable-HTTP transport: reqwest, with every answer bounded
//! (see `bound.rs`). The SDK's own client reads a JSON answer whole, and its event-stream parser
//! keeps an event whole, however long.
//!
//! A JSON answer past the limit fails its request with [`TooLong`]'s text. An event past the
//! limit ends its stream: when the stream answers a request, the request gets an error answer
//! that names the limit (made here: the server's is what could not be read), so that its caller
//! hears at once rather than at its timeout; the connection stays usable.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue, WWW_AUTHENTICATE};
use rmcp::model::{ClientJsonRpcMessage, ErrorCode, ErrorData, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};

use super::bound::{BodyError, EventBound, StreamError, TooLong, read_bounded};

const SESSION_ID: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";

/// reqwest with answers of at most `max` bytes (an event of a stream, a JSON answer).
#[derive(Clone)]
pub(in crate::mcp) struct BoundedClient {
    pub(super) client: reqwest::Client,
    pub(super) max: usize,
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
    StreamableHttpError::Client(HttpError::Request(e))
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
    headers: HashMap<HeaderName, HeaderValue>,
) -> reqwest::RequestBuilder {
    for (name, value) in headers {
        request = request.header(name, value);
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

/// An event stream of `response`, each event bounded; once one passes the limit, the stream
/// yields `answer` (an error answer for the request it answers, if any) and ends.
fn events(
    response: reqwest::Response,
    max: usize,
    answer: Option<ServerJsonRpcMessage>,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let bounded = EventBound::new(response.bytes_stream(), max);
    let mut answer = answer.and_then(|a| serde_json::to_string(&a).ok());
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
            std::future::ready(Some(match answer.take() {
                Some(data) => Ok(Sse {
                    event: None,
                    data: Some(data),
                    id: None,
                    retry: None,
                }),
                None => item,
            }))
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
        let response = with_headers(request, custom_headers)
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
        Ok(events(response, self.max, None))
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
        let response = with_headers(request, custom_headers)
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
        let mut request = self
            .client
            .post(uri.as_ref())
            .header(ACCEPT, format!("{EVENT_STREAM}, {JSON}"))
            .header(CONTENT_TYPE, JSON);
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        let had_session = session_id.is_some();
        if let Some(id) = session_id {
            request = request.header(SESSION_ID, id.as_ref());
        }
        let response = with_headers(request, custom_headers)
            .body(body)
            .send()
            .await
            .map_err(request_error)?;
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
        let not_a_request = !matches!(message, JsonRpcMessage::Request(_));
        // Some servers answer a notification with an empty 200 rather than 202.
        if status.is_success() && response.content_length() == Some(0) && not_a_request {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if !status.is_success() {
            // An error may come as a JSON-RPC error answer; anything else fails the request
            // with the status and the body's text.
            let body = read_bounded(response, self.max).await?;
            if is(kind.as_deref(), JSON)
                && let Ok(answer @ JsonRpcMessage::Error(_)) = serde_json::from_slice::<ServerJsonRpcMessage>(&body)
            {
                return Ok(StreamableHttpPostResponse::Json(answer, session));
            }
            let text = String::from_utf8_lossy(&body);
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
                "HTTP {status}: {text}"
            ))));
        }
        if is(kind.as_deref(), EVENT_STREAM) {
            let answer = too_long_answer(&message, self.max);
            return Ok(StreamableHttpPostResponse::Sse(
                events(response, self.max, answer),
                session,
            ));
        }
        if !is(kind.as_deref(), JSON) {
            return Err(StreamableHttpError::UnexpectedContentType(kind));
        }
        let body = read_bounded(response, self.max).await?;
        match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
            Ok(answer) => Ok(StreamableHttpPostResponse::Json(answer, session)),
            // A body that is no JSON-RPC message (a 200 with some text to a notification) is
            // taken as accepted, as the SDK's own client does.
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
