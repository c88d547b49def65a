//! Building a position: a list of layers erased once, or the implementation called directly.

use std::fmt;

use tower::util::Either;
use tower_layer::Layer;
use tower_service::Service;

use super::erased::{ErasedLayer, ErasedService};
use crate::AgentError;

/// A built position: the implementation itself when no layer is installed (nothing boxed,
/// nothing paid), or the erased stack of layers around it.
pub type Position<S, Req, Resp> = Either<S, ErasedService<Req, Resp>>;

/// The layers installed on one position, first installed = outermost.
///
/// [`build`](Self::build) wraps the position's implementation once, at build time. With no layer
/// installed it returns the implementation untouched.
///
/// # Example
///
/// ```
/// use tower::{service_fn, Service, ServiceExt};
/// use towerscope_core::{AgentError, LayerStack};
/// use tower::util::Either;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), AgentError> {
/// let double = tower::layer::layer_fn(|inner| tower::util::MapRequest::new(inner, |x: u32| x * 2));
/// let mut stack = LayerStack::<u32, u32>::new();
/// stack.push(double);
/// let leaf = service_fn(|x: u32| async move { Ok::<_, AgentError>(x + 1) });
/// let svc = stack.build(leaf);
/// assert!(matches!(svc, Either::Right(_)));
/// assert_eq!(svc.oneshot(5).await?, 11);
///
/// let direct = LayerStack::<u32, u32>::new().build(leaf);
/// assert!(matches!(direct, Either::Left(_)));
/// # Ok(()) }
/// ```
pub struct LayerStack<Req, Resp> {
    layers: Vec<ErasedLayer<Req, Resp>>,
}

impl<Req, Resp> LayerStack<Req, Resp>
where
    Req: Send + 'static,
    Resp: 'static,
{
    /// No layers.
    pub const fn new() -> Self {
        Self { layers: Vec::new() }
    }

    /// Adds a layer inside the ones already installed.
    pub fn push<L>(&mut self, layer: L) -> &mut Self
    where
        L: Layer<ErasedService<Req, Resp>> + Send + Sync + 'static,
        L::Service: Service<Req, Response = Resp, Error = AgentError> + Clone + Send + Sync + 'static,
        <L::Service as Service<Req>>::Future: Send + 'static,
    {
        self.layers.push(ErasedLayer::new(layer));
        self
    }

    /// Adds a layer that is already erased (what a [`Middleware`](crate::Middleware) hook
    /// returns), without erasing it again.
    pub fn push_erased(&mut self, layer: ErasedLayer<Req, Resp>) -> &mut Self {
        self.layers.push(layer);
        self
    }

    /// How many layers are installed.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether no layer is installed.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// Wraps `service` in the installed layers (first installed outermost), erased once; or
    /// returns `service` itself when nothing is installed.
    pub fn build<S>(&self, service: S) -> Position<S, Req, Resp>
    where
        S: Service<Req, Response = Resp, Error = AgentError> + Clone + Send + Sync + 'static,
        S::Future: Send + 'static,
    {
        if self.layers.is_empty() {
            return Either::Left(service);
        }
        let mut svc = ErasedService::new(service);
        for layer in self.layers.iter().rev() {
            svc = layer.layer(svc);
        }
        Either::Right(svc)
    }
}

impl<Req, Resp> Default for LayerStack<Req, Resp>
where
    Req: Send + 'static,
    Resp: 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<Req, Resp> Clone for LayerStack<Req, Resp> {
    fn clone(&self) -> Self {
        Self {
            layers: self.layers.clone(),
        }
    }
}

impl<Req, Resp> fmt::Debug for LayerStack<Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LayerStack")
            .field("layers", &self.layers.len())
            .finish()
    }
}
