//! [`McpClient`]: one connection to an MCP server, shared by its tools.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification, CancelledNotificationParam,
    ClientRequest, ListToolsRequest, PaginatedRequestParams, RequestId, ServerResult, Tool,
};
use rmcp::service::{ClientInitializeError, PeerRequestOptions, RequestHandle, RoleClient, RunningService, ServiceExt};
use tokio::sync::mpsc;
use towerscope_core::{AgentError, TimeoutKind};

use super::http::HttpTarget;
use super::progress::{Handler, ProgressRoutes, ProgressSender};
use super::stdio::{Overflow, StdioTransport};
use super::{McpServer, McpTransport};

/// The most pages an MCP listing follows (tools, prompts, resources, templates).
pub const MAX_PAGES: usize = 1_000;

/// A connection to an MCP server. Clones share it; it closes when the last clone is dropped
/// (a stdio server's process is ended then).
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

struct Inner {
    service: RunningService<RoleClient, Handler>,
    progress: ProgressRoutes,
    server: String,
    timeout: Option<Duration>,
    total_timeout: Option<Duration>,
    /// Raised when a stdio server sent a message past its limit (the connection closed); never
    /// for an HTTP server.
    overflow: Overflow,
    max_message_bytes: usize,
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.inner.server)
            .finish_non_exhaustive()
    }
}

fn connect_error(server: &str, e: impl fmt::Display) -> AgentError {
    AgentError::State(format!(
        "could not connect to the MCP server '{server}': {}; check that it runs and speaks MCP",
        shown(&e)
    ))
}

/// An error's text as it may be shown (and, for a call, sent to the model): URLs left out
/// (reqwest names the URL it failed on, and a URL may carry a key in its path or query), cut
/// to [`MAX_ERROR_CHARS`] (an HTTP error quotes the server's whole answer).
pub(super) fn shown(e: &impl fmt::Display) -> String {
    let text = e.to_string();
    let mut out = String::with_capacity(text.len().min(MAX_ERROR_CHARS));
    let mut rest = text.as_str();
    while let Some(at) = ["http://", "https://"].iter().filter_map(|s| rest.find(s)).min() {
        out.push_str(&rest[..at]);
        out.push_str("<url>");
        let url = &rest[at..];
        let end = url
            .find(|c: char| c.is_whitespace() || matches!(c, ')' | '"' | '\'' | '>' | ']'))
            .unwrap_or(url.len());
        rest = &url[end..];
    }
    out.push_str(rest);
    if let Some((cut, _)) = out.char_indices().nth(MAX_ERROR_CHARS) {
        out.truncate(cut);
        out.push('…');
    }
    out
}

/// The most characters of an error's text kept.
const MAX_ERROR_CHARS: usize = 1_000;

/// A request that got no answer within `after`.
fn timed_out(server: &str, what: &str, after: Duration) -> AgentError {
    AgentError::Timeout {
        what: format!("MCP server '{server}': {what}"),
        kind: TimeoutKind::Call,
        after: Some(after),
    }
}

/// Starts the session (`serving`: the SDK's initialisation over a transport) within the
/// server's connect timeout. A server that never answers fails here, and its transport (a stdio
/// server's process) is dropped with the initialisation.
async fn initialise<F>(
    server: &McpServer,
    serving: F,
    overflow: &Overflow,
) -> Result<RunningService<RoleClient, Handler>, AgentError>
where
    F: Future<Output = Result<RunningService<RoleClient, Handler>, ClientInitializeError>>,
{
    let served = match server.connect_timeout {
        Some(after) => tokio::time::timeout(after, serving)
            .await
            .map_err(|_| timed_out(&server.name, "initialising the session", after))?,
        None => serving.await,
    };
    served.map_err(|e| match overflow.happened() {
        true => connect_error(&server.name, too_long(server.max_message_bytes)),
        false => connect_error(&server.name, e),
    })
}

/// Why a connection closed: the server sent a message past its limit.
fn too_long(max: usize) -> String {
    format!(
        "the server sent a message longer than {max} bytes (McpServer::max_message_bytes), and the connection was \
         closed"
    )
}

/// Why a dropped request is cancelled, as the server is told.
const DROPPED: &str = "the client stopped waiting for the answer";

/// Tells the server that a request is cancelled when the wait for its answer is dropped (a
/// reply interrupted, a tool's stream dropped): the SDK's request handle does not, and the
/// server would work on, and report progress, for nobody.
struct CancelOnDrop {
    peer: rmcp::Peer<RoleClient>,
    /// The request's id, until it is answered.
    id: Option<RequestId>,
}

