//! What the invoke_agent span learns from the reply's items, and how it ends.

use opentelemetry::{Context, KeyValue};
use towerscope_core::{
    AgentContext, AgentError, AgentEvent, ReplyFinishedReason, ReplyItem, ResumeApplied, ToolCallBlock, Usage,
    WaitingCalls,
};

use crate::content;
use crate::failure::Failure;
use crate::json;
use crate::semconv::*;
use crate::span::{OpenSpan, ReplyProvider, ReplyTokens, string_array};

/// The open invoke_agent span and what the reply told it so far.
#[derive(Debug)]
pub(crate) struct ReplyRecord {
    span: OpenSpan,
    capture: bool,
    /// The reply's context, where the chat span leaves the provider of the first model call.
    ctx: AgentContext,
    reply_id: String,
    hitl_pending: Vec<String>,
    external_pending: Vec<String>,
    finished_reason: Option<ReplyFinishedReason>,
    /// The reply's outcome (its final message, or an error item) was seen: a drop after it is
    /// the consumer stopping at the end (`Agent::reply` returns at the first error), not a
    /// cancellation.
    outcome_seen: bool,
    usage: Option<Usage>,
    output: Option<String>,
    /// An external resume's results, until the reply shows whether the agent took them.
    external: Option<Box<super::ExternalResults>>,
}

impl ReplyRecord {
    pub(crate) fn new(span: OpenSpan, capture: bool, ctx: AgentContext) -> Self {
        Self {
            span,
            capture,
            reply_id: ctx.reply_id().to_string(),
            ctx,
            hitl_pending: Vec::new(),
            external_pending: Vec::new(),
            finished_reason: None,
            outcome_seen: false,
            usage: None,
            output: None,
            external: None,
        }
    }

    /// The reply resumes with these external results: their spans are recorded once the agent
    /// took them.
    pub(crate) fn external_results(&mut self, results: super::ExternalResults) {
        self.external = Some(Box::new(results));
    }

    /// Records the external results' spans if the agent took them (it says so in the reply's
    /// context, after checking them and before anything else the reply streams or ends with);
    /// else drops them.
    fn settle_external(&mut self) {
        if let Some(external) = self.external.take()
            && self.ctx.extensions().get::<ResumeApplied>().is_some()
        {
            external.record(self.span.context(), self.capture);
        }
    }

    pub(crate) fn context(&self) -> &Context {
        self.span.context()
    }

    pub(crate) fn ended(&self) -> bool {
        self.span.ended()
    }

    /// Takes note of one item of the reply.
    pub(crate) fn observe(&mut self, item: &Result<ReplyItem, AgentError>) {
        if self.external.is_some() {
            self.settle_external();
        }
        match item {
            Ok(ReplyItem::Event(event)) => self.event(event),
            Ok(ReplyItem::Final(msg)) => {
                self.outcome_seen = true;
                self.usage = msg.usage;
                // Parked (no `REPLY_END`): the agent leaves what the reply waits on in its
                // context, all of it, where the request events name only what was asked in
                // this call (a resume that answers one call of its turn and waits on another
                // asks nothing again).
                if self.finished_reason.is_none()
                    && let Some(waiting) = self.ctx.extensions().get::<WaitingCalls>()
                {
                    let names = |calls: &[ToolCallBlock]| calls.iter().map(|c| c.name.clone()).collect();
                    self.hitl_pending = names(&waiting.confirm);
                    self.external_pending = names(&waiting.external);
                }
                if self.capture && self.span.is_recording() {
                    let reason = self.finished_reason.map_or("stop", ReplyFinishedReason::as_str);
                    self.output = Some(content::reply_output(msg, reason));
                }
            }
            // The user interrupted the reply: not a failure.
            Err(AgentError::Interrupted) => {
                self.outcome_seen = true;
                self.finished_reason = Some(ReplyFinishedReason::Interrupted);
            }
            Err(err) => {
                self.outcome_seen = true;
                self.span.fail(Failure::of_error(err, self.capture));
            }
        }
    }

