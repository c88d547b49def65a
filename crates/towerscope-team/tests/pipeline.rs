//! Pipelines: what each member was given, the order of results, concurrency, the tagged merged
//! stream, parking and resuming through a pipeline, and the team pipeline's assignments.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use common::{hint_only, limited, line};
use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_core::event::{ConfirmResult, UserConfirmResultEvent};
use towerscope_core::{AgentEvent, Msg, ReplyItem, ToolResultState};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_team::Participant;
use towerscope_team::pipeline::{FanoutPipeline, SequentialPipeline, TeamMember, TeamPipeline};

fn says(text: &str) -> ScriptedModel {
    ScriptedModel::new("m", [ScriptedResponse::text(text)])
}

/// The newest message the model's first call received, past the member's own reply that holds
/// only its runtime-state hint.
fn last_seen(model: &ScriptedModel) -> String {
    let request = &model.requests()[0];
    line(request.messages.iter().rev().find(|m| !hint_only(m)).unwrap())
}

#[tokio::test]
async fn sequential_gives_each_member_the_previous_reply() {
    let (m1, m2, m3) = (says("draft"), says("review"), says("final"));
    let row = SequentialPipeline::new([
        Agent::builder("writer").model(m1.clone()).build().unwrap(),
        Agent::builder("reviewer").model(m2.clone()).build().unwrap(),
        Agent::builder("editor").model(m3.clone()).build().unwrap(),
    ]);
    let out = row.reply(Msg::user("user", "a text please").into()).await.unwrap();
    assert_eq!(line(&out), "editor: final");
    assert_eq!(last_seen(&m1), "user: a text please");
    assert_eq!(last_seen(&m2), "writer: draft");
    assert_eq!(last_seen(&m3), "reviewer: review");

    // As a participant, its stream holds every member's events and one final message.
    let row = SequentialPipeline::new([
        Agent::builder("a").model(says("1")).build().unwrap(),
        Agent::builder("b").model(says("2")).build().unwrap(),
    ]);
    let mut stream = row.reply_stream(Msg::user("user", "go").into());
    let (mut starts, mut finals) = (Vec::new(), Vec::new());
    while let Some(item) = stream.next().await {
        match item.unwrap() {
            ReplyItem::Event(AgentEvent::ReplyStart(e)) => starts.push(e.name.to_string()),
            ReplyItem::Final(m) => finals.push(line(&m)),
            ReplyItem::Event(_) => {}
        }
    }
    assert_eq!(starts, ["a", "b"]);
    assert_eq!(finals, ["b: 2"]);
}

#[tokio::test(start_paused = true)]
async fn fanout_replies_concurrently_in_participant_order() {
    let agent = |name: &str, ms: u64| {
        let r = ScriptedResponse::text(format!("{name} answers")).delay(Duration::from_millis(ms));
        Agent::builder(name)
            .model(ScriptedModel::new("m", [r]))
            .build()
            .unwrap()
    };
    let panel = FanoutPipeline::new([agent("a", 30), agent("b", 10), agent("c", 20)]);
    let start = tokio::time::Instant::now();
    let replies = panel.replies(Msg::user("host", "q").into()).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(30));
    let lines: Vec<_> = replies.iter().map(line).collect();
    assert_eq!(lines, ["a: a answers", "b: b answers", "c: c answers"]);
}

#[tokio::test(start_paused = true)]
async fn the_merged_stream_tags_every_item_with_its_speaker() {
    let agent = |name: &str, ms: u64| {
        let r = ScriptedResponse::text(format!("{name} one two")).chunk_delay(Duration::from_millis(ms));
        Agent::builder(name)
            .model(ScriptedModel::new("m", [r]))
            .build()
            .unwrap()
    };
    let panel = FanoutPipeline::new([agent("a", 7), agent("b", 5)]);
    let mut merged = panel.stream(Msg::user("host", "q").into());
    let mut by_speaker: HashMap<String, Vec<&'static str>> = HashMap::new();
    let mut arrival = Vec::new();
    while let Some(tagged) = merged.next().await {
        let kind = match tagged.item.unwrap() {
            ReplyItem::Event(e) => e.event_type().as_str(),
            ReplyItem::Final(_) => "FINAL",
        };
        arrival.push(tagged.agent.to_string());
        by_speaker.entry(tagged.agent.to_string()).or_default().push(kind);
    }
    for speaker in ["a", "b"] {
        let kinds = &by_speaker[speaker];
        assert_eq!(kinds.first(), Some(&"REPLY_START"), "{speaker}");
        assert_eq!(&kinds[kinds.len() - 2..], ["REPLY_END", "FINAL"], "{speaker}");
    }
    assert_ne!(arrival.iter().position(|s| s == "b"), None);
    let first_final_b = arrival.iter().rposition(|s| s == "b").unwrap();
    let first_final_a = arrival.iter().rposition(|s| s == "a").unwrap();
    assert!(
        first_final_b < first_final_a,
        "items come as they arrive: b streams faster"
    );
}

