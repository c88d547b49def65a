//! [`AgentBuilder`]: name, system prompt, model, tools, configuration, and the middleware of
//! every position.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use tower::Layer;
use tower::Service;

use towerscope_core::{
    ActingRequest, AgentError, ChatModel, CompressRequest, ErasedService, EventStream, Middleware, ModelCallRequest,
    ModelOutput, ModelRef, PermissionDecision, PermissionRequest, PositionStacks, ReasoningRequest, ReplyRequest,
    SystemPromptTransformer, ToolStream,
};

use crate::agent::{Agent, Shared};
use crate::reasoning::ReasoningImpl;
use crate::reply::ReplyImpl;
use crate::services::{ActingImpl, CompressImpl, ModelCallImpl, PermissionImpl};
use crate::state::AgentState;
use crate::toolkit::{Tool, Toolkit, ToolkitService};

/// The ReAct loop's configuration.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReactConfig {
    /// Reasoning-acting rounds before the forced final text round (default 50).
    pub max_iters: u32,
    /// Extra rounds a structured-output reply gets past `max_iters` (default 5, must be > 0).
    pub structured_output_grace_iters: u32,
    /// The final message of an interrupted reply.
    pub interruption_message: String,
    /// The decision for a tool no rule and no tool-specific check covers.
    ///
    /// The reference asks the user for every custom function tool. towerscope allows them by
    /// default, so a plain agent runs its tools; set [`PermissionDecision::Ask`] to confirm
    /// every call (human in the loop).
    pub default_permission: PermissionDecision,
}

impl Default for ReactConfig {
    fn default() -> Self {
        Self {
            max_iters: 50,
            structured_output_grace_iters: 5,
            interruption_message: "I notice the interruption. How can I help you?".to_owned(),
            default_permission: PermissionDecision::Allow,
        }
    }
}

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
/// use towerscope_core::{from_fn, ModelCallRequest, ModelOutput, Next, prompt_fn};
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
///
/// let agent = Agent::builder("assistant")
///     .system_prompt("You are helpful.")
///     .model(ScriptedModel::new("scripted", [ScriptedResponse::text("hi")]))
///     .max_iters(10)
///     .on_model_call(from_fn(|req: ModelCallRequest, next: Next<ModelCallRequest, ModelOutput>| next.run(req)))
///     .on_system_prompt(prompt_fn(|_ctx, p| async move { Ok(format!("{p}\nBe brief.")) }))
///     .build()?;
/// assert_eq!(agent.name(), "assistant");
/// # Ok::<(), towerscope_core::AgentError>(())
/// ```
pub struct AgentBuilder {
    name: String,
    system_prompt: String,
    model: Option<ModelRef>,
    toolkit: Toolkit,
    config: ReactConfig,
    stacks: PositionStacks,
    state: Option<AgentState>,
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
            toolkit: Toolkit::new(),
            config: ReactConfig::default(),
            stacks: PositionStacks::new(),
            state: None,
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
    pub fn tool(mut self, tool: impl Tool) -> Self {
        self.toolkit.add(tool);
        self
    }

    /// Uses `toolkit` (replacing the tools added so far).
    pub fn toolkit(mut self, toolkit: Toolkit) -> Self {
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

    /// The whole configuration.
    pub fn config(mut self, config: ReactConfig) -> Self {
        self.config = config;
        self
    }

    /// Resumes from a saved state (same session, same context, a parked reply can resume).
    pub fn state(mut self, state: AgentState) -> Self {
        self.state = Some(state);
        self
    }

    /// Installs a middleware on every position it hooks, inside those installed before.
    pub fn middleware(mut self, middleware: impl Middleware) -> Self {
        self.stacks.add(&middleware);
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
    pub fn build(self) -> Result<Agent, AgentError> {
        let model = self.model.ok_or_else(|| {
            AgentError::validation(format!("agent '{}' has no model; call AgentBuilder::model", self.name))
        })?;
        if self.config.structured_output_grace_iters == 0 {
            return Err(AgentError::validation("structured_output_grace_iters must be > 0"));
        }
        let toolkit = Arc::new(self.toolkit);
        let state = Arc::new(Mutex::new(self.state.unwrap_or_default()));
        let stacks = self.stacks;
        let shared = Arc::new(Shared {
            name: Arc::from(self.name),
            system_prompt: self.system_prompt,
            model,
            toolkit: Arc::clone(&toolkit),
            model_call: stacks.model_call.build(ModelCallImpl),
            acting: stacks.acting.build(ActingImpl {
                toolkit: ToolkitService::new(Arc::clone(&toolkit)),
            }),
            permission: stacks.check_permission.build(PermissionImpl {
                state: Arc::clone(&state),
                toolkit,
                default: self.config.default_permission.clone(),
            }),
            compress: stacks.compress_context.build(CompressImpl),
            config: self.config,
            state,
            system_prompt_fold: stacks.system_prompt,
            observe_hooks: stacks.observe,
            interrupt: crate::interrupt::Interrupt::default(),
        });
        let reasoning = stacks.reasoning.build(ReasoningImpl {
            shared: Arc::clone(&shared),
        });
        let reply = stacks.reply.build(ReplyImpl {
            shared: Arc::clone(&shared),
            reasoning,
        });
        Ok(Agent {
            shared,
            reply,
            busy: Arc::new(AtomicBool::new(false)),
        })
    }
}
