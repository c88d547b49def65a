//! The user agent: what its replies emit, structured data, interruption, the end of input,
//! and what it refuses.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use futures_util::StreamExt;
use towerscope_core::event::UserInterruptEvent;
use towerscope_core::{AgentEvent, ContentBlock, Msg, ReplyFinishedReason, ReplyItem, Role, StructuredSchema};
use towerscope_team::Participant;
use towerscope_team::user::{ChannelInput, UserAgent, UserReply};

async fn items(user: &UserAgent, msg: Msg) -> Vec<Result<ReplyItem, towerscope_core::AgentError>> {
    user.reply_stream(msg.into()).collect().await
}

#[tokio::test]
async fn a_reply_streams_like_an_agent_s_with_role_user_and_its_data() {
    let (input, person) = ChannelInput::new();
    let user = UserAgent::new("ann").with_input(input);
    person
        .send(
            UserReply::text("Here is the photo.")
                .with_block(ContentBlock::data_url("https://example.invalid/cat.png", "image/png")),
        )
        .unwrap();
    let items = items(&user, Msg::user("bot", "Show me.")).await;
    let kinds: Vec<&str> = items
        .iter()
        .map(|i| match i.as_ref().unwrap() {
            ReplyItem::Event(e) => e.event_type().as_str(),
            ReplyItem::Final(_) => "FINAL",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "REPLY_START",
            "TEXT_BLOCK_START",
            "TEXT_BLOCK_DELTA",
            "TEXT_BLOCK_END",
            "DATA_BLOCK_START",
            "DATA_BLOCK_DELTA",
            "DATA_BLOCK_END",
            "REPLY_END",
            "FINAL"
        ]
    );
    let Ok(ReplyItem::Event(AgentEvent::ReplyStart(start))) = &items[0] else {
        panic!()
    };
    assert_eq!((start.name.as_ref(), start.role), ("ann", Role::User));
    let Ok(ReplyItem::Final(msg)) = items.last().unwrap() else {
        panic!()
    };
    assert_eq!(
        (msg.role, msg.finished_reason),
        (Role::User, Some(ReplyFinishedReason::Completed))
    );
    assert_eq!(msg.content.len(), 2);
    assert_eq!(user.observed()[0].text_content().as_deref(), Some("Show me."));
}

#[tokio::test]
async fn structured_data_is_asked_for_and_attached() {
    let (input, person) = ChannelInput::new();
    let (prompts_tx, mut prompts) = tokio::sync::mpsc::unbounded_channel();
    let user = UserAgent::new("ann").with_input(input.with_prompts(prompts_tx));
    let mut data = serde_json::Map::new();
    data.insert("stars".into(), 4.into());
    person
        .send(UserReply::text("Four stars.").with_structured(data.clone()))
        .unwrap();
    let schema = StructuredSchema {
        name: "Rating".into(),
        schema: serde_json::json!({"type": "object", "properties": {"stars": {"type": "integer"}}}),
    };
    let msg = towerscope_team::final_msg(user.reply_stream_structured(Msg::user("bot", "Rate us.").into(), schema))
        .await
        .unwrap();
    assert_eq!(msg.structured_output, Some(data));
    let asked = prompts.recv().await.unwrap();
    assert_eq!(asked.prompt, "ann> ");
    assert_eq!(
        asked.structured.map(|s| s.name.clone()).as_deref(),
        Some("Rating"),
        "the front end knows what to ask"
    );
}

#[tokio::test(start_paused = true)]
async fn interrupt_gives_up_the_read_and_the_next_reply_gets_the_next_answer() {
    let (input, person) = ChannelInput::new();
    let user = UserAgent::new("ann").with_input(input);
    assert!(!user.interrupt(), "nothing to interrupt yet");
    let waiting = user.clone();
    let stop = async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(waiting.interrupt());
    };
    let (got, ()) = tokio::join!(user.reply(Msg::user("bot", "Still there?").into()), stop);
    assert_eq!(got.unwrap().finished_reason, Some(ReplyFinishedReason::Interrupted));

    person.send_text("Back now.").unwrap();
    let next = user.reply(Vec::<Msg>::new().into()).await.unwrap();
    assert_eq!(next.text_content().as_deref(), Some("Back now."));
}

