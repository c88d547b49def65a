//! Anthropic Messages: [`AnthropicChatModel`].
//!
//! The model sends `{base_url}/v1/messages` the conversation (system messages as the top-level
//! `system` prompt), the tool schemas (`input_schema`) and the tool choice (`auto`, `none`,
//! `any` for required, `tool` for a named tool; `disable_parallel_tool_use` when
//! [`parallel_tool_calls(false)`](AnthropicChatModelBuilder::parallel_tool_calls)), with the
//! `anthropic-version` header and the required `max_tokens`, and streams the answer by default.
//!
//! - **Stream events**: `message_start` (id, model, input usage), `content_block_start`,
//!   `content_block_delta` (`text_delta`, `thinking_delta`, `signature_delta`,
//!   `input_json_delta`), `content_block_stop`, `message_delta` (stop reason, output usage),
//!   `message_stop` (the complete response), `ping` (skipped), and `error` in the middle of a
//!   stream (an error item: `overloaded_error` and `api_error` are retryable). A stream that ends
//!   before `message_stop` ends with an error item, which `RetryLayer` and `FallbackLayer`
//!   handle mid-stream.
//! - **Extended thinking** ([`thinking`](AnthropicChatModelBuilder::thinking)): thinking blocks
//!   stream as thinking; the complete response keeps each block's signature (and redacted
//!   thinking's data) in the block's `extra`, and later turns send them back unchanged, as the
//!   API requires with tool use. Thinking without a signature is not sent.
//! - **Tool use ids** of another provider that the API would refuse (it takes ASCII letters,
//!   digits, `_` and `-`; Kimi K2 names its calls `functions.get_weather:0`) go with each
//!   other character as `_` and a hash of the whole id, the same in the tool use and its
//!   result, in every build; ids the API accepts go as they are.
//! - **Usage**: `input_tokens` counts every input token (cache reads and writes included);
//!   `cache_input_tokens` and `cache_creation_input_tokens` hold the cache reads and writes.
//!   [`prompt_caching(true)`](AnthropicChatModelBuilder::prompt_caching) puts cache breakpoints
//!   on the system prompt, the last tool and the last turn.
//! - **Errors**: as for every provider, see [`ProviderError`](crate::http::ProviderError); 429,
//!   5xx and 529 (overloaded) are retryable with the `retry-after` hint.
//! - **Tracing** reads `provider()` (`anthropic`), `server_address()`, and the response id,
//!   `metadata.model`, `metadata.finish_reason` and usage.
//!
//! # Example
//!
//! A model with extended thinking, and a recorded stream decoded without any server:
//!
//! ```
//! use futures_util::{StreamExt, stream};
//! use towerscope_core::ChatModel;
//! use towerscope_models::anthropic::{AnthropicChatModel, SIGNATURE, decode_stream};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let model = AnthropicChatModel::builder("claude-sonnet-4-5")
//!     .api_key("sk-ant-example")
//!     .from_env(false)
//!     .max_tokens(4096)
//!     .thinking(2048)
//!     .build()?;
//! assert_eq!(model.provider(), "anthropic");
//! assert!(!format!("{model:?}").contains("sk-ant"));
//!
//! let sse = concat!(
//!     "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-x\",\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n",
//!     "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
//!     "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Easy.\"}}\n\n",
//!     "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQB\"}}\n\n",
//!     "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
//!     "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi!\"}}\n\n",
//!     "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":6}}\n\n",
//!     "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
//! );
//! let chunks: Vec<_> = decode_stream(stream::iter([Ok::<_, std::io::Error>(sse.as_bytes())])).collect().await;
//! let last = chunks.last().cloned().transpose()?.expect("a final chunk");
//! assert_eq!(last.text().as_deref(), Some("Hi!"));
//! let thinking = last.content[0].as_thinking().expect("thinking first");
//! assert_eq!(thinking.extra[SIGNATURE], "EqQB");
//! assert_eq!(last.usage.map(|u| (u.input_tokens, u.output_tokens)), Some((9, 6)));
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

pub use builder::{AnthropicChatModelBuilder, DEFAULT_BASE_URL, DEFAULT_MAX_TOKENS, DEFAULT_VERSION};
pub use decode::{REDACTED_DATA, SIGNATURE};
pub use model::AnthropicChatModel;

/// Decodes an Anthropic Messages SSE body (a recording, or a body fetched by other means) into
/// chunks, the last of which is the complete response, exactly as [`AnthropicChatModel`] does.
/// A body that ends before `message_stop` ends with an error item.
pub fn decode_stream<S, B, E>(body: S) -> impl Stream<Item = Result<ChatResponse, AgentError>> + Send
where
    S: Stream<Item = Result<B, E>> + Send,
    B: AsRef<[u8]> + Send,
    E: Display + Send,
{
    let names = crate::http::names::Names::decoded("anthropic");
    let body = body.map_err(|e| AgentError::Stream(format!("the body broke: {e}")));
    crate::http::sse::ChatChunks::new(body, decode::AnthropicStream::new(names, Instant::now()))
}
