//! Tests of folding event streams into messages ([`Msg::append_event`]).

#![allow(clippy::unwrap_used)]

use serde_json::{Map, json};

use super::*;
use crate::id::Id;
use crate::message::{
    BlockKind, ContentBlock, DataSource, ErrorInfo, MediaBlock, Msg, PermissionBehavior, PermissionRule,
    ReplyFinishedReason, Role, ToolCallBlock, ToolCallState, ToolOutput, ToolResultBlock, ToolResultState, Usage,
};

fn reply(id: &str) -> Msg {
    Msg::new("bot", Role::Assistant, Vec::new()).unwrap().with_id(id)
}

fn fold(msg: &mut Msg, events: &[AgentEvent]) {
    for event in events {
        msg.append_event(event);
    }
}

fn png(data: &str) -> DataSource {
    DataSource::Base64 {
        data: data.into(),
        media_type: "image/png".into(),
    }
}

#[test]
fn a_whole_reply_folds_into_its_message() {
    let mut msg = reply("r1");
    let text_end = TextBlockEndEvent::new("r1", "tx1");
    let final_end = TextBlockEndEvent::new("r1", "tx2").with_text("It is sunny in Paris.");
    let metadata = json!({"source": "api"}).as_object().cloned().unwrap();
    let result_end = ToolResultEndEvent::new("r1", "c1", ToolResultState::Success, metadata);
    let reply_end = ReplyEndEvent::new("s1", "r1", ReplyFinishedReason::Completed);
    let events: Vec<AgentEvent> = vec![
        ReplyStartEvent::new("s1", "r1", "bot").into(),
        ModelCallStartEvent::new("r1", "model").into(),
        ThinkingBlockStartEvent::new("r1", "th1").into(),
        ThinkingBlockDeltaEvent::new("r1", "th1", "Weather and ").into(),
        ThinkingBlockDeltaEvent::new("r1", "th1", "time.").into(),
        ThinkingBlockEndEvent::new("r1", "th1").into(),
        TextBlockStartEvent::new("r1", "tx1").into(),
        TextBlockDeltaEvent::new("r1", "tx1", "Checking ").into(),
        TextBlockDeltaEvent::new("r1", "tx1", "both.").into(),
        text_end.clone().into(),
        ToolCallStartEvent::new("r1", "c1", "get_weather").into(),
        ToolCallDeltaEvent::new("r1", "c1", r#"{"city":"#).into(),
        ToolCallDeltaEvent::new("r1", "c1", r#" "Paris"}"#).into(),
        ToolCallEndEvent::new("r1", "c1").into(),
        ToolCallStartEvent::new("r1", "c2", "get_time").into(),
        ToolCallDeltaEvent::new("r1", "c2", "{}").into(),
        ToolCallEndEvent::new("r1", "c2").into(),
        ModelCallEndEvent::new(
            "r1",
            &Usage {
                input_tokens: 100,
                output_tokens: 20,
                cache_input_tokens: 10,
                cache_creation_input_tokens: 0,
            },
        )
        .into(),
        ToolResultStartEvent::new("r1", "c1", "get_weather").into(),
        ToolResultTextDeltaEvent::new("r1", "c1", "sunny").into(),
        ToolResultTextDeltaEvent::new("r1", "c1", ", 21C").into(),
        ToolResultDataDeltaEvent::new("r1", "c1", png("YWI="))
            .with_block_id("img")
            .into(),
        ToolResultDataDeltaEvent::new("r1", "c1", png("Yw=="))
            .with_block_id("img")
            .into(),
        result_end.clone().into(),
        ToolResultStartEvent::new("r1", "c2", "get_time").into(),
        ToolResultTextDeltaEvent::new("r1", "c2", "clock unavailable").into(),
        ToolResultEndEvent::new("r1", "c2", ToolResultState::Error, Map::new()).into(),
        // Another reply's event and a custom event change nothing.
        TextBlockStartEvent::new("r2", "other").into(),
        CustomEvent::new("state_updated", Map::new()).into(),
        ModelCallStartEvent::new("r1", "model").into(),
        TextBlockStartEvent::new("r1", "tx2").into(),
        TextBlockDeltaEvent::new("r1", "tx2", "It is sunny").into(),
        final_end.into(),
        ModelCallEndEvent::new("r1", &Usage::new(50, 10)).into(),
        reply_end.clone().into(),
    ];
    fold(&mut msg, &events);

    let kinds: Vec<BlockKind> = msg.content.iter().map(ContentBlock::kind).collect();
    use BlockKind::*;
    assert_eq!(
        kinds,
        [Thinking, Text, ToolCall, ToolCall, ToolResult, ToolResult, Text]
    );

    let thinking = msg.content[0].as_thinking().unwrap();
    assert_eq!(thinking.id, "th1");
    assert_eq!(thinking.thinking, "Weather and time.");
    assert!(thinking.finished_at.is_some());
    let first_text = msg.content[1].as_text().unwrap();
    assert_eq!(first_text.text, "Checking both.");
    assert_eq!(first_text.finished_at, Some(text_end.created_at));
    assert_eq!(
        msg.text_content().as_deref(),
        Some("Checking both.\nIt is sunny in Paris.")
    );

    let calls: Vec<(&str, &str, ToolCallState)> = msg
        .tool_calls()
        .map(|c| (c.id.as_text().unwrap_or("?"), c.input.as_str(), c.state))
        .collect();
    assert_eq!(
        calls,
        [
            ("c1", r#"{"city": "Paris"}"#, ToolCallState::Finished),
            ("c2", "{}", ToolCallState::Finished)
        ]
    );

    let weather = msg.tool_results().next().unwrap();
    assert_eq!(weather.state, ToolResultState::Success);
    assert_eq!(weather.metadata["source"], "api");
    assert_eq!(weather.finished_at, Some(result_end.created_at));
    let output = serde_json::to_value(&weather.output).unwrap();
    assert_eq!(output[0]["type"], "text");
    assert_eq!(output[0]["text"], "sunny, 21C");
    assert_eq!(output[1]["id"], "img");
    assert_eq!(
        output[1]["source"],
        json!({"type": "base64", "data": "YWJj", "media_type": "image/png"})
    );
    let time = msg.tool_results().nth(1).unwrap();
    assert_eq!(time.state, ToolResultState::Error);
    assert_eq!(time.output.text_content().as_deref(), Some("clock unavailable"));

    assert_eq!(
        msg.usage,
        Some(Usage {
            input_tokens: 150,
            output_tokens: 30,
            cache_input_tokens: 10,
            cache_creation_input_tokens: 0
        })
    );
    assert_eq!(msg.finished_reason, Some(ReplyFinishedReason::Completed));
    assert_eq!(msg.finished_at, Some(reply_end.created_at));
    assert_eq!(msg.error, None);

    // The rebuilt message is a valid message on the wire.
    let json = serde_json::to_string(&msg).unwrap();
    assert_eq!(Msg::from_json(&json).unwrap(), msg);
}

#[test]
fn data_blocks_join_base64_and_take_urls() {
    let mut msg = reply("r1");
    let mut start = DataBlockStartEvent::new("r1", "d1", "audio/wav");
    start.name = Some("speech.wav".into());
    let wav = |data: &str| DataSource::Base64 {
        data: data.into(),
        media_type: "audio/wav".into(),
    };
    fold(
        &mut msg,
        &[
            start.into(),
            DataBlockDeltaEvent::new("r1", "d1", wav("YWI=")).into(),
            DataBlockDeltaEvent::new("r1", "d1", wav("Yw==")).into(),
            DataBlockEndEvent::new("r1", "d1").into(),
            DataBlockStartEvent::new("r1", "d2", "image/png").into(),
            DataBlockDeltaEvent::new(
                "r1",
                "d2",
                DataSource::Url {
                    url: "https://x/a.png".into(),
                    media_type: "image/png".into(),
                },
            )
            .into(),
        ],
    );
    let audio = msg.content[0].as_data().unwrap();
    assert_eq!(audio.source, wav("YWJj"));
    assert_eq!(audio.name.as_deref(), Some("speech.wav"));
    assert!(audio.finished_at.is_some());
    let image = msg.content[1].as_data().unwrap();
    assert_eq!(
        image.source,
        DataSource::Url {
            url: "https://x/a.png".into(),
            media_type: "image/png".into()
        }
    );
    assert_eq!(image.finished_at, None);
}

#[test]
fn hints_are_appended_finished() {
    let mut msg = reply("r1");
    msg.append_event(
        &HintBlockEvent::new(
            "r1",
            "h1",
            "<system-reminder>now</system-reminder>",
            Some("system".into()),
        )
        .into(),
    );
    let hint = msg.content[0].as_hint().unwrap();
    assert_eq!(hint.id, "h1");
    assert_eq!(hint.source.as_deref(), Some("system"));
    assert_eq!(hint.finished_at, Some(hint.created_at));
    assert_eq!(hint.text().as_deref(), Some("<system-reminder>now</system-reminder>"));
}

#[test]
fn human_in_the_loop_moves_call_states() {
    let mut msg = reply("r1");
    let rule = PermissionRule::new("shell", PermissionBehavior::Allow, "suggested");
    let mut asking = ToolCallBlock::new("ask", "shell", "");
    asking.suggested_rules.push(rule.clone());
    let denied = ToolCallBlock::new("deny", "shell", "");
    fold(
        &mut msg,
        &[
            ToolCallStartEvent::new("r1", "ask", "shell").into(),
            ToolCallStartEvent::new("r1", "deny", "shell").into(),
            ToolCallStartEvent::new("r1", "ext", "remote").into(),
            RequireUserConfirmEvent::new("r1", vec![asking.clone()]).into(),
            RequireUserConfirmEvent::new("r1", vec![denied.clone()]).into(),
        ],
    );
    assert_eq!(msg.tool_calls().next().unwrap().state, ToolCallState::Asking);
    assert_eq!(msg.tool_calls().next().unwrap().suggested_rules, vec![rule]);

    let answers = vec![
        ConfirmResult::new(true, asking.clone()),
        ConfirmResult::new(false, denied),
    ];
    fold(
        &mut msg,
        &[
            UserConfirmResultEvent::new("r1", answers).into(),
            // A second answer for a call no longer asking is stale.
            UserConfirmResultEvent::new("r1", vec![ConfirmResult::new(false, asking)]).into(),
            RequireExternalExecutionEvent::new("r1", vec![ToolCallBlock::new("ext", "remote", "")]).into(),
        ],
    );
    let states: Vec<ToolCallState> = msg.tool_calls().map(|c| c.state).collect();
    assert_eq!(
        states,
        [
            ToolCallState::Allowed,
            ToolCallState::Finished,
            ToolCallState::Submitted
        ]
    );

    let result = ToolResultBlock::new("ext", "remote", "42", ToolResultState::Success);
    let external = ExternalExecutionResultEvent::new("r1", vec![result.clone()]);
    fold(
        &mut msg,
        &[
            external.clone().into(),
            ExternalExecutionResultEvent::new("r1", vec![result]).into(),
        ],
    );
    assert_eq!(msg.tool_results().count(), 1, "a late duplicate result is skipped");
    let stored = msg.tool_results().next().unwrap();
    assert_eq!(stored.output, ToolOutput::Text("42".into()));
    assert_eq!(stored.finished_at, Some(external.created_at));

    msg.append_event(&UserInterruptEvent::new("r1").into());
    let end = ReplyEndEvent::new("s", "r1", ReplyFinishedReason::Error).with_error(ErrorInfo::new("upstream", "503"));
    msg.append_event(&end.into());
    assert_eq!(msg.finished_reason, Some(ReplyFinishedReason::Error));
    assert_eq!(msg.error, Some(ErrorInfo::new("upstream", "503")));
}

#[test]
fn events_for_unknown_blocks_are_ignored() {
    let mut msg = reply("r1");
    fold(
        &mut msg,
        &[
            TextBlockDeltaEvent::new("r1", "nope", "x").into(),
            TextBlockEndEvent::new("r1", "nope").with_text("y").into(),
            ThinkingBlockDeltaEvent::new("r1", "nope", "x").into(),
            DataBlockDeltaEvent::new("r1", "nope", png("YQ==")).into(),
            ToolCallDeltaEvent::new("r1", "nope", "{").into(),
            ToolResultTextDeltaEvent::new("r1", "nope", "x").into(),
            ToolResultDataDeltaEvent::new("r1", "nope", png("YQ==")).into(),
            ToolResultEndEvent::new("r1", "nope", ToolResultState::Error, Map::new()).into(),
            RequireExternalExecutionEvent::new("r1", vec![ToolCallBlock::new("nope", "t", "")]).into(),
        ],
    );
    assert!(msg.content.is_empty());
    assert_eq!(msg.usage, None);
}

#[test]
fn a_raw_string_result_becomes_blocks_when_more_arrives() {
    let mut msg = reply("r1");
    msg.content
        .push(ToolResultBlock::new("c1", "t", "partial", ToolResultState::Running).into());
    fold(
        &mut msg,
        &[
            ToolResultTextDeltaEvent::new("r1", "c1", " output").into(),
            ToolResultDataDeltaEvent::new("r1", "c1", png("YQ==")).into(),
            ToolResultTextDeltaEvent::new("r1", "c1", "tail").into(),
        ],
    );
    let result = msg.tool_results().next().unwrap();
    let blocks = match &result.output {
        ToolOutput::Blocks(blocks) => blocks.as_slice(),
        ToolOutput::Text(_) => &[],
    };
    assert_eq!(blocks.len(), 3, "{:?}", result.output);
    assert!(matches!(&blocks[0], MediaBlock::Text(t) if t.text == "partial output"));
    assert!(matches!(&blocks[2], MediaBlock::Text(t) if t.text == "tail"));
}

/// A restart discards the blocks it names, by text or numeric id, whether it names few or many:
/// the same blocks go, the others stay in order.
#[test]
fn a_restart_discards_the_blocks_it_names_few_or_many() {
    for (blocks, discarded) in [(10usize, 4usize), (60, 40)] {
        let mut msg = reply("r1");
        // Every other block has a generated (numeric) id, the others a text id.
        let ids: Vec<Id> = (0..blocks)
            .map(|i| {
                if i % 2 == 0 {
                    Id::new()
                } else {
                    Id::from(format!("tx{i}"))
                }
            })
            .collect();
        for id in &ids {
            msg.append_event(&TextBlockStartEvent::new("r1", id).into());
            msg.append_event(&TextBlockDeltaEvent::new("r1", id, "x").into());
        }
        // Discard every block at an index divisible by 3 until `discarded` are named, plus an
        // id no block has and one for another reply's event below.
        let named: Vec<&Id> = ids.iter().step_by(3).take(discarded).collect();
        let mut value = Map::new();
        value.insert("reply_id".into(), "r1".into());
        let mut list: Vec<serde_json::Value> = named.iter().map(|id| id.to_string().into()).collect();
        list.push("no-such-block".into());
        value.insert("discarded_block_ids".into(), list.into());
        let other = {
            let mut value = value.clone();
            value.insert("reply_id".into(), "r2".into());
            CustomEvent::new(crate::RESTART_EVENT, value)
        };
        msg.append_event(&other.into());
        assert_eq!(msg.content.len(), blocks, "another reply's restart discards nothing");
        msg.append_event(&CustomEvent::new(crate::RESTART_EVENT, value).into());
        let kept: Vec<&Id> = msg.content.iter().map(ContentBlock::id).collect();
        let expected: Vec<&Id> = ids.iter().filter(|id| !named.contains(id)).collect();
        assert_eq!(kept, expected, "{blocks} blocks, {} named", named.len());
    }
}