/// An interrupt asked for a reply whose stream is not read yet, then a second reply refused
/// (the person is already asked): the first reply still ends interrupted when read.
#[tokio::test(start_paused = true)]
async fn an_interrupt_survives_a_reply_refused_meanwhile() {
    let (input, _person) = ChannelInput::new();
    let user = UserAgent::new("ann").with_input(input);
    let first = Participant::reply_stream(&user, Msg::user("bot", "Still there?").into());
    assert!(user.interrupt(), "a reply waits");
    let refused: Vec<_> = Participant::reply_stream(&user, Msg::user("bot", "Hello?").into())
        .collect()
        .await;
    assert!(matches!(refused.as_slice(), [Err(_)]), "{refused:?}");
    let items: Vec<_> = tokio::time::timeout(Duration::from_secs(60), first.collect::<Vec<_>>())
        .await
        .expect("the interrupt ends the first reply");
    let Some(Ok(ReplyItem::Final(last))) = items.last() else {
        panic!("{items:?}")
    };
    assert_eq!(last.finished_reason, Some(ReplyFinishedReason::Interrupted));
}

#[tokio::test]
async fn a_reply_stream_dropped_before_it_is_read_leaves_the_person_free() {
    let (input, person) = ChannelInput::new();
    let user = UserAgent::new("ann").with_input(input);
    person.send_text("hi").unwrap();
    drop(user.reply_stream(Msg::user("bot", "Anyone?").into()));
    assert!(!user.interrupt(), "no reply is waiting for the person");

    let next = user.reply(Msg::user("bot", "Hello?").into()).await.unwrap();
    assert_eq!(next.text_content().as_deref(), Some("hi"), "the answer is still there");
}

#[tokio::test]
async fn the_end_of_input_and_resume_events_are_errors_that_say_why() {
    let (input, person) = ChannelInput::new();
    let user = UserAgent::new("ann").with_input(input);
    let err = user.reply(UserInterruptEvent::new("r1").into()).await.unwrap_err();
    assert!(
        err.to_string().contains("never waits for a confirmation or a tool"),
        "{err}"
    );
    drop(person);
    let err = user.reply(Msg::user("bot", "Hello?").into()).await.unwrap_err();
    assert!(
        err.to_string().contains("the input of user agent 'ann' has ended"),
        "{err}"
    );
    assert!(user.next_message().await.unwrap().is_none());
}

/// A line of standard input that is not UTF-8 (a Latin-1 terminal, a piped file) is read with
/// its bad byte replaced, and the input goes on (it used to end standard input for the whole
/// process). Run in a child process of this test binary, with its standard input piped.
#[test]
fn a_terminal_line_that_is_not_utf8_is_read_and_input_goes_on() {
    if std::env::var_os("TERMINAL_INPUT_CHILD").is_some() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (first, second) = runtime.block_on(async {
            let first = towerscope_team::user::read_line("").await.unwrap();
            (first, towerscope_team::user::read_line("").await.unwrap())
        });
        println!("\nread: {first:?} {second:?}");
        return;
    }
    use std::io::Write;
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_terminal_line_that_is_not_utf8_is_read_and_input_goes_on",
            "--nocapture",
        ])
        .env("TERMINAL_INPUT_CHILD", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"caf\xe9\nhello\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("read: Some(\"caf\u{fffd}\") Some(\"hello\")"),
        "{printed}"
    );
}

/// What the person was shown is kept up to a limit, newest first kept, so a long chat does not
/// grow it without end; `take_observed` hands it over and forgets it.
#[tokio::test]
async fn observed_messages_are_bounded_and_can_be_taken() {
    let (input, person) = ChannelInput::new();
    let user = UserAgent::new("ann").with_input(input).with_observed_limit(3);
    let shown = |range: std::ops::Range<u32>| range.map(|i| Msg::user("bot", format!("m{i}"))).collect::<Vec<_>>();
    user.observe(shown(0..5)).unwrap();
    let texts = |msgs: Vec<Msg>| msgs.iter().filter_map(Msg::text_content).collect::<Vec<_>>();
    assert_eq!(texts(user.observed()), ["m2", "m3", "m4"]);

    // A reply's question is kept too, within the limit.
    person.send(UserReply::text("ok")).unwrap();
    let mut stream = user.reply_stream(Msg::user("bot", "q").into());
    while stream.next().await.is_some() {}
    assert_eq!(texts(user.take_observed()), ["m3", "m4", "q"]);
    assert!(user.observed().is_empty());
    user.observe(shown(5..6)).unwrap();
    assert_eq!(texts(user.clone().observed()), ["m5"], "clones share what was shown");

    // Without a limit of its own, an agent keeps the newest DEFAULT_OBSERVED_LIMIT.
    let unbounded = UserAgent::new("bo");
    let limit = towerscope_team::user::DEFAULT_OBSERVED_LIMIT;
    unbounded.observe(shown(0..limit as u32 + 1)).unwrap();
    let kept = unbounded.observed();
    assert_eq!(kept.len(), limit);
    assert_eq!(kept[0].text_content().as_deref(), Some("m1"));
}
