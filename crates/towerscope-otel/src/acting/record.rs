//! What a tool execution records on its execute_tool span.

use opentelemetry::trace::{SpanBuilder, SpanKind};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::SdkTracer;
use towerscope_core::{ActingRequest, AgentError, ToolResponse, ToolResultState};

use crate::config::Config;
use crate::content;
use crate::failure::{Failure, TOOL_ERROR};
use crate::reply::conversation_id;
use crate::semconv::*;
use crate::span::{OpenSpan, parent_of};

/// The open execute_tool span of one tool call.
#[derive(Debug)]
pub(crate) struct ToolRecord {
    span: OpenSpan,
    capture: bool,
    /// The reply's context: tells a user's interruption from an abandoned call on drop.
    reply: towerscope_core::AgentContext,
}

impl ToolRecord {
    /// Starts the span with the call's attributes.
    pub(crate) fn start(tracer: &SdkTracer, config: &Config, req: &ActingRequest) -> Self {
        let tool = req.tool();
        let mut attributes = vec![
            KeyValue::new(GEN_AI_OPERATION_NAME, OPERATION_EXECUTE_TOOL),
            KeyValue::new(GEN_AI_TOOL_NAME, tool.name.clone()),
            KeyValue::new(GEN_AI_TOOL_CALL_ID, req.tool_call().id.to_string()),
            KeyValue::new(GEN_AI_TOOL_TYPE, TOOL_TYPE_FUNCTION),
            KeyValue::new(GEN_AI_CONVERSATION_ID, conversation_id(req.ctx.session_id())),
        ];
        if !tool.description.is_empty() {
            attributes.push(KeyValue::new(GEN_AI_TOOL_DESCRIPTION, tool.description.clone()));
        }
        let builder = SpanBuilder::from_name(format!("{OPERATION_EXECUTE_TOOL} {}", tool.name))
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes);
        let span = OpenSpan::start(tracer, builder, &parent_of(&req.ctx));
        // The content only once the sampler kept the span.
        if config.capture_content && span.is_recording() {
            span.set(KeyValue::new(
                GEN_AI_TOOL_CALL_ARGUMENTS,
                content::tool_arguments(&req.tool_call().input),
            ));
        }
        Self {
            span,
            capture: config.capture_content,
            reply: req.ctx.clone(),
        }
    }

    pub(crate) fn context(&self) -> &Context {
        self.span.context()
    }

    pub(crate) fn ended(&self) -> bool {
        self.span.ended()
    }

    /// The tool's final response: its result, and ERROR if the tool failed.
    pub(crate) fn response(&mut self, response: &ToolResponse) {
        if self.span.ended() {
            return;
        }
        if self.capture && self.span.is_recording() {
            self.span
                .set(KeyValue::new(GEN_AI_TOOL_CALL_RESULT, content::tool_result(response)));
        }
        if response.state == ToolResultState::Error {
            self.span.fail(Failure::of_tool_response(response, self.capture));
        }
        self.span.ok();
        self.span.end();
    }

    /// The call failed (before answering, or in its stream); an interruption is not a failure.
    pub(crate) fn fail(&mut self, err: &AgentError) {
        if self.span.ended() {
            return;
        }
        if !matches!(err, AgentError::Interrupted) {
            self.span.fail(Failure::of_error(err, self.capture));
        }
        self.span.ok();
        self.span.end();
    }

    /// The stream ended without a final response.
    pub(crate) fn ended_without_response(&mut self) {
        if self.span.ended() {
            return;
        }
        self.span.fail(Failure::new(
            TOOL_ERROR,
            "the tool's stream ended without a final ToolResponse",
        ));
        self.span.end();
    }

    /// The stream was dropped before the final response.
    pub(crate) fn dropped(&mut self) {
        if self.span.ended() {
            return;
        }
        if self.reply.is_interrupted() {
            // The user interrupted the reply: the call ends as interrupted, not as a failure.
            self.span.ok();
        } else {
            self.span.cancel("tool stream");
        }
        self.span.end();
    }
}