/// An agent that asks before it deletes `/tmp/x`, then says so.
fn asking_cleaner() -> Agent {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/x"}"#),
            ScriptedResponse::text("Deleted /tmp/x."),
        ],
    );
    common::asking_agent("cleaner", model)
}

/// The cleaner, then a reporter of what it did, and the reporter's model.
fn cleaning_row() -> (SequentialPipeline, ScriptedModel) {
    let reporter_model = says("Report: one file deleted.");
    let reporter = Agent::builder("reporter")
        .model(reporter_model.clone())
        .build()
        .unwrap();
    (SequentialPipeline::new([asking_cleaner(), reporter]), reporter_model)
}

/// Runs `pipeline` on a new message until it parks: the confirmation it waits for (allowing
/// the call), and the waiting message.
async fn park(pipeline: &dyn Participant) -> (UserConfirmResultEvent, Msg) {
    let mut stream = pipeline.reply_stream(Msg::user("user", "clean up").into());
    let mut asked = None;
    let mut parked = None;
    while let Some(item) = stream.next().await {
        match item.unwrap() {
            ReplyItem::Event(AgentEvent::RequireUserConfirm(e)) => asked = Some(e),
            ReplyItem::Final(m) => parked = Some(m),
            ReplyItem::Event(_) => {}
        }
    }
    let (asked, parked) = (asked.unwrap(), parked.unwrap());
    assert_eq!(parked.finished_reason, None, "the pipeline waits for the user");
    let confirm = UserConfirmResultEvent::new(
        parked.id.clone(),
        vec![ConfirmResult::new(true, asked.tool_calls[0].clone())],
    );
    (confirm, parked)
}

/// `confirm` with its call's id replaced by `nope`, which nothing waits on.
fn mistyped(confirm: &UserConfirmResultEvent) -> UserConfirmResultEvent {
    let mut call = confirm.confirm_results[0].tool_call.clone();
    call.id = "nope".into();
    UserConfirmResultEvent::new(confirm.reply_id.clone(), vec![ConfirmResult::new(true, call)])
}

#[tokio::test]
async fn a_member_parked_for_the_user_parks_the_row_and_the_resume_reaches_it() {
    let (row, reporter_model) = cleaning_row();
    let (confirm, parked) = park(&row).await;
    assert_eq!(reporter_model.calls(), 0, "the rest of the row has not run");

    let out = row.reply(confirm.into()).await.unwrap();
    assert_eq!(line(&out), "reporter: Report: one file deleted.");
    assert_eq!(last_seen(&reporter_model), "cleaner: Deleted /tmp/x.");

    let stale = UserConfirmResultEvent::new(parked.id, vec![]);
    let err = row.reply(stale.into()).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("no participant of pipeline 'sequential' is waiting on reply"),
        "{err}"
    );
}

#[tokio::test]
async fn a_rejected_or_dropped_resume_leaves_the_row_waiting_for_the_right_one() {
    let (row, _) = cleaning_row();
    let (confirm, _) = park(&row).await;

    let err = row.reply(mistyped(&confirm).into()).await.unwrap_err();
    assert!(err.to_string().contains("nope"), "the member refuses it: {err}");
    drop(row.reply_stream(confirm.clone().into()));

    let out = row.reply(confirm.into()).await.unwrap();
    assert_eq!(line(&out), "reporter: Report: one file deleted.");
}

#[tokio::test]
async fn a_rejected_or_dropped_resume_leaves_the_fanout_waiting_for_the_right_one() {
    let panel = FanoutPipeline::new([
        asking_cleaner(),
        Agent::builder("bo").model(says("Fine.")).build().unwrap(),
    ]);
    let (confirm, _) = park(&panel).await;

    let err = panel.reply(mistyped(&confirm).into()).await.unwrap_err();
    assert!(err.to_string().contains("nope"), "the member refuses it: {err}");
    drop(panel.reply_stream(confirm.clone().into()));

    let out = panel.reply(confirm.into()).await.unwrap();
    assert_eq!(line(&out), "fanout: cleaner: Deleted /tmp/x.\nbo: Fine.");
}

