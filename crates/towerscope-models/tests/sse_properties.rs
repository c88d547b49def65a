//! Properties of the SSE decoders of both providers: any chunking of a transcript (lines and
//! UTF-8 characters split anywhere, CRLF line ends) decodes to the same chunks as the whole
//! body; random and mutated bytes never panic, and every stream ends with at most one final
//! chunk or one error.
//!
//! Each property runs 256 cases by default (`PROPTEST_CASES` overrides it), so
//! `scripts/fuzz.sh` can run them for a fixed time at high counts.
#![allow(clippy::unwrap_used)]

use std::convert::Infallible;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use futures_core::Stream;
use futures_util::stream;
use proptest::prelude::*;
use serde_json::{Value, json};
use towerscope_core::{AgentError, ChatResponse, ContentBlock};
use towerscope_models::{anthropic, openai};

const OPENAI: [&str; 3] = [
    include_str!("transcripts/openai_text.sse"),
    include_str!("transcripts/openai_tool_calls.sse"),
    include_str!("transcripts/openai_answer.sse"),
];
const ANTHROPIC: [&str; 3] = [
    include_str!("transcripts/anthropic_thinking_tool.sse"),
    include_str!("transcripts/anthropic_answer.sse"),
    include_str!("transcripts/anthropic_overloaded.sse"),
];

/// Drains a stream that never waits (its body is in memory).
fn drain(stream: impl Stream<Item = Result<ChatResponse, AgentError>>) -> Vec<Result<ChatResponse, AgentError>> {
    let mut stream = pin!(stream);
    let mut cx = Context::from_waker(Waker::noop());
    let mut out = Vec::new();
    loop {
        match stream.as_mut().poll_next(&mut cx) {
            Poll::Ready(Some(item)) => out.push(item),
            Poll::Ready(None) => return out,
            Poll::Pending => panic!("an in-memory body never waits"),
        }
    }
}

fn decode(openai_format: bool, pieces: Vec<Vec<u8>>) -> Vec<Result<ChatResponse, AgentError>> {
    let body = stream::iter(pieces.into_iter().map(Ok::<_, Infallible>));
    if openai_format {
        drain(openai::decode_stream(body))
    } else {
        drain(anthropic::decode_stream(body))
    }
}

/// What a chunk says, without its generated ids, timestamps and timing.
fn view(item: &Result<ChatResponse, AgentError>) -> Value {
    match item {
        Err(err) => json!({"error": err.to_string()}),
        Ok(chunk) => {
            let blocks: Vec<Value> = chunk
                .content
                .iter()
                .map(|block| match block {
                    ContentBlock::Text(t) => json!(["text", t.text]),
                    ContentBlock::Thinking(t) => json!(["thinking", t.thinking, t.extra]),
                    ContentBlock::ToolCall(c) => json!(["tool", c.id.to_string(), c.name, c.input]),
                    other => json!(["other", other.kind().as_str()]),
                })
                .collect();
            let usage = chunk.usage.as_ref().map(|u| {
                json!([
                    u.input_tokens,
                    u.output_tokens,
                    u.cache_input_tokens,
                    u.cache_creation_input_tokens
                ])
            });
            json!({"last": chunk.is_last, "blocks": blocks, "usage": usage, "metadata": chunk.metadata})
        }
    }
}

fn views(items: &[Result<ChatResponse, AgentError>]) -> Vec<Value> {
    items.iter().map(view).collect()
}

/// `bytes` cut at the given fractions of its length.
fn cut(bytes: &[u8], fractions: &[f64]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = fractions.iter().map(|f| (f * bytes.len() as f64) as usize).collect();
    points.sort_unstable();
    points.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for point in points {
        out.push(bytes[start..point].to_vec());
        start = point;
    }
    out.push(bytes[start..].to_vec());
    out
}

fn transcript() -> impl Strategy<Value = (bool, &'static str)> {
    (any::<bool>(), 0..3usize)
        .prop_map(|(openai_format, i)| (openai_format, if openai_format { OPENAI[i] } else { ANTHROPIC[i] }))
}

/// The stream's shape: chunks, then one final chunk or one error, then nothing.
fn assert_well_ended(items: &[Result<ChatResponse, AgentError>]) {
    for (i, item) in items.iter().enumerate() {
        let ends = item.is_err() || matches!(item, Ok(chunk) if chunk.is_last);
        assert_eq!(
            ends,
            i + 1 == items.len(),
            "only the last item ends the stream: {items:?}"
        );
    }
}

proptest! {
    #[test]
    fn any_chunking_decodes_to_the_same_chunks(
        (openai_format, text) in transcript(),
        fractions in prop::collection::vec(0.0..1.0f64, 0..40),
        crlf in any::<bool>(),
    ) {
        let text = if crlf { text.replace('\n', "\r\n") } else { text.to_owned() };
        let whole = decode(openai_format, vec![text.as_bytes().to_vec()]);
        let pieces = decode(openai_format, cut(text.as_bytes(), &fractions));
        prop_assert_eq!(views(&pieces), views(&whole));
        assert_well_ended(&pieces);
    }

    #[test]
    fn random_bytes_never_panic(
        openai_format in any::<bool>(),
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
        fractions in prop::collection::vec(0.0..1.0f64, 0..8),
    ) {
        let items = decode(openai_format, cut(&bytes, &fractions));
        assert_well_ended(&items);
    }

    #[test]
    fn mutated_transcripts_never_panic(
        (openai_format, text) in transcript(),
        edits in prop::collection::vec((0.0..1.0f64, any::<u8>(), 0..3u8), 1..12),
        fractions in prop::collection::vec(0.0..1.0f64, 0..8),
    ) {
        let mut bytes = text.as_bytes().to_vec();
        for (at, byte, op) in edits {
            let i = ((at * bytes.len() as f64) as usize).min(bytes.len().saturating_sub(1));
            match op {
                0 if !bytes.is_empty() => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ if !bytes.is_empty() => { bytes.remove(i); }
                _ => {}
            }
        }
        let items = decode(openai_format, cut(&bytes, &fractions));
        assert_well_ended(&items);
    }
}

#[test]
fn every_transcript_ends_as_documented() {
    for text in OPENAI {
        let items = decode(true, vec![text.as_bytes().to_vec()]);
        assert!(matches!(items.last(), Some(Ok(chunk)) if chunk.is_last), "{items:?}");
    }
    for (text, ends_well) in ANTHROPIC.into_iter().zip([true, true, false]) {
        let items = decode(false, vec![text.as_bytes().to_vec()]);
        assert_eq!(
            matches!(items.last(), Some(Ok(chunk)) if chunk.is_last),
            ends_well,
            "{items:?}"
        );
    }
}
