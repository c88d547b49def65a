//! Resuming a pipeline's member that accepted the resume and then failed: the error is the
//! resume's answer, and the member no longer counts as waiting (it is not parked any more). A
//! fan-out round that fails while a member is parked still waits on that member.
#![allow(clippy::unwrap_used)]

mod common;

use common::line;
use std::time::Duration;

use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_core::event::{ConfirmResult, RequireUserConfirmEvent, UserConfirmResultEvent};
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
            ReplyItem::Event(AgentEvent::RequireUserConfirm(e)) => confirms.push(allow_all(e)),
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
    let reporter = says("reporter", [ScriptedResponse::text("Nothing to report.")]);
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

/// Reads a fan-out call that fails: the confirmations its members asked for (allowing every
/// call), and its one error, the last item.
async fn failing(mut stream: EventStream) -> (Vec<UserConfirmResultEvent>, String) {
    let (mut confirms, mut errors, mut after_error) = (Vec::new(), Vec::new(), 0);
    while let Some(item) = stream.next().await {
        if !errors.is_empty() {
            after_error += 1;
        }
        match item {
            Ok(ReplyItem::Event(AgentEvent::RequireUserConfirm(e))) => confirms.push(allow_all(e)),
            Ok(_) => {}
            Err(e) => errors.push(e.to_string()),
        }
    }
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(after_error, 0, "the error is the call's last item");
    (confirms, errors.remove(0))
}

/// An agent whose model fails after `ms` milliseconds.
fn broken(name: &str, ms: u64) -> Agent {
    let down = ScriptedResponse::error(AgentError::model("the model is down")).delay(Duration::from_millis(ms));
    says(name, [down])
}

/// An agent whose model gives `answers`, one a call.
fn says<const N: usize>(name: &str, answers: [ScriptedResponse; N]) -> Agent {
    Agent::builder(name)
        .model(ScriptedModel::new("m", answers))
        .build()
        .unwrap()
}

/// The answer allowing every call `request` asks about.
fn allow_all(request: RequireUserConfirmEvent) -> UserConfirmResultEvent {
    let allow = request
        .tool_calls
        .into_iter()
        .map(|c| ConfirmResult::new(true, c))
        .collect();
    UserConfirmResultEvent::new(request.reply_id, allow)
}

/// Reads `stream` up to its first question; the answer allowing it.
async fn first_question(stream: &mut EventStream) -> UserConfirmResultEvent {
    loop {
        match stream.next().await {
            Some(Ok(ReplyItem::Event(AgentEvent::RequireUserConfirm(e)))) => return allow_all(e),
            Some(_) => {}
            None => panic!("the stream ended without a question"),
        }
    }
}

/// Reads `stream` for 50 ms (of paused time), which it must outlast: a member still answers.
async fn read_for_50_ms(stream: &mut EventStream) {
    let read = tokio::time::timeout(Duration::from_millis(50), async {
        while let Some(item) = stream.next().await {
            drop(item);
        }
    })
    .await;
    assert!(read.is_err(), "the call still waits on a member");
}

#[tokio::test(start_paused = true)]
async fn a_fanout_member_that_fails_cuts_no_other_off_and_the_ones_parked_still_wait() {
    // tidy asks at once, slow asks after broken failed, quick answers.
    let tidy = asking("tidy", ScriptedResponse::text("Tidied."));
    let slow = common::asking_agent(
        "slow",
        ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/y"}"#).delay(Duration::from_millis(100)),
                ScriptedResponse::text("Slowly done."),
            ],
        ),
    );
    let quick = says(
        "quick",
        [ScriptedResponse::text("Quick.").delay(Duration::from_millis(200))],
    );
    let panel = FanoutPipeline::new([tidy, broken("broken", 50), slow, quick]);
    let (confirms, error) = failing(panel.reply_stream(Msg::user("user", "clean up").into())).await;
    assert!(error.contains("the model is down"), "{error}");
    assert_eq!(confirms.len(), 2, "tidy and slow both parked");

    // Both still wait in the round, and quick's answer, given after the failure, is in it.
    let out = panel.reply(confirms[1].clone().into()).await.unwrap();
    assert_eq!(
        out.finished_reason,
        None,
        "the round still waits on tidy: {}",
        line(&out)
    );
    let out = panel.reply(confirms[0].clone().into()).await.unwrap();
    completed_with(&out, "fanout: tidy: Tidied.\nslow: Slowly done.\nquick: Quick.");
}

