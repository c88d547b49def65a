//! The request body of a Messages call.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value, json};
use towerscope_core::{AgentError, GenerationParams, Messages, ToolChoice, ToolChoiceMode, ToolSchema};

use super::messages::{CacheControl, EPHEMERAL, WireMessage, format};

/// The Anthropic-specific settings of a model, beside its [`GenerationParams`].
#[derive(Debug, Clone)]
pub(super) struct Options {
    pub(super) stream: bool,
    pub(super) max_tokens: u32,
    pub(super) thinking_budget: Option<u32>,
    pub(super) prompt_caching: bool,
    pub(super) parallel_tool_calls: Option<bool>,
    pub(super) extra: Map<String, Value>,
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<System<'a>>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_k: Option<u32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Value>,
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

/// The system prompt: a string, or text blocks when it carries a cache breakpoint.
#[derive(Serialize)]
#[serde(untagged)]
enum System<'a> {
    Text(Cow<'a, str>),
    Blocks([SystemBlock<'a>; 1]),
}

#[derive(Serialize)]
struct SystemBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: Cow<'a, str>,
    cache_control: CacheControl,
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
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
    let formatted = format(call.messages.iter())?;
    let mut messages = formatted.messages;
    // With thinking, the API refuses a tool_choice that forces a call (a context summary, the
    // last turns of structured output), and a thinking setting must not change within a tool
    // loop: such a call keeps thinking and asks with `auto`, offering only the tool it names.
    let thinking = options.thinking_budget.is_some();
    let only = match call.tool_choice.map(|c| &c.mode) {
        Some(ToolChoiceMode::Tool(name)) if thinking => Some(name.as_str()),
        _ => None,
    };
    let mut tools: Vec<WireTool<'_>> = call
        .tools
        .iter()
        .filter(|t| match call.tool_choice.and_then(|c| c.tools.as_ref()) {
            Some(allowed) => allowed.contains(&t.name),
            None => true,
        })
        .filter(|t| only.is_none_or(|name| t.name == name))
        .map(|t| WireTool {
            name: &t.name,
            description: &t.description,
            input_schema: &t.parameters,
            cache_control: None,
        })
        .collect();
    // Whitespace only is left out: the API refuses an empty system text block.
    let mut parts: Vec<_> = formatted.system.into_iter().filter(|t| !t.trim().is_empty()).collect();
    let system_text = match parts.len() {
        0 => None,
        1 => parts.pop(),
        _ => Some(Cow::Owned(parts.join("\n"))),
    };
    let system = match system_text {
        None => None,
        Some(text) if options.prompt_caching => Some(System::Blocks([SystemBlock {
            kind: "text",
            text,
            cache_control: EPHEMERAL,
        }])),
        Some(text) => Some(System::Text(text)),
    };
    if options.prompt_caching {
        if let Some(last) = tools.last_mut() {
            last.cache_control = Some(EPHEMERAL);
        }
        if let Some(last) = messages.last_mut() {
            let _ = last.content.iter_mut().rev().any(|block| block.mark_cache());
        }
    }
    let tool_choice = (!tools.is_empty())
        .then(|| tool_choice(call.tool_choice, options.parallel_tool_calls, thinking))
        .flatten();
    let body = Body {
        model,
        max_tokens: params.max_tokens.unwrap_or(options.max_tokens),
        system,
        messages,
        tools,
        tool_choice,
        stream: options.stream,
        temperature: params.temperature,
        top_p: params.top_p,
        top_k: params.top_k,
        stop_sequences: &params.stop_sequences,
        thinking: options
            .thinking_budget
            .map(|budget| json!({"type": "enabled", "budget_tokens": budget})),
        extra: &options.extra,
    };
    serde_json::to_vec(&body)
        .map_err(|e| AgentError::validation(format!("could not encode the Anthropic request: {e}")))
}

/// `auto`, `none`, `any` (required) or `tool`, with `disable_parallel_tool_use` when parallel
/// calls are off; with `thinking`, a choice that forces a call is `auto` (see [`body`]).
fn tool_choice(choice: Option<&ToolChoice>, parallel: Option<bool>, thinking: bool) -> Option<Value> {
    let mut value = match choice.map(|c| &c.mode) {
        None if parallel != Some(false) => return None,
        None | Some(ToolChoiceMode::Auto) => json!({"type": "auto"}),
        Some(ToolChoiceMode::Required | ToolChoiceMode::Tool(_)) if thinking => json!({"type": "auto"}),
        Some(ToolChoiceMode::None) => return Some(json!({"type": "none"})),
        Some(ToolChoiceMode::Required) => json!({"type": "any"}),
        Some(ToolChoiceMode::Tool(name)) => json!({"type": "tool", "name": name}),
    };
    if parallel == Some(false) {
        value["disable_parallel_tool_use"] = Value::Bool(true);
    }
    Some(value)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use towerscope_core::{ContentBlock, Msg};

    fn options() -> Options {
        Options {
            stream: true,
            max_tokens: 1024,
            thinking_budget: None,
            prompt_caching: false,
            parallel_tool_calls: None,
            extra: Map::new(),
        }
    }

    fn sent(options: &Options, params: &GenerationParams, messages: &[Msg], choice: Option<&ToolChoice>) -> Value {
        let tools = [
            ToolSchema::new("a", "A", json!({"type": "object"})),
            ToolSchema::new("b", "B", json!({"type": "object"})),
        ];
        let call = Call {
            model: "claude-x",
            params,
            options,
            messages: &messages.iter().cloned().collect(),
            tools: &tools,
            tool_choice: choice,
        };
        serde_json::from_slice(&body(&call).unwrap()).unwrap()
    }

    #[test]
    fn system_tools_thinking_and_parameters() {
        let mut options = options();
        options.thinking_budget = Some(2048);
        let mut params = GenerationParams::new().top_p(0.9);
        params.top_k = Some(40);
        params.stop_sequences = vec!["END".into()];
        let messages = [Msg::system("s", "Be brief."), Msg::user("u", "hi")];
        let value = sent(&options, &params, &messages, None);
        assert_eq!(
            value,
            json!({
                "model": "claude-x", "max_tokens": 1024, "system": "Be brief.",
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                "tools": [
                    {"name": "a", "description": "A", "input_schema": {"type": "object"}},
                    {"name": "b", "description": "B", "input_schema": {"type": "object"}}
                ],
                "stream": true, "top_p": 0.9, "top_k": 40, "stop_sequences": ["END"],
                "thinking": {"type": "enabled", "budget_tokens": 2048}
            })
        );
    }

    /// With thinking, a call that must call a tool asks with `auto` (the API refuses thinking
    /// beside a forcing tool_choice: "Thinking may not be enabled when tool_choice forces tool
    /// use", and thinking must not change within a tool loop), offering only the tool it
    /// names; without thinking it is forced as asked.
    #[test]
    fn a_forced_tool_call_keeps_thinking_and_asks_with_auto() {
        let mut options = options();
        options.thinking_budget = Some(2048);
        let messages = [Msg::user("u", "hi")];
        let params = GenerationParams::new();
        let named = sent(&options, &params, &messages, Some(&ToolChoice::tool("b")));
        assert_eq!(named["thinking"]["budget_tokens"], 2048, "{named}");
        assert_eq!(named["tool_choice"], json!({"type": "auto"}));
        assert_eq!(named["tools"].as_array().map(Vec::len), Some(1), "only b: {named}");
        assert_eq!(named["tools"][0]["name"], "b");
        let any = sent(&options, &params, &messages, Some(&ToolChoice::required()));
        assert_eq!(any["tool_choice"], json!({"type": "auto"}));
        assert_eq!(any["tools"].as_array().map(Vec::len), Some(2));
        let plain = sent(&self::options(), &params, &messages, Some(&ToolChoice::tool("b")));
        assert_eq!(plain["tool_choice"], json!({"type": "tool", "name": "b"}));
        assert!(plain.get("thinking").is_none());
    }

    /// A system text of whitespace only is not sent (with prompt caching it went as an empty
    /// block, which the API refuses).
    #[test]
    fn an_empty_system_text_is_left_out() {
        for caching in [false, true] {
            let mut options = options();
            options.prompt_caching = caching;
            let messages = [Msg::system("s", " \n"), Msg::user("u", "hi")];
            let value = sent(&options, &GenerationParams::new(), &messages, None);
            assert!(value.get("system").is_none(), "{value}");
        }
    }

    #[test]
    fn every_tool_choice() {
        let messages = [Msg::user("u", "hi")];
        let params = GenerationParams::new();
        for (choice, expected) in [
            (ToolChoice::auto(), json!({"type": "auto"})),
            (ToolChoice::none(), json!({"type": "none"})),
            (ToolChoice::required(), json!({"type": "any"})),
            (ToolChoice::tool("b"), json!({"type": "tool", "name": "b"})),
        ] {
            assert_eq!(
                sent(&options(), &params, &messages, Some(&choice))["tool_choice"],
                expected
            );
        }
        let mut serial = options();
        serial.parallel_tool_calls = Some(false);
        assert_eq!(
            sent(&serial, &params, &messages, Some(&ToolChoice::required()))["tool_choice"],
            json!({"type": "any", "disable_parallel_tool_use": true})
        );
        assert_eq!(
            sent(&serial, &params, &messages, None)["tool_choice"],
            json!({"type": "auto", "disable_parallel_tool_use": true})
        );
        let only_a = ToolChoice::allow_list(ToolChoiceMode::Auto, ["a"]);
        assert_eq!(
            sent(&options(), &params, &messages, Some(&only_a))["tools"]
                .as_array()
                .map(Vec::len),
            Some(1)
        );
    }

    #[test]
    fn prompt_caching_marks_system_tools_and_the_last_turn() {
        let mut options = options();
        options.prompt_caching = true;
        let reply = Msg::assistant_blocks(
            "bot",
            vec![
                ContentBlock::tool_call("t1", "a", "{}"),
                ContentBlock::tool_result("t1", "a", "ok", towerscope_core::ToolResultState::Success),
            ],
        );
        let messages = [Msg::system("s", "Be brief."), Msg::user("u", "hi"), reply];
        let value = sent(&options, &GenerationParams::new(), &messages, None);
        let ephemeral = json!({"type": "ephemeral"});
        assert_eq!(
            value["system"],
            json!([{"type": "text", "text": "Be brief.", "cache_control": ephemeral}])
        );
        assert_eq!(value["tools"][1]["cache_control"], ephemeral);
        assert_eq!(value["tools"][0].get("cache_control"), None);
        assert_eq!(value["messages"][2]["content"][0]["cache_control"], ephemeral);
        assert_eq!(value["messages"][0]["content"][0].get("cache_control"), None);
    }
}
