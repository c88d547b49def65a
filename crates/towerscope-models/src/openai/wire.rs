//! The JSON the OpenAI Chat Completions API answers with, read without copying strings that
//! need no unescaping.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;

/// A streamed chunk (`chat.completion.chunk`) or a complete response (`chat.completion`); an
/// `error` object instead when the server failed (some servers send it inside a 200 stream).
#[derive(Debug, Deserialize)]
pub(super) struct CompletionWire<'a> {
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) choices: Option<Vec<ChoiceWire<'a>>>,
    #[serde(default)]
    pub(super) usage: Option<UsageWire>,
    #[serde(default)]
    pub(super) error: Option<IgnoredAny>,
}

/// One choice: a `delta` when streamed, a `message` when complete.
#[derive(Debug, Deserialize)]
pub(super) struct ChoiceWire<'a> {
    #[serde(default)]
    pub(super) index: u32,
    #[serde(borrow, default)]
    pub(super) delta: Option<MessageWire<'a>>,
    #[serde(borrow, default)]
    pub(super) message: Option<MessageWire<'a>>,
    #[serde(borrow, default)]
    pub(super) finish_reason: Option<Cow<'a, str>>,
}

/// The assistant's message, or a delta of it.
#[derive(Debug, Default, Deserialize)]
pub(super) struct MessageWire<'a> {
    #[serde(borrow, default)]
    pub(super) content: Option<Cow<'a, str>>,
    /// Reasoning as DeepSeek, llama.cpp and others send it.
    #[serde(borrow, default)]
    pub(super) reasoning_content: Option<Cow<'a, str>>,
    /// Reasoning as OpenRouter and vLLM send it.
    #[serde(borrow, default)]
    pub(super) reasoning: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) refusal: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) tool_calls: Option<Vec<ToolCallWire<'a>>>,
}

impl<'a> MessageWire<'a> {
    /// The reasoning text, from whichever field the server uses.
    pub(super) fn reasoning_text(&self) -> Option<&str> {
        self.reasoning_content.as_deref().or(self.reasoning.as_deref())
    }
}

/// A tool call, or a delta of one: the id and name come in the first delta of a call only, the
/// arguments in fragments; `index` says which call a delta belongs to.
#[derive(Debug, Deserialize)]
pub(super) struct ToolCallWire<'a> {
    #[serde(default)]
    pub(super) index: Option<u32>,
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) function: Option<FunctionWire<'a>>,
}

/// The function of a tool call.
#[derive(Debug, Deserialize)]
pub(super) struct FunctionWire<'a> {
    #[serde(borrow, default)]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) arguments: Option<Cow<'a, str>>,
}

/// Token usage (`stream_options.include_usage` sends it in a last chunk without choices).
#[derive(Debug, Deserialize)]
pub(super) struct UsageWire {
    #[serde(default)]
    pub(super) prompt_tokens: u64,
    #[serde(default)]
    pub(super) completion_tokens: u64,
    #[serde(default)]
    pub(super) total_tokens: Option<u64>,
    #[serde(default)]
    pub(super) prompt_tokens_details: Option<PromptDetailsWire>,
    #[serde(default)]
    pub(super) completion_tokens_details: Option<CompletionDetailsWire>,
}

/// Details of the prompt tokens.
#[derive(Debug, Deserialize)]
pub(super) struct PromptDetailsWire {
    #[serde(default)]
    pub(super) cached_tokens: Option<u64>,
    #[serde(default)]
    pub(super) audio_tokens: Option<u64>,
}

/// Details of the completion tokens.
#[derive(Debug, Deserialize)]
pub(super) struct CompletionDetailsWire {
    #[serde(default)]
    pub(super) reasoning_tokens: Option<u64>,
    #[serde(default)]
    pub(super) audio_tokens: Option<u64>,
}