#[tokio::test(start_paused = true)]
async fn the_team_leader_assigns_tasks_and_gets_the_answers_back_in_call_order() {
    let leader_model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("t1", "TeamAssign", r#"{"member": "slow", "prompt": "Task one."}"#)
                .and_tool_call("t2", "TeamAssign", r#"{"member": "fast", "prompt": "Task two."}"#)
                .and_tool_call("t3", "TeamAssign", r#"{"member": "nobody", "prompt": "Task three."}"#),
            ScriptedResponse::text("All done."),
        ],
    );
    let worker = |name: &str, ms: u64| {
        let r = ScriptedResponse::text(format!("{name} did it")).delay(Duration::from_millis(ms));
        Agent::builder(name)
            .model(ScriptedModel::new("m", [r]))
            .build()
            .unwrap()
    };
    let (slow, fast) = (worker("slow", 30), worker("fast", 10));
    let team = TeamPipeline::new(
        Agent::builder("lead").model(leader_model.clone()),
        [
            TeamMember::new(slow.clone(), "Careful and slow."),
            TeamMember::new(fast.clone(), "Quick."),
        ],
    )
    .unwrap();

    let start = tokio::time::Instant::now();
    let mut speakers = Vec::new();
    let mut stream = team.stream(Msg::user("user", "Do three things.").into());
    let mut finals = Vec::new();
    while let Some(tagged) = stream.next().await {
        match tagged.item.unwrap() {
            ReplyItem::Event(AgentEvent::ReplyStart(_)) => speakers.push(tagged.agent.to_string()),
            ReplyItem::Event(AgentEvent::RequireExternalExecution(_)) => panic!("assignments stay inside the team"),
            ReplyItem::Final(m) => finals.push(line(&m)),
            ReplyItem::Event(_) => {}
        }
    }
    assert_eq!(start.elapsed(), Duration::from_millis(30), "members work concurrently");
    assert_eq!(speakers[0], "lead");
    assert_eq!(speakers.len(), 3, "each member replies once");
    assert_eq!(
        finals,
        ["fast: fast did it", "slow: slow did it", "lead: All done."],
        "members' answers as they finish, then the leader's"
    );

    let back = leader_model.requests()[1].messages.last().cloned().unwrap();
    let results: HashMap<String, (ToolResultState, String)> = back
        .tool_results()
        .map(|r| (r.id.to_string(), (r.state, r.output.text_content().unwrap_or_default())))
        .collect();
    assert_eq!(results["t1"], (ToolResultState::Success, "slow did it".to_owned()));
    assert_eq!(results["t2"], (ToolResultState::Success, "fast did it".to_owned()));
    assert_eq!(
        results["t3"].0,
        ToolResultState::Error,
        "an unknown member is refused by the tool's schema"
    );
    assert!(
        results["t3"].1.contains("'nobody' is not one of ['slow', 'fast']"),
        "{}",
        results["t3"].1
    );
    assert_eq!(
        line(slow.state().context.first().unwrap()),
        "lead: Task one.",
        "a member sees only its task"
    );

    let err = TeamPipeline::new(
        Agent::builder("lead").model(says("x")),
        [TeamMember::shared(Arc::new(worker("lead", 1)), "Same name.")],
    )
    .unwrap_err();
    assert!(err.to_string().contains("has the leader's name 'lead'"), "{err}");
}

/// A participant that refuses every message it is shown.
struct Refuses;

impl Participant for Refuses {
    fn name(&self) -> &str {
        "refuses"
    }

    fn reply_stream(&self, _input: towerscope_core::ReplyInput) -> towerscope_core::EventStream {
        Box::pin(futures_util::stream::empty())
    }

    fn observe(&self, _msgs: Vec<Msg>) -> Result<(), towerscope_core::AgentError> {
        Err(towerscope_core::AgentError::validation("not for me"))
    }

    fn interrupt(&self) -> bool {
        false
    }
}

/// A member that refuses a message does not keep it from the members after it (they lost it);
/// the refusal is still the answer.
#[tokio::test]
async fn every_member_observes_past_one_that_refuses() {
    let says = ScriptedModel::new("m", [ScriptedResponse::text("unused")]);
    let row_member = Agent::builder("after").model(says.clone()).build().unwrap();
    let fan_member = Agent::builder("beside").model(says).build().unwrap();
    let row =
        SequentialPipeline::from_shared([Arc::new(Refuses) as Arc<dyn Participant>, Arc::new(row_member.clone())]);
    let fan = FanoutPipeline::from_shared([Arc::new(Refuses) as Arc<dyn Participant>, Arc::new(fan_member.clone())]);
    for (pipeline, member) in [(&row as &dyn Participant, &row_member), (&fan, &fan_member)] {
        let err = pipeline.observe(vec![Msg::user("host", "news")]).unwrap_err();
        assert!(err.to_string().contains("not for me"), "{err}");
        let seen: Vec<String> = member.state().context.iter().filter_map(|m| m.text_content()).collect();
        assert_eq!(seen, ["news"], "{}", member.name());
    }
}

/// A member whose reply ended with an error (its text is the error's) stops the row: the next
/// member is not handed the error as what was said, and the row's message is the failed one.
#[tokio::test]
async fn a_member_that_failed_ends_the_row_with_its_error() {
    let bob_model = says("B.");
    let bob = Agent::builder("bob").model(bob_model.clone()).build().unwrap();
    let last = SequentialPipeline::new([limited("alice"), bob])
        .reply(Msg::user("host", "Go.").into())
        .await
        .unwrap();
    assert_eq!(bob_model.calls(), 0, "bob was handed {:?}", bob_model.requests());
    assert_eq!(last.name.as_ref(), "alice");
    assert_eq!(last.finished_reason, Some(towerscope_core::ReplyFinishedReason::Error));
    assert_eq!(last.error.map(|e| e.kind), Some("call_limit".to_owned()));
}

/// A fan-out whose member failed says so: the others' answers are combined, the failed one's
/// error text is not quoted as its words, and the message carries the error under its name.
#[tokio::test]
async fn a_fanout_with_a_failed_member_combines_the_others_and_says_it_failed() {
    let bob = Agent::builder("bob").model(says("B.")).build().unwrap();
    let combined = FanoutPipeline::new([limited("alice"), bob])
        .reply(Msg::user("host", "Go.").into())
        .await
        .unwrap();
    assert_eq!(combined.text_content().as_deref(), Some("bob: B."));
    assert_eq!(
        combined.finished_reason,
        Some(towerscope_core::ReplyFinishedReason::Error)
    );
    let error = combined.error.unwrap();
    assert_eq!(error.kind, "call_limit");
    assert!(
        error.message.starts_with("alice: model calls limit of 1"),
        "{}",
        error.message
    );
}

/// A fan-out inside a fan-out whose member failed: the inner one's message is failed, but its
/// other members' answers are kept by the outer one (a failed reply's text was dropped whole,
/// as if it were its error's).
#[tokio::test]
async fn a_nested_fanout_with_a_failed_member_keeps_the_other_answers() {
    let bob = Agent::builder("bob").model(says("B.")).build().unwrap();
    let carol = Agent::builder("carol").model(says("C.")).build().unwrap();
    let inner = FanoutPipeline::new([limited("alice"), bob]).named("inner");
    let outer = FanoutPipeline::from_shared([
        Arc::new(inner) as Arc<dyn Participant>,
        Arc::new(carol) as Arc<dyn Participant>,
    ]);
    let combined = outer.reply(Msg::user("host", "Go.").into()).await.unwrap();
    assert_eq!(combined.text_content().as_deref(), Some("inner: bob: B.\ncarol: C."));
    assert_eq!(
        combined.finished_reason,
        Some(towerscope_core::ReplyFinishedReason::Error)
    );
}

/// A team's member that is a fan-out whose member failed: the leader is told the others'
/// answers and why the call failed (it got the answers alone, with an error state).
#[tokio::test]
async fn a_team_leader_is_told_why_a_members_fanout_failed() {
    let leader_model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("t1", "TeamAssign", r#"{"member": "panel", "prompt": "Go."}"#),
            ScriptedResponse::text("All done."),
        ],
    );
    let bob = Agent::builder("bob").model(says("B.")).build().unwrap();
    let panel = FanoutPipeline::new([limited("alice"), bob]).named("panel");
    let team = TeamPipeline::new(
        Agent::builder("lead").model(leader_model.clone()),
        [TeamMember::shared(Arc::new(panel), "A panel.")],
    )
    .unwrap();
    team.reply(Msg::user("user", "Ask the panel.").into()).await.unwrap();
    let back = leader_model.requests()[1].messages.last().cloned().unwrap();
    let result = back.tool_results().next().unwrap();
    let text = result.output.text_content().unwrap_or_default();
    assert_eq!(result.state, ToolResultState::Error);
    assert!(
        text.starts_with("bob: B.") && text.contains("model calls limit of 1"),
        "{text:?}"
    );
}
