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
    /// The final response arrived; the span ends with the stream.
    answered: bool,
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
            // Written by the developer, but it may name an internal URL with its credentials.
            let description = crate::redact::redact_text(&tool.description).into_owned();
            attributes.push(KeyValue::new(GEN_AI_TOOL_DESCRIPTION, description));
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
            answered: false,
        }
    }

    pub(crate) fn context(&self) -> &Context {
        self.span.context()
    }

    pub(crate) fn ended(&self) -> bool {
        self.span.ended()
    }

    /// The tool's final response: its result, and ERROR if the tool failed. The span ends with
    /// the stream, which the agent reads past the response: an error there (a layer rejecting
    /// the result) fails the call.
    pub(crate) fn response(&mut self, response: &ToolResponse) {
        if self.span.ended() || self.answered {
            return;
        }
        self.answered = true;
        if self.capture && self.span.is_recording() {
            self.span
                .set(KeyValue::new(GEN_AI_TOOL_CALL_RESULT, content::tool_result(response)));
        }
        if response.state == ToolResultState::Error {
            self.span.fail(Failure::of_tool_response(response, self.capture));
        }
    }

    /// The call failed (before answering, or in its stream, also after its response); an
    /// interruption is not a failure.
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

    /// The stream ended: after the response the call is done; without one, it failed.
    pub(crate) fn stream_ended(&mut self) {
        if self.span.ended() {
            return;
        }
        if !self.answered {
            self.span.fail(Failure::new(
                TOOL_ERROR,
                "the tool's stream ended without a final ToolResponse",
            ));
        }
        self.span.ok();
        self.span.end();
    }

    /// A poll of the stream unwound (a panic in the tool or a layer below), and the stream was
    /// dropped.
    pub(crate) fn panicked(&mut self) {
        if self.span.ended() {
            return;
        }
        self.span.fail(crate::span::PANICKED);
        self.span.end();
    }

    /// The stream (or the call's future) was dropped: after the response the caller had the
    /// result; before it the call was abandoned, or interrupted by the user.
    pub(crate) fn dropped(&mut self) {
        if self.span.ended() {
            return;
        }
        if self.answered || self.reply.is_interrupted() {
            // An interrupted call ends as interrupted, not as a failure.
            self.span.ok();
        } else {
            self.span.cancel("tool stream");
        }
        self.span.end();
    }
}

impl Drop for ToolRecord {
    /// The call's future was dropped before the stack below answered (an interrupt while an
    /// inner layer awaits, or an abandoned reply).
    fn drop(&mut self) {
        self.dropped();
    }
}
