//! [`RpcError`]: every failure of the JSON-RPC endpoint, with its code.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON-RPC error object, as A2A defines the codes.
///
/// Messages say what was wrong with the request; they never carry an agent's or a provider's
/// error text (which may hold a URL or a key): those are logged and answered as
/// [`internal`](Self::internal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The code (`-32700` parse error, `-32001` task not found, ...).
    pub code: i64,
    /// What went wrong, for the client's developer.
    pub message: String,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// The body is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// The body is JSON but not a JSON-RPC 2.0 request (or too large).
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The method's parameters are wrong.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// No task with that id.
    pub const TASK_NOT_FOUND: i64 = -32001;
    /// The task cannot be canceled (it already stopped).
    pub const TASK_NOT_CANCELABLE: i64 = -32002;
    /// Push notifications are not served.
    pub const PUSH_NOTIFICATION_NOT_SUPPORTED: i64 = -32003;
    /// The operation is not served.
    pub const UNSUPPORTED_OPERATION: i64 = -32004;
    /// A part's content type is not served: a file part answering a task that waits for a
    /// confirmation or tool results.
    pub const CONTENT_TYPE_NOT_SUPPORTED: i64 = -32005;
    /// The requested protocol version (`A2A-Version` header) is not served.
    pub const VERSION_NOT_SUPPORTED: i64 = -32009;

    /// An error with a code and a message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// `-32700`.
    pub fn parse_error(detail: impl std::fmt::Display) -> Self {
        Self::new(Self::PARSE_ERROR, format!("the body is not valid JSON: {detail}"))
    }

    /// `-32600`.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(Self::INVALID_REQUEST, message)
    }

    /// `-32601`.
    pub fn method_not_found(method: &str) -> Self {
        let shown: String = method.chars().take(64).collect();
        Self::new(
            Self::METHOD_NOT_FOUND,
            format!(
                "unknown method `{shown}`; this agent serves SendMessage, SendStreamingMessage, GetTask, CancelTask and SubscribeToTask (A2A 1.0), and their 0.3 names"
            ),
        )
    }

    /// `-32602`.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(Self::INVALID_PARAMS, message)
    }

    /// `-32001`.
    pub fn task_not_found(id: &str) -> Self {
        let shown: String = id.chars().take(64).collect();
        Self::new(
            Self::TASK_NOT_FOUND,
            format!("no task `{shown}` (unknown, or forgotten)"),
        )
    }

    /// `-32603`, with a fixed message: the cause is logged, not sent.
    pub fn internal() -> Self {
        Self::new(Self::INTERNAL_ERROR, "the agent server failed; see its log")
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JSON-RPC error {}: {}", self.code, self.message)
    }
}

impl std::error::Error for RpcError {}
