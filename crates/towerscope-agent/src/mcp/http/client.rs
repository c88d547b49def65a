//! The HTTP client under the SDK's streamable-HTTP transport: reqwest, with every answer bounded
//! (see `bound.rs`). The SDK's own client reads a JSON answer whole, and its event-stream parser
//! keeps an event whole, however long.
//!
//! - **A request's answer is awaited off the SDK's worker.** The worker sends every message in
//!   turn and waits for `post_message`: an answer awaited there (as the SDK's own client does)
//!   held back every later request, and the call's own timeout too. So a request's answer is
//!   awaited in place for [`HEADERS_WAIT`] at most (a session's expiry, 404, is answered in that
//!   time, and the SDK starts a new session; one that comes later refuses the session's next
//!   request so), then in the stream the SDK reads, for no longer than the server's `timeout`;
//!   and a JSON answer is handed over as an event stream, read in that stream's task.
//!   `initialize`'s answer is read in place: connecting has its own timeout, and the SDK takes
//!   a JSON error answer to it only that way. A notification (the cancel of a timed-out call
//!   is one) not answered within [`HEADERS_WAIT`] is dropped: nothing waits for its answer.
//! - **A request's stream always ends with its answer**: an error answer keeps the server's
//!   message but takes the request's id (a server that could not read the request names none,
//!   or another), and a JSON answer that is none is followed by an error answer saying so;
//!   otherwise the call would wait for its timeout, and the SDK reopen the server's stream.
//! - **Past the limit**, a request's answer (JSON, or an event of its stream) is replaced by an
//!   error answer that names the limit (made here: the server's could not be read), so that its
//!   caller hears at once rather than at its timeout; the connection stays usable.
//! - **The server's own stream** (`GET`, or a resumed one), once its events passed the limit
//!   [`STREAM_OVERFLOWS`] times in a session, is not opened again in that session: the SDK
//!   reopens it at once after an error, and each time the limit's worth was read again.
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
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, JsonRpcMessage, RequestId, ServerJsonRpcMessage,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};

use super::bound::HttpError;
use super::bound::{EventBound, Prefix, TooLong, read_bounded, read_prefix};
use crate::mcp::stdio::Overflow;

/// How much of an error answer's body is read (its text is shown cut anyway).
pub(in crate::mcp) const ERROR_TEXT_BYTES: usize = 64 << 10;

/// How long an error answer's body is read.
const ERROR_TEXT_WAIT: Duration = Duration::from_secs(2);

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
    /// How long a request's JSON answer is read (the server's `timeout`): a call that timed out
    /// does not keep its answer's reading alive.
    answer_wait: Option<Duration>,
    /// The session whose own streams had an event past the limit, and how many times.
    stream_overflows: Arc<Mutex<(Option<Arc<str>>, u32)>>,
    /// A session the server said was gone (404) after the SDK stopped waiting: the next request
    /// in it is refused so, and the SDK starts a new one.
    expired: Arc<Mutex<Option<Arc<str>>>>,
}

/// How many times the server's own stream (or a resumed one) may pass the limit in one session
/// before it is not opened again: the SDK reopens it at once after an error.
const STREAM_OVERFLOWS: u32 = 2;

impl BoundedClient {
    pub(super) fn new(client: reqwest::Client, max: usize, overflow: Overflow, answer_wait: Option<Duration>) -> Self {
        Self {
            client,
            max,
            overflow,
            answer_wait,
            stream_overflows: Arc::default(),
            expired: Arc::default(),
        }
    }

    /// Whether the streams of `session` passed the limit too often to be opened again.
    fn streams_refused(&self, session: &Arc<str>) -> bool {
        let overflows = self.stream_overflows.lock().unwrap_or_else(PoisonError::into_inner);
        overflows.0.as_ref() == Some(session) && overflows.1 >= STREAM_OVERFLOWS
    }
}

type Error = StreamableHttpError<HttpError>;

fn request_error(e: reqwest::Error) -> Error {
    StreamableHttpError::Client(HttpError::request(e))
}

/// Adds the caller's headers (the transport's own were refused when it was configured, except
/// the protocol version, which the SDK sets through them), then the bearer token, if any.
fn with_headers(
    mut request: reqwest::RequestBuilder,
    headers: &HashMap<HeaderName, HeaderValue>,
    bearer: Option<String>,
) -> reqwest::RequestBuilder {
    for (name, value) in headers {
        request = request.header(name, value.clone());
    }
    match bearer {
        Some(token) => request.bearer_auth(token),
        None => request,
    }
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
                Err(SseError::Body(e)) if e.downcast_ref::<HttpError>().is_some_and(|e| matches!(e, HttpError::TooLong(_)))
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

/// An error answer to the request `id`, as the server might have sent it.
fn error_answer(id: RequestId, message: String) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::error(ErrorData::new(ErrorCode::INTERNAL_ERROR, message, None), Some(id))
}

