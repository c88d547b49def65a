//! Resuming a pipeline's member that accepted the resume and then failed: the error is the
//! resume's answer, and the member no longer counts as waiting (it is not parked any more). A
//! fan-out round that fails while a member is parked still waits on that member.
#![allow(clippy::unwrap_used)]

mod common;

use common::line;
use std::time::Duration;

use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_core::event::{ConfirmResult, UserConfirmResultEvent};
use towerscope_core::{AgentError, AgentEvent, EventStream, Msg, ReplyFinishedReason, ReplyItem};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_team::Participant;
use towerscope_team::pipeline::{FanoutPipeline, SequentialPipeline};

fn asking(name: &str, after: ScriptedResponse) -> Agent {
    let call = ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/x"}"#);
    common::asking_agent(name, ScriptedModel::new("m", [call, after]))
}

/// An asking agent whose model fails once the confirmed call ran.
fn failing_after_the_call(name: &str) -> Agent {
    asking(name, ScriptedResponse::error(AgentError::model("the model is down")))
}

/// Reads a stream that parks: the confirmations (allowing every call) of each reply waiting,
/// in the order asked, and the final message.
async fn park(mut stream: EventStream) -> (Vec<UserConfirmResultEvent>, Msg) {
    let (mut confirms, mut last) = (Vec::new(), None);
    while let Some(item) = stream.next().await {
        match item.unwrap() {
            ReplyItem::Event(AgentEvent::RequireUserConfirm(e)) => {
                let allow = e.tool_calls.into_iter().map(|c| ConfirmResult::new(true, c)).collect();
                confirms.push(UserConfirmResultEvent::new(e.reply_id, allow));
            }
            ReplyItem::Final(m) => last = Some(m),
            ReplyItem::Event(_) => {}
        }
    }
    let last = last.unwrap();
    assert_eq!(last.finished_reason, None, "the pipeline waits: {}", line(&last));
    (confirms, last)
}

/// Asserts that `out` is a completed round whose line reads `text`.
fn completed_with(out: &Msg, text: &str) {
    assert_eq!(
        out.finished_reason,
        Some(ReplyFinishedReason::Completed),
        "{}",
        line(out)
    );
    assert_eq!(line(out), text);
}

#[tokio::test]
async fn a_row_member_that_fails_after_accepting_the_resume_is_no_longer_waited_on() {
    let reporter = Agent::builder("reporter")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("Nothing to report.")]))
        .build()
        .unwrap();
    let row = SequentialPipeline::new([failing_after_the_call("cleaner"), reporter]);
    let (confirms, _) = park(row.reply_stream(Msg::user("user", "clean up").into())).await;

    let err = row.reply(confirms[0].clone().into()).await.unwrap_err();
    assert!(err.to_string().contains("the model is down"), "{err}");

    // The cleaner is not parked any more: the row says nothing waits, rather than passing the
    // resume on to a member that refuses it.
    let err = row.reply(confirms[0].clone().into()).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("no participant of pipeline 'sequential' is waiting on reply"),
        "{err}"
    );
}

#[tokio::test]
async fn a_fanout_member_that_fails_after_accepting_the_resume_leaves_the_round_to_the_others() {
    let tidy = asking("tidy", ScriptedResponse::text("Tidied."));
    let panel = FanoutPipeline::new([failing_after_the_call("cleaner"), tidy]);
    let (confirms, waiting) = park(panel.reply_stream(Msg::user("user", "clean up").into())).await;
    assert_eq!(confirms.len(), 2, "both members ask");
    assert_eq!(
        &*waiting.name, "cleaner",
        "the first waiting member's message ends the stream"
    );

    let err = panel.reply(confirms[0].clone().into()).await.unwrap_err();
    assert!(err.to_string().contains("the model is down"), "{err}");

    // The round waits only on tidy now: its answer completes the round.
    let out = panel.reply(confirms[1].clone().into()).await.unwrap();
    completed_with(&out, "fanout: tidy: Tidied.");
    let err = panel.reply(confirms[0].clone().into()).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("no participant of pipeline 'fanout' is waiting on reply"),
        "{err}"
    );
}

#[tokio::test]
async fn a_new_fanout_round_that_fails_still_waits_on_the_member_parked_in_it() {
    let down = ScriptedResponse::error(AgentError::model("the model is down")).delay(Duration::from_millis(50));
    let broken = Agent::builder("broken")
        .model(ScriptedModel::new("m", [down]))
        .build()
        .unwrap();
    let tidy = asking("tidy", ScriptedResponse::text("Tidied."));
    let panel = FanoutPipeline::new([tidy, broken]);
    let mut stream = panel.reply_stream(Msg::user("user", "clean up").into());
    let (mut confirms, mut errors) = (Vec::new(), Vec::new());
    while let Some(item) = stream.next().await {
        match item {
            Ok(ReplyItem::Event(AgentEvent::RequireUserConfirm(e))) => {
                let allow = e.tool_calls.into_iter().map(|c| ConfirmResult::new(true, c)).collect();
                confirms.push(UserConfirmResultEvent::new(e.reply_id, allow));
            }
            Ok(_) => {}
            Err(e) => errors.push(e.to_string()),
        }
    }
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("the model is down"), "{errors:?}");
    assert_eq!(confirms.len(), 1, "tidy parked before broken failed");

    // tidy still waits in the round: its answer reaches it through the pipeline, and the round
    // completes without the reply the failure cut off.
    let out = panel.reply(confirms[0].clone().into()).await.unwrap();
    completed_with(&out, "fanout: tidy: Tidied.");
}
