//! `on_system_prompt`: a left-to-right fold of transformers over the system prompt.
//!
//! Unlike the other positions this is not an onion: each transformer receives the previous one's
//! output (`original → T1 → T2 → …`). The agent runs the fold every time it builds the model
//! input.
//!
//! A transformer that waits for something (a lookup, a file) is an async closure
//! ([`prompt_fn`]); one that computes the prompt at once is a plain closure ([`prompt_map`]),
//! which the fold runs without boxing a future. Both return a [`PromptFuture`].
//!
//! # Example
//!
//! ```
//! use towerscope_core::{AgentContext, SystemPromptFold, prompt_fn, prompt_map};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let mut fold = SystemPromptFold::new();
//! fold.push(prompt_map(|_ctx, prompt| Ok(format!("{prompt}\n- be brief"))));
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
use std::task::{Context, Poll};

use crate::{AgentContext, AgentError};

/// The future a [`SystemPromptTransformer`] returns: the new prompt, either known at once
/// ([`PromptFuture::ready`], no allocation) or still to come ([`PromptFuture::new`], boxed).
///
/// # Example
///
/// ```
/// use towerscope_core::{AgentContext, PromptFuture, SystemPromptTransformer};
///
/// /// Appends a fixed rule.
/// struct Rule(&'static str);
///
/// impl SystemPromptTransformer for Rule {
///     fn transform(&self, _ctx: &AgentContext, prompt: String) -> PromptFuture {
///         PromptFuture::ready(Ok(format!("{prompt}\n- {}", self.0)))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), towerscope_core::AgentError> {
/// let ctx = AgentContext::new("a", "s", "r");
/// assert_eq!(Rule("be brief").transform(&ctx, "Rules:".into()).await?, "Rules:\n- be brief");
/// # Ok(()) }
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct PromptFuture {
    state: PromptState,
}

enum PromptState {
    /// The prompt, until the first poll takes it.
    Ready(Option<Result<String, AgentError>>),
    /// A transformer that waits for something.
    Boxed(Pin<Box<dyn Future<Output = Result<String, AgentError>> + Send>>),
}

impl PromptFuture {
    /// A prompt known at once: polling returns it, nothing is boxed.
    pub fn ready(prompt: Result<String, AgentError>) -> Self {
        Self {
            state: PromptState::Ready(Some(prompt)),
        }
    }

    /// A prompt computed by `future`, boxed.
    pub fn new(future: impl Future<Output = Result<String, AgentError>> + Send + 'static) -> Self {
        Self {
            state: PromptState::Boxed(Box::pin(future)),
        }
    }

    /// The prompt, if it is known without polling; else the future itself.
    fn into_ready(self) -> Result<Result<String, AgentError>, Self> {
        match self.state {
            PromptState::Ready(Some(prompt)) => Ok(prompt),
            state => Err(Self { state }),
        }
    }
}

impl Future for PromptFuture {
    type Output = Result<String, AgentError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.state {
            PromptState::Ready(prompt) => match prompt.take() {
                Some(prompt) => Poll::Ready(prompt),
                None => Poll::Ready(Err(AgentError::Middleware(
                    "a system prompt future was polled after it completed".to_owned(),
                ))),
            },
            PromptState::Boxed(future) => future.as_mut().poll(cx),
        }
    }
}

impl fmt::Debug for PromptFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            PromptState::Ready(_) => "ready",
            PromptState::Boxed(_) => "boxed",
        };
        f.debug_struct("PromptFuture").field("state", &state).finish()
    }
}

/// One step of the `on_system_prompt` fold.
pub trait SystemPromptTransformer: Send + Sync + 'static {
    /// Returns the new prompt, given the previous one.
    fn transform(&self, ctx: &AgentContext, prompt: String) -> PromptFuture;
}

/// A transformer from an async closure, for one that waits for something: its future is
/// boxed on every fold. See the [module docs](self).
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
        PromptFuture::new((self.0)(ctx, prompt))
    }
}

/// A transformer from a plain closure, for one that computes the prompt at once: nothing is
/// boxed. See the [module docs](self).
pub fn prompt_map<F>(f: F) -> PromptMap<F>
where
    F: Fn(&AgentContext, String) -> Result<String, AgentError> + Send + Sync + 'static,
{
    PromptMap(f)
}

/// The transformer [`prompt_map`] returns.
#[derive(Clone)]
pub struct PromptMap<F>(F);

impl<F> fmt::Debug for PromptMap<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptMap").finish_non_exhaustive()
    }
}

impl<F> SystemPromptTransformer for PromptMap<F>
where
    F: Fn(&AgentContext, String) -> Result<String, AgentError> + Send + Sync + 'static,
{
    fn transform(&self, ctx: &AgentContext, prompt: String) -> PromptFuture {
        PromptFuture::ready((self.0)(ctx, prompt))
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
            // A prompt known at once is taken without going through `poll`.
            prompt = match t.transform(ctx, prompt).into_ready() {
                Ok(ready) => ready?,
                Err(pending) => pending.await?,
            };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> AgentContext {
        AgentContext::new("Friday", "s", "r")
    }

    #[tokio::test]
    async fn the_fold_applies_plain_and_async_transformers_left_to_right() {
        let mut fold = SystemPromptFold::new();
        fold.push(prompt_map(|_ctx, p| Ok(format!("{p} 1"))));
        fold.push(prompt_fn(|_ctx, p| async move { Ok(format!("{p} 2")) }));
        fold.push(prompt_map(|ctx, p| Ok(format!("{p} 3 {}", ctx.agent_name()))));
        assert_eq!(
            fold.apply(&ctx(), "0".to_owned()).await.ok().as_deref(),
            Some("0 1 2 3 Friday")
        );
    }

    #[tokio::test]
    async fn an_error_stops_the_fold() {
        let mut fold = SystemPromptFold::new();
        fold.push(prompt_map(|_ctx, _p| {
            Err(AgentError::Middleware("no prompt today".to_owned()))
        }));
        fold.push(prompt_map(|_ctx, _p| -> Result<String, AgentError> {
            unreachable!("the fold stops at the first error")
        }));
        let err = fold.apply(&ctx(), "0".to_owned()).await.err();
        assert!(matches!(err, Some(AgentError::Middleware(m)) if m == "no prompt today"));
    }

    #[test]
    fn a_ready_prompt_is_returned_once_then_an_error() {
        let mut fut = PromptFuture::ready(Ok("p".to_owned()));
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(matches!(Pin::new(&mut fut).poll(&mut cx), Poll::Ready(Ok(p)) if p == "p"));
        assert!(matches!(
            Pin::new(&mut fut).poll(&mut cx),
            Poll::Ready(Err(AgentError::Middleware(_)))
        ));
        assert_eq!(format!("{fut:?}"), r#"PromptFuture { state: "ready" }"#);
    }
}
