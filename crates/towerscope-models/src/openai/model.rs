//! [`OpenAiChatModel`]: a [`ChatModel`] over the OpenAI Chat Completions API.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use towerscope_core::{ChatModel, GenerationParams, ModelCallRequest, ModelFuture};

use super::builder::OpenAiChatModelBuilder;
use super::decode::{OpenAiStream, complete_response};
use super::request::{Call, Options, body};
use crate::http::target::HttpTarget;

/// A chat model behind the OpenAI Chat Completions API: OpenAI itself or any compatible server.
/// See the [module docs](super).
///
/// Clones share the configuration and the HTTP transport.
#[derive(Clone)]
pub struct OpenAiChatModel {
    inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) target: HttpTarget,
    pub(super) params: GenerationParams,
    pub(super) options: Options,
}

impl OpenAiChatModel {
    /// A builder for `model` (`gpt-4o-mini`, or the name a compatible server knows).
    pub fn builder(model: impl Into<String>) -> OpenAiChatModelBuilder {
        OpenAiChatModelBuilder::new(model.into())
    }

    pub(super) fn from_inner(inner: Arc<Inner>) -> Self {
        Self { inner }
    }

    /// The URL requests go to (`{base_url}/chat/completions`).
    pub fn endpoint(&self) -> &str {
        &self.inner.target.endpoint
    }
}

impl fmt::Debug for OpenAiChatModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiChatModel")
            .field("model", &self.inner.target.model)
            .field("endpoint", &self.inner.target.endpoint)
            .field("stream", &self.inner.options.stream)
            .finish_non_exhaustive()
    }
}

impl ChatModel for OpenAiChatModel {
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
                    |names| OpenAiStream::new(names, started),
                    |names, body| complete_response(names, body, started),
                )
                .await
        })
    }
}
