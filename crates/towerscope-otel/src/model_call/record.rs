//! What a model call records: the chat span's request and response attributes, and the metrics.

use std::sync::Arc;
use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanBuilder, SpanKind};
use towerscope_core::{AgentError, ChatResponse, ModelCallRequest};

use crate::config::Config;
use crate::content;
use crate::failure::Failure;
use crate::provider::Instruments;
use crate::reply::conversation_id;
use crate::reply::usage_int;
use crate::semconv::*;
use crate::span::{CANCELLED, OpenSpan, ReplyProvider, ReplySpan, ReplyTokens, parent_of, string_array};

/// One model call being recorded: its chat span (when tracing), its metric attributes (when
/// metering), and when it started.
#[derive(Debug)]
pub(crate) struct ChatRecord {
    span: Option<OpenSpan>,
    /// The reply's context: tells a user's interruption from an abandoned call on drop.
    reply: towerscope_core::AgentContext,
    instruments: Arc<Instruments>,
    metric_attributes: Vec<KeyValue>,
    start: Instant,
    capture: bool,
    first_chunk_seen: bool,
    /// The answer arrived (a stream's final chunk); the span ends with the stream.
    answered: bool,
    done: bool,
}

impl ChatRecord {
    /// Starts recording a call: the chat span with its request attributes.
    pub(crate) fn start(instruments: Arc<Instruments>, config: &Config, req: &ModelCallRequest) -> Self {
        let start = Instant::now();
        let model = &*req.model;
        let name = model.model_name();
        let provider = model.provider();
        let metric_attributes = match &instruments.metrics {
            None => Vec::new(),
            Some(_) => {
                let mut attributes = vec![
                    KeyValue::new(GEN_AI_OPERATION_NAME, OPERATION_CHAT),
                    KeyValue::new(GEN_AI_PROVIDER_NAME, provider.to_owned()),
                    KeyValue::new(GEN_AI_REQUEST_MODEL, name.to_owned()),
                ];
                if let Some(address) = model.server_address() {
                    attributes.push(KeyValue::new(SERVER_ADDRESS, address.to_owned()));
                    if let Some(port) = model.server_port() {
                        attributes.push(KeyValue::new(SERVER_PORT, i64::from(port)));
                    }
                }
                attributes
            }
        };
        let span = instruments.tracer.as_ref().map(|tracer| {
            let mut attributes = vec![
                KeyValue::new(GEN_AI_OPERATION_NAME, OPERATION_CHAT),
                KeyValue::new(GEN_AI_PROVIDER_NAME, provider.to_owned()),
                KeyValue::new(GEN_AI_REQUEST_MODEL, name.to_owned()),
                KeyValue::new(GEN_AI_CONVERSATION_ID, conversation_id(req.ctx.session_id())),
            ];
            if let Some(address) = model.server_address() {
                attributes.push(KeyValue::new(SERVER_ADDRESS, address.to_owned()));
                if let Some(port) = model.server_port() {
                    attributes.push(KeyValue::new(SERVER_PORT, i64::from(port)));
                }
            }
            request_parameters(req, &mut attributes);
            let builder = SpanBuilder::from_name(format!("{OPERATION_CHAT} {name}"))
                .with_kind(SpanKind::Client)
                .with_attributes(attributes);
            let span = OpenSpan::start(tracer, builder, &parent_of(&req.ctx));
            let mut extensions = req.ctx.extensions();
            if extensions.get::<ReplySpan>().is_some() {
                extensions.get_or_insert_with(|| ReplyProvider(Arc::from(provider)));
            }
            drop(extensions);
            // The content only once the sampler kept the span: serialising and redacting every
            // message of a long conversation is the costliest part of a span.
            if config.capture_content && span.is_recording() {
                let (instructions, input) = content::model_input(&req.messages);
                if let Some(instructions) = instructions {
                    span.set(KeyValue::new(GEN_AI_SYSTEM_INSTRUCTIONS, instructions));
                }
                span.set(KeyValue::new(GEN_AI_INPUT_MESSAGES, input));
                if let Some(definitions) = config.tool_definitions.get(&req.tools, req.tool_choice.as_ref()) {
                    span.set(KeyValue::new(GEN_AI_TOOL_DEFINITIONS, definitions));
                }
            }
            span
        });
        Self {
            span,
            instruments,
            metric_attributes,
            start,
            capture: config.capture_content,
            reply: req.ctx.clone(),
            first_chunk_seen: false,
            answered: false,
            done: false,
        }
    }

