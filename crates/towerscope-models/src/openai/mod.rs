//! OpenAI Chat Completions: [`OpenAiChatModel`], for OpenAI and every compatible server
//! (llama.cpp, vLLM, Ollama, LM Studio, ...).
//!
//! The model sends the conversation ([`messages`](self#messages)), the tool schemas and the tool
//! choice (`auto`, `none`, `required`, or a named tool) to `{base_url}/chat/completions`, and
//! streams the answer by default, asking for usage (`stream_options.include_usage`).
//!
//! - **Streamed chunks** carry this event's deltas: reasoning (`reasoning_content` or
//!   `reasoning`) as thinking, content as text, tool call deltas (keyed by `index`; the id and
//!   name come only in a call's first delta) as tool call blocks; several calls in one answer
//!   are kept apart. The last chunk, at `[DONE]`, is the complete response with its usage
//!   (cached prompt tokens as `cache_input_tokens`), the response id, and in `metadata` the
//!   response `model` and the `finish_reason` (`stop`, `length`, `tool_call`,
//!   `content_filter`; the provider's own word as `provider_finish_reason`).
//! - **Errors** a user can act on: HTTP errors keep the status, the provider's error type,
//!   message and request id, and the `retry-after` hint (429 and 5xx are retryable, 4xx are
//!   not); an `error` object inside a 200 stream (or llama.cpp's `error:` line, its message
//!   and type kept), or a stream that ends before its finish reason (cut, or closed with
//!   `[DONE]` by a server that failed mid-answer), is an error item of the stream, which
//!   `RetryLayer` and `FallbackLayer` handle mid-stream. See
//!   [`ProviderError`](crate::http::ProviderError).
//! - **Tracing** reads `provider()` (`openai`, or [`provider_name`](OpenAiChatModelBuilder::provider_name)),
//!   `server_address()` and `server_port()` (the base URL's host and port), and from the
//!   response its id, `metadata.model`
//!   and usage.
//!
//! # Messages
//!
//! - A system message becomes a `system` message.
//! - A user message becomes a `user` message with the sender's `name`; text-only content is a
//!   string, content with media a list of parts: `image_url` for images (URLs as they are,
//!   inline bytes as `data:` URLs), `input_audio` for inline WAV and MP3, `file` for inline PDFs.
//!   Other media are an error that says so.
//! - An assistant message (an agent's whole reply) is cut where the turn changes: its text and
//!   tool calls become an `assistant` message (named), each tool result a `tool` message with
//!   its call's id, each hint a `user` message; media returned by tools follow the `tool`
//!   messages as a `user` message. Thinking is not sent back (the API takes none).
//! - Names are cut to what the API accepts (ASCII letters, digits, `_`, `-`; 64 at most), so
//!   several agents in one conversation stay apart; [`send_names(false)`](OpenAiChatModelBuilder::send_names)
//!   leaves them out.
//!
//! # Example
//!
//! A model for a local compatible server, and a recorded stream decoded without any server:
//!
//! ```
//! use futures_util::{StreamExt, stream};
//! use towerscope_core::ChatModel;
//! use towerscope_models::openai::{OpenAiChatModel, decode_stream};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let model = OpenAiChatModel::builder("smollm2-135m-instruct")
//!     .base_url("http://127.0.0.1:8080/v1")
//!     .from_env(false)
//!     .temperature(0.0)
//!     .build()?;
//! assert_eq!((model.provider(), model.server_address()), ("openai", Some("127.0.0.1")));
//! assert_eq!(model.server_port(), Some(8080));
//!
//! let sse = concat!(
//!     "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n",
//!     "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n",
//!     "data: {\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n",
//!     "data: [DONE]\n\n",
//! );
//! let chunks: Vec<_> = decode_stream(stream::iter([Ok::<_, std::io::Error>(sse.as_bytes())])).collect().await;
//! let last = chunks.last().cloned().transpose()?.expect("a final chunk");
//! assert!(last.is_last);
//! assert_eq!(last.text().as_deref(), Some("Hello"));
//! assert_eq!(last.usage.map(|u| (u.input_tokens, u.output_tokens)), Some((5, 2)));
//! assert_eq!(last.metadata["finish_reason"], "stop");
//! # Ok(()) }
//! ```

mod builder;
mod decode;
mod ids;
mod messages;
mod model;
mod request;
mod wire;

use std::fmt::Display;
use std::time::Instant;

use futures_core::Stream;
use futures_util::TryStreamExt;
use towerscope_core::{AgentError, ChatResponse};

pub use builder::{DEFAULT_BASE_URL, OpenAiChatModelBuilder};
pub use model::OpenAiChatModel;
pub use request::{MaxTokensField, ReasoningEffort};

/// Decodes an OpenAI Chat Completions SSE body (a recording, or a body fetched by other means)
/// into chunks, the last of which is the complete response, exactly as
/// [`OpenAiChatModel`] does. A body that ends, or reaches `[DONE]`, before any finish reason
/// ends with an error item.
pub fn decode_stream<S, B, E>(body: S) -> impl Stream<Item = Result<ChatResponse, AgentError>> + Send
where
    S: Stream<Item = Result<B, E>> + Send,
    B: AsRef<[u8]> + Send,
    E: Display + Send,
{
    let names = crate::http::names::Names::decoded("openai");
    let body = body.map_err(|e| AgentError::Stream(format!("the body broke: {e}")));
    crate::http::sse::ChatChunks::new(body, decode::OpenAiStream::new(names, Instant::now()))
}