#[tokio::test(start_paused = true)]
async fn a_new_fanout_round_that_fails_still_waits_on_the_member_parked_in_it() {
    let tidy = asking("tidy", ScriptedResponse::text("Tidied."));
    let panel = FanoutPipeline::new([tidy, broken("broken", 50)]);
    let (confirms, error) = failing(panel.reply_stream(Msg::user("user", "clean up").into())).await;
    assert!(error.contains("the model is down"), "{error}");
    assert_eq!(confirms.len(), 1);

    // tidy still waits in the round: its answer reaches it through the pipeline, and the round
    // completes without the failed member's reply.
    let out = panel.reply(confirms[0].clone().into()).await.unwrap();
    completed_with(&out, "fanout: tidy: Tidied.");
}

#[tokio::test(start_paused = true)]
async fn a_round_that_still_waits_outlives_a_later_round_that_fails() {
    // Round 1: a parks, b answers. Round 2: a refuses (it is parked), b parks.
    let a = asking("a", ScriptedResponse::text("A done."));
    let b = common::asking_agent(
        "b",
        ScriptedModel::new(
            "m",
            [
                ScriptedResponse::text("B one."),
                ScriptedResponse::tool_call("c2", "delete", r#"{"path": "/tmp/b"}"#),
                ScriptedResponse::text("B two."),
            ],
        ),
    );
    let panel = FanoutPipeline::new([a, b]);
    let (first, _) = park(panel.reply_stream(Msg::user("user", "one").into())).await;
    assert_eq!(first.len(), 1, "a asks");
    let (second, error) = failing(panel.reply_stream(Msg::user("user", "two").into())).await;
    assert!(error.contains("waiting"), "a refuses the new round: {error}");
    assert_eq!(second.len(), 1, "b asks");

    let out = panel.reply(first[0].clone().into()).await.unwrap();
    completed_with(&out, "fanout: a: A done.\nb: B one.");
    let out = panel.reply(second[0].clone().into()).await.unwrap();
    completed_with(&out, "fanout: b: B two.");
}

#[tokio::test(start_paused = true)]
async fn a_round_whose_call_was_dropped_says_it_was_interrupted_when_it_completes() {
    let tidy = asking("tidy", ScriptedResponse::text("Tidied."));
    let slowpoke = says(
        "slowpoke",
        [ScriptedResponse::text("Too late.").delay(Duration::from_millis(200))],
    );
    let panel = FanoutPipeline::new([tidy, slowpoke]);
    let mut stream = panel.reply_stream(Msg::user("user", "clean up").into());
    let confirm = first_question(&mut stream).await;
    // tidy's parked final comes after its question: read on until slowpoke alone is left
    // (its answer takes 200 ms), then drop the call.
    read_for_50_ms(&mut stream).await;
    drop(stream);
    let out = panel.reply(confirm.into()).await;
    let out = match out {
        Ok(out) => out,
        Err(e) => panic!("tidy is resumed through the pipeline: {e}"),
    };
    assert_eq!(
        out.finished_reason,
        Some(ReplyFinishedReason::Interrupted),
        "slowpoke was cut off: {}",
        line(&out)
    );
}

#[tokio::test(start_paused = true)]
async fn a_member_parking_as_the_call_is_dropped_still_waits_in_the_round() {
    let tidy = asking("tidy", ScriptedResponse::text("Tidied."));
    let slowpoke = says(
        "slowpoke",
        [ScriptedResponse::text("Too late.").delay(Duration::from_millis(200))],
    );
    let panel = FanoutPipeline::new([tidy, slowpoke]);
    let mut stream = panel.reply_stream(Msg::user("user", "clean up").into());
    // Dropped at tidy's question, before its waiting message is read.
    let confirm = first_question(&mut stream).await;
    drop(stream);
    let out = match panel.reply(confirm.into()).await {
        Ok(out) => out,
        Err(e) => panic!("tidy is resumed through the pipeline: {e}"),
    };
    assert_eq!(
        out.finished_reason,
        Some(ReplyFinishedReason::Interrupted),
        "slowpoke was cut off: {}",
        line(&out)
    );
    assert!(line(&out).contains("tidy: Tidied."), "{}", line(&out));
}

#[tokio::test(start_paused = true)]
async fn a_resume_dropped_unread_cuts_nothing_off() {
    let tidy = asking("tidy", ScriptedResponse::text("Tidied."));
    let quick = says("quick", [ScriptedResponse::text("Quick.")]);
    let panel = FanoutPipeline::new([tidy, quick]);
    let (confirms, _) = park(panel.reply_stream(Msg::user("user", "clean up").into())).await;
    drop(panel.reply_stream(confirms[0].clone().into()));
    let out = panel.reply(confirms[0].clone().into()).await.unwrap();
    completed_with(&out, "fanout: tidy: Tidied.\nquick: Quick.");
}

#[tokio::test(start_paused = true)]
async fn a_row_reaches_a_member_parked_in_its_fanout_that_failed() {
    let tidy = asking("tidy", ScriptedResponse::text("Tidied."));
    let panel = FanoutPipeline::new([tidy, broken("broken", 50)]);
    let editor = says("editor", [ScriptedResponse::text("Edited.")]);
    let row = SequentialPipeline::from_shared([
        std::sync::Arc::new(panel) as std::sync::Arc<dyn Participant>,
        std::sync::Arc::new(editor),
    ]);
    let (confirms, error) = failing(row.reply_stream(Msg::user("user", "clean up").into())).await;
    assert!(error.contains("the model is down"), "{error}");
    assert_eq!(confirms.len(), 1);

    // The row records the fan-out as waiting on tidy's reply: the answer reaches tidy, the
    // fan-out's round completes, and the row goes on to the editor.
    let out = row.reply(confirms[0].clone().into()).await.unwrap();
    assert_eq!(line(&out), "editor: Edited.");
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_after_a_parked_member_refused_it_leaves_that_members_round_whole() {
    // Round 1: a parks, b answers. Round 2: a refuses (it waits in round 1), b is slow; the
    // call is dropped while b answers.
    let a = asking("a", ScriptedResponse::text("A done."));
    let b = says(
        "b",
        [
            ScriptedResponse::text("B one."),
            ScriptedResponse::text("B two.").delay(Duration::from_millis(200)),
        ],
    );
    let panel = FanoutPipeline::new([a, b]);
    let (first, _) = park(panel.reply_stream(Msg::user("user", "one").into())).await;
    let mut second = panel.reply_stream(Msg::user("user", "two").into());
    read_for_50_ms(&mut second).await;
    drop(second);

    // a's answer completes its own round, with b's answer to that round.
    let out = panel.reply(first[0].clone().into()).await.unwrap();
    completed_with(&out, "fanout: a: A done.\nb: B one.");
}

#[tokio::test(start_paused = true)]
async fn a_fanout_reaches_a_member_parked_in_its_inner_fanout_that_failed() {
    let tidy = asking("tidy", ScriptedResponse::text("Tidied."));
    let inner = FanoutPipeline::new([tidy, broken("broken", 50)]).named("inner");
    let other = says("other", [ScriptedResponse::text("Other.")]);
    let outer = FanoutPipeline::from_shared([
        std::sync::Arc::new(inner) as std::sync::Arc<dyn Participant>,
        std::sync::Arc::new(other),
    ]);
    let (confirms, error) = failing(outer.reply_stream(Msg::user("user", "clean up").into())).await;
    assert!(error.contains("the model is down"), "{error}");
    assert_eq!(confirms.len(), 1);

    // The answer, sent to the outer fan-out, reaches tidy through the inner one, and both
    // rounds complete.
    let out = outer.reply(confirms[0].clone().into()).await.unwrap();
    completed_with(&out, "fanout: inner: tidy: Tidied.\nother: Other.");
}

#[tokio::test(start_paused = true)]
async fn a_member_parking_as_the_rows_call_is_dropped_is_reached_through_the_row() {
    let tidy = asking("tidy", ScriptedResponse::text("Tidied."));
    let editor = says("editor", [ScriptedResponse::text("Edited.")]);
    let row = SequentialPipeline::new([tidy, editor]);
    let mut stream = row.reply_stream(Msg::user("user", "clean up").into());
    // Dropped at tidy's question, before its waiting message is read.
    let confirm = first_question(&mut stream).await;
    drop(stream);
    let out = row.reply(confirm.into()).await.unwrap();
    assert_eq!(line(&out), "editor: Edited.");
}

#[tokio::test(start_paused = true)]
async fn a_row_keeps_waiting_on_a_fanout_member_after_the_resumed_one_failed() {
    // The fan-out's two members both park; the row records the first. Resumed through the row,
    // the first accepts and then fails: the row records the second, which the fan-out still
    // waits on, and its answer sent to the row completes the fan-out and the row goes on.
    let tidy = asking("tidy", ScriptedResponse::text("Tidied."));
    let panel = FanoutPipeline::new([failing_after_the_call("cleaner"), tidy]);
    let editor = says("editor", [ScriptedResponse::text("Edited.")]);
    let row = SequentialPipeline::from_shared([
        std::sync::Arc::new(panel) as std::sync::Arc<dyn Participant>,
        std::sync::Arc::new(editor),
    ]);
    let (confirms, _) = park(row.reply_stream(Msg::user("user", "clean up").into())).await;
    assert_eq!(confirms.len(), 2, "both members ask");
    let err = row.reply(confirms[0].clone().into()).await.unwrap_err();
    assert!(err.to_string().contains("the model is down"), "{err}");
    let out = row.reply(confirms[1].clone().into()).await.unwrap();
    assert_eq!(line(&out), "editor: Edited.");
}

/// A team's resume goes to its leader, or to a member whose question waits: one naming a reply
/// nobody in the team waits on is refused, and the leader's own question still waits.
#[tokio::test]
async fn a_team_refuses_a_resume_naming_another_reply_than_its_leaders() {
    use towerscope_core::event::UserInterruptEvent;
    use towerscope_team::pipeline::{TeamMember, TeamPipeline};

    let leader_model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/x"}"#),
            ScriptedResponse::text("Deleted."),
        ],
    );
    let leader = Agent::builder("lead")
        .model(leader_model.clone())
        .tool(towerscope_agent::toolkit::FunctionTool::new(
            "delete",
            |a: common::Delete| async move { format!("deleted {}", a.path) },
        ))
        .default_permission(towerscope_core::PermissionDecision::Ask {
            suggested_rules: vec![],
        });
    let team = TeamPipeline::new(leader, [TeamMember::new(says("worker", []), "Works.")]).unwrap();
    let mut first = team.reply_stream(Msg::user("user", "Clean up.").into());
    let answer = first_question(&mut first).await;
    while first.next().await.is_some() {}

    for other in [
        UserInterruptEvent::new("a-members-reply").into(),
        UserConfirmResultEvent::new("a-members-reply", answer.confirm_results.clone()).into(),
    ] {
        let err = team.reply(other).await.unwrap_err();
        assert!(
            matches!(&err, AgentError::State(m) if m.contains("a-members-reply")),
            "{err}"
        );
    }
    assert_eq!(leader_model.calls(), 1);
    let done = team.reply(answer.into()).await.unwrap();
    assert_eq!(line(&done), "lead: Deleted.", "the leader's question still waited");
}
