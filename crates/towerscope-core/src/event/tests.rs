//! Wire-format tests of the events against the reference's field names.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use super::*;
use crate::chat::ModelFinishedReason;
use crate::message::{
    DataSource, ErrorInfo, MediaBlock, PermissionBehavior, PermissionRule, ReplyFinishedReason, ToolCallBlock,
    ToolCallState, ToolResultBlock, ToolResultState, Usage,
};

/// One event of every kind, with the fields it must have beyond `type`, `id`, `created_at` and
/// `metadata`, as in the reference's table.
fn one_of_each() -> Vec<(AgentEvent, &'static [&'static str])> {
    const BLOCK: &[&str] = &["reply_id", "block_id"];
    const DELTA: &[&str] = &["reply_id", "block_id", "delta"];
    let base64 = DataSource::Base64 {
        data: "YWJj".into(),
        media_type: "audio/wav".into(),
    };
    let url = DataSource::Url {
        url: "https://example.com/a.png".into(),
        media_type: "image/png".into(),
    };
    let mut asking = ToolCallBlock::new("c1", "shell", r#"{"cmd":"ls"}"#);
    asking.state = ToolCallState::Asking;
    asking
        .suggested_rules
        .push(PermissionRule::new("shell", PermissionBehavior::Allow, "suggested"));
    let result = ToolResultBlock::new("c2", "ext", "done", ToolResultState::Success);
    vec![
        (
            ReplyStartEvent::new("s1", "r1", "bot").into(),
            &["session_id", "reply_id", "name", "role"],
        ),
        (
            ReplyEndEvent::new("s1", "r1", ReplyFinishedReason::Error)
                .with_error(ErrorInfo::new("upstream", "503"))
                .into(),
            &["session_id", "reply_id", "finished_reason", "error"],
        ),
        (
            ModelCallStartEvent::new("r1", "gpt").into(),
            &["reply_id", "model_name"],
        ),
        (
            ModelCallEndEvent::new("r1", &Usage::new(10, 2)).into(),
            &[
                "reply_id",
                "input_tokens",
                "output_tokens",
                "cache_input_tokens",
                "cache_creation_input_tokens",
                "finished_reason",
            ],
        ),
        (TextBlockStartEvent::new("r1", "b1").into(), BLOCK),
        (TextBlockDeltaEvent::new("r1", "b1", "hi").into(), DELTA),
        (
            TextBlockEndEvent::new("r1", "b1").with_text("hi!").into(),
            &["reply_id", "block_id", "text"],
        ),
        (
            DataBlockStartEvent::new("r1", "d1", "audio/wav").into(),
            &["reply_id", "block_id", "media_type", "name"],
        ),
        (
            DataBlockDeltaEvent::new("r1", "d1", base64).into(),
            &["reply_id", "block_id", "media_type", "data", "url"],
        ),
        (DataBlockEndEvent::new("r1", "d1").into(), BLOCK),
        (ThinkingBlockStartEvent::new("r1", "t1").into(), BLOCK),
        (ThinkingBlockDeltaEvent::new("r1", "t1", "hm").into(), DELTA),
        (ThinkingBlockEndEvent::new("r1", "t1").into(), BLOCK),
        (
            HintBlockEvent::new("r1", "h1", vec![MediaBlock::text("x")], Some("system".into())).into(),
            &["reply_id", "block_id", "source", "hint"],
        ),
        (
            ToolCallStartEvent::new("r1", "c1", "shell").into(),
            &["reply_id", "tool_call_id", "tool_call_name"],
        ),
        (
            ToolCallDeltaEvent::new("r1", "c1", "{").into(),
            &["reply_id", "tool_call_id", "delta"],
        ),
        (ToolCallEndEvent::new("r1", "c1").into(), &["reply_id", "tool_call_id"]),
        (
            ToolResultStartEvent::new("r1", "c1", "shell").into(),
            &["reply_id", "tool_call_id", "tool_call_name"],
        ),
        (
            ToolResultTextDeltaEvent::new("r1", "c1", "out").into(),
            &["reply_id", "tool_call_id", "delta"],
        ),
        (
            ToolResultDataDeltaEvent::new("r1", "c1", url).into(),
            &["reply_id", "tool_call_id", "block_id", "media_type", "data", "url"],
        ),
        (
            ToolResultEndEvent::new("r1", "c1", ToolResultState::Success, serde_json::Map::new()).into(),
            &["reply_id", "tool_call_id", "state"],
        ),
        (ExceedMaxItersEvent::new("r1", "bot").into(), &["reply_id", "name"]),
        (
            RequireUserConfirmEvent::new("r1", vec![asking.clone()]).into(),
            &["reply_id", "tool_calls"],
        ),
        (
            RequireExternalExecutionEvent::new("r1", vec![asking.clone()]).into(),
            &["reply_id", "tool_calls"],
        ),
        (
            UserConfirmResultEvent::new("r1", vec![ConfirmResult::new(true, asking).with_rules(vec![])]).into(),
            &["reply_id", "confirm_results"],
        ),
        (UserInterruptEvent::new("r1").into(), &["reply_id"]),
        (
            ExternalExecutionResultEvent::new("r1", vec![result]).into(),
            &["reply_id", "execution_results"],
        ),
        (
            CustomEvent::new("state_updated", serde_json::Map::new()).into(),
            &["name", "value"],
        ),
    ]
}

#[test]
fn every_kind_has_the_reference_type_and_fields() {
    let events = one_of_each();
    assert_eq!(events.len(), 28);
    assert_eq!(EventType::ALL.len(), 28);
    for ((event, fields), kind) in events.iter().zip(EventType::ALL) {
        assert_eq!(event.event_type(), *kind, "events are listed in the reference's order");
        let value = serde_json::to_value(event).unwrap();
        let object = value.as_object().unwrap();
        assert_eq!(object["type"], kind.as_str());
        assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        let mut expected: Vec<&str> = ["type", "id", "created_at", "metadata"]
            .iter()
            .chain(fields.iter())
            .copied()
            .collect();
        expected.sort_unstable();
        let mut found: Vec<&str> = object.keys().map(String::as_str).collect();
        found.sort_unstable();
        assert_eq!(found, expected, "{kind}");
        assert_eq!(object["id"], event.id().to_string());
        assert_eq!(object["created_at"], event.created_at().to_string());
        let back: AgentEvent = serde_json::from_value(value).unwrap();
        assert_eq!(&back, event, "{kind} round-trips");
    }
}

#[test]
fn type_strings_are_screaming_snake_case() {
    let names: Vec<&str> = EventType::ALL.iter().map(|kind| kind.as_str()).collect();
    assert_eq!(names[0], "REPLY_START");
    assert!(names.contains(&"TOOL_RESULT_DATA_DELTA"));
    assert!(names.contains(&"EXTERNAL_EXECUTION_RESULT"));
    assert_eq!(names[27], "CUSTOM");
    for name in names {
        assert!(name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'), "{name}");
        let kind: EventType = serde_json::from_value(json!(name)).unwrap();
        assert_eq!(kind.to_string(), name);
    }
}

#[test]
fn tool_call_delta_matches_the_reference_shape() {
    let event: AgentEvent = ToolCallDeltaEvent::new("r1", "c1", r#"{"a""#).into();
    let value = serde_json::to_value(&event).unwrap();
    assert_eq!(value["type"], "TOOL_CALL_DELTA");
    assert_eq!(value["reply_id"], "r1");
    assert_eq!(value["tool_call_id"], "c1");
    assert_eq!(value["delta"], r#"{"a""#);
    assert_eq!(value["metadata"], json!({}));
    assert_eq!(event.reply_id().map(ToString::to_string).as_deref(), Some("r1"));
}

#[test]
fn nested_blocks_keep_their_type_tags_and_defaults() {
    let events = one_of_each();
    let confirm = serde_json::to_value(&events[22].0).unwrap();
    assert_eq!(confirm["tool_calls"][0]["type"], "tool_call");
    assert_eq!(confirm["tool_calls"][0]["state"], "asking");
    assert_eq!(
        confirm["tool_calls"][0]["suggested_rules"][0]["rule_content"],
        Value::Null
    );
    let answer = serde_json::to_value(&events[24].0).unwrap();
    assert_eq!(answer["confirm_results"][0]["tool_call"]["type"], "tool_call");
    assert_eq!(answer["confirm_results"][0]["rules"], json!([]));
    let results = serde_json::to_value(&events[26].0).unwrap();
    assert_eq!(results["execution_results"][0]["type"], "tool_result");
    let hint = serde_json::to_value(&events[13].0).unwrap();
    assert_eq!(hint["hint"][0]["type"], "text");
    let start = serde_json::to_value(&events[0].0).unwrap();
    assert_eq!(start["role"], "assistant");
    let model_end = serde_json::to_value(&events[3].0).unwrap();
    assert_eq!(model_end["finished_reason"], "completed");
    assert_eq!(model_end["cache_input_tokens"], 0);
    let data = serde_json::to_value(&events[8].0).unwrap();
    assert_eq!(data["url"], Value::Null);
    let text_end = serde_json::to_value(TextBlockEndEvent::new("r", "b")).unwrap();
    assert_eq!(text_end["text"], Value::Null);
}

#[test]
fn minimal_input_events_get_defaults() {
    let event: AgentEvent = serde_json::from_value(json!({"type": "USER_INTERRUPT", "reply_id": "r1"})).unwrap();
    assert_eq!(event.id().len(), 32);
    assert!(event.metadata().is_empty());
    let end: AgentEvent =
        serde_json::from_value(json!({"type": "REPLY_END", "session_id": "s", "reply_id": "r"})).unwrap();
    assert!(
        matches!(&end, AgentEvent::ReplyEnd(e) if e.finished_reason == ReplyFinishedReason::Completed && e.error.is_none()),
        "{end:?}"
    );
    let model_end: AgentEvent = serde_json::from_value(
        json!({"type": "MODEL_CALL_END", "reply_id": "r", "input_tokens": 1, "output_tokens": 2}),
    )
    .unwrap();
    assert!(
        matches!(&model_end, AgentEvent::ModelCallEnd(e)
            if e.usage() == Usage::new(1, 2) && e.finished_reason == ModelFinishedReason::Completed),
        "{model_end:?}"
    );
    let custom: AgentEvent = serde_json::from_value(json!({"type": "CUSTOM", "name": "team_updated"})).unwrap();
    assert_eq!(custom.reply_id(), None);
    let data: AgentEvent = serde_json::from_value(
        json!({"type": "TOOL_RESULT_DATA_DELTA", "reply_id": "r", "tool_call_id": "c", "media_type": "image/png", "url": "u"}),
    )
    .unwrap();
    let url = DataSource::Url {
        url: "u".into(),
        media_type: "image/png".into(),
    };
    assert!(
        matches!(&data, AgentEvent::ToolResultDataDelta(d) if d.block_id.len() == 32 && d.source().as_ref() == Some(&url)),
        "{data:?}"
    );
}

#[test]
fn malformed_events_name_the_problem() {
    let cases = [
        (
            json!({"type": "TOOL_CALL_DELTA", "reply_id": "r", "tool_call_id": "c"}),
            "missing field `delta`",
        ),
        (
            json!({"type": "REPLY_START", "reply_id": "r", "name": "bot"}),
            "missing field `session_id`",
        ),
        (
            json!({"type": "MODEL_CALL_END", "reply_id": "r", "input_tokens": "many", "output_tokens": 1}),
            "invalid type: string \"many\"",
        ),
        (
            json!({"type": "TOOL_RESULT_END", "reply_id": "r", "tool_call_id": "c", "state": "ok"}),
            "unknown variant `ok`",
        ),
        (json!({"type": "NOT_AN_EVENT"}), "unknown variant `NOT_AN_EVENT`"),
        (json!({"reply_id": "r"}), "missing field `type`"),
        (
            json!({"type": "DATA_BLOCK_DELTA", "reply_id": "r", "block_id": "b", "media_type": "audio/wav"}),
            "exactly one of `data` or `url` must be provided",
        ),
        (
            json!({"type": "TOOL_RESULT_DATA_DELTA", "reply_id": "r", "tool_call_id": "c", "media_type": "image/png",
                   "data": "YQ==", "url": "https://x"}),
            "exactly one of `data` or `url` must be provided",
        ),
        (
            json!({"type": "REQUIRE_USER_CONFIRM", "reply_id": "r", "tool_calls": [{"type": "tool_call", "id": "c", "input": "{}"}]}),
            "missing field `name`",
        ),
    ];
    for (value, message) in cases {
        let err = serde_json::from_value::<AgentEvent>(value.clone()).unwrap_err();
        assert!(err.to_string().contains(message), "{value}: {err}");
    }
    let err = serde_json::from_str::<AgentEvent>(r#"{"type": "TEXT_BLOCK_DELTA", "reply_id": "r", "block_id": 3}"#)
        .unwrap_err();
    assert!(err.to_string().contains("invalid type: integer `3`"), "{err}");
}
