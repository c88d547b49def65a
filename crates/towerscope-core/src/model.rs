//! The chat-model abstraction: [`ChatModel`] is what the innermost `on_model_call` service calls.
//!
//! A model answers a [`ModelCallRequest`] with a [`ModelOutput`]: either a
//! complete [`ChatResponse`] or a stream of chunks, the last of which (`is_last = true`) holds the
//! complete response. Providers live in `towerscope-models`; the `ScriptedModel` there replays a
//! script and needs no network.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use towerscope_core::{ChatModel, ChatResponse, ModelCallRequest, ModelFuture, ModelOutput, TextBlock, ContentBlock};
//!
//! /// A model that always says hello.
//! #[derive(Debug)]
//! struct Hello;
//!
//! impl ChatModel for Hello {
//!     fn model_name(&self) -> &str { "hello-1" }
//!     fn call(&self, _request: ModelCallRequest) -> ModelFuture {
//!         let response = ChatResponse::new(vec![ContentBlock::Text(TextBlock::new("hello"))]);
//!         Box::pin(std::future::ready(Ok(ModelOutput::Complete(response))))
//!     }
//! }
//!
//! let model: Arc<dyn ChatModel> = Arc::new(Hello);
//! assert_eq!(model.model_name(), "hello-1");
//! assert_eq!(model.provider(), "unknown");
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_core::Stream;
use serde::{Deserialize, Serialize};

use crate::{AgentError, ChatResponse, ModelCallRequest};

/// A stream of chat-response chunks; the last item has `is_last = true`.
pub type ChatStream = Pin<Box<dyn Stream<Item = Result<ChatResponse, AgentError>> + Send>>;

/// The future a [`ChatModel`] returns.
pub type ModelFuture = Pin<Box<dyn Future<Output = Result<ModelOutput, AgentError>> + Send>>;

/// A shared handle on a chat model.
pub type ModelRef = Arc<dyn ChatModel>;

/// What a model call returns: a complete response or a stream of chunks.
pub enum ModelOutput {
    /// A complete response.
    Complete(ChatResponse),
    /// A stream of chunks; the last one (`is_last`) is the complete response.
    Stream(ChatStream),
}

impl ModelOutput {
    /// Whether this output is a stream.
    pub fn is_stream(&self) -> bool {
        matches!(self, Self::Stream(_))
    }
}

impl fmt::Debug for ModelOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Complete(r) => f.debug_tuple("Complete").field(r).finish(),
            Self::Stream(_) => f.write_str("Stream(..)"),
        }
    }
}

/// Generation parameters a model sends with every request (recorded by tracing as
/// `gen_ai.request.*`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GenerationParams {
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Top-k sampling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// Maximum output tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Presence penalty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// Frequency penalty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop_sequences: Vec<String>,
    /// Sampling seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl GenerationParams {
    /// No parameters set.
    pub const fn new() -> Self {
        Self {
            temperature: None,
            top_p: None,
            top_k: None,
            max_tokens: None,
            presence_penalty: None,
            frequency_penalty: None,
            stop_sequences: Vec::new(),
            seed: None,
        }
    }

    /// Sets the temperature.
    pub fn temperature(mut self, t: f64) -> Self {
        self.temperature = Some(t);
        self
    }

    /// Sets the maximum output tokens.
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// Sets top-p.
    pub fn top_p(mut self, p: f64) -> Self {
        self.top_p = Some(p);
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }
}

static NO_PARAMS: GenerationParams = GenerationParams::new();

/// A chat model: the implementation behind the innermost `on_model_call` service.
///
/// See the [module docs](self) for an example.
pub trait ChatModel: Send + Sync + fmt::Debug + 'static {
    /// The model's name as the provider knows it (`gpt-4o`, `claude-sonnet-4`).
    fn model_name(&self) -> &str;

    /// The provider, as a GenAI semantic-conventions `gen_ai.provider.name` value.
    fn provider(&self) -> &str {
        "unknown"
    }

    /// The generation parameters sent with every request.
    fn parameters(&self) -> &GenerationParams {
        &NO_PARAMS
    }

    /// The model's context window in tokens, for context compression (default 32 768, the
    /// reference's default).
    fn context_size(&self) -> u64 {
        32_768
    }

    /// The provider's host, for `server.address` (never with credentials).
    fn server_address(&self) -> Option<&str> {
        None
    }

    /// The provider's port (the URL's, or its scheme's default), for `server.port`, which the
    /// GenAI conventions record beside `server.address`: two local servers on one host differ
    /// only by it.
    fn server_port(&self) -> Option<u16> {
        None
    }

    /// Calls the model with the request's messages, tool schemas and tool choice.
    fn call(&self, request: ModelCallRequest) -> ModelFuture;
}
