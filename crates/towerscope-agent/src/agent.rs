//! [`Agent`]: reply, stream a reply, observe, and read the state.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use futures_core::Stream;
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use tower::ServiceExt;
use towerscope_core::{
    ActingRequest, AgentContext, AgentError, AgentEvent, CompressRequest, EventStream, ModelCallRequest, ModelOutput,
    ModelRef, Msg, ObserveHook, PermissionDecision, PermissionRequest, Position, ReplyInput, ReplyItem, ReplyRequest,
    StructuredSchema, SystemPromptFold, ToolStream,
};

use crate::builder::{AgentBuilder, ReactConfig};
use crate::reply::{ReplyEndSeen, ReplyImpl};
use crate::services::{ActingImpl, CompressImpl, ModelCallImpl, PermissionImpl};
use crate::state::AgentState;
use crate::toolkit::Toolkit;

/// What every position's implementation shares.
pub(crate) struct Shared {
    pub(crate) name: Arc<str>,
    pub(crate) system_prompt: String,
    pub(crate) model: ModelRef,
    pub(crate) toolkit: Arc<Toolkit>,
    pub(crate) config: ReactConfig,
    pub(crate) state: Arc<Mutex<AgentState>>,
    pub(crate) system_prompt_fold: SystemPromptFold,
    pub(crate) interrupt: crate::interrupt::Interrupt,
    pub(crate) observe_hooks: Vec<Arc<dyn ObserveHook>>,
    pub(crate) model_call: Position<ModelCallImpl, ModelCallRequest, ModelOutput>,
    pub(crate) acting: Position<ActingImpl, ActingRequest, ToolStream>,
    pub(crate) permission: Position<PermissionImpl, PermissionRequest, PermissionDecision>,
    pub(crate) compress: Position<CompressImpl, CompressRequest, ()>,
}

impl Shared {
    /// Locks the state. Never held across an `.await`.
    pub(crate) fn lock_state(&self) -> MutexGuard<'_, AgentState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The model input: the system prompt (after the fold), the summary, the context.
    pub(crate) async fn model_input(&self, ctx: &AgentContext) -> Result<Arc<[Msg]>, AgentError> {
        let prompt = self.system_prompt_fold.apply(ctx, self.system_prompt.clone()).await?;
        let state = self.lock_state();
        let mut messages = Vec::with_capacity(state.context.len() + 2);
        messages.push(Msg::system("system", prompt));
        if !state.summary.is_empty() {
            messages.push(Msg::user("user", state.summary.clone()));
        }
        messages.extend(state.context.iter().cloned());
        Ok(Arc::from(messages))
    }
}

/// A ReAct agent whose every step passes through the seven positions.
///
/// Build one with [`Agent::builder`]. Cloning an agent gives another handle on the same agent
/// (same state). One reply runs at a time: starting a second while one is in progress fails
/// with [`AgentError::State`].
///
/// # Example
///
/// ```
/// use towerscope_agent::Agent;
/// use towerscope_core::Msg;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), towerscope_core::AgentError> {
/// let model = ScriptedModel::new("scripted", [ScriptedResponse::text("Hello!")]);
/// let agent = Agent::builder("assistant").system_prompt("You are helpful.").model(model).build()?;
/// let answer = agent.reply(Msg::user("user", "Hi")).await?;
/// assert_eq!(answer.text_content().as_deref(), Some("Hello!"));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Agent {
    pub(crate) shared: Arc<Shared>,
    pub(crate) reply: Position<ReplyImpl, ReplyRequest, EventStream>,
    pub(crate) busy: Arc<AtomicBool>,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.shared.name)
            .field("model", &self.shared.model.model_name())
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// Starts building an agent named `name`.
    pub fn builder(name: impl Into<String>) -> AgentBuilder {
        AgentBuilder::new(name)
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The session id (stable across replies).
    pub fn session_id(&self) -> String {
        self.shared.lock_state().session_id.clone()
    }

    /// A copy of the agent's state (serializable: save it, and build a new agent from it).
    pub fn state(&self) -> AgentState {
        self.shared.lock_state().clone()
    }

    /// Interrupts the running reply, as the reference does when its reply task is cancelled:
    /// the loop stops at its current await point (a model call, a tool, a middleware), the
    /// stream closes the tool calls left open (`TOOL_RESULT_END` interrupted), emits
    /// `REPLY_END(interrupted)` and ends with the interruption message. Returns whether a reply
    /// was running. A parked reply (waiting for the user) is interrupted by replying with a
    /// `UserInterruptEvent` instead.
    pub fn interrupt(&self) -> bool {
        if !self.busy.load(Ordering::Acquire) {
            return false;
        }
        self.shared.interrupt.trigger();
        true
    }

    /// Replaces the agent's state (a saved one, or a fresh [`AgentState::new`]). Fails while a
    /// reply is in progress.
    pub fn load_state(&self, state: AgentState) -> Result<(), AgentError> {
        if self.busy.load(Ordering::Acquire) {
            return Err(AgentError::State(
                "cannot load a state while the agent is replying; wait for the reply to finish".to_owned(),
            ));
        }
        *self.shared.lock_state() = state;
        Ok(())
    }

    /// Adds messages to the context without replying. Rejects system messages and messages
    /// holding tool calls, tool results or thinking, as the reference does.
    pub fn observe(&self, msgs: impl IntoIterator<Item = Msg>) -> Result<(), AgentError> {
        let mut msgs: Vec<Msg> = msgs.into_iter().collect();
        for hook in &self.shared.observe_hooks {
            msgs = hook.pre_observe(&self.shared.name, msgs)?;
        }
        for m in &msgs {
            crate::reply::validate_input(m)?;
        }
        self.shared.lock_state().context.extend(msgs.iter().cloned());
        for hook in &self.shared.observe_hooks {
            hook.post_observe(&self.shared.name, &msgs)?;
        }
        Ok(())
    }

    /// Streams a reply: `REPLY_START`, the events of each round, `REPLY_END`, then the final
    /// [`Msg`] as the last item.
    pub fn reply_stream(&self, input: impl Into<ReplyInput>) -> ReplyStream {
        self.start(input.into(), None)
    }

    /// Streams a reply that must produce structured output of the given schema.
    pub fn reply_stream_structured(&self, input: impl Into<ReplyInput>, schema: StructuredSchema) -> ReplyStream {
        self.start(input.into(), Some(Arc::new(schema)))
    }

    /// Replies and returns the final message.
    pub async fn reply(&self, input: impl Into<ReplyInput>) -> Result<Msg, AgentError> {
        last_msg(self.reply_stream(input)).await
    }

    /// Replies with structured output of type `T`: the model must call the
    /// `GenerateStructuredOutput` tool with arguments matching `T`'s schema. Returns the final
    /// message and the typed output.
    pub async fn reply_structured<T>(&self, input: impl Into<ReplyInput>) -> Result<(Msg, T), AgentError>
    where
        T: schemars::JsonSchema + DeserializeOwned,
    {
        let schema = crate::structured::schema_for::<T>();
        let msg = last_msg(self.reply_stream_structured(input, schema)).await?;
        let value = structured_value::<T>(&msg)?;
        Ok((msg, value))
    }

    fn start(&self, input: ReplyInput, schema: Option<Arc<StructuredSchema>>) -> ReplyStream {
        if self.busy.swap(true, Ordering::AcqRel) {
            return ReplyStream::failed(AgentError::State(
                "the agent is already replying; wait for the current reply to finish or drop its stream".to_owned(),
            ));
        }
        let guard = BusyGuard(Arc::clone(&self.busy));
        self.shared.interrupt.reset();
        let (session_id, reply_id) = {
            let state = self.shared.lock_state();
            let reply_id = if input.is_resume() {
                state.reply_context.reply_id.clone()
            } else {
                towerscope_core::id::new_id()
            };
            (state.session_id.clone(), reply_id)
        };
        let ctx = AgentContext::new(Arc::clone(&self.shared.name), session_id, reply_id);
        let seen = ReplyEndSeen::default();
        ctx.insert(seen.clone());
        let request = ReplyRequest {
            ctx,
            input,
            structured_schema: schema,
        };
        let opening = Box::pin(self.reply.clone().oneshot(request));
        ReplyStream {
            state: StreamState::Opening(opening),
            seen,
            _busy: Some(guard),
        }
    }
}