impl CancelOnDrop {
    /// The request was answered (or timed out): nothing to cancel.
    fn disarm(mut self) {
        self.id = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        // Outside a runtime (the client dropped as the runtime shuts down) there is nothing to
        // send it with, and the connection closes anyway.
        let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current()) else {
            return;
        };
        let peer = self.peer.clone();
        let cancelled = CancelledNotification::new(CancelledNotificationParam::new(Some(id), Some(DROPPED.to_owned())));
        // Sending waits for the connection's task, which a drop cannot.
        runtime.spawn(async move {
            let _ = peer.send_notification(cancelled.into()).await;
        });
    }
}

impl McpClient {
    /// Connects (starting the process of a stdio server) and initialises the session, within
    /// the server's [`connect_timeout`](McpServer::connect_timeout()).
    pub async fn connect(server: &McpServer) -> Result<Self, AgentError> {
        server.check_settings()?;
        let handler = Handler::default();
        let progress = handler.routes();
        let overflow = Overflow::default();
        let service = match &server.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                inherit_env,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                if !inherit_env {
                    // As the MCP SDKs do: the agent's environment holds its API keys.
                    cmd.env_clear();
                    for key in super::server::INHERITED_ENV {
                        // Not an exported shell function (a value starting `()`), as the SDKs.
                        if let Some(value) = std::env::var_os(key)
                            && !value.as_encoded_bytes().starts_with(b"()")
                        {
                            cmd.env(key, value);
                        }
                    }
                }
                cmd.args(args).envs(env);
                let write_timeout = server.timeout.or(server.connect_timeout);
                let transport = StdioTransport::spawn(cmd, server.max_message_bytes, overflow.clone(), write_timeout)
                    .map_err(|e| connect_error(&server.name, e))?;
                initialise(server, handler.serve(transport), &overflow).await?
            }
            McpTransport::Http {
                url,
                headers,
                bearer,
                root_certificates,
            } => {
                // Raised by an answer past the limit: read only while connecting (an HTTP call's
                // own error names the limit, and the connection stays open).
                let connecting = Overflow::default();
                let transport = HttpTarget {
                    server: &server.name,
                    url,
                    headers,
                    bearer: bearer.as_deref(),
                    root_certificates,
                    max_message_bytes: server.max_message_bytes,
                    overflow: connecting.clone(),
                    answer_wait: server.timeout,
                }
                .transport()?;
                initialise(server, handler.serve(transport), &connecting).await?
            }
        };
        Ok(Self {
            inner: Arc::new(Inner {
                service,
                progress,
                server: server.name.clone(),
                timeout: server.timeout,
                total_timeout: server.total_timeout,
                overflow,
                max_message_bytes: server.max_message_bytes,
            }),
        })
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.inner.server
    }

    /// The server's instructions, if it sent any.
    pub fn instructions(&self) -> Option<String> {
        self.inner
            .service
            .peer_info()
            .and_then(|info| info.instructions.clone())
    }

    /// The server's tools (every page, at most [`MAX_PAGES`]).
    pub async fn list_tools(&self) -> Result<Vec<Tool>, AgentError> {
        self.list(
            "listing tools",
            |page| ClientRequest::ListToolsRequest(ListToolsRequest::with_param(page)),
            |listed| match listed {
                ServerResult::ListToolsResult(listed) => Some((listed.tools, listed.next_cursor)),
                _ => None,
            },
        )
        .await
    }

    /// Every page of a listing (`what`, for errors): `ask` makes the request of a page from its
    /// parameters, `items` takes the items and the next cursor out of the answer (`None`: the
    /// server answered with another kind of result). It follows the server's cursors, at most
    /// [`MAX_PAGES`] of them, so a server that answers every page with another cursor fails the
    /// listing instead of keeping it going (and growing) for ever.
    pub(super) async fn list<T>(
        &self,
        what: &str,
        ask: impl Fn(PaginatedRequestParams) -> ClientRequest,
        items: impl Fn(ServerResult) -> Option<(Vec<T>, Option<String>)>,
    ) -> Result<Vec<T>, AgentError> {
        let mut all = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let answer = self.request(what, ask(params)).await?;
            let (listed, next) = items(answer).ok_or_else(|| self.unexpected(what))?;
            all.extend(listed);
            match next {
                Some(next) => cursor = Some(next),
                None => return Ok(all),
            }
        }
        Err(self.failed(
            what,
            format!("the server answered {MAX_PAGES} pages, each with a cursor to another"),
        ))
    }

    /// Calls a tool; progress notifications of the call go to `progress`.
    pub(crate) async fn call(
        &self,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        progress: ProgressSender,
    ) -> Result<CallToolResult, AgentError> {
        let what = format!("calling '{name}'");
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // The SDK gives the request its progress token as it sends it.
        let handle = self.send(&what, request).await?;
        let route = self.inner.progress.open(&handle.progress_token, progress);
        let result = self.answer(&what, handle).await;
        route.settle().await;
        match result? {
            ServerResult::CallToolResult(result) => Ok(result),
            ServerResult::CustomResult(custom) => lenient_call_result(custom.0).ok_or_else(|| self.unexpected(&what)),
            _ => Err(self.unexpected(&what)),
        }
    }

    /// The session.
    fn peer(&self) -> &rmcp::Peer<RoleClient> {
        self.inner.service.peer()
    }

    /// The options of every request: the server's timeout, started again by each progress
    /// notification about the request, and its total timeout.
    fn options(&self) -> PeerRequestOptions {
        let mut options = PeerRequestOptions::no_options().reset_timeout_on_progress();
        options.timeout = self.inner.timeout;
        options.max_total_timeout = self.inner.total_timeout;
        options
    }

    /// Sends `request` (`what` says what it asks, for errors) and waits for the server's
    /// answer, within the server's timeouts.
    pub(super) async fn request(&self, what: &str, request: ClientRequest) -> Result<ServerResult, AgentError> {
        let handle = self.send(what, request).await?;
        // Nobody reads progress about a listing, a read or a prompt: a route whose reader is
        // gone discards it, and retires the token once the request ends.
        let (nobody, _) = mpsc::channel(1);
        let _route = self.inner.progress.open(&handle.progress_token, nobody);
        self.answer(what, handle).await
    }

    /// Sends `request` with the server's timeouts.
    async fn send(&self, what: &str, request: ClientRequest) -> Result<RequestHandle<RoleClient>, AgentError> {
        self.peer()
            .send_request_with_option(request, self.options())
            .await
            .map_err(|e| self.failed_with(what, e))
    }

    /// The server's answer to a sent request, or a timeout error naming the server and `what`.
    /// Dropped before the answer, it tells the server the request is cancelled.
    async fn answer(&self, what: &str, handle: RequestHandle<RoleClient>) -> Result<ServerResult, AgentError> {
        let unanswered = CancelOnDrop {
            peer: self.peer().clone(),
            id: Some(handle.id.clone()),
        };
        let answer = handle.await_response().await;
        // Answered, or timed out, which the SDK cancels itself.
        unanswered.disarm();
        answer.map_err(|e| match e {
            ServiceError::Timeout { timeout } => timed_out(&self.inner.server, what, timeout),
            e => self.failed_with(what, e),
        })
    }

    /// The error of a server that answered `what` with another kind of result.
    pub(super) fn unexpected(&self, what: &str) -> AgentError {
        self.failed(what, "the server answered with another kind of result")
    }

    /// The error of a failed request: what was asked, and the server's answer.
    pub(super) fn failed(&self, what: &str, e: impl fmt::Display) -> AgentError {
        AgentError::State(format!(
            "MCP server '{}': {what} failed: {}",
            self.inner.server,
            shown(&e)
        ))
    }

    /// [`failed`](Self::failed) for an error of the SDK: a closed connection says why when a
    /// message past the server's limit closed it.
    fn failed_with(&self, what: &str, e: ServiceError) -> AgentError {
        let closed = matches!(e, ServiceError::TransportClosed | ServiceError::TransportSend(_));
        match closed && self.inner.overflow.happened() {
            true => self.failed(what, too_long(self.inner.max_message_bytes)),
            false => self.failed(what, e),
        }
    }
}

