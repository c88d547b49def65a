//! AG-UI: the protocol of `@ag-ui/client` 1.0, for web front-ends.
//!
//! `POST /agui` takes a [`RunAgentInput`] and answers with server-sent events, one AG-UI event
//! as JSON in each `data:` line:
//!
//! ```text
//! POST /agui {threadId, runId, messages, tools, context, state, resume}
//!   │  400 not JSON · 422 not a RunAgentInput · 413 over the body limit
//!   │  409 the thread has a run in progress, or nothing to resume, or waits for an answer
//!   ▼
//! factory.agent(threadId)        the session's agent; frontend_tools() are the run's tools
//!   ▼
//! agent.reply_stream(input)      new messages / confirmations (resume) / front-end tool results
//!   ▼
//! RUN_STARTED · TEXT_MESSAGE_* · REASONING_* · TOOL_CALL_* · CUSTOM · ...   (see `mapping`)
//!   ▼
//! RUN_FINISHED  outcome success (pendingToolCallIds: front-end calls to run)
//!               outcome interrupt (calls to confirm: resume {interruptId, status, payload})
//!               outcome cancelled (the reply was stopped)
//!   or RUN_ERROR
//! ```
//!
//! The thread id is the session: the agent keeps the conversation in its session store, so of
//! the messages the client sends only those after the agent's last one are new (see
//! [`request`](self#reading-a-run)). A client that disconnects stops the reply: the agent
//! keeps what was streamed, and the thread is free again once the reply has closed.
//!
//! # Reading a run
//!
//! - `resume` entries answer the confirmations the previous run ended with: an entry names the
//!   tool call (the interrupt's id), `status` `resolved` runs it (unless the payload says
//!   `"approved": false`), `cancelled` denies it; a payload's `arguments` replaces the call's;
//! - otherwise `tool` messages after the agent's last message answering front-end tools (tools
//!   the run declares) resume the reply waiting for them;
//! - otherwise the `user` messages after the agent's last message are the new input; the run's
//!   `context` and `system` or `developer` messages after the agent's last message come before
//!   them in one user message, inside `<system-reminder>` tags (the agent's system prompt stays
//!   its own).
//!
//! The client's `state` is not read: the agent's state lives in its session.
//!
//! # Example
//!
//! ```
//! use axum::body::Body;
//! use axum::http::Request;
//! use tower::ServiceExt;
//! use towerscope_agent::Agent;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let model = ScriptedModel::cycle("scripted", [ScriptedResponse::text("Hello!")]);
//! let router = towerscope_serve::router(move |_thread: &str| Agent::builder("assistant").model(model.clone()).build());
//! let body = r#"{"threadId": "t1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "Hi"}]}"#;
//! let request = Request::post("/agui").header("content-type", "application/json").body(Body::from(body)).unwrap();
//! let response = router.oneshot(request).await.unwrap();
//! let sse = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
//! let sse = String::from_utf8(sse.to_vec()).unwrap();
//! assert!(sse.starts_with(r#"data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}"#));
//! assert!(sse.contains(r#""delta":"Hello!""#));
//! assert!(sse.contains(r#""type":"RUN_FINISHED""#));
//! # }
//! ```

mod endpoint;
mod event;
mod frontend;
mod input;
pub mod mapping;
mod request;
mod stream;

pub(crate) use endpoint::routes;
pub use event::{AguiEvent, Interrupt, PROTOCOL_VERSION, RunOutcome, TokenUsage};
pub use frontend::{FrontendTool, frontend_tools};
pub use input::{ContextItem, FunctionCall, Message, ResumeEntry, ResumeStatus, RunAgentInput, Tool, ToolCall};
pub use mapping::EventMapper;
