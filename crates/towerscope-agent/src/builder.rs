//! [`AgentBuilder`]: name, system prompt, model, tools, configuration, and the middleware of
//! every position.

use std::any::Any;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use tower::Layer;
use tower::Service;

use towerscope_core::{
    ActingRequest, AgentError, ChatModel, CompressRequest, ContextConfig, ErasedService, EventStream, Middleware,
    ModelCallRequest, ModelOutput, ModelRef, Msg, PermissionDecision, PermissionMode, PermissionRequest,
    PositionStacks, ReasoningRequest, ReplyRequest, SystemPromptTransformer, ToolStream,
};

use crate::agent::Agent;
use crate::compress::{CompressShared, CompressTool, Compressor, EstimateCounter, TokenCounter, UsageCounter};
use crate::hint_config::HintConfig;
use crate::positions::{CallModel, DecidePermission, Positions, RunTool};
use crate::reasoning::ReasoningStep;
use crate::reply::ReactLoop;
use crate::runtime::{ReactConfig, Runtime};
use crate::session::SessionStore;
use crate::session::setup::SessionSetup;
use crate::state::AgentState;
use crate::toolkit::{CompiledSchema, Tool, Toolkit, ToolkitService};

macro_rules! position_method {
    ($(#[$doc:meta])* $method:ident, $field:ident, $req:ty, $resp:ty) => {
        $(#[$doc])*
        ///
        /// The first layer installed on a position is the outermost.
        pub fn $method<L>(mut self, layer: L) -> Self
        where
            L: Layer<ErasedService<$req, $resp>> + Send + Sync + 'static,
            L::Service: Service<$req, Response = $resp, Error = AgentError> + Clone + Send + Sync + 'static,
            <L::Service as Service<$req>>::Future: Send + 'static,
        {
            self.stacks.$field.push(layer);
            self
        }
    };
}

/// Builds an [`Agent`].
///
/// # Example
///
/// ```
/// use towerscope_agent::Agent;
/// use towerscope_core::{from_fn, ModelCallNext, ModelCallRequest, prompt_fn};
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
///
/// let agent = Agent::builder("assistant")
///     .system_prompt("You are helpful.")
///     .model(ScriptedModel::new("scripted", [ScriptedResponse::text("hi")]))
///     .max_iters(10)
///     .on_model_call(from_fn(|req: ModelCallRequest, next: ModelCallNext| next.run(req)))
///     .on_system_prompt(prompt_fn(|_ctx, p| async move { Ok(format!("{p}\nBe brief.")) }))
///     .build()?;
/// assert_eq!(agent.name(), "assistant");
/// # Ok::<(), towerscope_core::AgentError>(())
/// ```
pub struct AgentBuilder {
    name: String,
    system_prompt: String,
    model: Option<ModelRef>,
    toolkit: Arc<Toolkit>,
    config: ReactConfig,
    stacks: PositionStacks,
    state: Option<AgentState>,
    installed: Vec<Arc<dyn Any + Send + Sync>>,
    context: Option<ContextConfig>,
    counter: Option<Arc<dyn TokenCounter>>,
    /// `None`: the defaults, shared with every agent that keeps them.
    hints: Option<HintConfig>,
    permission_mode: Option<PermissionMode>,
    task_tools: bool,
    offloader: Option<Arc<dyn crate::compress::Offloader>>,
    /// What went wrong while building (reported by `build`).
    errors: Vec<String>,
    session: SessionSetup,
}

impl std::fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("name", &self.name)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AgentBuilder {
    pub(crate) fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            system_prompt: String::new(),
            model: None,
            toolkit: Arc::new(Toolkit::new()),
            config: ReactConfig::default(),
            stacks: PositionStacks::new(),
            state: None,
            installed: Vec::new(),
            context: None,
            counter: None,
            hints: None,
            permission_mode: None,
            task_tools: false,
            offloader: None,
            errors: Vec::new(),
            session: SessionSetup::default(),
        }
    }

    /// The system prompt (before the `on_system_prompt` fold).
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    /// The chat model.
    pub fn model(self, model: impl ChatModel) -> Self {
        self.model_ref(Arc::new(model))
    }

    /// A shared chat model.
    pub fn model_ref(mut self, model: ModelRef) -> Self {
        self.model = Some(model);
        self
    }

    /// Adds a tool to the basic group.
    ///
    /// A tool whose schema uses a JSON-Schema keyword the validator does not enforce is
    /// refused: [`build`](Self::build) then fails with [`AgentError::Validation`] naming the tool
    /// and the keyword (no panic).
    pub fn tool(mut self, tool: impl Tool) -> Self {
        if let Err(err) = Arc::make_mut(&mut self.toolkit).try_add(tool) {
            self.errors.push(err.to_string());
        }
        self
    }

    /// Uses `toolkit` (replacing the tools added so far).
    pub fn toolkit(mut self, toolkit: Toolkit) -> Self {
        self.toolkit = Arc::new(toolkit);
        self
    }

    /// Uses a toolkit shared with other agents (replacing the tools added so far): thousands of
    /// agents serving one kind of conversation hold one toolkit, not a copy each. Tools added
    /// after this copy the toolkit for this agent first.
    pub fn toolkit_ref(mut self, toolkit: Arc<Toolkit>) -> Self {
        self.toolkit = toolkit;
        self
    }

    /// Rounds before the forced final text round (default 50).
    pub fn max_iters(mut self, n: u32) -> Self {
        self.config.max_iters = n;
        self
    }

    /// Extra rounds for structured output past `max_iters` (default 5, must be > 0).
    pub fn structured_output_grace_iters(mut self, n: u32) -> Self {
        self.config.structured_output_grace_iters = n;
        self
    }

    /// The decision for tool calls no rule and no tool-specific check covers (default
    /// [`PermissionDecision::Allow`]; [`PermissionDecision::Ask`] confirms every call with the
    /// user).
    pub fn default_permission(mut self, decision: PermissionDecision) -> Self {
        self.config.default_permission = decision;
        self
    }

    /// Whether an interrupted reply's stream ends with `Err(AgentError::Interrupted)` after its
    /// closing events (default `false`; the reference's `interruption_raise_cancelled_error`).
    pub fn error_after_interrupt(mut self, error: bool) -> Self {
        self.config.error_after_interrupt = error;
        self
    }

    /// The whole configuration.
    pub fn config(mut self, config: ReactConfig) -> Self {
        self.config = config;
        self
    }

    /// Compresses the context as the reference does (see the [`compress`](crate::compress)
    /// module): without it the agent never counts tokens nor compresses. Checked by
    /// [`build`](Self::build).
    pub fn context(mut self, config: ContextConfig) -> Self {
        self.context = Some(config);
        self
    }

    /// The token counter of context compression (default [`UsageCounter`]: the model's
    /// reported usage of its last call plus the reference's estimate of what came after).
    pub fn token_counter(mut self, counter: impl TokenCounter) -> Self {
        self.counter = Some(Arc::new(counter));
        self
    }

    /// Where compression stores what it takes out of the context (the summarised messages, the
    /// images past `max_image_num`), so they can be read back; see
    /// [`compress::Offloader`](crate::compress::Offloader). Used only with a
    /// [`context`](Self::context) configuration.
    pub fn offloader(mut self, offloader: impl crate::compress::Offloader) -> Self {
        self.offloader = Some(Arc::new(offloader));
        self
    }

    /// Offers the model the reference's task tools (`TaskCreate`, `TaskGet`, `TaskList`,
    /// `TaskUpdate`; default off, as the reference's agent has none unless they are added): a
    /// plan it keeps in [`AgentState::tasks`]. See the [`tasks`](crate::tasks) module.
    pub fn task_tools(mut self, offered: bool) -> Self {
        self.task_tools = offered;
        self
    }

    /// The runtime-state hints (see the [`hints`](crate::hints) module; on by default, as in
    /// the reference; [`HintConfig::disabled`] turns them off).
    pub fn hints(mut self, hints: HintConfig) -> Self {
        self.hints = Some(hints);
        self
    }

    /// The permission mode the agent starts in (default [`PermissionMode::Default`]; kept in
    /// the state, where [`Agent::set_permission_mode`] changes it).
    pub fn permission_mode(mut self, mode: PermissionMode) -> Self {
        self.permission_mode = Some(mode);
        self
    }

    /// Resumes from a saved state (same session, same context, a parked reply can resume).
    pub fn state(mut self, state: AgentState) -> Self {
        self.state = Some(state);
        self
    }

    /// Keeps the agent's state in `store` as the session `session_id` of user `user_id` (empty
    /// for none): loaded before every reply, saved after it (see [`crate::session`]). This is
    /// all a stateless web handler needs to carry conversations and parked replies across
    /// requests and processes. An invalid id fails [`build`](Self::build).
    pub fn session(
        mut self,
        store: impl SessionStore,
        user_id: impl Into<String>,
        session_id: impl Into<String>,
    ) -> Self {
        let key = crate::session::SessionKey::new(user_id, session_id);
        self.session.target(Arc::new(store), key);
        self
    }

    /// Saves and loads `module` with the session, under `name` (a layer's counters, your own
    /// objects: [`SharedState`](towerscope_core::state::SharedState)). A module whose state
    /// cannot be saved as JSON, or a name already taken, fails [`build`](Self::build), not the
    /// first save.
    pub fn session_state(mut self, name: impl Into<String>, module: impl towerscope_core::state::StateModule) -> Self {
        self.session.register(name.into(), module);
        self
    }

    /// Whether loading a session requires the state of every module registered with
    /// [`session_state`](Self::session_state) (default `true`, as the reference's strict
    /// loading): a missing one fails the reply with `AgentError::MissingState` naming it.
    /// Without, a module missing from the saved session keeps its state.
    pub fn session_strict(mut self, strict: bool) -> Self {
        self.session.strict(strict);
        self
    }

    /// Installs a middleware on every position it hooks, inside those installed before. The
    /// agent keeps it: [`Agent::middleware`] finds it again by its type.
    pub fn middleware(mut self, middleware: impl Middleware) -> Self {
        self.stacks.add(&middleware);
        self.installed.push(Arc::new(middleware));
        self
    }

    /// Installs a shared middleware.
    pub fn middleware_ref(mut self, middleware: &dyn Middleware) -> Self {
        self.stacks.add(middleware);
        self
    }

    position_method!(
        /// Adds a layer on `on_reply`.
        on_reply, reply, ReplyRequest, EventStream
    );
    position_method!(
        /// Adds a layer on `on_reasoning`.
        on_reasoning, reasoning, ReasoningRequest, EventStream
    );
    position_method!(
        /// Adds a layer on `on_model_call`.
        on_model_call, model_call, ModelCallRequest, ModelOutput
    );
    position_method!(
        /// Adds a layer on `on_acting`.
        on_acting, acting, ActingRequest, ToolStream
    );
    position_method!(
        /// Adds a layer on `on_check_permission`.
        on_check_permission, check_permission, PermissionRequest, PermissionDecision
    );
    position_method!(
        /// Adds a layer on `on_compress_context`.
        on_compress_context, compress_context, CompressRequest, ()
    );

    /// Appends a transformer to the `on_system_prompt` fold.
    pub fn on_system_prompt(mut self, transformer: impl SystemPromptTransformer) -> Self {
        self.stacks.system_prompt.push(transformer);
        self
    }

    /// Builds the agent: each position's stack is erased once, here.
    ///
    /// The positions have three owners, each the only one that calls them: the runtime holds
    /// the per-round ones (`on_model_call`, `on_acting`, `on_check_permission`,
    /// `on_compress_context`), the reply loop holds `on_reasoning`, the agent holds `on_reply`.
    pub fn build(self) -> Result<Agent, AgentError> {
        if let Some(first) = self.errors.first() {
            return Err(AgentError::validation(format!("agent '{}': {first}", self.name)));
        }
        let model = self.model.ok_or_else(|| {
            AgentError::validation(format!("agent '{}' has no model; call AgentBuilder::model", self.name))
        })?;
        if self.config.structured_output_grace_iters == 0 {
            return Err(AgentError::validation("structured_output_grace_iters must be > 0"));
        }
        self.session.check()?;
        let user_id: Arc<str> = Arc::from(self.session.user_id());
        if let Some(context) = &self.context {
            context
                .validate()
                .and_then(|()| {
                    CompiledSchema::new(context.summary_schema.clone())
                        .map(drop)
                        .map_err(|e| e.to_string())
                })
                .map_err(|e| AgentError::validation(format!("agent '{}': ContextConfig: {e}", self.name)))?;
        }
        let (hints, hint_split) = match self.hints {
            None => HintConfig::shared_default(),
            Some(config) => config.validate().map(|span| (Arc::new(config), span)),
        }
        .map_err(|e| AgentError::validation(format!("agent '{}': HintConfig: {e}", self.name)))?;
        let toolkit = self.toolkit;
        // The agent's own tools answer these names: a tool of the toolkit under one would be
        // offered and never run.
        let compress_tool = self.context.as_ref().is_some_and(|c| c.compression_tool);
        for (reserved, taken) in [
            (crate::structured::TOOL_NAME, true),
            (crate::compress::COMPRESS_TOOL, compress_tool),
        ] {
            if taken && toolkit.get(reserved).is_some() {
                return Err(AgentError::validation(format!(
                    "agent '{}': the tool name '{reserved}' is the agent's own; rename the tool",
                    self.name
                )));
            }
        }
        let mut state = self.state.unwrap_or_else(|| AgentState {
            activated_groups: toolkit.default_active_groups(),
            ..AgentState::default()
        });
        if let Some(mode) = self.permission_mode {
            state.permission_mode = mode;
        }
        let state = Arc::new(Mutex::new(state));
        let mut toolkit = toolkit;
        if self.task_tools {
            // The tools hold this agent's state: the toolkit is this agent's own from here.
            crate::tasks::add_tools(Arc::make_mut(&mut toolkit), &state);
        }
        let stacks = self.stacks;
        let system_head = stacks
            .system_prompt
            .is_empty()
            .then(|| system_head(&self.system_prompt));
        let system_msg = system_head.as_ref().and_then(|head| head.first().cloned());
        let counter = self.counter.unwrap_or_else(|| {
            // Stateless: one per process, shared by every agent that keeps the default.
            static DEFAULT: std::sync::OnceLock<Arc<dyn TokenCounter>> = std::sync::OnceLock::new();
            Arc::clone(DEFAULT.get_or_init(|| Arc::new(UsageCounter::<EstimateCounter>::default())))
        });
        let context = self.context.map(Arc::new);
        let model_call = stacks.model_call.build(CallModel);
        let compress = stacks.compress_context.build(Compressor {
            shared: Arc::new(CompressShared {
                state: Arc::clone(&state),
                model: Arc::clone(&model),
                toolkit: Arc::clone(&toolkit),
                system_prompt: self.system_prompt.clone(),
                system_msg,
                fold: stacks.system_prompt.clone(),
                counter: Arc::clone(&counter),
                config: context.clone(),
                clock: hints.clock.clone(),
                timezone: hints.timezone.clone(),
                offloader: self.offloader.clone(),
                user_id: Arc::clone(&user_id),
                offloaded: Mutex::default(),
            }),
            model_call: model_call.clone(),
        });
        let compress_tool = context.as_ref().filter(|c| c.compression_tool).map(|c| CompressTool {
            compress: compress.clone(),
            state: Arc::clone(&state),
            config: Arc::clone(c),
        });
        let positions = Positions {
            model_call,
            acting: stacks.acting.build(RunTool {
                toolkit: ToolkitService::new(Arc::clone(&toolkit)),
                compress: compress_tool,
                state: Arc::clone(&state),
            }),
            permission: stacks.check_permission.build(DecidePermission {
                state: Arc::clone(&state),
                toolkit: Arc::clone(&toolkit),
                default: self.config.default_permission.clone(),
            }),
            compress,
        };
        let layers_read = crate::emit::LayersRead {
            reply: stacks.reply_reads(),
            reasoning: stacks.reasoning_reads(),
            installed: !stacks.reply.is_empty() || !stacks.reasoning.is_empty(),
        };
        let runtime = Arc::new(Runtime {
            name: Arc::from(self.name),
            model_name: Arc::from(model.model_name()),
            system_prompt: self.system_prompt,
            system_head,
            folded_head: Mutex::new(None),
            model,
            toolkit,
            config: self.config,
            state,
            system_prompt_fold: stacks.system_prompt,
            interrupt: crate::interrupt::Interrupt::default(),
            observe_hooks: stacks.observe,
            positions,
            mailbox: crate::mailbox::Mailbox::default(),
            installed: self.installed,
            context,
            counter,
            offloader: self.offloader,
            user_id,
            hints: hints.enabled.then(|| crate::hint_config::Hints::new(hints, hint_split)),
        });
        let reasoning = stacks.reasoning.build(ReasoningStep {
            runtime: Arc::clone(&runtime),
        });
        let reply = match stacks.reply.build(ReactLoop {
            runtime: Arc::clone(&runtime),
            reasoning,
        }) {
            tower::util::Either::Right(stack) => {
                tower::util::Either::Right(ErasedService::new(crate::reply::NoteUnwrapped(stack)))
            }
            unlayered => unlayered,
        };
        // Outermost on `on_reply`; it passes the events through and reads none.
        let (reply, session) = self.session.wrap(reply, &runtime.state)?;
        Ok(Agent {
            runtime,
            reply,
            session,
            busy: Arc::new(AtomicBool::new(false)),
            layers_read,
        })
    }
}