/// A tool's result the SDK did not take whole (a content block of a type it does not know, an
/// image without its media type: it lost the whole result): its known blocks as they are, each
/// other one as its JSON text, with its error flag and structured content. `None` when it is no
/// call's result (no `content` list).
fn lenient_call_result(value: serde_json::Value) -> Option<CallToolResult> {
    use serde::Deserialize;
    let serde_json::Value::Object(mut map) = value else {
        return None;
    };
    let Some(serde_json::Value::Array(items)) = map.remove("content") else {
        return None;
    };
    let content = items
        .iter()
        .map(|item| {
            rmcp::model::ContentBlock::deserialize(item).unwrap_or_else(|_| {
                // Its data as its size: base64 the model cannot read is no use in its context.
                let mut item = item.clone();
                if let Some(fields) = item.as_object_mut() {
                    for key in ["data", "blob"] {
                        if let Some(serde_json::Value::String(data)) = fields.get(key) {
                            let size = format!("[{} bytes of base64]", data.len());
                            fields.insert(key.to_owned(), serde_json::Value::String(size));
                        }
                    }
                }
                rmcp::model::ContentBlock::text(item.to_string())
            })
        })
        .collect();
    let mut result = CallToolResult::success(content);
    result.is_error = map.get("isError").and_then(serde_json::Value::as_bool);
    result.structured_content = map.remove("structuredContent");
    Some(result)
}