    /// The chat span's context, if there is a span.
    pub(crate) fn context(&self) -> Option<&opentelemetry::Context> {
        self.span.as_ref().map(OpenSpan::context)
    }

    pub(crate) fn done(&self) -> bool {
        self.done
    }

    /// Whether the model answered with a stream.
    pub(crate) fn streamed(&self, stream: bool) {
        if let Some(span) = &self.span {
            span.set(KeyValue::new(GEN_AI_REQUEST_STREAM, stream));
        }
    }

    /// A chunk arrived: the first one sets the time to first chunk.
    pub(crate) fn chunk(&mut self) {
        if self.first_chunk_seen {
            return;
        }
        self.first_chunk_seen = true;
        let seconds = self.start.elapsed().as_secs_f64();
        if let Some(span) = &self.span {
            span.set(KeyValue::new(GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, seconds));
        }
        if let Some(metrics) = &self.instruments.metrics {
            metrics.time_to_first_chunk(seconds, &self.metric_attributes);
        }
    }

    /// The complete response arrived: the span ends with it.
    pub(crate) fn complete(&mut self, response: &ChatResponse) {
        self.answered(response);
        self.finish_ok();
    }

    /// A stream's final chunk (or the complete response) arrived: its response attributes and
    /// token usage are recorded. A stream's span ends with the stream, which the agent reads
    /// past its final chunk: an error there (a layer rejecting the answer) fails the call.
    pub(crate) fn answered(&mut self, response: &ChatResponse) {
        if self.done || self.answered {
            return;
        }
        self.answered = true;
        if let Some(usage) = &response.usage {
            let mut extensions = self.reply.extensions();
            if extensions.get::<ReplySpan>().is_some() {
                let tokens = extensions.get_or_insert_with(ReplyTokens::default);
                tokens.input = tokens.input.saturating_add(usage.input_tokens);
                tokens.output = tokens.output.saturating_add(usage.output_tokens);
            }
        }
        let response_model = response.metadata.get("model").and_then(|m| m.as_str());
        if let Some(span) = &mut self.span {
            let reason = content::finish_reason(response);
            if span.is_recording() {
                span.set(KeyValue::new(GEN_AI_RESPONSE_ID, response.id.to_string()));
                span.set(KeyValue::new(
                    GEN_AI_RESPONSE_FINISH_REASONS,
                    string_array([reason.to_owned()]),
                ));
                if let Some(model) = response_model {
                    span.set(KeyValue::new(GEN_AI_RESPONSE_MODEL, model.to_owned()));
                }
                if let Some(usage) = &response.usage {
                    span.set(KeyValue::new(GEN_AI_USAGE_INPUT_TOKENS, usage_int(usage.input_tokens)));
                    span.set(KeyValue::new(
                        GEN_AI_USAGE_OUTPUT_TOKENS,
                        usage_int(usage.output_tokens),
                    ));
                    for (key, count) in [
                        (GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, usage.cache_input_tokens),
                        (
                            GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
                            usage.cache_creation_input_tokens,
                        ),
                    ] {
                        if count > 0 {
                            span.set(KeyValue::new(key, usage_int(count)));
                        }
                    }
                }
                if self.capture {
                    span.set(KeyValue::new(
                        GEN_AI_OUTPUT_MESSAGES,
                        content::chat_output(response, reason),
                    ));
                }
            }
        }
        if let Some(metrics) = &self.instruments.metrics {
            if let Some(model) = response_model {
                self.metric_attributes
                    .push(KeyValue::new(GEN_AI_RESPONSE_MODEL, model.to_owned()));
            }
            if let Some(usage) = &response.usage {
                metrics.tokens(usage.input_tokens, usage.output_tokens, &mut self.metric_attributes);
            }
        }
    }

    /// The answered call ended: an OK span, and the call's duration.
    fn finish_ok(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        if let Some(span) = &mut self.span {
            span.ok();
            span.end();
        }
        if let Some(metrics) = &self.instruments.metrics {
            metrics.duration(self.start.elapsed().as_secs_f64(), &self.metric_attributes);
        }
    }

