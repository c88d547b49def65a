//! [`Agent`]: reply, stream a reply, observe, and read the state.

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use futures_core::Stream;
use serde::de::DeserializeOwned;
use tower::ServiceExt;
use towerscope_core::{
    AgentContext, AgentError, CompressRequest, ContextConfig, EventKinds, EventStream, HintBlock, Id, Msg,
    PermissionMode, Position, ReplyInput, ReplyItem, ReplyRequest, StructuredSchema,
};

use crate::builder::AgentBuilder;
use crate::emit::{EventsRead, LayersRead};
use crate::reply::ReactLoop;
use crate::runtime::Runtime;
use crate::state::AgentState;

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
    pub(crate) runtime: Arc<Runtime>,
    pub(crate) reply: Position<ReactLoop, ReplyRequest, EventStream>,
    pub(crate) busy: Arc<AtomicBool>,
    /// The session, when the agent has one (see [`Agent::load_session`]).
    pub(crate) session: Option<Arc<crate::session::bound::Bound>>,
    /// The events the layers on `on_reply` and `on_reasoning` read (see the `emit` module): a
    /// reply builds these and what its caller reads.
    pub(crate) layers_read: LayersRead,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.runtime.name)
            .field("model", &self.runtime.model.model_name())
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
        &self.runtime.name
    }

    /// The session id (stable across replies).
    pub fn session_id(&self) -> Id {
        self.runtime.lock_state().session_id.clone()
    }

    /// A copy of the agent's state (serializable: save it, and build a new agent from it).
    pub fn state(&self) -> AgentState {
        self.runtime.lock_state().clone()
    }

    /// The conversation: a snapshot of the state's context, shared with the state (a copy of
    /// pointers, whatever its length; what the agent adds later is not in it). Cheaper than
    /// [`state`](Self::state) when only the messages are read.
    pub fn context(&self) -> towerscope_core::Messages {
        self.runtime.lock_state().context.clone()
    }

    /// What the agent's parked reply waits for: the calls waiting for the user's confirmation
    /// and those waiting for a result from outside, with the reply's id; `None` when no reply
    /// is parked. The `REQUIRE_USER_CONFIRM` and `REQUIRE_EXTERNAL_EXECUTION` events name a call
    /// when the agent first decides it waits, so a resume that answers one of a turn's calls
    /// and parks again on another emits neither: a server that tells its client what to
    /// answer reads this when a reply ends without its `REPLY_END`.
    ///
    /// ```
    /// # use towerscope_agent::Agent;
    /// # use towerscope_models::{ScriptedModel, ScriptedResponse};
    /// let agent = Agent::builder("assistant")
    ///     .model(ScriptedModel::new("m", [ScriptedResponse::text("Hi!")]))
    ///     .build()?;
    /// assert_eq!(agent.waiting_calls(), None, "nothing parked");
    /// # Ok::<(), towerscope_core::AgentError>(())
    /// ```
    pub fn waiting_calls(&self) -> Option<crate::WaitingCalls> {
        self.runtime.lock_state().waiting_calls()
    }

    /// Interrupts the running reply, as the reference does when its reply task is cancelled:
    /// the loop stops at its current await point (a model call, a tool, a middleware), the
    /// stream closes the tool calls left open (`TOOL_RESULT_END` interrupted), emits
    /// `REPLY_END(interrupted)` and ends with the interruption message. Returns whether a reply
    /// was running. A reply that has decided its end (its `REPLY_END` or final message is on
    /// its way: a consumer that interrupts when it sees `REPLY_END`) ends as it decided; the
    /// interrupt then changes nothing. A parked reply (waiting for the user) is interrupted by
    /// replying with a `UserInterruptEvent` instead.
    pub fn interrupt(&self) -> bool {
        self.runtime.interrupt.trigger_if_busy(&self.busy)
    }

    /// Replaces the agent's state (a saved one, or a fresh [`AgentState::new`]). Fails while a
    /// reply is in progress. An agent with a session keeps the session's id, and its next reply
    /// (or [`load_session`](Self::load_session)) keeps this state, and its next save stores it
    /// over the session, whatever the session holds for an agent that never loaded it, or if
    /// the session is gone; unless another conversation was stored since this agent last
    /// loaded or saved (that conversation is then loaded).
    pub fn load_state(&self, state: AgentState) -> Result<(), AgentError> {
        let mut held = self.runtime.lock_state();
        // Read under the state lock (see `observe`): a reply starting now cannot have changed
        // the state yet, and one that started before is seen.
        if self.busy.load(Ordering::Acquire) {
            return Err(AgentError::State(
                "cannot load a state while the agent is replying; wait for the reply to finish".to_owned(),
            ));
        }
        let replaced = std::mem::replace(&mut *held, state);
        if let Some(session) = &self.session {
            // The session's conversation, replaced: kept by the next reply and saved by it.
            held.session_id = session.session_id();
            session.state_replaced(crate::session::bound::Conversation::of(&replaced));
        }
        Ok(())
    }

    /// Loads the agent's session from its store now, as its next reply would (see
    /// [`crate::session`]), so that the conversation can be read with [`state`](Self::state)
    /// before a reply: a server checking whether a request was sent twice, a page showing the
    /// history. The next reply still reads the session from the store (a second read), and
    /// applies it only if another process saved in between. Without a session, nothing happens. Fails while the agent is busy (a
    /// reply, or [`compress_context`](Self::compress_context)), and with the store's error
    /// when it cannot be read (the state is then left as it was).
    ///
    /// ```
    /// use towerscope_agent::Agent;
    /// use towerscope_agent::session::JsonFileStore;
    /// use towerscope_core::Msg;
    /// use towerscope_models::{ScriptedModel, ScriptedResponse};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), towerscope_core::AgentError> {
    /// # let dir = std::env::temp_dir().join(format!("towerscope-doc-load-session-{}", std::process::id()));
    /// let store = JsonFileStore::new(&dir);
    /// let model = ScriptedModel::cycle("m", [ScriptedResponse::text("Hello!")]);
    /// let agent = |model: &ScriptedModel| Agent::builder("assistant").model(model.clone()).session(store.clone(), "", "s1").build();
    /// agent(&model)?.reply(Msg::user("user", "Hi")).await?;
    ///
    /// // Another request: a new agent on the same session sees the conversation before replying.
    /// let next = agent(&model)?;
    /// assert!(next.state().context.is_empty());
    /// next.load_session().await?;
    /// assert_eq!(next.state().context.len(), 2);
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// # Ok(()) }
    /// ```
    pub async fn load_session(&self) -> Result<(), AgentError> {
        let Some(session) = &self.session else {
            return Ok(());
        };
        if !self.runtime.interrupt.begin(&self.busy) {
            return Err(AgentError::State(
                "cannot load the session while the agent is replying or compressing its context; the reply loads it \
                 itself"
                    .to_owned(),
            ));
        }
        let _busy = BusyGuard {
            busy: Arc::clone(&self.busy),
            runtime: Arc::clone(&self.runtime),
        };
        Arc::clone(session).load().await
    }

    /// Runs the `on_compress_context` position now, as the reference's `compress_context`: with
    /// `config` (or the agent's own [`ContextConfig`], set with
    /// [`AgentBuilder::context`](crate::AgentBuilder::context); with neither, nothing happens),
    /// the context is compressed if it is over the trigger; `instructions` guide the summary.
    /// Fails while a reply is in progress (a reply compresses before each round itself). The
    /// agent is busy while it compresses: a reply, `observe` or `load_state` meanwhile fails as
    /// during a reply (the summary's model call may take seconds, and both would rewrite the
    /// context), `observe_when_free` waits for the end, and [`interrupt`](Self::interrupt)
    /// stops it with [`AgentError::Interrupted`]: the summary is not applied (images the
    /// compression already replaced by placeholders stay replaced). An agent with a session
    /// loads it first, as a reply does, and saves the compressed context after (else the next
    /// reply, finding the stored conversation changed, would load the old one back).
    pub async fn compress_context(
        &self,
        config: Option<ContextConfig>,
        instructions: Option<HintBlock>,
    ) -> Result<(), AgentError> {
        if !self.runtime.interrupt.begin(&self.busy) {
            return Err(AgentError::State(
                "cannot compress the context while the agent is replying; the reply compresses before each round"
                    .to_owned(),
            ));
        }
        let _busy = BusyGuard {
            busy: Arc::clone(&self.busy),
            runtime: Arc::clone(&self.runtime),
        };
        if let Some(session) = &self.session {
            Arc::clone(session).load().await?;
        }
        let (session_id, reply_id) = {
            let state = self.runtime.lock_state();
            (state.session_id.clone(), state.reply_context.reply_id.clone())
        };
        let request = CompressRequest {
            ctx: AgentContext::new(Arc::clone(&self.runtime.name), session_id, reply_id),
            instructions,
            config: config.map(Arc::new),
        };
        // The agent is busy, so `interrupt` stops the compression (the summary replaces the
        // context only when it completes).
        let ctx = request.ctx.clone();
        let compress = std::pin::pin!(self.runtime.positions.compress.clone().oneshot(request));
        let interrupted = self.runtime.interrupt.requested_unshielded();
        match crate::interrupt::Unless::new(&self.runtime.interrupt, compress, interrupted).await {
            futures_util::future::Either::Left(done) => done?,
            futures_util::future::Either::Right(()) => {
                // Before the work in flight is dropped: layers that see their call dropped
                // (tracing) tell an interruption from an abandoned call.
                ctx.mark_interrupted();
                return Err(AgentError::Interrupted);
            }
        }
        match &self.session {
            Some(session) => Arc::clone(session).save().await,
            None => Ok(()),
        }
    }

    /// Switches the permission mode (kept in the state; the next permission check uses it).
    pub fn set_permission_mode(&self, mode: PermissionMode) {
        self.runtime.lock_state().permission_mode = mode;
    }

    /// Adds messages to the context without replying, with the rules of [`reply`](Self::reply):
    /// system messages and messages holding tool calls, tool results or thinking are rejected;
    /// calls a dropped reply left open are closed first (so every call keeps one result); and
    /// while a reply runs or is parked for the user, observing fails with
    /// [`AgentError::State`] (the reference raises too) and the context is unchanged.
    pub fn observe(&self, msgs: impl IntoIterator<Item = Msg>) -> Result<(), AgentError> {
        crate::observe::observe_now(&self.runtime, &self.busy, msgs.into_iter().collect())
    }

    /// Observes `msgs` now if the agent is free, or as soon as it is: when the running reply's
    /// stream ends or is dropped, or, while a reply is parked for the user, when the reply
    /// resuming it ends. Messages posted while the agent is busy are observed in the order
    /// they were posted, once, with the observe hooks; nothing is lost.
    ///
    /// Returns whether the messages were observed now (`false`: they wait). Fails at once for
    /// messages [`observe`](Self::observe) would reject by its input rules; an observe hook
    /// that fails when the messages are delivered later rejects them as `observe` would, with
    /// a warning in the log. Each post is delivered apart (its messages together, through the
    /// hooks once): a post a hook rejects takes no other post with it.
    ///
    /// This is how a hub delivers a broadcast to a participant that is replying.
    pub fn observe_when_free(&self, msgs: impl IntoIterator<Item = Msg>) -> Result<bool, AgentError> {
        crate::observe::observe_when_free(&self.runtime, &self.busy, msgs.into_iter().collect())
    }

    /// How many messages posted with [`observe_when_free`](Self::observe_when_free) wait for
    /// the agent to be free.
    pub fn pending_observations(&self) -> usize {
        self.runtime.mailbox.len()
    }

    /// The middleware of type `T` installed with
    /// [`AgentBuilder::middleware`](crate::AgentBuilder::middleware) (the first, if several):
    /// a handle shared with the installed one, such as the hooks registry or a hub's
    /// broadcaster, found from the agent alone.
    pub fn middleware<T: towerscope_core::Middleware>(&self) -> Option<&T> {
        self.runtime.installed.iter().find_map(|m| m.downcast_ref::<T>())
    }

    /// Streams a reply: `REPLY_START`, the events of each round, `REPLY_END`, then the final
    /// [`Msg`] as the last item.
    pub fn reply_stream(&self, input: impl Into<ReplyInput>) -> ReplyStream {
        self.start(input.into(), None, EventKinds::ALL)
    }

    /// Streams a reply that must produce structured output of the given schema.
    pub fn reply_stream_structured(&self, input: impl Into<ReplyInput>, schema: StructuredSchema) -> ReplyStream {
        self.start(input.into(), Some(Arc::new(schema)), EventKinds::ALL)
    }

    /// Replies and returns the final message.
    ///
    /// The caller reads no event, so the reply builds only the kinds the layers on `on_reply`
    /// and `on_reasoning` read (none when no layer is installed there, or when their
    /// middlewares say so with
    /// [`Middleware::reads_events`](towerscope_core::Middleware::reads_events)): this costs
    /// less than reading [`reply_stream`](Self::reply_stream) to its end.
    ///
    /// The reply starts when this is called, as with [`reply_stream`](Self::reply_stream), and
    /// runs while the returned [`ReplyFuture`] is polled; dropping the future stops it.
    pub fn reply(&self, input: impl Into<ReplyInput>) -> ReplyFuture {
        ReplyFuture::new(self.start(input.into(), None, EventKinds::NONE))
    }

    /// Replies with structured output of type `T`: the model must call the
    /// `GenerateStructuredOutput` tool with arguments matching `T`'s schema. Returns the final
    /// message and the typed output.
    pub async fn reply_structured<T>(&self, input: impl Into<ReplyInput>) -> Result<(Msg, T), AgentError>
    where
        T: schemars::JsonSchema + DeserializeOwned,
    {
        let schema = crate::structured::schema_for::<T>();
        let msg = ReplyFuture::new(self.start(input.into(), Some(Arc::new(schema)), EventKinds::NONE)).await?;
        let value = structured_value::<T>(&msg)?;
        Ok((msg, value))
    }

    /// Starts a reply whose caller reads the events `caller_reads`.
    fn start(&self, input: ReplyInput, schema: Option<Arc<StructuredSchema>>, caller_reads: EventKinds) -> ReplyStream {
        // A tool's arguments are an object, and providers require its schema's root to be typed
        // so: any other root (a `Vec`, a number, an enum's `oneOf`) could never be given as
        // valid arguments (the reply would spend every round on it) or is refused by the
        // provider. A newtype struct's root `$ref` was inlined by `schema_for`.
        if let Some(schema) = &schema
            && !crate::structured::is_object_root(&schema.schema)
        {
            return ReplyStream::failed(AgentError::validation(format!(
                "the structured output '{}' must be a JSON object (a struct, or a type wrapped in one): its schema's root is not typed \"object\"",
                schema.name
            )));
        }
        // Marked busy before the reply first takes the state lock: `observe` and `load_state`
        // read the flag under that lock, so they either see this reply or finish before it.
        if !self.runtime.interrupt.begin(&self.busy) {
            return ReplyStream::failed(AgentError::State(
                "the agent is already replying (or compressing its context); wait for the current reply to finish \
                 or drop its stream"
                    .to_owned(),
            ));
        }
        let guard = BusyGuard {
            busy: Arc::clone(&self.busy),
            runtime: Arc::clone(&self.runtime),
        };
        let (session_id, reply_id) = {
            let state = self.runtime.lock_state();
            let reply_id = if input.is_resume() {
                state.reply_context.reply_id.clone()
            } else {
                Id::new()
            };
            (state.session_id.clone(), reply_id)
        };
        let ctx = AgentContext::new(Arc::clone(&self.runtime.name), session_id, reply_id);
        let layers = self.layers_read;
        if caller_reads != EventKinds::ALL || layers.installed {
            ctx.insert(EventsRead::new(caller_reads, layers));
        }
        let request = ReplyRequest {
            ctx,
            input,
            structured_schema: schema,
        };
        let opening = Box::pin(self.reply.clone().oneshot(request));
        ReplyStream {
            state: StreamState::Opening(opening),
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

/// The future of [`Agent::reply`]: reads the reply's stream to its end and resolves to the final
/// message (or the first error).
///
/// A named future rather than an `async fn`'s: it holds only the stream and the final message,
/// not the input the reply started from, and it can be stored or spawned (it borrows nothing
/// from the agent).
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use towerscope_agent::{Agent, ReplyFuture};
/// use towerscope_core::Msg;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
///
/// let model = ScriptedModel::new("scripted", [ScriptedResponse::text("Hi!")]);
/// let agent = Agent::builder("assistant").model(model).build()?;
/// let reply: ReplyFuture = agent.reply(Msg::user("user", "Hello"));
/// let answer = tokio::spawn(reply).await??;
/// assert_eq!(answer.text_content().as_deref(), Some("Hi!"));
/// # Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
/// # }).unwrap();
/// ```
#[must_use = "a reply runs only while its future is polled"]
pub struct ReplyFuture {
    stream: ReplyStream,
    /// Boxed: the final message comes last, and every reply in flight holds this future.
    last: Option<Box<Msg>>,
}

impl ReplyFuture {
    fn new(stream: ReplyStream) -> Self {
        Self { stream, last: None }
    }
}

impl fmt::Debug for ReplyFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplyFuture").finish_non_exhaustive()
    }
}

