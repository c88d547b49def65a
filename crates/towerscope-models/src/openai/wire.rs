//! The JSON the OpenAI Chat Completions API answers with, read without copying strings that
//! need no unescaping.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::http::text::{JsonText, Text};

/// A streamed chunk (`chat.completion.chunk`) or a complete response (`chat.completion`); an
/// `error` object instead when the server failed (some servers send it inside a 200 stream).
#[derive(Debug, Deserialize)]
#[serde(bound(deserialize = "'de: 'a"))]
pub(super) struct CompletionWire<'a> {
    #[serde(default)]
    pub(super) id: Option<Text<'a>>,
    #[serde(default)]
    pub(super) model: Option<Text<'a>>,
    /// The first choice (`index` 0); the API sends one unless asked for more.
    #[serde(default, rename = "choices", deserialize_with = "first_choice")]
    pub(super) choice: Option<ChoiceWire<'a>>,
    #[serde(default)]
    pub(super) usage: Option<UsageWire>,
    #[serde(default)]
    pub(super) error: Option<IgnoredAny>,
}

/// The choice of index 0 in `choices` (`null` or a list), without collecting the list.
fn first_choice<'de: 'a, 'a, D: Deserializer<'de>>(deserializer: D) -> Result<Option<ChoiceWire<'a>>, D::Error> {
    struct First<'a>(PhantomData<ChoiceWire<'a>>);

    impl<'de: 'a, 'a> Visitor<'de> for First<'a> {
        type Value = Option<ChoiceWire<'a>>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list of choices")
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
            deserializer.deserialize_seq(self)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut first = None;
            while let Some(choice) = seq.next_element::<ChoiceWire<'a>>()? {
                if first.is_none() && choice.index == 0 {
                    first = Some(choice);
                }
            }
            Ok(first)
        }
    }

    deserializer.deserialize_option(First(PhantomData))
}

/// One choice: a `delta` when streamed, a `message` when complete.
#[derive(Debug, Deserialize)]
#[serde(bound(deserialize = "'de: 'a"))]
pub(super) struct ChoiceWire<'a> {
    #[serde(default)]
    pub(super) index: u32,
    #[serde(default)]
    pub(super) delta: Option<MessageWire<'a>>,
    #[serde(default)]
    pub(super) message: Option<MessageWire<'a>>,
    #[serde(default)]
    pub(super) finish_reason: Option<Text<'a>>,
}

/// The assistant's message, or a delta of it.
#[derive(Debug, Default, Deserialize)]
#[serde(bound(deserialize = "'de: 'a"))]
pub(super) struct MessageWire<'a> {
    #[serde(default)]
    pub(super) content: Option<Text<'a>>,
    /// Reasoning as DeepSeek, llama.cpp and others send it.
    #[serde(default)]
    pub(super) reasoning_content: Option<Text<'a>>,
    /// Reasoning as OpenRouter and vLLM send it.
    #[serde(default)]
    pub(super) reasoning: Option<Text<'a>>,
    #[serde(default)]
    pub(super) refusal: Option<Text<'a>>,
    #[serde(default)]
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
#[serde(bound(deserialize = "'de: 'a"))]
pub(super) struct ToolCallWire<'a> {
    #[serde(default)]
    pub(super) index: Option<u32>,
    #[serde(default)]
    pub(super) id: Option<Text<'a>>,
    #[serde(default)]
    pub(super) function: Option<FunctionWire<'a>>,
}

/// The function of a tool call.
#[derive(Debug, Deserialize)]
#[serde(bound(deserialize = "'de: 'a"))]
pub(super) struct FunctionWire<'a> {
    #[serde(default)]
    pub(super) name: Option<Text<'a>>,
    /// A string of JSON; some compatible servers send the object itself.
    #[serde(default)]
    pub(super) arguments: Option<JsonText<'a>>,
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
