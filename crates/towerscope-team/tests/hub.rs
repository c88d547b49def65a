//! MsgHub: who hears what, in which order; what is stripped; subscriptions that end with the
//! hub however it ends; a busy participant that hears a broadcast after its own reply.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{context, kinds, member, slow_member};
use towerscope_agent::Agent;
use towerscope_core::{Msg, ReplyInput, Role};
use towerscope_models::ScriptedResponse;
use towerscope_team::Participant;
use towerscope_team::hub::MsgHub;
use towerscope_team::pipeline::FanoutPipeline;
use towerscope_team::user::{ChannelInput, UserAgent};

fn nothing_new() -> ReplyInput {
    ReplyInput::from(Vec::new())
}

fn subscribers(agent: &Agent) -> Vec<String> {
    Participant::broadcaster(agent).unwrap().subscribers()
}

#[tokio::test]
async fn every_reply_is_heard_by_the_others_in_order_never_by_the_speaker() {
    let alice = member("alice", [ScriptedResponse::text("I say A.")]);
    let bob = member("bob", [ScriptedResponse::text("I say B.")]);
    let carol = member("carol", [ScriptedResponse::text("I say C.")]);
    let hub = MsgHub::builder()
        .participants([alice.clone(), bob.clone(), carol.clone()])
        .announcement(Msg::user("host", "Topic: letters."))
        .enter()
        .unwrap();
    assert_eq!(subscribers(&alice), ["bob", "carol"]);
    for speaker in [&alice, &bob, &carol] {
        speaker.reply(nothing_new()).await.unwrap();
    }
    drop(hub);

    let everyone = [
        "host: Topic: letters.",
        "alice: I say A.",
        "bob: I say B.",
        "carol: I say C.",
    ];
    assert_eq!(context(&alice), everyone, "alice's own reply once, then the others'");
    assert_eq!(context(&bob), everyone);
    assert_eq!(context(&carol), everyone);
    let heard = &bob.state().context[1];
    assert_eq!(
        (heard.name.as_ref(), heard.role),
        ("alice", Role::User),
        "another's reply is someone talking"
    );
}

/// Look up a city.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    /// The city.
    city: String,
}

#[tokio::test]
async fn thinking_is_stripped_and_tool_calls_stay_with_the_speaker() {
    let alice = towerscope_agent::Agent::builder("alice")
        .model(towerscope_models::ScriptedModel::new(
            "m",
            [
                ScriptedResponse::thinking("I should look it up.").and_tool_call("c1", "lookup", r#"{"city": "Oslo"}"#),
                ScriptedResponse::thinking("Cold, they will not like it.").and_text("Oslo is cold."),
            ],
        ))
        .tool(towerscope_agent::toolkit::FunctionTool::new(
            "lookup",
            |a: Lookup| async move { format!("{}: -5 °C", a.city) },
        ))
        .middleware(towerscope_team::hub::Broadcaster::new())
        .build()
        .unwrap();
    let bob = member("bob", []);
    let _hub = MsgHub::builder()
        .participants([alice.clone(), bob.clone()])
        .enter()
        .unwrap();
    alice.reply(Msg::user("user", "Weather in Oslo?")).await.unwrap();

    let bob_heard = bob.state().context;
    assert_eq!(bob_heard.len(), 1, "one message: the final reply");
    assert_eq!(
        kinds(&bob_heard[0]),
        ["text"],
        "no thinking, no tool call, no tool result"
    );
    assert_eq!(bob_heard[0].text_content().as_deref(), Some("Oslo is cold."));
    let alice_kinds: Vec<_> = alice.state().context.iter().flat_map(kinds).collect();
    assert!(alice_kinds.contains(&"tool_call") && alice_kinds.contains(&"tool_result"));
}

#[tokio::test(start_paused = true)]
async fn a_busy_participant_hears_the_broadcast_after_its_own_reply() {
    let fast = slow_member("fast", "Done first.", 10);
    let slow = slow_member("slow", "Done last.", 50);
    let _hub = MsgHub::builder()
        .participants([fast.clone(), slow.clone()])
        .enter()
        .unwrap();
    let panel = FanoutPipeline::new([fast.clone(), slow.clone()]);
    let watch = slow.clone();
    let checks = async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        // fast has replied and broadcast; slow is still replying: the message waits for it.
        assert_eq!(watch.pending_observations(), 1);
        assert_eq!(context(&watch), ["host: Go."], "nothing changed mid-reply");
    };
    let (replies, ()) = tokio::join!(panel.replies(Msg::user("host", "Go.").into()), checks);
    assert_eq!(replies.unwrap().len(), 2);
    assert_eq!(slow.pending_observations(), 0);
    assert_eq!(context(&slow), ["host: Go.", "slow: Done last.", "fast: Done first."]);
    assert_eq!(context(&fast), ["host: Go.", "fast: Done first.", "slow: Done last."]);
}

