//! The post hooks of one call, and the streams that run them on the answer.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use towerscope_core::{
    ActingRequest, AgentContext, AgentError, EventStream, Msg, ReasoningRequest, ReplyInput, ReplyItem, ReplyRequest,
    ToolCallBlock, ToolChoice, ToolItem, ToolResponse, ToolStream,
};

use super::hook::{PostActingFn, PostReasoningFn, PostReplyFn};
use super::{Hook, HookType, Hooks};

/// The `post_reply` hooks of one reply, with its input; run on the final message.
pub struct ReplyPostHooks {
    ctx: AgentContext,
    input: ReplyInput,
    hooks: Vec<Arc<PostReplyFn>>,
}

impl ReplyPostHooks {
    pub(crate) fn new(hooks: &Hooks, req: &ReplyRequest) -> Option<Self> {
        let hooks = hooks.collect(HookType::PostReply, Hook::as_post_reply);
        (!hooks.is_empty()).then(|| Self {
            ctx: req.ctx.clone(),
            input: req.input.clone(),
            hooks,
        })
    }

    fn run(&self, msg: Msg) -> Msg {
        self.hooks
            .iter()
            .fold(msg, |msg, hook| hook(&self.ctx, &self.input, &msg).unwrap_or(msg))
    }

    pub(crate) fn wrap(self, inner: EventStream) -> EventStream {
        Box::pin(PostReplyStream { inner, post: self })
    }
}

struct PostReplyStream {
    inner: EventStream,
    post: ReplyPostHooks,
}

impl Stream for PostReplyStream {
    type Item = Result<ReplyItem, AgentError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(match ready!(self.inner.as_mut().poll_next(cx)) {
            Some(Ok(ReplyItem::Final(msg))) => Some(Ok(ReplyItem::Final(self.post.run(msg)))),
            other => other,
        })
    }
}

/// The `post_reasoning` hooks of one reasoning step, with its tool choice; run on the candidate
/// final message, or on nothing when the step ended without one.
pub struct ReasoningPostHooks {
    ctx: AgentContext,
    tool_choice: Option<ToolChoice>,
    hooks: Vec<Arc<PostReasoningFn>>,
}

impl ReasoningPostHooks {
    pub(crate) fn new(hooks: &Hooks, req: &ReasoningRequest) -> Option<Self> {
        let hooks = hooks.collect(HookType::PostReasoning, Hook::as_post_reasoning);
        (!hooks.is_empty()).then(|| Self {
            ctx: req.ctx.clone(),
            tool_choice: req.tool_choice.clone(),
            hooks,
        })
    }

    fn run(&self, msg: Option<Msg>) -> Option<Msg> {
        self.hooks.iter().fold(msg, |msg, hook| {
            hook(&self.ctx, self.tool_choice.as_ref(), msg.as_ref()).or(msg)
        })
    }

    fn run_on(&self, msg: Msg) -> Msg {
        self.hooks.iter().fold(msg, |msg, hook| {
            hook(&self.ctx, self.tool_choice.as_ref(), Some(&msg)).unwrap_or(msg)
        })
    }

    pub(crate) fn wrap(self, inner: EventStream) -> EventStream {
        Box::pin(PostReasoningStream {
            inner,
            post: self,
            saw_final: false,
            failed: false,
            done: false,
        })
    }
}

struct PostReasoningStream {
    inner: EventStream,
    post: ReasoningPostHooks,
    saw_final: bool,
    failed: bool,
    done: bool,
}

impl Stream for PostReasoningStream {
    type Item = Result<ReplyItem, AgentError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        Poll::Ready(match ready!(self.inner.as_mut().poll_next(cx)) {
            Some(Ok(ReplyItem::Final(msg))) => {
                self.saw_final = true;
                Some(Ok(ReplyItem::Final(self.post.run_on(msg))))
            }
            Some(Err(e)) => {
                // Hooks do not run after a failed step.
                self.failed = true;
                Some(Err(e))
            }
            Some(other) => Some(other),
            None => {
                self.done = true;
                if self.saw_final || self.failed {
                    None
                } else {
                    self.post.run(None).map(|msg| Ok(ReplyItem::Final(msg)))
                }
            }
        })
    }
}

/// The `post_acting` hooks of one tool call; run on the tool's final response.
pub struct ActingPostHooks {
    ctx: AgentContext,
    tool_call: ToolCallBlock,
    hooks: Vec<Arc<PostActingFn>>,
}

impl ActingPostHooks {
    pub(crate) fn new(hooks: &Hooks, req: &ActingRequest) -> Option<Self> {
        let hooks = hooks.collect(HookType::PostActing, Hook::as_post_acting);
        (!hooks.is_empty()).then(|| Self {
            ctx: req.ctx.clone(),
            tool_call: ToolCallBlock::clone(req.tool_call()),
            hooks,
        })
    }

    fn run(&self, response: ToolResponse) -> ToolResponse {
        self.hooks.iter().fold(response, |response, hook| {
            hook(&self.ctx, &self.tool_call, &response).unwrap_or(response)
        })
    }

    pub(crate) fn wrap(self, inner: ToolStream) -> ToolStream {
        Box::pin(PostActingStream { inner, post: self })
    }
}

struct PostActingStream {
    inner: ToolStream,
    post: ActingPostHooks,
}

impl Stream for PostActingStream {
    type Item = Result<ToolItem, AgentError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(match ready!(self.inner.as_mut().poll_next(cx)) {
            Some(Ok(ToolItem::Response(response))) => Some(Ok(ToolItem::Response(self.post.run(response)))),
            other => other,
        })
    }
}

macro_rules! debug_post {
    ($($t:ident),*) => {$(
        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($t)).field("hooks", &self.hooks.len()).finish_non_exhaustive()
            }
        }
    )*};
}

debug_post!(ReplyPostHooks, ReasoningPostHooks, ActingPostHooks);
