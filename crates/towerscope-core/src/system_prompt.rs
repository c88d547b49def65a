//! `on_system_prompt`: a left-to-right fold of transformers over the system prompt.
//!
//! Unlike the other positions this is not an onion: each transformer receives the previous one's
//! output (`original → T1 → T2 → …`). The agent runs the fold every time it builds the model
//! input.
//!
//! # Example
//!
//! ```
//! use towerscope_core::{AgentContext, SystemPromptFold, prompt_fn};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let mut fold = SystemPromptFold::new();
//! fold.push(prompt_fn(|_ctx, prompt| async move { Ok(format!("{prompt}\n- be brief")) }));
//! fold.push(prompt_fn(|ctx, prompt| {
//!     let name = ctx.agent_name().to_owned();
//!     async move { Ok(format!("{prompt}\n- you are {name}")) }
//! }));
//! let ctx = AgentContext::new("Friday", "s", "r");
//! let prompt = fold.apply(&ctx, "Rules:".to_owned()).await?;
//! assert_eq!(prompt, "Rules:\n- be brief\n- you are Friday");
//! # Ok(()) }
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::{AgentContext, AgentError};

/// The future a [`SystemPromptTransformer`] returns.
pub type PromptFuture = Pin<Box<dyn Future<Output = Result<String, AgentError>> + Send>>;

/// One step of the `on_system_prompt` fold.
pub trait SystemPromptTransformer: Send + Sync + 'static {
    /// Returns the new prompt, given the previous one.
    fn transform(&self, ctx: &AgentContext, prompt: String) -> PromptFuture;
}

/// A transformer from an async closure. See the [module docs](self).
pub fn prompt_fn<F, Fut>(f: F) -> PromptFn<F>
where
    F: Fn(&AgentContext, String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, AgentError>> + Send + 'static,
{
    PromptFn(f)
}

/// The transformer [`prompt_fn`] returns.
#[derive(Clone)]
pub struct PromptFn<F>(F);

impl<F> fmt::Debug for PromptFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptFn").finish_non_exhaustive()
    }
}

impl<F, Fut> SystemPromptTransformer for PromptFn<F>
where
    F: Fn(&AgentContext, String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, AgentError>> + Send + 'static,
{
    fn transform(&self, ctx: &AgentContext, prompt: String) -> PromptFuture {
        Box::pin((self.0)(ctx, prompt))
    }
}

/// The transformers installed on `on_system_prompt`, applied left to right.
#[derive(Clone, Default)]
pub struct SystemPromptFold {
    transformers: Vec<Arc<dyn SystemPromptTransformer>>,
}

impl SystemPromptFold {
    /// No transformers: the prompt is used as written.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a transformer; it will receive the output of the ones before it.
    pub fn push(&mut self, t: impl SystemPromptTransformer) -> &mut Self {
        self.transformers.push(Arc::new(t));
        self
    }

    /// Appends a shared transformer.
    pub fn push_arc(&mut self, t: Arc<dyn SystemPromptTransformer>) -> &mut Self {
        self.transformers.push(t);
        self
    }

    /// How many transformers are installed.
    pub fn len(&self) -> usize {
        self.transformers.len()
    }

    /// Whether none is installed.
    pub fn is_empty(&self) -> bool {
        self.transformers.is_empty()
    }

    /// Runs the fold. With no transformer installed this returns `prompt` without allocating.
    pub async fn apply(&self, ctx: &AgentContext, prompt: String) -> Result<String, AgentError> {
        let mut prompt = prompt;
        for t in &self.transformers {
            prompt = t.transform(ctx, prompt).await?;
        }
        Ok(prompt)
    }
}

impl fmt::Debug for SystemPromptFold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SystemPromptFold")
            .field("transformers", &self.transformers.len())
            .finish()
    }
}