#[tokio::test]
async fn subscriptions_end_with_the_hub_even_when_the_body_panics() {
    let alice = member("alice", [ScriptedResponse::text("Still there?")]);
    let bob = member("bob", []);
    let (a, b) = (alice.clone(), bob.clone());
    let task = tokio::spawn(async move {
        let _hub = MsgHub::builder().participants([a, b]).enter().unwrap();
        panic!("the discussion went wrong");
    });
    assert!(task.await.unwrap_err().is_panic());
    assert!(subscribers(&alice).is_empty() && subscribers(&bob).is_empty());
    alice.reply(Msg::user("user", "Anyone?")).await.unwrap();
    assert!(bob.state().context.is_empty(), "bob no longer hears alice");
}

#[tokio::test(start_paused = true)]
async fn subscriptions_end_with_the_hub_when_its_scope_is_cancelled() {
    let alice = member("alice", []);
    let bob = member("bob", []);
    let hub = MsgHub::builder()
        .participants([alice.clone(), bob.clone()])
        .enter()
        .unwrap();
    let scope = hub.run(async |_hub| std::future::pending::<()>().await);
    assert!(
        tokio::time::timeout(Duration::from_secs(1), scope).await.is_err(),
        "cancelled"
    );
    assert!(subscribers(&alice).is_empty() && subscribers(&bob).is_empty());
}

#[tokio::test]
async fn add_delete_manual_broadcast_and_auto_broadcast_switch() {
    let alice = member(
        "alice",
        [
            ScriptedResponse::text("one"),
            ScriptedResponse::text("two"),
            ScriptedResponse::text("three"),
            ScriptedResponse::text("four"),
        ],
    );
    let bob = member("bob", []);
    let carol = member("carol", []);
    let hub = MsgHub::builder()
        .participants([alice.clone(), bob.clone()])
        .enter()
        .unwrap();
    alice.reply(nothing_new()).await.unwrap(); // "one": bob

    hub.add(carol.clone()).unwrap();
    assert_eq!(hub.participants(), ["alice", "bob", "carol"]);
    alice.reply(nothing_new()).await.unwrap(); // "two": bob, carol

    hub.delete("bob").unwrap();
    assert!(subscribers(&bob).is_empty(), "a deleted participant is heard by no one");
    alice.reply(nothing_new()).await.unwrap(); // "three": carol
    hub.broadcast([Msg::user("host", "Time's up.")]).unwrap(); // everyone left, alice too

    hub.set_auto_broadcast(false).unwrap();
    assert!(!hub.auto_broadcast());
    alice.reply(nothing_new()).await.unwrap(); // "four": nobody

    assert_eq!(context(&bob), ["alice: one", "alice: two"]);
    assert_eq!(context(&carol), ["alice: two", "alice: three", "host: Time's up."]);
    assert_eq!(
        context(&alice),
        [
            "alice: one",
            "alice: two",
            "alice: three",
            "host: Time's up.",
            "alice: four"
        ]
    );
    let err = hub.delete("dave").unwrap_err();
    assert!(
        err.to_string()
            .contains("no participant named 'dave' (participants: alice, carol)"),
        "{err}"
    );
    let err = hub.add(member("carol", [])).unwrap_err();
    assert!(
        err.to_string().contains("already has a participant named 'carol'"),
        "{err}"
    );
}

