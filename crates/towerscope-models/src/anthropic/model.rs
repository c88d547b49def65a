//! [`AnthropicChatModel`]: a [`ChatModel`] over the Anthropic Messages API.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use towerscope_core::{ChatModel, GenerationParams, ModelCallRequest, ModelFuture};

use super::builder::AnthropicChatModelBuilder;
use super::decode::{AnthropicStream, complete_response};
use super::request::{Call, Options, body};
use crate::http::target::HttpTarget;

/// A chat model behind the Anthropic Messages API. See the [module docs](super).
///
/// Clones share the configuration and the HTTP transport.
#[derive(Clone)]
pub struct AnthropicChatModel {
    inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) target: HttpTarget,
    pub(super) params: GenerationParams,
    pub(super) options: Options,
}

impl AnthropicChatModel {
    /// A builder for `model` (`claude-sonnet-4-5`, ...).
    pub fn builder(model: impl Into<String>) -> AnthropicChatModelBuilder {
        AnthropicChatModelBuilder::new(model.into())
    }

    pub(super) fn from_inner(inner: Arc<Inner>) -> Self {
        Self { inner }
    }

    /// The URL requests go to (`{base_url}/v1/messages`).
    pub fn endpoint(&self) -> &str {
        &self.inner.target.endpoint
    }
}

impl fmt::Debug for AnthropicChatModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicChatModel")
            .field("model", &self.inner.target.model)
            .field("endpoint", &self.inner.target.endpoint)
            .field("stream", &self.inner.options.stream)
            .finish_non_exhaustive()
    }
}

impl ChatModel for AnthropicChatModel {
    fn model_name(&self) -> &str {
        &self.inner.target.model
    }

    fn provider(&self) -> &str {
        &self.inner.target.provider
    }

    fn parameters(&self) -> &GenerationParams {
        &self.inner.params
    }

    fn server_address(&self) -> Option<&str> {
        self.inner.target.host()
    }

    fn server_port(&self) -> Option<u16> {
        self.inner.target.port()
    }

    fn call(&self, request: ModelCallRequest) -> ModelFuture {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            let started = Instant::now();
            let body = body(&Call {
                model: &inner.target.model,
                params: &inner.params,
                options: &inner.options,
                messages: &request.messages,
                tools: &request.tools,
                tool_choice: request.tool_choice.as_ref(),
            })?;
            inner
                .target
                .answer(
                    body,
                    inner.options.stream,
                    |names| AnthropicStream::new(names, started),
                    |names, body| complete_response(names, body, started),
                )
                .await
        })
    }
}
