//! The ten hook types and the typed hook functions.

use std::fmt;
use std::sync::Arc;

use towerscope_core::{AgentContext, Msg, ReplyInput, ToolCallBlock, ToolChoice, ToolResponse};

use super::PrintChunk;

/// Where a hook runs: before (`pre_*`) or after (`post_*`) a reply, an observe, a reasoning step,
/// a tool execution, or a console printing a piece of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookType {
    /// Before a reply.
    PreReply,
    /// After a reply.
    PostReply,
    /// Before `observe`.
    PreObserve,
    /// After `observe`.
    PostObserve,
    /// Before a reasoning step.
    PreReasoning,
    /// After a reasoning step.
    PostReasoning,
    /// Before a tool execution.
    PreActing,
    /// After a tool execution.
    PostActing,
    /// Before a console prints a piece of a message.
    PrePrint,
    /// After a console printed a piece of a message.
    PostPrint,
}

impl HookType {
    /// Every hook type.
    pub const ALL: [Self; 10] = [
        Self::PreReply,
        Self::PostReply,
        Self::PreObserve,
        Self::PostObserve,
        Self::PreReasoning,
        Self::PostReasoning,
        Self::PreActing,
        Self::PostActing,
        Self::PrePrint,
        Self::PostPrint,
    ];

    /// The reference's name: `pre_reply`, `post_acting`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PreReply => "pre_reply",
            Self::PostReply => "post_reply",
            Self::PreObserve => "pre_observe",
            Self::PostObserve => "post_observe",
            Self::PreReasoning => "pre_reasoning",
            Self::PostReasoning => "post_reasoning",
            Self::PreActing => "pre_acting",
            Self::PostActing => "post_acting",
            Self::PrePrint => "pre_print",
            Self::PostPrint => "post_print",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for HookType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

pub(crate) type PreReplyFn = dyn Fn(&AgentContext, &ReplyInput) -> Option<ReplyInput> + Send + Sync;
pub(crate) type PostReplyFn = dyn Fn(&AgentContext, &ReplyInput, &Msg) -> Option<Msg> + Send + Sync;
pub(crate) type PreObserveFn = dyn Fn(&str, &[Msg]) -> Option<Vec<Msg>> + Send + Sync;
pub(crate) type PostObserveFn = dyn Fn(&str, &[Msg]) + Send + Sync;
pub(crate) type PreReasoningFn = dyn Fn(&AgentContext, Option<&ToolChoice>) -> Option<ToolChoice> + Send + Sync;
pub(crate) type PostReasoningFn = dyn Fn(&AgentContext, Option<&ToolChoice>, Option<&Msg>) -> Option<Msg> + Send + Sync;
pub(crate) type PreActingFn = dyn Fn(&AgentContext, &ToolCallBlock) -> Option<ToolCallBlock> + Send + Sync;
pub(crate) type PostActingFn =
    dyn Fn(&AgentContext, &ToolCallBlock, &ToolResponse) -> Option<ToolResponse> + Send + Sync;
pub(crate) type PrePrintFn = dyn Fn(&str, &PrintChunk) -> Option<PrintChunk> + Send + Sync;
pub(crate) type PostPrintFn = dyn Fn(&str, &PrintChunk) + Send + Sync;

#[derive(Clone)]
enum HookFn {
    PreReply(Arc<PreReplyFn>),
    PostReply(Arc<PostReplyFn>),
    PreObserve(Arc<PreObserveFn>),
    PostObserve(Arc<PostObserveFn>),
    PreReasoning(Arc<PreReasoningFn>),
    PostReasoning(Arc<PostReasoningFn>),
    PreActing(Arc<PreActingFn>),
    PostActing(Arc<PostActingFn>),
    PrePrint(Arc<PrePrintFn>),
    PostPrint(Arc<PostPrintFn>),
}

/// One hook function, of one [`HookType`]. See the [module docs](super) for what each type
/// receives and may replace.
///
/// A pre hook returns a replacement input, or `None` to keep the current one; a post hook a
/// replacement output, or `None`. Each hook sees what the hooks before it returned.
#[derive(Clone)]
pub struct Hook(HookFn);

macro_rules! accessor {
    ($as:ident, $variant:ident, $f:ty) => {
        pub(crate) fn $as(&self) -> Option<Arc<$f>> {
            match &self.0 {
                HookFn::$variant(f) => Some(Arc::clone(f)),
                _ => None,
            }
        }
    };
}

impl Hook {
    /// Before a reply: sees the input (new messages, or the event resuming a parked reply) and
    /// may replace it.
    pub fn pre_reply(f: impl Fn(&AgentContext, &ReplyInput) -> Option<ReplyInput> + Send + Sync + 'static) -> Self {
        Self(HookFn::PreReply(Arc::new(f)))
    }

