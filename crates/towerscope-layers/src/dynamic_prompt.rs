//! Dynamic system prompt: append live context (the time, the user's locale, the state of a
//! task) to the system prompt every time the agent builds the model input.
//!
//! [`DynamicContext`] is the reference's `DynamicContext` example: a transformer of the
//! `on_system_prompt` fold that returns
//!
//! ```text
//! {prompt}\n\n## Current Context\n{context(ctx)}
//! ```
//!
//! The closure runs on every fold (the agent runs the fold for each reasoning step), so the
//! context is fresh each time. Install it with `AgentBuilder::on_system_prompt` or, as a
//! [`Middleware`], with `AgentBuilder::middleware`.
//!
//! # Example
//!
//! ```
//! use towerscope_agent::Agent;
//! use towerscope_core::Msg;
//! use towerscope_layers::DynamicContext;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let model = ScriptedModel::new("scripted", [ScriptedResponse::text("It is noon.")]);
//! let agent = Agent::builder("assistant")
//!     .system_prompt("You are helpful.")
//!     .model(model.clone())
//!     .on_system_prompt(DynamicContext::new(|ctx| format!("Time: 12:00\nAgent: {}", ctx.agent_name())))
//!     .build()?;
//! agent.reply(Msg::user("user", "What time is it?")).await?;
//! assert_eq!(
//!     model.requests()[0].system_prompt().as_deref(),
//!     Some("You are helpful.\n\n## Current Context\nTime: 12:00\nAgent: assistant")
//! );
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;

use towerscope_core::{AgentContext, Middleware, PromptFuture, SystemPromptTransformer};

type ContextFn = dyn Fn(&AgentContext) -> String + Send + Sync;

/// Appends live context to the system prompt. See the [module docs](self).
#[derive(Clone)]
pub struct DynamicContext {
    context: Arc<ContextFn>,
    heading: Arc<str>,
}

impl DynamicContext {
    /// The heading of the appended section, as in the reference.
    pub const DEFAULT_HEADING: &'static str = "## Current Context";

    /// Appends `context(ctx)` under the heading `## Current Context`.
    pub fn new(context: impl Fn(&AgentContext) -> String + Send + Sync + 'static) -> Self {
        Self {
            context: Arc::new(context),
            heading: Arc::from(Self::DEFAULT_HEADING),
        }
    }

    /// Uses another heading line.
    #[must_use]
    pub fn heading(mut self, heading: impl Into<Arc<str>>) -> Self {
        self.heading = heading.into();
        self
    }

    /// The prompt with the context appended.
    pub fn apply(&self, ctx: &AgentContext, prompt: &str) -> String {
        format!("{prompt}\n\n{}\n{}", self.heading, (self.context)(ctx))
    }
}

impl SystemPromptTransformer for DynamicContext {
    fn transform(&self, ctx: &AgentContext, prompt: String) -> PromptFuture {
        PromptFuture::ready(Ok(self.apply(ctx, &prompt)))
    }
}

impl Middleware for DynamicContext {
    fn name(&self) -> &str {
        "DynamicContext"
    }

    fn on_system_prompt(&self) -> Option<Arc<dyn SystemPromptTransformer>> {
        Some(Arc::new(self.clone()))
    }
}

impl fmt::Debug for DynamicContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamicContext")
            .field("heading", &self.heading)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::atomic::{AtomicU32, Ordering};

    use towerscope_core::SystemPromptFold;

    use super::*;

    #[tokio::test]
    async fn appends_fresh_context_on_every_fold() {
        let n = Arc::new(AtomicU32::new(0));
        let counter = Arc::clone(&n);
        let dynamic = DynamicContext::new(move |_| format!("call {}", counter.fetch_add(1, Ordering::SeqCst) + 1));
        let mut fold = SystemPromptFold::new();
        fold.push(dynamic.clone());
        let ctx = AgentContext::new("a", "s", "r");
        assert_eq!(
            fold.apply(&ctx, "Base".into()).await.unwrap(),
            "Base\n\n## Current Context\ncall 1"
        );
        assert_eq!(
            fold.apply(&ctx, "Base".into()).await.unwrap(),
            "Base\n\n## Current Context\ncall 2"
        );
        let custom = dynamic.heading("# Now");
        assert_eq!(custom.apply(&ctx, "P"), "P\n\n# Now\ncall 3");
        assert!(custom.on_system_prompt().is_some());
    }
}