    /// The kinds read here ([`READS`](super::READS) names them for the agent).
    fn event(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::ReplyStart(e) => self.reply_id = e.reply_id.to_string(),
            AgentEvent::RequireUserConfirm(e) => {
                self.hitl_pending.extend(e.tool_calls.iter().map(|c| c.name.clone()));
            }
            AgentEvent::RequireExternalExecution(e) => {
                self.external_pending
                    .extend(e.tool_calls.iter().map(|c| c.name.clone()));
            }
            AgentEvent::ReplyEnd(e) => {
                self.finished_reason = Some(e.finished_reason);
                if e.finished_reason == ReplyFinishedReason::Error {
                    self.span.fail(Failure::of_reply_end(e.error.as_ref(), self.capture));
                }
            }
            _ => {}
        }
    }

    /// The reply's service failed before it answered with a stream.
    pub(crate) fn failed_to_open(&mut self, err: &AgentError) {
        self.external = None;
        self.span.fail(Failure::of_error(err, self.capture));
        self.end();
    }

    /// The stream ended; or it was dropped after the final message.
    pub(crate) fn end(&mut self) {
        if self.span.ended() {
            return;
        }
        self.settle_external();
        let span = &self.span;
        span.set(KeyValue::new(AGENTSCOPE_REPLY_ID, std::mem::take(&mut self.reply_id)));
        if let Some(ReplyProvider(provider)) = self.ctx.get::<ReplyProvider>() {
            span.set(KeyValue::new(GEN_AI_PROVIDER_NAME, provider));
        }
        for (key, names) in [
            (AGENTSCOPE_HITL_PENDING_TOOLS, &self.hitl_pending),
            (AGENTSCOPE_EXTERNAL_PENDING_TOOLS, &self.external_pending),
        ] {
            if !names.is_empty() {
                span.set(KeyValue::new(key, json::string_array(names.iter().map(String::as_str))));
            }
        }
        if let Some(reason) = self.finished_reason {
            span.set(KeyValue::new(
                GEN_AI_RESPONSE_FINISH_REASONS,
                string_array([reason.as_str()]),
            ));
        }
        if let Some(usage) = self.usage {
            span.set(KeyValue::new(GEN_AI_USAGE_INPUT_TOKENS, usage_int(usage.input_tokens)));
            span.set(KeyValue::new(
                GEN_AI_USAGE_OUTPUT_TOKENS,
                usage_int(usage.output_tokens),
            ));
        } else if let Some(tokens) = self.ctx.get::<ReplyTokens>() {
            // No final message (its consumer stopped at `REPLY_END`): the model calls' tokens.
            span.set(KeyValue::new(GEN_AI_USAGE_INPUT_TOKENS, usage_int(tokens.input)));
            span.set(KeyValue::new(GEN_AI_USAGE_OUTPUT_TOKENS, usage_int(tokens.output)));
        }
        if !span.failed()
            && let Some(output) = self.output.take()
        {
            span.set(KeyValue::new(GEN_AI_OUTPUT_MESSAGES, output));
        }
        span.ok();
        self.span.end();
    }

    /// A poll of the stream unwound (a panic below), and the stream was dropped.
    pub(crate) fn panicked(&mut self) {
        self.span.fail(crate::span::PANICKED);
        self.end();
    }

    /// The stream was dropped: a normal end after the reply's outcome (its final message or
    /// error) or its `REPLY_END` (a consumer that stops at "the run finished"), an interruption
    /// when the user interrupted it, else a cancellation.
    pub(crate) fn dropped(&mut self) {
        if self.span.ended() {
            return;
        }
        if !self.outcome_seen && self.finished_reason.is_none() {
            if self.ctx.is_interrupted() {
                self.finished_reason = Some(ReplyFinishedReason::Interrupted);
            } else {
                self.span.cancel("reply stream");
            }
        }
        self.end();
    }
}

/// A token count as an OTel int.
pub(crate) fn usage_int(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}
