//! The layer running the hooks around `on_reply`, `on_reasoning` and `on_acting`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;
use towerscope_core::{ActingRequest, AgentError, EventStream, ReasoningRequest, ReplyRequest, ToolStream};

use super::post::{ActingPostHooks, ReasoningPostHooks, ReplyPostHooks};
use super::{Hook, HookType, Hooks};

/// Runs [`Hooks`] on the positions it is installed on. See the [module docs](super).
#[derive(Debug, Clone)]
pub struct HooksLayer {
    hooks: Hooks,
}

impl HooksLayer {
    /// Runs `hooks`.
    pub fn new(hooks: Hooks) -> Self {
        Self { hooks }
    }
}

impl<S> Layer<S> for HooksLayer {
    type Service = HooksService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        HooksService {
            inner,
            hooks: self.hooks.clone(),
        }
    }
}

/// Runs the pre hooks on the request, and the post hooks on the answer, of its inner service.
#[derive(Debug, Clone)]
pub struct HooksService<S> {
    inner: S,
    hooks: Hooks,
}

impl<S> HooksService<S> {
    /// The hooks.
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Consumes `self`, returning the inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S> Service<ReplyRequest> for HooksService<S>
where
    S: Service<ReplyRequest, Response = EventStream, Error = AgentError>,
{
    type Response = EventStream;
    type Error = AgentError;
    type Future = ResponseFuture<S::Future, ReplyPostHooks>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: ReplyRequest) -> Self::Future {
        for hook in self.hooks.collect(HookType::PreReply, Hook::as_pre_reply) {
            if let Some(input) = hook(&req.ctx, &req.input) {
                req.input = input;
            }
        }
        let post = ReplyPostHooks::new(&self.hooks, &req);
        ResponseFuture::new(self.inner.call(req), post)
    }
}

impl<S> Service<ReasoningRequest> for HooksService<S>
where
    S: Service<ReasoningRequest, Response = EventStream, Error = AgentError>,
{
    type Response = EventStream;
    type Error = AgentError;
    type Future = ResponseFuture<S::Future, ReasoningPostHooks>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: ReasoningRequest) -> Self::Future {
        for hook in self.hooks.collect(HookType::PreReasoning, Hook::as_pre_reasoning) {
            if let Some(choice) = hook(&req.ctx, req.tool_choice.as_ref()) {
                req.tool_choice = Some(choice);
            }
        }
        let post = ReasoningPostHooks::new(&self.hooks, &req);
        ResponseFuture::new(self.inner.call(req), post)
    }
}

impl<S> Service<ActingRequest> for HooksService<S>
where
    S: Service<ActingRequest, Response = ToolStream, Error = AgentError>,
{
    type Response = ToolStream;
    type Error = AgentError;
    type Future = ResponseFuture<S::Future, ActingPostHooks>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: ActingRequest) -> Self::Future {
        for hook in self.hooks.collect(HookType::PreActing, Hook::as_pre_acting) {
            let Some(call) = hook(&req.ctx, req.tool_call()) else {
                continue;
            };
            let before = req.tool_call();
            if call.id != before.id || call.name != before.name {
                // Only the arguments can change: the result pairs with the model's call, and the
                // permission was decided for its tool. Refused loudly, never ignored.
                return ResponseFuture::refused(AgentError::Middleware(format!(
                    "a pre_acting hook changed the tool call {} '{}' into {} '{}'; a hook may change only its input",
                    before.id, before.name, call.id, call.name
                )));
            }
            if call.input != before.input {
                // The 1.x way to change the arguments: the agent parses, repairs and validates
                // the new text as it does the model's.
                req.set_input(call.input);
            }
        }
        let post = ActingPostHooks::new(&self.hooks, &req);
        ResponseFuture::new(self.inner.call(req), post)
    }
}

pin_project! {
    /// The response future of [`HooksService`]: the inner answer, its stream wrapped (and boxed
    /// again) to run the post hooks when there are any.
    #[derive(Debug)]
    pub struct ResponseFuture<F, P> {
        #[pin]
        inner: Inner<F>,
        post: Option<P>,
    }
}

pin_project! {
    /// The inner service's future, or the error of a call a pre hook made impossible.
    #[project = InnerProj]
    #[derive(Debug)]
    enum Inner<F> {
        Called { #[pin] future: F },
        Refused { error: Option<AgentError> },
    }
}

impl<F, P> ResponseFuture<F, P> {
    fn new(inner: F, post: Option<P>) -> Self {
        Self {
            inner: Inner::Called { future: inner },
            post,
        }
    }

    fn refused(error: AgentError) -> Self {
        Self {
            inner: Inner::Refused { error: Some(error) },
            post: None,
        }
    }
}

macro_rules! response_future {
    ($post:ty, $response:ty) => {
        impl<F> Future for ResponseFuture<F, $post>
        where
            F: Future<Output = Result<$response, AgentError>>,
        {
            type Output = Result<$response, AgentError>;

            fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
                let this = self.project();
                let output = match this.inner.project() {
                    InnerProj::Called { future } => ready!(future.poll(cx)),
                    InnerProj::Refused { error } => Err(error.take().unwrap_or_else(|| {
                        AgentError::Middleware("the hooks' future was polled after it ended".into())
                    })),
                };
                Poll::Ready(output.map(|stream| match this.post.take() {
                    Some(post) => post.wrap(stream),
                    None => stream,
                }))
            }
        }
    };
}

response_future!(ReplyPostHooks, EventStream);
response_future!(ReasoningPostHooks, EventStream);
response_future!(ActingPostHooks, ToolStream);
