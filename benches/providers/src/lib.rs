//! A recorded-style streamed OpenAI answer with tool calls, and the two decoders the benchmark
//! compares: towerscope's `openai::decode_stream` (SSE to `ChatResponse` chunks, accumulating the
//! complete response) and async-openai's (SSE events to `CreateChatCompletionStreamResponse`, as
//! its `create_stream` maps them, without its spawned task and channel).

use std::convert::Infallible;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use futures_core::Stream;
use futures_util::stream;
use serde_json::json;

/// Data events of the answer (the `[DONE]` marker aside).
pub const CHUNKS: usize = 1000;

/// The SSE body of a streamed answer of [`CHUNKS`] data events, in the documented format: a role
/// delta, 715 content deltas (with escapes and non-ASCII text), two tool calls of 141 deltas each
/// (the id and name in the first), the finish reason, the usage, then `[DONE]`. Each event is
/// returned on its own, as servers flush them.
pub fn transcript() -> Vec<Vec<u8>> {
    let id = "chatcmpl-BenchAnswer000000000000";
    let event = |choices: serde_json::Value, usage: Option<serde_json::Value>| {
        let mut chunk = json!({
            "id": id, "object": "chat.completion.chunk", "created": 1731000000,
            "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_50cad350e4", "choices": choices,
        });
        if let Some(usage) = usage {
            chunk["usage"] = usage;
        }
        format!("data: {chunk}\n\n").into_bytes()
    };
    let delta = |delta: serde_json::Value, finish: Option<&str>| json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]);
    let words = [
        "The ",
        "weather ",
        "in ",
        "Paris ",
        "is ",
        "\"sunny\" ",
        "(21 °C), ",
        "with ",
        "a ",
        "light\n",
        "breeze; ",
        "Zürich ",
        "is ",
        "cloudy. ",
    ];
    let mut out = vec![event(
        delta(json!({"role": "assistant", "content": "", "refusal": null}), None),
        None,
    )];
    for i in 0..715 {
        out.push(event(delta(json!({"content": words[i % words.len()]}), None), None));
    }
    for (index, (call, city)) in [("call_bench_paris", "Paris"), ("call_bench_zurich", "Zürich")]
        .into_iter()
        .enumerate()
    {
        let first = json!({"tool_calls": [{"index": index, "id": call, "type": "function", "function": {"name": "get_weather", "arguments": ""}}]});
        out.push(event(delta(first, None), None));
        let arguments = format!(
            "{{\"city\": \"{city}\", \"days\": 3, \"units\": \"metric\", \"notes\": \"{}\"}}",
            "sunny spells, ".repeat(40)
        );
        let chars: Vec<char> = arguments.chars().collect();
        for i in 0..140 {
            let fragment: String = chars[i * chars.len() / 140..(i + 1) * chars.len() / 140]
                .iter()
                .collect();
            out.push(event(
                delta(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
                    None,
                ),
                None,
            ));
        }
    }
    out.push(event(delta(json!({}), Some("tool_calls")), None));
    let usage = json!({"prompt_tokens": 812, "completion_tokens": 998, "total_tokens": 1810,
        "prompt_tokens_details": {"cached_tokens": 512, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}});
    out.push(event(json!([]), Some(usage)));
    out.push(b"data: [DONE]\n\n".to_vec());
    out
}

/// A body whose cost shows how a decoder grows with its input: `content` bytes of answer text
/// in one content delta (`one_delta`: one SSE line, read in 16 KiB pieces as TLS records come),
/// or `content` deltas of 10 bytes (events of about 140 bytes) all in one read (a buffering
/// proxy, a recorded body); then the finish reason and `[DONE]`.
pub fn large(content: usize, one_delta: bool) -> Vec<Vec<u8>> {
    let event = |delta: serde_json::Value, finish: Option<&str>| {
        let chunk = json!({
            "id": "chatcmpl-large", "object": "chat.completion.chunk", "created": 1731000000, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        format!("data: {chunk}\n\n").into_bytes()
    };
    let mut body = Vec::new();
    if one_delta {
        body.extend(event(json!({"content": "x".repeat(content)}), None));
    } else {
        for _ in 0..content {
            body.extend(event(json!({"content": "xxxxxxxxxx"}), None));
        }
    }
    body.extend(event(json!({}), Some("stop")));
    body.extend(b"data: [DONE]\n\n");
    if one_delta {
        body.chunks(16 * 1024).map(<[u8]>::to_vec).collect()
    } else {
        vec![body]
    }
}

/// The body cut into pieces of `size` bytes (segments, rather than events).
pub fn segments(events: &[Vec<u8>], size: usize) -> Vec<Vec<u8>> {
    events.concat().chunks(size).map(<[u8]>::to_vec).collect()
}

/// Polls a stream that never waits to its end, counting items.
fn count<S: Stream>(stream: S, mut each: impl FnMut(S::Item)) -> usize {
    let mut stream = pin!(stream);
    let mut cx = Context::from_waker(Waker::noop());
    let mut n = 0;
    while let Poll::Ready(Some(item)) = stream.as_mut().poll_next(&mut cx) {
        each(item);
        n += 1;
    }
    n
}

/// towerscope: the chunks (each a `ChatResponse`) then the complete response; returns how many
/// items came out (the data events that carry a delta, plus the final response).
pub fn towerscope(pieces: &[Vec<u8>]) -> usize {
    let body = stream::iter(pieces.iter().map(|p| Ok::<_, Infallible>(p.as_slice())));
    count(towerscope_models::openai::decode_stream(body), |item| {
        assert!(item.is_ok());
    })
}

/// async-openai: each event parsed into its chunk type, as `Chat::create_stream` does.
pub fn async_openai(pieces: &[Vec<u8>]) -> usize {
    use async_openai::types::chat::CreateChatCompletionStreamResponse;
    let body = stream::iter(pieces.iter().map(|p| Ok::<_, Infallible>(p.as_slice())));
    let mut done = false;
    let mut parsed = 0;
    count(eventsource_stream::EventStream::new(body), |event| {
        let Ok(event) = event else {
            panic!("the body is well formed")
        };
        if done || event.data == "[DONE]" || event.event == "keepalive" {
            done = true;
            return;
        }
        let chunk: CreateChatCompletionStreamResponse = serde_json::from_str(&event.data).expect("a chunk");
        std::hint::black_box(&chunk);
        parsed += 1;
    });
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_decoders_read_every_chunk() {
        let events = transcript();
        assert_eq!(events.len(), CHUNKS + 1);
        assert_eq!(async_openai(&events), CHUNKS);
        assert_eq!(async_openai(&segments(&events, 1460)), CHUNKS);
        // 715 content and 282 tool call deltas make chunks (the role, finish and usage events
        // carry none), then the complete response.
        assert_eq!(towerscope(&events), 715 + 282 + 1);
        assert_eq!(towerscope(&segments(&events, 1460)), 715 + 282 + 1);
    }

    #[test]
    fn both_decoders_read_the_large_bodies() {
        // One delta, then the complete response; the finish event carries no delta.
        assert_eq!(towerscope(&large(100_000, true)), 2);
        assert_eq!(async_openai(&large(100_000, true)), 2);
        assert_eq!(towerscope(&large(100, false)), 101);
        assert_eq!(async_openai(&large(100, false)), 101);
    }
}