#[cfg(test)]
mod tests {
    /// An error names no URL (a key may be in it) and is cut short.
    #[test]
    fn errors_show_no_url_and_are_cut() {
        let e = "error sending request for url (http://127.0.0.1:1/mcp?key=SECRET): refused; see https://h/x";
        assert_eq!(
            super::shown(&e),
            "error sending request for url (<url>): refused; see <url>"
        );
        let long = super::shown(&"x".repeat(5_000));
        assert_eq!(long.chars().count(), super::MAX_ERROR_CHARS + 1);
    }

    use serde_json::Value;

    use super::*;
    use crate::mcp::mcp_shell::{goes_quiet, records_requests};
    use crate::mcp::progress::PROGRESS_BUFFER;

    /// A call dropped while it waits for the server (its reply interrupted, its stream
    /// dropped) takes its progress route with it, instead of leaving it, and the sender to a
    /// reader that is gone, in the client for as long as the connection lives.
    #[tokio::test]
    async fn a_dropped_call_leaves_no_progress_route_behind() {
        let client = McpClient::connect(&goes_quiet().no_timeout())
            .await
            .expect("the quiet server initialises");
        let (tx, _rx) = mpsc::channel(PROGRESS_BUFFER);
        let mut call = Box::pin(client.call("wait", serde_json::Map::new(), tx));
        let registered = async {
            while client.inner.progress.open_routes() == 0 {
                tokio::select! {
                    _ = &mut call => panic!("the quiet server answered"),
                    () = tokio::time::sleep(Duration::from_millis(10)) => {}
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(10), registered)
            .await
            .expect("the call registers its route once sent");
        assert_eq!(client.inner.progress.open_routes(), 1, "the call waits, its route open");
        drop(call);
        assert_eq!(
            client.inner.progress.open_routes(),
            0,
            "the dropped call's route is gone"
        );
    }

    /// The messages a `records_requests` server wrote to `path` so far.
    fn recorded(path: &std::path::Path) -> Vec<Value> {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }

    /// A call dropped while it waits for the server is cancelled there
    /// (`notifications/cancelled` with the call's request id), so the server stops working,
    /// and reporting progress, for nobody.
    #[tokio::test]
    async fn a_dropped_call_is_cancelled_on_the_server() {
        let path = std::env::temp_dir().join(format!("towerscope-mcp-cancel-{}.jsonl", std::process::id()));
        let client = McpClient::connect(&records_requests(&path).no_timeout())
            .await
            .expect("the recording server initialises");
        let (tx, _rx) = mpsc::channel(PROGRESS_BUFFER);
        let mut call = Box::pin(client.call("wait", serde_json::Map::new(), tx));
        let sent = async {
            loop {
                let call_id = recorded(&path)
                    .into_iter()
                    .find(|m| m["method"] == "tools/call")
                    .map(|m| m["id"].clone());
                if let Some(id) = call_id {
                    return id;
                }
                tokio::select! {
                    r = &mut call => panic!("the recording server answered: {r:?}"),
                    () = tokio::time::sleep(Duration::from_millis(10)) => {}
                }
            }
        };
        let id = tokio::time::timeout(Duration::from_secs(10), sent)
            .await
            .expect("the call reaches the server");
        drop(call);
        let cancelled = async {
            while !recorded(&path)
                .iter()
                .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == id)
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        let told = tokio::time::timeout(Duration::from_secs(10), cancelled).await;
        let _ = std::fs::remove_file(&path);
        told.expect("the server is told the dropped call is cancelled");
    }
}
