//! [`ScriptedModel`]: a real implementation of the model position that replays a script.
//!
//! Each call takes the next [`ScriptedResponse`] of the script: text, thinking, tool calls and
//! data blocks, with usage, optional delays, and failures (on the call or in the middle of the
//! stream). The model streams (the default) or answers whole, and records every request, so a
//! test can assert what the model saw: the messages after the system-prompt fold, the tool
//! schemas, the tool choice.
//!
//! When the script runs out the call fails with a clear error, unless the model was made with
//! [`ScriptedModel::cycle`], which replays the script forever (examples and benchmarks).
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use futures_util::StreamExt;
//! use towerscope_core::{AgentContext, ChatModel, ModelCallRequest, ModelOutput, Msg};
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let model = ScriptedModel::new("scripted", [ScriptedResponse::text("Hello there")]);
//! let request = ModelCallRequest {
//!     ctx: AgentContext::new("a", "s", "r"),
//!     model: Arc::new(model.clone()),
//!     messages: vec![Msg::user("user", "hi")].into(),
//!     tools: Arc::from(vec![]),
//!     tool_choice: None,
//! };
//! let ModelOutput::Stream(mut stream) = model.call(request).await? else { unreachable!() };
//! let mut chunks = Vec::new();
//! while let Some(chunk) = stream.next().await {
//!     chunks.push(chunk?);
//! }
//! assert!(chunks.last().is_some_and(|c| c.is_last));
//! assert_eq!(model.requests()[0].messages[0].text_content().as_deref(), Some("hi"));
//! # Ok(()) }
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream;
use towerscope_core::{
    AgentError, ChatModel, ChatResponse, GenerationParams, Id, Messages, ModelCallRequest, ModelFuture, ModelOutput,
    ToolChoice, ToolSchema,
};

/// What a [`ScriptedModel`] received on one call.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// The model name the request was addressed to.
    pub model: String,
    /// The messages, system prompt first.
    pub messages: Messages,
    /// The tool schemas offered.
    pub tools: Arc<[ToolSchema]>,
    /// The tool choice.
    pub tool_choice: Option<ToolChoice>,
    /// The reply the call belonged to.
    pub reply_id: Id,
    /// The ReAct iteration of the call.
    pub iteration: u32,
}

impl RecordedRequest {
    /// The names of the tools offered.
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }

    /// The system prompt (text of the first message, if it is a system message).
    pub fn system_prompt(&self) -> Option<String> {
        self.messages
            .first()
            .filter(|m| m.role == towerscope_core::Role::System)
            .and_then(|m| m.text_content())
    }
}

#[derive(Debug)]
struct Script {
    queue: VecDeque<ScriptedResponse>,
    /// The responses a cycling model replays, and the next one's index.
    cycle: Option<(Arc<[ScriptedResponse]>, usize)>,
    requests: Vec<RecordedRequest>,
    record: bool,
    calls: usize,
}

/// A chat model that replays a script. See the [module docs](self).
///
/// Clones share the script and the recorded requests, so a test can keep one clone and hand
/// another to the agent.
#[derive(Clone)]
pub struct ScriptedModel {
    name: Arc<str>,
    provider: Arc<str>,
    stream: bool,
    params: Arc<GenerationParams>,
    script: Arc<Mutex<Script>>,
    context_size: u64,
    responder: Option<Responder>,
}

/// The default provider name and parameters, one copy per process: a test or a service may
/// build a scripted model per agent.
fn shared_defaults() -> &'static (Arc<str>, Arc<GenerationParams>) {
    static DEFAULTS: std::sync::OnceLock<(Arc<str>, Arc<GenerationParams>)> = std::sync::OnceLock::new();
    DEFAULTS.get_or_init(|| (Arc::from("scripted"), Arc::new(GenerationParams::new())))
}

/// A function answering some requests itself (see [`ScriptedModel::respond_with`]).
type Responder = Arc<dyn Fn(&ModelCallRequest) -> Option<ScriptedResponse> + Send + Sync>;

impl ScriptedModel {
    /// A streaming model that answers with `responses`, in order, once each.
    pub fn new(name: impl Into<Arc<str>>, responses: impl IntoIterator<Item = ScriptedResponse>) -> Self {
        Self {
            name: name.into(),
            provider: shared_defaults().0.clone(),
            stream: true,
            params: Arc::clone(&shared_defaults().1),
            script: Arc::new(Mutex::new(Script {
                queue: responses.into_iter().map(ScriptedResponse::compact).collect(),
                cycle: None,
                requests: Vec::new(),
                record: true,
                calls: 0,
            })),
            context_size: 32_768,
            responder: None,
        }
    }

    /// A model that replays `responses` in a loop, forever. Requests are not recorded.
    pub fn cycle(name: impl Into<Arc<str>>, responses: impl IntoIterator<Item = ScriptedResponse>) -> Self {
        let model = Self::new(name, []);
        {
            let mut s = model.lock();
            s.cycle = Some((responses.into_iter().map(ScriptedResponse::compact).collect(), 0));
            s.record = false;
        }
        model
    }

