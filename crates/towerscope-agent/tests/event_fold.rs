//! Property: whatever a (well-behaved) model answers, the events of a reply, folded with
//! `Msg::append_event`, rebuild the message the context stores for that reply: its text, its
//! thinking, its tool calls and their results. A consumer that keeps only the event stream (a
//! UI, a log) sees what the agent stored.
#![allow(clippy::unwrap_used)]

mod common;

use proptest::prelude::*;
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{AgentEvent, Msg};
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// Add two integers.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

/// One model answer: optional thinking, optional text, and tool calls (`(a, b)` of each).
#[derive(Debug, Clone)]
struct Answer {
    thinking: Option<String>,
    text: Option<String>,
    calls: Vec<(i64, i64)>,
}

fn words() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-zé°]{1,8}", 1..12).prop_map(|w| w.join(" "))
}

fn answer(last: bool) -> impl Strategy<Value = Answer> {
    let calls = if last { 0..1 } else { 1..4 };
    (
        prop::option::of(words()),
        prop::option::of(words()),
        prop::collection::vec((-1000i64..1000, -1000i64..1000), calls),
    )
        .prop_map(move |(thinking, text, calls)| Answer {
            thinking,
            // The last answer always says something.
            text: if last {
                Some(text.unwrap_or_else(|| "done".into()))
            } else {
                text
            },
            calls,
        })
}

fn script() -> impl Strategy<Value = (Vec<Answer>, bool)> {
    (prop::collection::vec(answer(false), 0..3), answer(true), any::<bool>()).prop_map(
        |(mut rounds, last, streaming)| {
            rounds.push(last);
            (rounds, streaming)
        },
    )
}

