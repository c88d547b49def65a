//! The GenAI client metrics of model calls, recorded when a meter provider is installed:
//!
//! | instrument | kind, unit | attributes |
//! |---|---|---|
//! | `gen_ai.client.operation.duration` | histogram, `s` | operation, provider, request/response model, `server.address`, `error.type` |
//! | `gen_ai.client.token.usage` | histogram, `{token}` | the same and `gen_ai.token.type` = `input` / `output` |
//! | `gen_ai.client.operation.time_to_first_chunk` | histogram, `s` (streams) | the same as duration |
//!
//! The bucket boundaries are the ones the conventions advise
//! ([`DURATION_BUCKETS`](crate::semconv::DURATION_BUCKETS),
//! [`TOKEN_BUCKETS`](crate::semconv::TOKEN_BUCKETS)).

use std::fmt;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, Meter};

use crate::semconv::*;

/// The three GenAI client histograms.
#[derive(Clone)]
pub(crate) struct GenAiMetrics {
    duration: Histogram<f64>,
    token_usage: Histogram<u64>,
    time_to_first_chunk: Histogram<f64>,
}

impl fmt::Debug for GenAiMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenAiMetrics").finish_non_exhaustive()
    }
}

impl GenAiMetrics {
    pub(crate) fn new(meter: &Meter) -> Self {
        Self {
            duration: meter
                .f64_histogram(METRIC_OPERATION_DURATION)
                .with_unit("s")
                .with_description("GenAI operation duration")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            token_usage: meter
                .u64_histogram(METRIC_TOKEN_USAGE)
                .with_unit("{token}")
                .with_description("Number of input and output tokens used")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
            time_to_first_chunk: meter
                .f64_histogram(METRIC_TIME_TO_FIRST_CHUNK)
                .with_unit("s")
                .with_description("Time to receive the first chunk of a streamed response")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
        }
    }

    /// Records the duration of a call (with `error.type` among `attributes` when it failed).
    pub(crate) fn duration(&self, seconds: f64, attributes: &[KeyValue]) {
        self.duration.record(seconds, attributes);
    }

    /// Records the time to a stream's first chunk.
    pub(crate) fn time_to_first_chunk(&self, seconds: f64, attributes: &[KeyValue]) {
        self.time_to_first_chunk.record(seconds, attributes);
    }

    /// Records the input and output tokens of a call.
    pub(crate) fn tokens(&self, input: u64, output: u64, attributes: &mut Vec<KeyValue>) {
        for (kind, count) in [(TOKEN_TYPE_INPUT, input), (TOKEN_TYPE_OUTPUT, output)] {
            attributes.push(KeyValue::new(GEN_AI_TOKEN_TYPE, kind));
            self.token_usage.record(count, attributes);
            attributes.pop();
        }
    }
}