impl Future for ReplyFuture {
    type Output = Result<Msg, AgentError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        loop {
            match std::task::ready!(Pin::new(&mut this.stream).poll_next(cx)) {
                Some(Ok(ReplyItem::Final(msg))) => this.last = Some(Box::new(msg)),
                Some(Ok(ReplyItem::Event(_))) => {}
                Some(Err(e)) => return Poll::Ready(Err(e)),
                None => {
                    return Poll::Ready(
                        this.last
                            .take()
                            .map(|msg| *msg)
                            .ok_or_else(|| AgentError::State("Agent did not produce a final message.".to_owned())),
                    );
                }
            }
        }
    }
}

/// Marks the agent busy while a reply's stream lives; when it ends, the agent is free and what
/// was posted to it meanwhile is observed.
struct BusyGuard {
    busy: Arc<AtomicBool>,
    runtime: Arc<Runtime>,
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.busy.store(false, Ordering::Release);
        let delivered =
            std::panic::catch_unwind(AssertUnwindSafe(|| crate::observe::deliver(&self.runtime, &self.busy)));
        match delivered {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(
                agent = %self.runtime.name,
                error = %e,
                "messages posted with observe_when_free were rejected when delivered"
            ),
            Err(_) => tracing::warn!(
                agent = %self.runtime.name,
                "an observe hook panicked while delivering messages posted with observe_when_free"
            ),
        }
    }
}