/// The system message of `prompt`, as the head of every model input, shared by the agents
/// built with the same prompt while one of them lives: a service building an agent per
/// conversation holds one message, not one per agent (as it holds one schema per tool type).
///
/// Not while ids are reproducible ([`Id::reproducible`](towerscope_core::Id::reproducible):
/// a durable reply, a test's `Sequence`): building the message draws ids and times from the
/// sequence, so whether it was shared would change every id after it.
fn system_head(prompt: &str) -> Arc<[Arc<Msg>]> {
    static HEADS: std::sync::Mutex<SystemHeads> = std::sync::Mutex::new(SystemHeads::new());
    if towerscope_core::Id::reproducible() {
        return SystemHeads::make(prompt);
    }
    HEADS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(prompt)
}

/// A system head, not kept alive by the cache.
type WeakHead = std::sync::Weak<[Arc<Msg>]>;

/// The live system heads by prompt (see [`system_head`]).
struct SystemHeads {
    by_prompt: Option<std::collections::HashMap<Box<str>, WeakHead>>,
    /// The size at which dead entries are dropped next: doubles with the live ones, so the
    /// pruning costs O(1) per agent built.
    prune_at: usize,
}

impl SystemHeads {
    const PRUNE_MIN: usize = 64;

    const fn new() -> Self {
        Self {
            by_prompt: None,
            prune_at: Self::PRUNE_MIN,
        }
    }