    /// The stream ended: after its final chunk the call is done; without it, it failed.
    pub(crate) fn ended(&mut self) {
        if self.answered {
            self.finish_ok();
        } else {
            self.ended_without_final();
        }
    }

    /// The call failed (before answering, or in the middle of its stream).
    pub(crate) fn fail(&mut self, err: &AgentError) {
        if matches!(err, AgentError::Interrupted) {
            self.interrupted();
        } else {
            self.fail_as(Failure::of_error(err, self.capture));
        }
    }

    /// The user interrupted the call: an OK span with the `interrupted` finish reason, and the
    /// call's duration (without `error.type`).
    fn interrupted(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        if let Some(span) = &mut self.span {
            span.set(KeyValue::new(
                GEN_AI_RESPONSE_FINISH_REASONS,
                string_array(["interrupted"]),
            ));
            span.ok();
            span.end();
        }
        if let Some(metrics) = &self.instruments.metrics {
            metrics.duration(self.start.elapsed().as_secs_f64(), &self.metric_attributes);
        }
    }

    fn fail_as(&mut self, failure: Failure<'_>) {
        if self.done {
            return;
        }
        self.done = true;
        let kind = failure.kind;
        if let Some(span) = &mut self.span {
            span.fail(failure);
            span.end();
        }
        self.failed_metrics(kind);
    }

    /// The stream ended without its final (`is_last`) chunk.
    fn ended_without_final(&mut self) {
        self.fail_as(Failure::new(
            "stream_error",
            "the model stream ended without its final (is_last) chunk",
        ));
    }

    /// A poll of the stream unwound (a panic in the model or a layer below), and the stream was
    /// dropped.
    pub(crate) fn panicked(&mut self) {
        self.fail_as(crate::span::PANICKED);
    }

    /// The stream (or the call's future) was dropped: before the final chunk the call was
    /// abandoned (or interrupted); after it the caller had the answer.
    pub(crate) fn dropped(&mut self) {
        if self.answered {
            self.finish_ok();
            return;
        }
        if self.reply.is_interrupted() {
            // The user interrupted the reply: a normal end, as in the reference (its model
            // turns the cancellation into an interrupted response), with its duration.
            self.interrupted();
            return;
        }
        if self.done {
            return;
        }
        self.done = true;
        if let Some(span) = &mut self.span {
            span.cancel("model stream");
            span.end();
        }
        self.failed_metrics(CANCELLED);
    }

    fn failed_metrics(&mut self, kind: &str) {
        if let Some(metrics) = &self.instruments.metrics {
            let mut attributes = std::mem::take(&mut self.metric_attributes);
            attributes.push(KeyValue::new(ERROR_TYPE, kind.to_owned()));
            metrics.duration(self.start.elapsed().as_secs_f64(), &attributes);
        }
    }
}

impl Drop for ChatRecord {
    /// The call's future was dropped before the model answered.
    fn drop(&mut self) {
        self.dropped();
    }
}

/// `gen_ai.request.*`: the model's generation parameters that are set.
fn request_parameters(req: &ModelCallRequest, attributes: &mut Vec<KeyValue>) {
    let params = req.model.parameters();
    let doubles = [
        (GEN_AI_REQUEST_TEMPERATURE, params.temperature),
        (GEN_AI_REQUEST_TOP_P, params.top_p),
        (GEN_AI_REQUEST_PRESENCE_PENALTY, params.presence_penalty),
        (GEN_AI_REQUEST_FREQUENCY_PENALTY, params.frequency_penalty),
    ];
    for (key, value) in doubles {
        if let Some(value) = value {
            attributes.push(KeyValue::new(key, value));
        }
    }
    let ints = [
        (GEN_AI_REQUEST_TOP_K, params.top_k.map(i64::from)),
        (GEN_AI_REQUEST_MAX_TOKENS, params.max_tokens.map(i64::from)),
        (GEN_AI_REQUEST_SEED, params.seed.map(usage_int)),
    ];
    for (key, value) in ints {
        if let Some(value) = value {
            attributes.push(KeyValue::new(key, value));
        }
    }
    if !params.stop_sequences.is_empty() {
        let stops = string_array(params.stop_sequences.iter().cloned());
        attributes.push(KeyValue::new(GEN_AI_REQUEST_STOP_SEQUENCES, stops));
    }
}
