//! What one agent shares across its positions: [`Runtime`] (name, prompt, model, toolkit,
//! state, the built per-round positions), the loop's [`ReactConfig`], and the checks every
//! input goes through.

use std::any::Any;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use towerscope_core::{
    AgentContext, AgentError, ContentBlock, ContextConfig, Messages, ModelRef, Msg, ObserveHook, PermissionDecision,
    Role, SystemPromptFold,
};

use crate::compress::{Offloader, TokenCounter};
use crate::hint_config::Hints;
use crate::interrupt::Interrupt;
use crate::mailbox::Mailbox;
use crate::positions::Positions;
use crate::state::AgentState;
use crate::toolkit::Toolkit;

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
    /// Whether an interrupted reply's stream ends with `Err(AgentError::Interrupted)` after its
    /// closing events and the interruption message (the reference's
    /// `interruption_raise_cancelled_error`; default `false`: the stream just ends).
    pub error_after_interrupt: bool,
    /// The decision, in the `Default` permission mode, for a call no rule and no check of the
    /// tool covers (default [`PermissionDecision::Allow`]).
    ///
    /// The reference asks the user about every such call. towerscope allows it, so a plain agent
    /// runs the tools its developer registered; destructive tools and calls that require
    /// confirmation are still asked about (see the [`permission`](crate::permission) module).
    /// [`PermissionDecision::Ask`] gives the reference's behaviour (human in the loop).
    pub default_permission: PermissionDecision,
}

impl Default for ReactConfig {
    fn default() -> Self {
        Self {
            max_iters: 50,
            structured_output_grace_iters: 5,
            interruption_message: "I notice the interruption. How can I help you?".to_owned(),
            error_after_interrupt: false,
            default_permission: PermissionDecision::Allow,
        }
    }
}

impl ReactConfig {
    /// The most actions (reasoning or acting rounds) one reply may take, whatever the model and
    /// the middleware do: every round of `max_iters` plus the structured-output grace rounds,
    /// each a reasoning and an acting step, and a few for the forced final round and
    /// swallowed `REPLY_END`s. The loop fails the reply past it instead of spinning.
    pub(crate) fn max_actions(&self) -> u64 {
        2 * (u64::from(self.max_iters) + u64::from(self.structured_output_grace_iters)) + 8
    }
}

/// What every position's implementation of one agent shares.
pub(crate) struct Runtime {
    pub(crate) name: Arc<str>,
    /// The agent's model's name, for `MODEL_CALL_START` events.
    pub(crate) model_name: Arc<str>,
    pub(crate) system_prompt: String,
    /// The system message as a model request's head, built once, when no `on_system_prompt`
    /// transformer is installed.
    pub(crate) system_head: Option<Arc<[Arc<Msg>]>>,
    /// With transformers installed: the last head built from a folded prompt, reused while the
    /// fold gives the same text (a pass-through, or a prompt that changes now and then).
    pub(crate) folded_head: Mutex<Option<Arc<[Arc<Msg>]>>>,
    pub(crate) model: ModelRef,
    pub(crate) toolkit: Arc<Toolkit>,
    pub(crate) config: ReactConfig,
    pub(crate) state: Arc<Mutex<AgentState>>,
    pub(crate) system_prompt_fold: SystemPromptFold,
    pub(crate) interrupt: Interrupt,
    pub(crate) observe_hooks: Vec<Arc<dyn ObserveHook>>,
    pub(crate) positions: Positions,
    /// Messages waiting for the agent to be free (`Agent::observe_when_free`).
    pub(crate) mailbox: Mailbox,
    /// The middleware installed with `AgentBuilder::middleware`, for `Agent::middleware`.
    pub(crate) installed: Vec<Arc<dyn Any + Send + Sync>>,
    /// The agent's compression settings (`None`: no counting, no compression).
    pub(crate) context: Option<Arc<ContextConfig>>,
    /// The token counter, for tool-result truncation.
    pub(crate) counter: Arc<dyn TokenCounter>,
    /// Where the cut part of a truncated tool result is stored, if anywhere.
    pub(crate) offloader: Option<Arc<dyn Offloader>>,
    /// The user id of the agent's session key (empty for none): the offloader's scope.
    pub(crate) user_id: Arc<str>,
    /// The runtime-state hints (`None`: disabled, no work).
    pub(crate) hints: Option<Hints>,
}

impl Runtime {
    /// Locks the state. Never held across an `.await`.
    pub(crate) fn lock_state(&self) -> MutexGuard<'_, AgentState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The model input: the system prompt (after the fold), the summary, the context. A
    /// snapshot that copies nothing: the context is shared, with the system message in front.
    pub(crate) async fn model_input(&self, ctx: &AgentContext) -> Result<Messages, AgentError> {
        let folded = match &self.system_head {
            Some(_) => None,
            None => Some(self.system_prompt_fold.apply(ctx, self.system_prompt.clone()).await?),
        };
        let state = self.lock_state();
        let head = match (&self.system_head, folded, state.summary.is_empty()) {
            (Some(cached), _, true) => Arc::clone(cached),
            (_, Some(prompt), true) => self.head_for(prompt),
            (cached, folded, _) => {
                let folded = folded.map(|prompt| Arc::new(Msg::system("system", prompt)));
                let system = folded.or_else(|| cached.as_ref().and_then(|h| h.first().cloned()));
                let summary = (!state.summary.is_empty()).then(|| Arc::new(Msg::user("user", state.summary.clone())));
                system.into_iter().chain(summary).collect()
            }
        };
        Ok(Messages::with_head(head, &state.context))
    }

    /// The head holding the system message `prompt`: the last one built, when its text is the
    /// same, else a new one (kept for the next round).
    fn head_for(&self, prompt: String) -> Arc<[Arc<Msg>]> {
        let mut last = self.folded_head.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(head) = last.as_ref()
            && let Some(ContentBlock::Text(text)) = head.first().and_then(|m| m.content.first())
            && text.text == prompt
        {
            return Arc::clone(head);
        }
        let head: Arc<[Arc<Msg>]> = Arc::from([Arc::new(Msg::system("system", prompt))]);
        *last = Some(Arc::clone(&head));
        head
    }
}

/// The reference's input rule: no system messages, no tool calls, tool results or thinking.
pub(crate) fn validate_input(m: &Msg) -> Result<(), AgentError> {
    if m.role == Role::System {
        return Err(AgentError::validation(format!(
            "Invalid message in the input: system messages are not accepted (message {}); set the system prompt on the agent instead",
            m.id
        )));
    }
    if let Some(b) = m.content.iter().find(|b| {
        matches!(
            b,
            ContentBlock::ToolCall(_) | ContentBlock::ToolResult(_) | ContentBlock::Thinking(_)
        )
    }) {
        return Err(AgentError::validation(format!(
            "Invalid message in the input: message {} holds a '{}' block; only text, data and hint blocks may be sent to an agent",
            m.id,
            b.kind().as_str()
        )));
    }
    // The role's own rules (a user message holds no hint block), which loading the message
    // from a saved session checks: a message breaking them would be saved, and its session
    // would never load again.
    m.role.check_content(&m.content).map_err(|e| {
        let rule = match e {
            AgentError::Validation(rule) => rule,
            other => other.to_string(),
        };
        AgentError::validation(format!("Invalid message in the input: message {}: {rule}", m.id))
    })
}