/// The typed structured output of a final message.
pub fn structured_value<T: DeserializeOwned>(msg: &Msg) -> Result<T, AgentError> {
    let Some(output) = &msg.structured_output else {
        return Err(AgentError::validation(format!(
            "the reply produced no structured output (finished: {:?}); the model never called GenerateStructuredOutput with valid arguments",
            msg.finished_reason
        )));
    };
    serde_json::from_value(serde_json::Value::Object(output.clone()))
        .map_err(|e| AgentError::decode("structured output", e))
}

async fn last_msg(mut stream: ReplyStream) -> Result<Msg, AgentError> {
    let mut last = None;
    while let Some(item) = stream.next().await {
        if let ReplyItem::Final(m) = item? {
            last = Some(m);
        }
    }
    last.ok_or_else(|| AgentError::State("Agent did not produce a final message.".to_owned()))
}

struct BusyGuard(Arc<AtomicBool>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

type Opening = Pin<Box<dyn Future<Output = Result<EventStream, AgentError>> + Send>>;

enum StreamState {
    Opening(Opening),
    Streaming(EventStream),
    Failed(Option<AgentError>),
    Done,
}

/// The stream of one reply: events, then the final [`Msg`].
///
/// Dropping it stops the reply at its next await point; tool calls it left without a result
/// are closed as interrupted when the next reply starts.
pub struct ReplyStream {
    state: StreamState,
    seen: ReplyEndSeen,
    _busy: Option<BusyGuard>,
}

impl ReplyStream {
    fn failed(err: AgentError) -> Self {
        Self {
            state: StreamState::Failed(Some(err)),
            seen: ReplyEndSeen::default(),
            _busy: None,
        }
    }
}

impl fmt::Debug for ReplyStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplyStream").finish_non_exhaustive()
    }
}

impl Stream for ReplyStream {
    type Item = Result<ReplyItem, AgentError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            match &mut self.state {
                StreamState::Opening(fut) => match fut.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(stream)) => self.state = StreamState::Streaming(stream),
                    Poll::Ready(Err(e)) => {
                        self.state = StreamState::Done;
                        self._busy = None;
                        return Poll::Ready(Some(Err(e)));
                    }
                },
                StreamState::Streaming(stream) => {
                    return match stream.as_mut().poll_next(cx) {
                        Poll::Pending => Poll::Pending,
                        Poll::Ready(None) => {
                            self.state = StreamState::Done;
                            self._busy = None;
                            Poll::Ready(None)
                        }
                        Poll::Ready(Some(item)) => {
                            if let Ok(ReplyItem::Event(AgentEvent::ReplyEnd(_))) = &item {
                                self.seen.0.store(true, Ordering::Release);
                            }
                            Poll::Ready(Some(item))
                        }
                    };
                }
                StreamState::Failed(err) => {
                    let err = err.take();
                    self.state = StreamState::Done;
                    return Poll::Ready(err.map(Err));
                }
                StreamState::Done => return Poll::Ready(None),
            }
        }
    }
}