    /// After a reply: sees the input and the final message, and may replace the message.
    pub fn post_reply(f: impl Fn(&AgentContext, &ReplyInput, &Msg) -> Option<Msg> + Send + Sync + 'static) -> Self {
        Self(HookFn::PostReply(Arc::new(f)))
    }

    /// Before `observe`: sees the agent's name and the messages, and may replace them.
    pub fn pre_observe(f: impl Fn(&str, &[Msg]) -> Option<Vec<Msg>> + Send + Sync + 'static) -> Self {
        Self(HookFn::PreObserve(Arc::new(f)))
    }

    /// After `observe`: sees the agent's name and the messages stored (`observe` has no output).
    pub fn post_observe(f: impl Fn(&str, &[Msg]) + Send + Sync + 'static) -> Self {
        Self(HookFn::PostObserve(Arc::new(f)))
    }

    /// Before a reasoning step: sees the tool choice of the round (`None`: the model decides)
    /// and may replace it (`Some(ToolChoice::auto())` lets the model decide again).
    pub fn pre_reasoning(
        f: impl Fn(&AgentContext, Option<&ToolChoice>) -> Option<ToolChoice> + Send + Sync + 'static,
    ) -> Self {
        Self(HookFn::PreReasoning(Arc::new(f)))
    }

    /// After a reasoning step: sees the tool choice and the candidate final message (`None` when
    /// the round ended in tool calls), and may replace it. A message returned where there was
    /// none becomes the candidate: the reply ends with it unless tool calls are pending.
    pub fn post_reasoning(
        f: impl Fn(&AgentContext, Option<&ToolChoice>, Option<&Msg>) -> Option<Msg> + Send + Sync + 'static,
    ) -> Self {
        Self(HookFn::PostReasoning(Arc::new(f)))
    }

    /// Before a tool execution: sees the tool call and may replace its arguments. A returned
    /// call with another `input` (raw JSON) gives the tool those arguments, parsed, repaired,
    /// coerced and validated as the model's are (text that does not pass becomes the validation
    /// error result the model sees). The id and name cannot change: a hook that changes them
    /// fails the call, with an error result saying so.
    pub fn pre_acting(
        f: impl Fn(&AgentContext, &ToolCallBlock) -> Option<ToolCallBlock> + Send + Sync + 'static,
    ) -> Self {
        Self(HookFn::PreActing(Arc::new(f)))
    }

    /// After a tool execution: sees the tool call and the tool's final response, and may replace
    /// the response (what is stored and what the model sees).
    pub fn post_acting(
        f: impl Fn(&AgentContext, &ToolCallBlock, &ToolResponse) -> Option<ToolResponse> + Send + Sync + 'static,
    ) -> Self {
        Self(HookFn::PostActing(Arc::new(f)))
    }

    /// Before a console prints a piece of a message: sees the speaking agent's name and the
    /// [`PrintChunk`], and may replace it (a chunk with empty text prints nothing).
    pub fn pre_print(f: impl Fn(&str, &PrintChunk) -> Option<PrintChunk> + Send + Sync + 'static) -> Self {
        Self(HookFn::PrePrint(Arc::new(f)))
    }

    /// After a console printed a piece of a message: sees the agent's name and what was printed
    /// (printing has no output to replace).
    pub fn post_print(f: impl Fn(&str, &PrintChunk) + Send + Sync + 'static) -> Self {
        Self(HookFn::PostPrint(Arc::new(f)))
    }

    /// Where this hook runs.
    pub fn hook_type(&self) -> HookType {
        match &self.0 {
            HookFn::PreReply(_) => HookType::PreReply,
            HookFn::PostReply(_) => HookType::PostReply,
            HookFn::PreObserve(_) => HookType::PreObserve,
            HookFn::PostObserve(_) => HookType::PostObserve,
            HookFn::PreReasoning(_) => HookType::PreReasoning,
            HookFn::PostReasoning(_) => HookType::PostReasoning,
            HookFn::PreActing(_) => HookType::PreActing,
            HookFn::PostActing(_) => HookType::PostActing,
            HookFn::PrePrint(_) => HookType::PrePrint,
            HookFn::PostPrint(_) => HookType::PostPrint,
        }
    }

    accessor!(as_pre_reply, PreReply, PreReplyFn);
    accessor!(as_post_reply, PostReply, PostReplyFn);
    accessor!(as_pre_observe, PreObserve, PreObserveFn);
    accessor!(as_post_observe, PostObserve, PostObserveFn);
    accessor!(as_pre_reasoning, PreReasoning, PreReasoningFn);
    accessor!(as_post_reasoning, PostReasoning, PostReasoningFn);
    accessor!(as_pre_acting, PreActing, PreActingFn);
    accessor!(as_post_acting, PostActing, PostActingFn);
    accessor!(as_pre_print, PrePrint, PrePrintFn);
    accessor!(as_post_print, PostPrint, PostPrintFn);
}

impl fmt::Debug for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Hook").field(&self.hook_type()).finish()
    }
}