#[tokio::test]
async fn entering_without_a_broadcaster_says_what_to_do() {
    let plain = Agent::builder("plain")
        .model(towerscope_models::ScriptedModel::new("m", []))
        .build()
        .unwrap();
    let err = MsgHub::builder().participants([plain.clone()]).enter().unwrap_err();
    assert!(
        err.to_string().contains(
            "participant 'plain' cannot broadcast its replies to the hub: build it with `.middleware(Broadcaster::new())`"
        ),
        "{err}"
    );
    let listener_only = MsgHub::builder()
        .participants([plain.clone()])
        .auto_broadcast(false)
        .announcement(Msg::user("host", "Hello."))
        .enter()
        .unwrap();
    drop(listener_only);
    assert_eq!(context(&plain), ["host: Hello."]);
}

#[tokio::test]
async fn what_a_person_says_in_a_hub_is_heard_and_the_person_hears_the_agents() {
    let (input, person) = ChannelInput::new();
    let ann = UserAgent::new("ann").with_input(input);
    let bot = member("bot", [ScriptedResponse::text("Welcome, Ann.")]);
    let _hub = MsgHub::builder()
        .participant(ann.clone())
        .participant(bot.clone())
        .enter()
        .unwrap();
    person.send_text("Hello everyone.").unwrap();
    ann.reply(nothing_new()).await.unwrap();
    bot.reply(nothing_new()).await.unwrap();
    assert_eq!(context(&bot), ["ann: Hello everyone.", "bot: Welcome, Ann."]);
    let ann_heard: Vec<_> = ann.observed().iter().map(common::line).collect();
    assert_eq!(ann_heard, ["bot: Welcome, Ann."]);
}

/// A reply that ends with an error (a call limit reached) is not shared: its message is the
/// error's text, which the speaker did not say. The next reply that completes is.
#[tokio::test]
async fn a_reply_that_ended_with_an_error_is_not_heard() {
    let alice = Agent::builder("alice")
        .model(towerscope_models::ScriptedModel::new(
            "scripted",
            [
                ScriptedResponse::tool_call("c1", "missing", "{}"),
                // The second call of the first reply is refused by the limit, and never made.
                ScriptedResponse::text("Fine now."),
            ],
        ))
        .middleware(towerscope_team::hub::Broadcaster::new())
        .on_model_call(towerscope_layers::CallLimitLayer::new().model_calls_per_reply(1))
        .build()
        .unwrap();
    let bob = member("bob", [ScriptedResponse::text("unused")]);
    let hub = MsgHub::builder()
        .participants([alice.clone(), bob.clone()])
        .enter()
        .unwrap();
    let failed = alice.reply(Msg::user("user", "go")).await.unwrap();
    assert_eq!(
        failed.finished_reason,
        Some(towerscope_core::ReplyFinishedReason::Error)
    );
    alice.reply(Msg::user("user", "again")).await.unwrap();
    drop(hub);
    assert_eq!(context(&bob), ["alice: Fine now."]);
}

/// A row inside a hub: the next member hears the previous one's reply from the hub, then gets
/// it as its reply's input; it holds it once, and its model is sent it once.
#[tokio::test]
async fn a_row_inside_a_hub_hands_each_reply_on_once() {
    let alice = member("alice", [ScriptedResponse::text("A.")]);
    let bob_model = towerscope_models::ScriptedModel::new("scripted", [ScriptedResponse::text("B.")]);
    let bob = Agent::builder("bob")
        .model(bob_model.clone())
        .middleware(towerscope_team::hub::Broadcaster::new())
        .build()
        .unwrap();
    let hub = MsgHub::builder()
        .participants([alice.clone(), bob.clone()])
        .enter()
        .unwrap();
    towerscope_team::pipeline::SequentialPipeline::new([alice.clone(), bob.clone()])
        .reply(Msg::user("host", "Go.").into())
        .await
        .unwrap();
    drop(hub);
    assert_eq!(context(&bob), ["alice: A.", "bob: B."]);
    let sent: Vec<_> = bob_model.requests()[0]
        .messages
        .iter()
        .filter(|m| &*m.name == "alice")
        .map(|m| m.text_content())
        .collect();
    assert_eq!(sent, [Some("A.".to_owned())]);
}