    /// Whether responses stream (default) or come whole.
    pub fn streaming(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// The provider name reported to tracing (default `scripted`).
    pub fn provider_name(mut self, provider: impl Into<Arc<str>>) -> Self {
        self.provider = provider.into();
        self
    }

    /// The generation parameters reported to tracing.
    pub fn parameters(mut self, params: GenerationParams) -> Self {
        self.params = Arc::new(params);
        self
    }

    /// The context size the model reports (default 32 768), for context compression.
    pub fn context_size(mut self, tokens: u64) -> Self {
        self.context_size = tokens;
        self
    }

    /// Answers the requests `respond` recognises with what it returns, before the script is
    /// consulted (a `None` falls through to the script). Useful when a request's timing is not
    /// known in advance, as the summary request of a context compression:
    ///
    /// ```
    /// use towerscope_models::{ScriptedModel, ScriptedResponse};
    ///
    /// let model = ScriptedModel::new("m", [ScriptedResponse::text("from the script")]).respond_with(|req| {
    ///     req.tools.iter().any(|t| t.name == "generate_structured_output")
    ///         .then(|| ScriptedResponse::tool_call("s1", "generate_structured_output", "{}"))
    /// });
    /// # let _ = model;
    /// ```
    pub fn respond_with(
        mut self,
        respond: impl Fn(&ModelCallRequest) -> Option<ScriptedResponse> + Send + Sync + 'static,
    ) -> Self {
        self.responder = Some(Arc::new(respond));
        self
    }

    /// Whether to record requests (on by default, off for [`cycle`](Self::cycle)).
    pub fn record(self, record: bool) -> Self {
        self.lock().record = record;
        self
    }

    /// Appends responses to the script.
    pub fn push(&self, response: ScriptedResponse) {
        self.lock().queue.push_back(response.compact());
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    /// How many calls were made.
    pub fn calls(&self) -> usize {
        self.lock().calls
    }

    /// How many scripted responses are left (for a cycling model: of the current loop).
    pub fn remaining(&self) -> usize {
        self.lock().queue.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn next_response(&self, request: &ModelCallRequest) -> Result<Picked, AgentError> {
        let mut s = self.lock();
        s.calls += 1;
        let call = s.calls;
        if s.record {
            let recorded = RecordedRequest {
                model: request.model.model_name().to_owned(),
                messages: request.messages.clone(),
                tools: Arc::clone(&request.tools),
                tool_choice: request.tool_choice.clone(),
                reply_id: request.ctx.reply_id().clone(),
                iteration: request.ctx.iteration(),
            };
            s.requests.push(recorded);
        }
        if let Some(respond) = &self.responder {
            // Outside the lock: the responder may ask this model (a clone of it) what it was
            // sent. Without a responder, a call is counted, recorded and answered under one
            // lock, so concurrent calls' requests and responses stay in step.
            drop(s);
            if let Some(response) = respond(request) {
                return Ok(Picked::Owned(response));
            }
            s = self.lock();
        }
        if s.queue.is_empty()
            && let Some((cycle, next)) = &mut s.cycle
            && *next < cycle.len()
        {
            let picked = Picked::Cycled(Arc::clone(cycle), *next);
            *next = (*next + 1) % cycle.len();
            return Ok(picked);
        }
        s.queue.pop_front().map(Picked::Owned).ok_or_else(|| AgentError::Model {
            model: Some(self.name.to_string()),
            message: format!(
                "ScriptedModel script exhausted: call {call} has no scripted response; add more ScriptedResponse entries"
            ),
            retryable: false,
            source: None,
        })
    }
}

impl fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("name", &self.name)
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl ChatModel for ScriptedModel {
    fn model_name(&self) -> &str {
        &self.name
    }

    fn provider(&self) -> &str {
        &self.provider
    }

    fn parameters(&self) -> &GenerationParams {
        &self.params
    }

    fn context_size(&self) -> u64 {
        self.context_size
    }

    fn call(&self, request: ModelCallRequest) -> ModelFuture {
        // Picked now (the order of calls decides the answer), copied after the delay: like a
        // real model's, the answer takes no room while the call waits.
        let picked = match self.next_response(&request) {
            Ok(picked) => picked,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let stream_default = self.stream;
        Box::pin(async move {
            if let Some(delay) = picked.delay() {
                tokio::time::sleep(delay).await;
            }
            let response = picked.into_response();
            if let Some(err) = response.error {
                return Err(*err);
            }
            let streamed = match response.delivery {
                Delivery::Model => stream_default,
                Delivery::Whole => false,
                Delivery::Streamed => true,
            };
            if !streamed {
                return Ok(ModelOutput::Complete(response.complete()));
            }
            Ok(ModelOutput::Stream(into_stream(response)))
        })
    }
}

/// The response a call got: its own, or one of a cycling script's (copied when it is used).
enum Picked {
    Owned(ScriptedResponse),
    Cycled(Arc<[ScriptedResponse]>, usize),
}

impl Picked {
    fn response(&self) -> &ScriptedResponse {
        match self {
            Self::Owned(response) => response,
            Self::Cycled(cycle, i) => &cycle[*i],
        }
    }

    fn delay(&self) -> Option<Duration> {
        self.response().delay
    }

    fn into_response(self) -> ScriptedResponse {
        match self {
            Self::Owned(response) => response,
            Self::Cycled(cycle, i) => cycle[i].clone(),
        }
    }
}

fn into_stream(response: ScriptedResponse) -> towerscope_core::ChatStream {
    let mut items: Vec<Result<ChatResponse, AgentError>> = response.chunks().into_iter().map(Ok).collect();
    let chunk_delay = response.chunk_delay;
    if let Some((after, err)) = response.fail_after.as_deref().cloned() {
        items.truncate(after);
        items.push(Err(err));
    } else if response.final_chunk {
        items.push(Ok(response.complete()));
    }
    match chunk_delay {
        None => Box::pin(stream::iter(items)),
        Some(delay) => Box::pin(stream::iter(items).then(move |item| async move {
            tokio::time::sleep(delay).await;
            item
        })),
    }
}

mod response;

use response::Delivery;
pub use response::ScriptedResponse;
#[cfg(test)]
use response::split_words;

#[cfg(test)]
mod tests;
