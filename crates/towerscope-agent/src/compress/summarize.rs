//! Asking the model for the summary, as structured output: the tool
//! `generate_structured_output` with the summary schema, forced by the tool choice, through the
//! agent's `on_model_call` position (so retry, fallback, rate limits and tracing apply to it).
//! The arguments are repaired, coerced and validated as any tool's, then written into the
//! summary template.

use std::sync::Arc;

use futures_util::StreamExt;
use serde_json::Value;
use tower::{Service, ServiceExt};
use towerscope_core::{
    AgentContext, AgentError, ChatResponse, ContentBlock, ContextConfig, Messages, ModelCallRequest,
    ModelFinishedReason, ModelOutput, ModelRef, ToolChoice, ToolSchema, Usage,
};

/// The name of the summary tool, as the reference's structured-output call names it.
pub const SUMMARY_TOOL: &str = "generate_structured_output";

const SUMMARY_TOOL_DESCRIPTION: &str = "Call this function to generate structured output required by the user.";

/// The summary and what writing it cost.
pub(crate) struct Summary {
    pub(crate) text: String,
    pub(crate) usage: Option<Usage>,
}

/// Calls the model through `model_call` and fills the template with its answer.
pub(crate) async fn summarize<M>(
    model_call: M,
    ctx: &AgentContext,
    model: &ModelRef,
    messages: Messages,
    config: &ContextConfig,
) -> Result<Summary, AgentError>
where
    M: Service<ModelCallRequest, Response = ModelOutput, Error = AgentError>,
{
    let tool = ToolSchema::new(SUMMARY_TOOL, SUMMARY_TOOL_DESCRIPTION, config.summary_schema.clone());
    let request = ModelCallRequest {
        ctx: ctx.clone(),
        model: Arc::clone(model),
        messages,
        tools: Arc::from(vec![tool]),
        tool_choice: Some(ToolChoice::tool(SUMMARY_TOOL)),
    };
    let response = match model_call.oneshot(request).await? {
        ModelOutput::Complete(response) => response,
        ModelOutput::Stream(mut stream) => {
            let mut last: Option<ChatResponse> = None;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk?;
                if chunk.is_last && last.is_none() {
                    last = Some(chunk);
                }
            }
            last.ok_or_else(|| AgentError::Stream("the summary call's stream ended without its final chunk".into()))?
        }
    };
    if response.finished_reason == ModelFinishedReason::Interrupted {
        return Err(AgentError::Interrupted);
    }
    let usage = response.usage.as_ref().map(|u| u.to_usage());
    let fields = read_fields(&response.content, &config.summary_schema)?;
    Ok(Summary {
        text: fill_template(&config.summary_template, &fields),
        usage,
    })
}

/// The summary's fields: the arguments of the summary tool call, or (a model that answered in
/// text) a JSON object in the text; validated against the schema.
fn read_fields(content: &[ContentBlock], schema: &Value) -> Result<serde_json::Map<String, Value>, AgentError> {
    let raw = content
        .iter()
        .find_map(|b| match b {
            ContentBlock::ToolCall(c) if c.name == SUMMARY_TOOL => Some(c.input.clone()),
            _ => None,
        })
        .or_else(|| {
            content.iter().find_map(|b| match b {
                ContentBlock::Text(t) => t.text.find('{').map(|i| t.text[i..].to_owned()),
                _ => None,
            })
        })
        .ok_or_else(|| AgentError::Model {
            model: None,
            message: "the model answered the summary request without calling generate_structured_output".into(),
            retryable: false,
            source: None,
        })?;
    match crate::toolkit::parse_input(SUMMARY_TOOL, &raw, schema) {
        Ok(Value::Object(fields)) => Ok(fields),
        Ok(other) => Err(AgentError::validation(format!(
            "the summary is not an object: {}",
            crate::toolkit::truncate(&other.to_string(), 256)
        ))),
        Err(message) => Err(AgentError::validation(message)),
    }
}

/// Replaces each `{field}` of the template with the field's text, in one pass over the
/// template: a field's text that quotes a placeholder stays as written (a replacement per
/// field rewrote what an earlier field put in), as Python's `str.format` fills each placeholder
/// once. Other braces stay as they are (unlike `str.format`).
pub(crate) fn fill_template(template: &str, fields: &serde_json::Map<String, Value>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let field = after
            .find('}')
            .map(|close| &after[..close])
            .filter(|name| !name.contains('{'))
            .and_then(|name| fields.get(name).map(|value| (name, value)));
        match field {
            Some((name, value)) => {
                match value {
                    Value::String(s) => out.push_str(s),
                    other => out.push_str(&other.to_string()),
                }
                rest = &after[name.len() + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Each placeholder is filled once: a field whose text quotes a placeholder keeps it as
    /// written (it was filled by the later field); braces that name no field stay.
    #[test]
    fn a_field_quoting_a_placeholder_is_kept_as_written() {
        let Value::Object(fields) = serde_json::json!({
            "task_overview": "t",
            "current_state": "half done",
            "context_to_preserve": "the line `Status: {current_state}`",
            "count": 3,
        }) else {
            unreachable!()
        };
        let template = "{task_overview} | {current_state} | {context_to_preserve} | {count} | {unknown} | {{x}} | {";
        assert_eq!(
            fill_template(template, &fields),
            "t | half done | the line `Status: {current_state}` | 3 | {unknown} | {{x}} | {"
        );
    }
}