fn event_of(message: &ServerJsonRpcMessage) -> Result<Sse, SseError> {
    Ok(event(serde_json::to_string(message).unwrap_or_default()))
}

/// The events of a JSON answer to the request `id`, ending with its answer whatever the server
/// sent: an error answer keeps its message but takes the request's id (a server that could not
/// read the id uses another, and the caller would wait for its timeout); any other message is
/// passed on, followed by an error answer saying the request got none.
fn answer_events(body: &[u8], id: &RequestId) -> Vec<Result<Sse, SseError>> {
    match serde_json::from_slice::<ServerJsonRpcMessage>(body) {
        Ok(JsonRpcMessage::Response(response)) if response.id == *id => {
            vec![event_of(&JsonRpcMessage::Response(response))]
        }
        Ok(JsonRpcMessage::Error(mut error)) => {
            error.id = Some(id.clone());
            vec![event_of(&JsonRpcMessage::Error(error))]
        }
        // Not passed on: the SDK stops reading a request's stream at its first answer (this
        // one), and it could settle another call of that id.
        Ok(JsonRpcMessage::Response(_)) => vec![event_of(&error_answer(
            id.clone(),
            "the server answered the request with an answer to another request".to_owned(),
        ))],
        Ok(other) => vec![
            event_of(&other),
            event_of(&error_answer(
                id.clone(),
                "the server answered the request with another message".to_owned(),
            )),
        ],
        Err(e) => vec![event_of(&error_answer(
            id.clone(),
            format!("the server's answer is no JSON-RPC message: {e}"),
        ))],
    }
}

/// A request's JSON answer as a stream of events ([`answer_events`]), read (bounded, and for
/// no longer than `wait` when set) when the stream is first polled: past the limit, cut off or
/// late, it is an error answer saying so.
fn json_answer(
    response: reqwest::Response,
    max: usize,
    wait: Option<Duration>,
    id: RequestId,
    overflow: Overflow,
) -> BoxStream<'static, Result<Sse, SseError>> {
    futures_util::stream::once(async move {
        let read = read_bounded(response, max);
        let read = match wait {
            Some(wait) => tokio::time::timeout(wait, read).await,
            None => Ok(read.await),
        };
        let failure = match read {
            Ok(Ok(body)) => return answer_events(&body, &id),
            Ok(Err(HttpError::TooLong(e))) => {
                overflow.raise();
                e.to_string()
            }
            Ok(Err(HttpError::Request(e))) => format!("the server's answer could not be read: {e}"),
            Err(_) => "the server's answer did not end within the call's timeout (McpServer::timeout)".to_owned(),
        };
        vec![event_of(&error_answer(id, failure))]
    })
    .flat_map(futures_util::stream::iter)
    .boxed()
}

/// How long a request's answer may take to start (its status and headers) before the rest of
/// it is awaited off the SDK's worker: long enough for a session's expiry (404) to be answered
/// in place, so that the SDK can start a new session and send the request again.
const HEADERS_WAIT: Duration = Duration::from_secs(1);

/// What the SDK is told about a request's answer.
struct Asked {
    /// The request's id; `None` for a notification or an answer to the server.
    id: Option<RequestId>,
    initialize: bool,
    /// The session the message was sent in, if any.
    session: Option<Arc<str>>,
}