type Opening = Pin<Box<dyn Future<Output = Result<EventStream, AgentError>> + Send>>;

enum StreamState {
    Opening(Opening),
    Streaming(EventStream),
    /// Boxed: a stream that failed to start is rare, and every reply in flight holds the state.
    Failed(Option<Box<AgentError>>),
    Done,
}

/// The stream of one reply: events, then the final [`Msg`].
///
/// Dropping it stops the reply at its next await point; tool calls it left without a result
/// are closed as interrupted when the next reply starts.
///
/// A panic in a middleware (on any position but `on_acting` and `on_check_permission`, where
/// it fails only its tool call) ends the stream with [`AgentError::Middleware`] naming the
/// panic, instead of unwinding into the caller; the calls it left open are closed as
/// interrupted when the next reply starts.
pub struct ReplyStream {
    state: StreamState,
    _busy: Option<BusyGuard>,
}

impl ReplyStream {
    fn failed(err: AgentError) -> Self {
        Self {
            state: StreamState::Failed(Some(Box::new(err))),
            _busy: None,
        }
    }

    fn poll_inner(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<ReplyItem, AgentError>>> {
        loop {
            match &mut self.state {
                StreamState::Opening(fut) => match fut.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(stream)) => self.state = StreamState::Streaming(stream),
                    Poll::Ready(Err(e)) => {
                        self.finish();
                        return Poll::Ready(Some(Err(e)));
                    }
                },
                StreamState::Streaming(stream) => {
                    return match stream.as_mut().poll_next(cx) {
                        Poll::Ready(None) => {
                            self.finish();
                            Poll::Ready(None)
                        }
                        other => other,
                    };
                }
                StreamState::Failed(err) => {
                    let err = err.take();
                    self.state = StreamState::Done;
                    return Poll::Ready(err.map(|e| Err(*e)));
                }
                StreamState::Done => return Poll::Ready(None),
            }
        }
    }

    fn finish(&mut self) {
        self.state = StreamState::Done;
        self._busy = None;
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
        let this = &mut *self;
        match std::panic::catch_unwind(AssertUnwindSafe(|| this.poll_inner(cx))) {
            Ok(poll) => poll,
            Err(payload) => {
                // The reply's future is poisoned: drop it (a panic while dropping it is
                // contained too) and end with the panic as an error.
                let state = std::mem::replace(&mut this.state, StreamState::Done);
                let _ = std::panic::catch_unwind(AssertUnwindSafe(move || drop(state)));
                this.finish();
                let what = crate::acting::panic_text("a position of the reply", &*payload);
                Poll::Ready(Some(Err(AgentError::Middleware(what))))
            }
        }
    }
}