    fn make(prompt: &str) -> Arc<[Arc<Msg>]> {
        Arc::from([Arc::new(Msg::system("system", prompt))])
    }

    fn get(&mut self, prompt: &str) -> Arc<[Arc<Msg>]> {
        let by_prompt = self.by_prompt.get_or_insert_with(Default::default);
        if let Some(head) = by_prompt.get(prompt).and_then(std::sync::Weak::upgrade) {
            return head;
        }
        let head = Self::make(prompt);
        if !by_prompt.contains_key(prompt) && by_prompt.len() >= self.prune_at {
            by_prompt.retain(|_, head| head.strong_count() > 0);
            self.prune_at = (by_prompt.len() * 2).max(Self::PRUNE_MIN);
        }
        by_prompt.insert(prompt.into(), Arc::downgrade(&head));
        head
    }
}

#[cfg(test)]
mod system_head_tests {
    use super::*;

    #[test]
    fn agents_with_one_prompt_share_its_message_and_dead_prompts_are_dropped() {
        let mut heads = SystemHeads::new();
        let a = heads.get("You are a calculator.");
        let b = heads.get("You are a calculator.");
        assert!(Arc::ptr_eq(&a, &b), "one message for one prompt");
        assert_eq!(a[0].text_content().as_deref(), Some("You are a calculator."));
        let other = heads.get("You are a poet.");
        assert!(!Arc::ptr_eq(&a, &other));
        drop((a, b));
        let again = heads.get("You are a calculator.");
        assert_eq!(
            again[0].text_content().as_deref(),
            Some("You are a calculator."),
            "made again once dropped"
        );
        for i in 0..10 * SystemHeads::PRUNE_MIN {
            drop(heads.get(&format!("prompt {i}")));
        }
        let live = heads.by_prompt.as_ref().map_or(0, |m| m.len());
        assert!(
            live <= 2 * SystemHeads::PRUNE_MIN,
            "dead prompts are dropped: {live} kept"
        );
        assert!(
            heads
                .by_prompt
                .as_ref()
                .is_some_and(|m| m.contains_key("You are a poet."))
        );
    }

    /// Under a `Sequence` each agent makes its own message, drawing the same ids as before
    /// sharing existed: the ids after it do not depend on other agents.
    #[tokio::test]
    async fn reproducible_ids_make_a_message_per_agent() {
        use towerscope_core::Id;
        use towerscope_core::sequence::Sequence;
        let shared = system_head("You are exact.");
        let (a, b, next) = Sequence::new()
            .scope(async { (system_head("You are exact."), system_head("You are exact."), Id::new()) })
            .await;
        assert!(!Arc::ptr_eq(&a, &b) && !Arc::ptr_eq(&a, &shared));
        assert_ne!(a[0].id, b[0].id, "each drew its own ids");
        let (_, _, expected) = Sequence::new()
            .scope(async {
                let one = Arc::new(Msg::system("system", "You are exact."));
                let two = Arc::new(Msg::system("system", "You are exact."));
                (one, two, Id::new())
            })
            .await;
        assert_eq!(
            next, expected,
            "building the agents drew what building their messages draws"
        );
    }
}