fn response(round: usize, answer: &Answer) -> ScriptedResponse {
    let mut response = ScriptedResponse::empty();
    if let Some(thinking) = &answer.thinking {
        response = response.and_thinking(thinking.clone());
    }
    if let Some(text) = &answer.text {
        response = response.and_text(text.clone());
    }
    for (i, (a, b)) in answer.calls.iter().enumerate() {
        response = response.and_tool_call(format!("r{round}_c{i}"), "add", format!(r#"{{"a": {a}, "b": {b}}}"#));
    }
    response
}

fn thinking(msg: &Msg) -> Vec<String> {
    msg.content
        .iter()
        .filter_map(|b| match b {
            towerscope_core::ContentBlock::Thinking(t) => Some(t.thinking.clone()),
            _ => None,
        })
        .collect()
}

fn calls(msg: &Msg) -> Vec<(String, String)> {
    msg.tool_calls().map(|c| (c.id.to_string(), c.input.clone())).collect()
}

fn results(msg: &Msg) -> Vec<(String, String)> {
    // Results of concurrent calls are stored as they finish and folded as they start.
    let mut r: Vec<_> = msg
        .tool_results()
        .map(|r| (r.id.to_string(), format!("{:?} {}", r.state, output_text(&r.output))))
        .collect();
    r.sort();
    r
}

/// A tool result's text (block ids and times are the fold's own).
fn output_text(output: &towerscope_core::ToolOutput) -> String {
    match serde_json::to_value(output).unwrap() {
        serde_json::Value::String(text) => text,
        serde_json::Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        other => other.to_string(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_events_of_a_reply_rebuild_the_stored_message((rounds, streaming) in script()) {
        let model = ScriptedModel::new("m", rounds.iter().enumerate().map(|(i, a)| response(i, a)))
            .streaming(streaming);
        let agent = Agent::builder("a")
            .model(model)
            .tool(FunctionTool::new("add", |x: Add| async move { (x.a + x.b).to_string() }))
            .build()
            .unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let out = runtime.block_on(common::collect(agent.reply_stream(Msg::user("user", "sums?"))));
        prop_assert!(out.error.is_none(), "{:?}", out.error);
        let reply_id = out.final_msg.as_ref().unwrap().id.clone();
        let state = agent.state();
        let stored = state.context.iter().rev().find(|m| m.id == reply_id).unwrap().clone();

        let mut folded = Msg::assistant_blocks("a", Vec::new()).with_id(reply_id);
        for event in &out.events {
            folded.append_event(event);
        }
        prop_assert_eq!(folded.text_content(), stored.text_content());
        prop_assert_eq!(thinking(&folded), thinking(&stored));
        prop_assert_eq!(calls(&folded), calls(&stored));
        prop_assert_eq!(results(&folded), results(&stored));
        // Every call of the script ran once, with its own result.
        let expected = rounds.iter().map(|r| r.calls.len()).sum::<usize>();
        prop_assert_eq!(stored.tool_results().count(), expected);
        prop_assert!(matches!(out.events.last(), Some(AgentEvent::ReplyEnd(_))));
    }
}

/// Draw something (no arguments).
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Draw {}

/// A tool result's blocks as (kind, id, text or data).
fn result_blocks(msg: &Msg) -> Vec<(&'static str, String, String)> {
    let result = msg.tool_results().next().unwrap();
    match &result.output {
        towerscope_core::ToolOutput::Blocks(blocks) => blocks
            .iter()
            .map(|b| match b {
                towerscope_core::MediaBlock::Text(t) => ("text", t.id.to_string(), t.text.clone()),
                towerscope_core::MediaBlock::Data(d) => ("data", d.id.to_string(), format!("{:?}", d.source)),
            })
            .collect(),
        other => panic!("not blocks: {other:?}"),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The reply's message as the agent stored it, and as its events rebuild it.
fn stored_and_rebuilt(agent: &Agent, out: &common::Collected) -> (Msg, Msg) {
    assert!(out.error.is_none(), "{:?}", out.error);
    let reply_id = out.final_msg.as_ref().unwrap().id.clone();
    let stored = agent
        .state()
        .context
        .iter()
        .rev()
        .find(|m| m.id == reply_id)
        .unwrap()
        .clone();
    let mut folded = Msg::assistant_blocks("a", Vec::new()).with_id(reply_id);
    for event in &out.events {
        folded.append_event(event);
    }
    (stored, folded)
}

/// One call of a `draw` tool that streams `chunks`: the reply's message stored, and rebuilt.
fn drawn(chunks: fn() -> Vec<towerscope_core::ToolChunk>) -> (Msg, Msg) {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "draw", "{}"),
            ScriptedResponse::text("done"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model)
        .tool(FunctionTool::streaming("draw", move |_: Draw| {
            futures_util::stream::iter(chunks())
        }))
        .build()
        .unwrap();
    let out = runtime().block_on(common::collect(agent.reply_stream(Msg::user("user", "draw"))));
    stored_and_rebuilt(&agent, &out)
}

/// The texts of a message's tool results.
fn result_texts(msg: &Msg) -> Vec<String> {
    common::results(msg)
        .iter()
        .map(|r| r.output.text_content().unwrap_or_default())
        .collect()
}

/// A tool that streams a text, a data block, more of the first text, then a second text: the
/// folded result has the stored blocks, in the stored order, under the stored ids (the fold
/// appended every text piece to the last block: `[a, data, bc]` against `[ab, data, c]`).
#[test]
fn a_streamed_results_text_pieces_fold_into_the_blocks_they_were_stored_in() {
    use towerscope_core::{DataBlock, TextBlock, ToolChunk};
    let (stored, folded) = drawn(|| {
        vec![
            ToolChunk::new(vec![
                TextBlock::new("a").with_id("t1").into(),
                DataBlock::base64("aGk=", "image/png").with_id("d1").into(),
            ])
            .with_is_last(false),
            ToolChunk::new(vec![TextBlock::new("b").with_id("t1").into()]).with_is_last(false),
            ToolChunk::new(vec![TextBlock::new("c").with_id("t2").into()]),
        ]
    });
    let stored = result_blocks(&stored);
    let texts: Vec<&str> = stored.iter().filter(|b| b.0 == "text").map(|b| b.2.as_str()).collect();
    assert_eq!(texts, ["ab", "c"]);
    assert_eq!(result_blocks(&folded), stored);
}

/// A result that comes whole, without chunks (the structured-output tool's, an `on_acting`
/// layer answering from a cache), reaches the events: they carried none of it, so a consumer
/// rebuilding the reply (the fold, AG-UI's `TOOL_CALL_RESULT`) saw an empty result.
#[test]
fn a_result_given_without_chunks_reaches_the_events() {
    use towerscope_core::{ActingNext, ActingRequest, ToolItem, ToolResponse, ToolStream, from_fn};

    /// The weather.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Weather {
        #[allow(dead_code)]
        celsius: i32,
    }
    let runtime = runtime();

    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::tool_call(
            "c1",
            towerscope_agent::structured::TOOL_NAME,
            r#"{"celsius": 21}"#,
        )],
    );
    let agent = Agent::builder("a").model(model).build().unwrap();
    let schema = towerscope_agent::structured::schema_for::<Weather>();
    let out = runtime.block_on(common::collect(
        agent.reply_stream_structured(Msg::user("u", "paris"), schema),
    ));
    let (stored, folded) = stored_and_rebuilt(&agent, &out);
    assert!(!result_texts(&stored)[0].is_empty());
    assert_eq!(result_texts(&folded), result_texts(&stored));

    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
            ScriptedResponse::text("3"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model)
        .tool(common::add_tool())
        .on_acting(from_fn(|req: ActingRequest, _next: ActingNext| async move {
            let mut cached = ToolResponse::text("3 (cached)");
            cached.id = req.tool_call().id.clone();
            let stream: ToolStream = Box::pin(futures_util::stream::iter([Ok(ToolItem::Response(cached))]));
            Ok(stream)
        }))
        .build()
        .unwrap();
    let out = runtime.block_on(common::collect(agent.reply_stream(Msg::user("u", "1+2"))));
    let (stored, folded) = stored_and_rebuilt(&agent, &out);
    assert_eq!(result_texts(&stored), ["3 (cached)"]);
    assert_eq!(result_texts(&folded), result_texts(&stored));
}

/// A tool that streams text chunks, each a block with a new id: the stored result joins them
/// into one text, and so does the fold (it made one block a piece, which read with line breaks).
#[test]
fn text_chunks_with_new_ids_fold_into_one_text_as_stored() {
    use towerscope_core::ToolChunk;
    let (stored, folded) = drawn(|| {
        vec![
            ToolChunk::text("line 1, ").with_is_last(false),
            ToolChunk::text("line 2"),
        ]
    });
    assert_eq!(result_texts(&stored), ["line 1, line 2"]);
    assert_eq!(result_texts(&folded), result_texts(&stored));
}

/// Pieces whose ids are another kind's block's (a text piece with a data block's id, data
/// pieces with a text's): folded as the stored result folds them, each a block of its own (the
/// fold joined the text pieces across the image, and the data pieces into one).
#[test]
fn pieces_with_another_kinds_id_fold_as_stored() {
    use towerscope_core::{DataBlock, TextBlock, ToolChunk};
    let cases: [fn() -> Vec<ToolChunk>; 2] = [
        || {
            vec![
                ToolChunk::new(vec![DataBlock::base64("aGk=", "image/png").with_id("d").into()]).with_is_last(false),
                ToolChunk::new(vec![TextBlock::new("x").with_id("d").into()]).with_is_last(false),
                ToolChunk::new(vec![DataBlock::base64("aGk=", "image/png").with_id("e").into()]).with_is_last(false),
                ToolChunk::new(vec![TextBlock::new("y").with_id("d").into()]),
            ]
        },
        || {
            vec![
                ToolChunk::new(vec![TextBlock::new("a").with_id("t").into()]).with_is_last(false),
                ToolChunk::new(vec![DataBlock::base64("aGk=", "image/png").with_id("t").into()]).with_is_last(false),
                ToolChunk::new(vec![DataBlock::base64("aGk=", "image/png").with_id("t").into()]),
            ]
        },
    ];
    let shape = |m: &Msg| {
        result_blocks(m)
            .into_iter()
            .map(|(kind, _, content)| (kind, content))
            .collect::<Vec<_>>()
    };
    for chunks in cases {
        let (stored, folded) = drawn(chunks);
        assert_eq!(shape(&folded), shape(&stored));
    }
}
