//! Chat models for towerscope.
//!
//! - [`ScriptedModel`] replays a script of responses and records every request it received. It
//!   needs no network, so it is the default model of the examples and the workhorse of the tests.
//! - `openai` (feature `openai`): [`OpenAiChatModel`](openai::OpenAiChatModel), OpenAI Chat
//!   Completions, for OpenAI and every compatible server (llama.cpp, vLLM, Ollama, ...).
//! - `anthropic` (feature `anthropic`): [`AnthropicChatModel`](anthropic::AnthropicChatModel),
//!   Anthropic Messages.
//! - `http` (any of these features): what the providers share: the HTTP transport as a tower
//!   service, the API key, the provider errors.
//! - `cassette` (feature `cassette`): record a session's HTTP traffic once, replay it in tests.
//!
//! # Example
//!
//! ```
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! let model = ScriptedModel::new("scripted", [
//!     ScriptedResponse::tool_call("call-1", "get_weather", r#"{"city":"Paris"}"#),
//!     ScriptedResponse::text("It is sunny in Paris.").with_usage(20, 7),
//! ]);
//! assert_eq!(model.remaining(), 2);
//! ```

#[cfg(feature = "anthropic")]
pub mod anthropic;
#[cfg(feature = "cassette")]
pub mod cassette;
#[cfg(any(feature = "openai", feature = "anthropic", feature = "cassette"))]
pub mod http;
#[cfg(feature = "openai")]
pub mod openai;
pub mod scripted;

pub use scripted::{RecordedRequest, ScriptedModel, ScriptedResponse};