impl BoundedClient {
    /// Handles the answer to a posted message (see the module docs).
    async fn answer(&self, response: reqwest::Response, asked: &Asked) -> Result<StreamableHttpPostResponse, Error> {
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
        if status == StatusCode::NOT_FOUND && asked.session.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let kind = content_type(&response);
        let session = response
            .headers()
            .get(SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if !status.is_success() {
            // An error may come as a JSON-RPC error answer; anything else fails the request
            // with the status and the start of the body's text.
            let (body, read) = read_prefix(response, ERROR_TEXT_BYTES, ERROR_TEXT_WAIT).await;
            if read == Prefix::Whole
                && is(kind.as_deref(), JSON)
                && let Ok(JsonRpcMessage::Error(mut error)) = serde_json::from_slice::<ServerJsonRpcMessage>(&body)
            {
                // Its id is the request's: a server that could not read the request names none,
                // or another (the Python SDK's `server-error`), and the caller would wait.
                if let Some(id) = &asked.id {
                    error.id = Some(id.clone());
                }
                return Ok(StreamableHttpPostResponse::Json(JsonRpcMessage::Error(error), session));
            }
            let text = String::from_utf8_lossy(&body);
            let more = if read == Prefix::Whole { "" } else { "…" };
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
                "HTTP {status}: {text}{more}"
            ))));
        }
        // A notification's answer (some servers send an empty 200 instead of 202) is not read:
        // nothing waits for it.
        let Some(id) = asked.id.clone() else {
            return Ok(StreamableHttpPostResponse::Accepted);
        };
        if is(kind.as_deref(), EVENT_STREAM) {
            let answer = error_answer(id, TooLong { max: self.max }.to_string());
            let overflow = self.overflow.clone();
            let stream = events(response, self.max, Some(answer), move || overflow.raise());
            return Ok(StreamableHttpPostResponse::Sse(stream, session));
        }
        if !is(kind.as_deref(), JSON) {
            return Err(StreamableHttpError::UnexpectedContentType(kind));
        }
        if !asked.initialize {
            let stream = json_answer(response, self.max, self.answer_wait, id, self.overflow.clone());
            return Ok(StreamableHttpPostResponse::Sse(stream, session));
        }
        let body = read_bounded(response, self.max)
            .await
            .inspect_err(|e| {
                if matches!(e, HttpError::TooLong(_)) {
                    self.overflow.raise();
                }
            })
            .map_err(StreamableHttpError::Client)?;
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

    /// A request's answer whose headers came late, awaited in the stream the SDK reads (off
    /// its worker), for no longer than the server's `timeout`: its events, or an error answer
    /// when the request failed or nothing came in time.
    fn late_answer(
        &self,
        sending: std::pin::Pin<Box<dyn Future<Output = reqwest::Result<reqwest::Response>> + Send>>,
        asked: Asked,
        id: RequestId,
    ) -> BoxStream<'static, Result<Sse, SseError>> {
        let client = self.clone();
        futures_util::stream::once(async move {
            let waited = match client.answer_wait {
                Some(wait) => tokio::time::timeout(wait, sending).await,
                None => Ok(sending.await),
            };
            let failure = match waited {
                Err(_) => "the server's answer did not come within the call's timeout (McpServer::timeout)".to_owned(),
                Ok(Err(e)) => format!("the request failed: {}", e.without_url()),
                Ok(Ok(response)) => match client.answer(response, &asked).await {
                    Ok(StreamableHttpPostResponse::Sse(stream, _)) => return stream,
                    Ok(StreamableHttpPostResponse::Json(message, _)) => {
                        return futures_util::stream::iter([event_of(&message)]).boxed();
                    }
                    // The answer comes on the server's own stream: this one waits with the
                    // call (ended at once, the SDK would open another stream of the
                    // server's), up to the call's timeout, after which nobody waits.
                    Ok(_) => {
                        match client.answer_wait {
                            Some(wait) => tokio::time::sleep(wait).await,
                            None => std::future::pending().await,
                        }
                        "no answer within the call's timeout".to_owned()
                    }
                    Err(StreamableHttpError::SessionExpired) => {
                        // The SDK starts a new session when a request is refused so; this one
                        // came too late for it: the next request is refused at once instead.
                        if let Some(session) = &asked.session {
                            *client.expired.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(session));
                        }
                        StreamableHttpError::<HttpError>::SessionExpired.to_string()
                    }
                    Err(e) => e.to_string(),
                },
            };
            futures_util::stream::iter([event_of(&error_answer(id, failure))]).boxed()
        })
        .flatten()
        .boxed()
    }
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
        if self.streams_refused(&session_id) {
            // The SDK then retries later and later (1, 2, 4… s), each refused here at once; a
            // new session (after the server dropped this one) opens its streams again.
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
        let response = with_headers(request, &custom_headers, auth_header)
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
        let (overflow, overflows) = (self.overflow.clone(), Arc::clone(&self.stream_overflows));
        Ok(events(response, self.max, None, move || {
            overflow.raise();
            let mut overflows = overflows.lock().unwrap_or_else(PoisonError::into_inner);
            if overflows.0.as_ref() != Some(&session_id) {
                *overflows = (Some(session_id), 0);
            }
            overflows.1 += 1;
        }))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let request = self.client.delete(uri.as_ref()).header(SESSION_ID, session_id.as_ref());
        let response = with_headers(request, &custom_headers, auth_header)
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
            auth_header,
        );
        if !custom_headers.contains_key(&CONTENT_TYPE) {
            request = request.header(CONTENT_TYPE, JSON);
        }
        let asked = Asked {
            id: match &message {
                JsonRpcMessage::Request(request) => Some(request.id.clone()),
                _ => None,
            },
            initialize: matches!(&message, JsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::InitializeRequest(_))),
            session: session_id.clone(),
        };
        if let Some(session) = &session_id {
            let mut expired = self.expired.lock().unwrap_or_else(PoisonError::into_inner);
            if expired.as_ref() == Some(session) {
                *expired = None;
                return Err(StreamableHttpError::SessionExpired);
            }
        }
        if let Some(id) = session_id {
            request = request.header(SESSION_ID, id.as_ref());
        }
        let mut sending: std::pin::Pin<Box<dyn Future<Output = reqwest::Result<reqwest::Response>> + Send>> =
            Box::pin(request.body(body).send());
        // The SDK's worker waits for this call, and sends nothing else meanwhile: a request's
        // answer (but `initialize`'s, which connecting bounds) is awaited in place only briefly.
        let response = match (&asked.id, asked.initialize) {
            (_, true) => sending.await.map_err(request_error)?,
            (Some(id), false) => match tokio::time::timeout(HEADERS_WAIT, &mut sending).await {
                Ok(sent) => sent.map_err(request_error)?,
                Err(_) => {
                    let id = id.clone();
                    return Ok(StreamableHttpPostResponse::Sse(
                        self.late_answer(sending, asked, id),
                        None,
                    ));
                }
            },
            // A notification (the cancel of a timed-out call is one) or an answer to the server:
            // nothing waits for its answer, and the worker would wait with it. One not answered
            // in time is dropped (sent, most likely: its body is small).
            (None, false) => match tokio::time::timeout(HEADERS_WAIT, &mut sending).await {
                Ok(sent) => sent.map_err(request_error)?,
                Err(_) => return Ok(StreamableHttpPostResponse::Accepted),
            },
        };
        self.answer(response, &asked).await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rmcp::model::{JsonRpcMessage, RequestId, ServerJsonRpcMessage};

    use super::{answer_events, scope};

    /// The messages of `answer_events` for `body`, answering the request 7.
    fn answers(body: &str) -> Vec<ServerJsonRpcMessage> {
        answer_events(body.as_bytes(), &RequestId::Number(7))
            .into_iter()
            .map(|e| serde_json::from_str(&e.unwrap().data.unwrap()).unwrap())
            .collect()
    }

    fn error_text(message: &ServerJsonRpcMessage) -> (Option<RequestId>, String) {
        match message {
            JsonRpcMessage::Error(e) => (e.id.clone(), e.error.message.to_string()),
            other => panic!("not an error answer: {other:?}"),
        }
    }

    #[test]
    fn a_json_answer_always_ends_with_the_requests_answer() {
        let ok = answers(r#"{"jsonrpc": "2.0", "id": 7, "result": {}}"#);
        assert!(matches!(&ok[..], [JsonRpcMessage::Response(r)] if r.id == RequestId::Number(7)));
        // An error under another id (or none) is the request's.
        for id in [r#""id": "server-error","#, ""] {
            let body = format!(r#"{{"jsonrpc": "2.0", {id} "error": {{"code": -32603, "message": "broke"}}}}"#);
            let got = answers(&body);
            assert_eq!(got.len(), 1);
            assert_eq!(error_text(&got[0]), (Some(RequestId::Number(7)), "broke".to_owned()));
        }
        // A notification is passed on, then the request's error answer.
        let other =
            r#"{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}"#;
        let got = answers(other);
        assert_eq!(got.len(), 2, "{other}");
        assert!(matches!(got[0], JsonRpcMessage::Notification(_)));
        let (id, text) = error_text(&got[1]);
        assert_eq!(id, Some(RequestId::Number(7)));
        assert!(text.contains("another message"), "{text}");
        // An answer to another request is not passed on (the SDK would stop at it).
        let got = answers(r#"{"jsonrpc": "2.0", "id": 8, "result": {}}"#);
        assert_eq!(got.len(), 1);
        let (id, text) = error_text(&got[0]);
        assert_eq!(id, Some(RequestId::Number(7)));
        assert!(text.contains("answer to another request"), "{text}");
        // No JSON-RPC message at all.
        let got = answers("{}");
        assert_eq!(got.len(), 1);
        assert!(error_text(&got[0]).1.contains("no JSON-RPC message"));
    }

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
