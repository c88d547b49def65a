//! Runtime-state hints as the reference injects them: the time on the first reply, after an
//! interval and after a compression; the context length near the threshold; extra fields;
//! what is stored, what the model sees, and the event order.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, UNIX_EPOCH};

use common::collect;
use towerscope_agent::clock::{Clock, Timezone};
use towerscope_agent::compress::SUMMARY_TOOL;
use towerscope_agent::{Agent, ContextConfig, DEFAULT_HINT_SOURCE, HintConfig};
use towerscope_core::{AgentEvent, ContentBlock, HintContent, Msg};
use towerscope_models::{ScriptedModel, ScriptedResponse};

const NOW: u64 = 1_795_248_355; // 2026-11-21T08:05:55 UTC

fn clock() -> Clock {
    Clock::fixed(UNIX_EPOCH + Duration::from_secs(NOW))
}

fn hint_texts(msg: &Msg) -> Vec<String> {
    msg.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Hint(h) if h.source.as_deref() == Some(DEFAULT_HINT_SOURCE) => h.text(),
            _ => None,
        })
        .collect()
}

fn all_hints(agent: &Agent) -> Vec<String> {
    agent.state().context.iter().flat_map(hint_texts).collect()
}

#[tokio::test]
async fn the_first_reply_tells_the_time_before_the_model_call() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("Hi!")]);
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::new().clock(clock()))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "hello"))).await;
    assert_eq!(&out.kinds()[..3], ["REPLY_START", "HINT_BLOCK", "MODEL_CALL_START"]);
    let expected = "<system-reminder>Treat the following as the ground truth at this point of the conversation. \
                    Anything stated earlier is outdated, and a later reminder, if any, supersedes this one:\n\
                    <current-time>2026-11-21T08:05:55</current-time>\n<timezone>UTC</timezone>\n</system-reminder>";
    let AgentEvent::HintBlock(event) = &out.events[1] else {
        panic!("a hint event")
    };
    assert_eq!(event.source.as_deref(), Some(DEFAULT_HINT_SOURCE));
    assert!(matches!(&event.hint, HintContent::Text(t) if t == expected));
    // Stored at the head of the reply's message, and sent to the model there.
    let state = agent.state();
    assert_eq!(hint_texts(&state.context[1]), [expected]);
    let seen = &model.requests()[0];
    assert_eq!(hint_texts(&seen.messages.to_vec()[2]), [expected]);
}

#[tokio::test]
async fn the_time_is_told_again_only_after_the_interval() {
    let clock = clock();
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::text("1"),
            ScriptedResponse::text("2"),
            ScriptedResponse::text("3"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model)
        .hints(
            HintConfig::new()
                .clock(clock.clone())
                .timezone(Timezone::fixed("Asia/Shanghai", 480)),
        )
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "one")).await.unwrap();
    clock.advance(Duration::from_secs(29 * 60));
    let second = collect(agent.reply_stream(Msg::user("user", "two"))).await;
    assert!(!second.kinds().contains(&"HINT_BLOCK"), "within 30 minutes: no hint");
    clock.advance(Duration::from_secs(2 * 60));
    agent.reply(Msg::user("user", "three")).await.unwrap();
    let hints = all_hints(&agent);
    assert_eq!(hints.len(), 2);
    assert!(hints[0].contains("<current-time>2026-11-21T16:05:55</current-time>\n<timezone>Asia/Shanghai</timezone>"));
    assert!(
        hints[1].contains("<current-time>2026-11-21T16:36:55</current-time>"),
        "{}",
        hints[1]
    );
}

#[tokio::test]
async fn after_a_compression_the_time_is_told_again() {
    let summary = r#"{"task_overview": "t", "current_state": "c", "important_discoveries": "d", "next_steps": "n", "context_to_preserve": "p"}"#;
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::text("short"),
            ScriptedResponse::text("x ".repeat(1700)),
            ScriptedResponse::text("after"),
        ],
    )
    .context_size(1000)
    .respond_with(move |req| {
        (req.tools.len() == 1 && req.tools[0].name == SUMMARY_TOOL)
            .then(|| ScriptedResponse::tool_call("s", SUMMARY_TOOL, summary))
    });
    let agent = Agent::builder("a")
        .model(model)
        .hints(HintConfig::new().clock(clock()))
        .context(ContextConfig::new())
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "one")).await.unwrap();
    agent.reply(Msg::user("user", "two")).await.unwrap();
    assert_eq!(
        all_hints(&agent).len(),
        1,
        "within the interval, no compression yet: one hint"
    );
    let third = collect(agent.reply_stream(Msg::user("user", "three"))).await;
    assert!(agent.state().summary.starts_with("<system-info>"), "compressed");
    assert!(
        third.kinds().contains(&"HINT_BLOCK"),
        "the time left with the compressed part"
    );
    assert!(all_hints(&agent).iter().any(|h| h.contains("<current-time>")));
}

#[tokio::test]
async fn near_the_threshold_the_first_round_tells_the_context_length() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("ok")]).context_size(1000);
    let agent = Agent::builder("a")
        .model(model)
        .hints(HintConfig::new().clock(clock()).extra_field("user-plan", "pro"))
        .context(ContextConfig::new().compression_tool(true))
        .build()
        .unwrap();
    // About 650 tokens with the CompressContext tool's schema: over 60% of 1000, under 80%.
    agent.observe([Msg::user("user", "y".repeat(2000))]).unwrap();
    agent.reply(Msg::user("user", "and now?")).await.unwrap();
    let hint = all_hints(&agent).pop().unwrap();
    let line = hint.lines().find(|l| l.starts_with("<context-length>")).unwrap();
    assert!(
        line.starts_with("<context-length>Your current context contains "),
        "{line}"
    );
    assert!(line.ends_with(
        " tokens. When reaching 800 tokens, your context will be compressed. No task is in progress, so judge by \
         yourself whether the context should be compressed now by calling `CompressContext`.</context-length>"
    ));
    assert!(
        hint.contains("\n<user-plan>pro</user-plan>\n</system-reminder>"),
        "extra fields come last"
    );
}

#[tokio::test]
async fn extra_fields_alone_inject_nothing_and_disabled_hints_do_no_work() {
    let clock = clock();
    let model = ScriptedModel::new("m", [ScriptedResponse::text("1"), ScriptedResponse::text("2")]);
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::new().clock(clock.clone()).extra_field("k", "v"))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "one")).await.unwrap();
    agent.reply(Msg::user("user", "two")).await.unwrap();
    assert_eq!(all_hints(&agent).len(), 1, "the second reply has nothing to tell");

    let off = Agent::builder("a")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("1")]))
        .hints(HintConfig::disabled())
        .build()
        .unwrap();
    let out = collect(off.reply_stream(Msg::user("user", "one"))).await;
    assert!(!out.kinds().contains(&"HINT_BLOCK"));
    assert!(all_hints(&off).is_empty());
}

#[tokio::test]
async fn without_the_event_the_hint_is_still_stored() {
    let agent = Agent::builder("a")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("1")]))
        .hints(HintConfig::new().clock(clock()).emit_event(false))
        .build()
        .unwrap();
    let out = collect(agent.reply_stream(Msg::user("user", "one"))).await;
    assert!(!out.kinds().contains(&"HINT_BLOCK"));
    assert_eq!(all_hints(&agent).len(), 1);
}

#[test]
fn a_template_without_the_placeholder_fails_the_build() {
    let err = Agent::builder("a")
        .model(ScriptedModel::new("m", []))
        .hints(HintConfig::new().template("no placeholder"))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("'{runtime_state}' placeholder"), "{err}");
}
