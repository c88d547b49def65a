//! The request body of a Chat Completions call.

use serde::Serialize;
use serde_json::{Map, Value, json};
use towerscope_core::{AgentError, GenerationParams, Messages, ToolChoice, ToolChoiceMode, ToolSchema};

use super::messages::{WireMessage, format};

/// Which field carries the output token limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum MaxTokensField {
    /// `max_completion_tokens`, what OpenAI asks for (and reasoning models require).
    #[default]
    MaxCompletionTokens,
    /// `max_tokens`, for compatible servers that only know the older field.
    MaxTokens,
}

/// How much a reasoning model reasons (`reasoning_effort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ReasoningEffort {
    /// `minimal`
    Minimal,
    /// `low`
    Low,
    /// `medium`
    Medium,
    /// `high`
    High,
}

/// The OpenAI-specific settings of a model, beside its [`GenerationParams`].
#[derive(Debug, Clone)]
pub(super) struct Options {
    pub(super) stream: bool,
    pub(super) include_usage: bool,
    pub(super) send_names: bool,
    pub(super) max_tokens_field: MaxTokensField,
    pub(super) parallel_tool_calls: Option<bool>,
    pub(super) reasoning_effort: Option<ReasoningEffort>,
    pub(super) extra: Map<String, Value>,
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<&'a ToolSchema>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    presence_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    frequency_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<ReasoningEffort>,
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

/// What one call sends.
pub(super) struct Call<'a> {
    pub(super) model: &'a str,
    pub(super) params: &'a GenerationParams,
    pub(super) options: &'a Options,
    pub(super) messages: &'a Messages,
    pub(super) tools: &'a [ToolSchema],
    pub(super) tool_choice: Option<&'a ToolChoice>,
}

/// The JSON body of a call.
pub(super) fn body(call: &Call<'_>) -> Result<Vec<u8>, AgentError> {
    let Call {
        model, params, options, ..
    } = *call;
    let tools: Vec<&ToolSchema> = match call.tool_choice.and_then(|c| c.tools.as_ref()) {
        Some(allowed) => call.tools.iter().filter(|t| allowed.contains(&t.name)).collect(),
        None => call.tools.iter().collect(),
    };
    let has_tools = !tools.is_empty();
    let (max_completion_tokens, max_tokens) = match options.max_tokens_field {
        MaxTokensField::MaxCompletionTokens => (params.max_tokens, None),
        MaxTokensField::MaxTokens => (None, params.max_tokens),
    };
    let body = Body {
        model,
        messages: format(call.messages.iter(), options.send_names)?,
        tool_choice: call.tool_choice.filter(|_| has_tools).map(tool_choice),
        parallel_tool_calls: options.parallel_tool_calls.filter(|_| has_tools),
        tools,
        stream: options.stream,
        stream_options: (options.stream && options.include_usage).then(|| json!({"include_usage": true})),
        temperature: params.temperature,
        top_p: params.top_p,
        max_completion_tokens,
        max_tokens,
        seed: params.seed,
        stop: &params.stop_sequences,
        presence_penalty: params.presence_penalty,
        frequency_penalty: params.frequency_penalty,
        reasoning_effort: options.reasoning_effort,
        extra: &options.extra,
    };
    serde_json::to_vec(&body).map_err(|e| AgentError::validation(format!("could not encode the OpenAI request: {e}")))
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match &choice.mode {
        ToolChoiceMode::Auto => json!("auto"),
        ToolChoiceMode::None => json!("none"),
        ToolChoiceMode::Required => json!("required"),
        ToolChoiceMode::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use towerscope_core::Msg;

    fn options() -> Options {
        Options {
            stream: true,
            include_usage: true,
            send_names: true,
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            parallel_tool_calls: Some(false),
            reasoning_effort: Some(ReasoningEffort::Low),
            extra: Map::new(),
        }
    }

    fn sent(options: &Options, params: &GenerationParams, tools: &[ToolSchema], choice: Option<&ToolChoice>) -> Value {
        let messages = Messages::from(Msg::user("user", "hi"));
        let call = Call {
            model: "gpt-x",
            params,
            options,
            messages: &messages,
            tools,
            tool_choice: choice,
        };
        serde_json::from_slice(&body(&call).unwrap()).unwrap()
    }

    #[test]
    fn parameters_and_stream_options() {
        let mut params = GenerationParams::new()
            .temperature(0.2)
            .top_p(0.9)
            .max_tokens(64)
            .seed(7);
        params.stop_sequences = vec!["END".into()];
        params.presence_penalty = Some(0.5);
        let mut options = options();
        options.extra.insert("user".into(), json!("u-1"));
        let value = sent(&options, &params, &[], Some(&ToolChoice::required()));
        assert_eq!(
            value,
            json!({
                "model": "gpt-x", "messages": [{"role": "user", "name": "user", "content": "hi"}],
                "stream": true, "stream_options": {"include_usage": true},
                "temperature": 0.2, "top_p": 0.9, "max_completion_tokens": 64, "seed": 7, "stop": ["END"],
                "presence_penalty": 0.5, "reasoning_effort": "low", "user": "u-1"
            }),
            "no tools: no tool_choice and no parallel_tool_calls"
        );
        options.max_tokens_field = MaxTokensField::MaxTokens;
        options.stream = false;
        let value = sent(&options, &params, &[], None);
        assert_eq!(
            (value.get("max_tokens"), value.get("stream_options")),
            (Some(&json!(64)), None)
        );
    }

    #[test]
    fn every_tool_choice() {
        let tools = [
            ToolSchema::new("a", "A", json!({"type": "object"})),
            ToolSchema::new("b", "B", json!({"type": "object"})),
        ];
        let params = GenerationParams::new();
        for (choice, expected) in [
            (ToolChoice::auto(), json!("auto")),
            (ToolChoice::none(), json!("none")),
            (ToolChoice::required(), json!("required")),
            (
                ToolChoice::tool("b"),
                json!({"type": "function", "function": {"name": "b"}}),
            ),
        ] {
            let value = sent(&options(), &params, &tools, Some(&choice));
            assert_eq!(value["tool_choice"], expected);
            assert_eq!(value["parallel_tool_calls"], false);
            assert_eq!(value["tools"][1]["function"]["name"], "b");
        }
        let only_b = ToolChoice::allow_list(ToolChoiceMode::Required, ["b"]);
        let value = sent(&options(), &params, &tools, Some(&only_b));
        assert_eq!(value["tools"].as_array().map(Vec::len), Some(1));
        assert_eq!(value["tools"][0]["function"]["name"], "b");
        assert_eq!(sent(&options(), &params, &tools, None).get("tool_choice"), None);
    }
}
