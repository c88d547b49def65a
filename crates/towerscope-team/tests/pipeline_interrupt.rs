//! Interrupting a pipeline: its reply ends as interrupted, nothing more starts after the
//! interrupt (no leader call, no queued task, no next member), and the final message says so.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::line;
use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_core::{AgentEvent, EventStream, Msg, ReplyFinishedReason, ReplyItem};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_team::Participant;
use towerscope_team::pipeline::{
    FanoutPipeline, GOAL_VERIFICATION, GoalPipeline, SequentialPipeline, TeamMember, TeamPipeline,
};

/// An agent whose model answers `text` after ten seconds, and its model.
fn slow(name: &str, text: &str) -> (Agent, ScriptedModel) {
    let answer = |t: &str| ScriptedResponse::text(t).delay(Duration::from_secs(10));
    let model = ScriptedModel::new("m", [answer(text), answer(text)]);
    let agent = Agent::builder(name).model(model.clone()).build().unwrap();
    (agent, model)
}

/// What a pipeline's stream carried: its final message, which speakers started a reply, and
/// every event.
struct Read {
    last: Msg,
    started: Vec<String>,
    events: Vec<AgentEvent>,
}

/// Reads `stream` to its end, calling `interrupt` once `speaker` started its reply.
async fn interrupt_once_started(mut stream: EventStream, speaker: &str, interrupt: impl Fn() -> bool) -> Read {
    let (mut last, mut started, mut events) = (None, Vec::new(), Vec::new());
    while let Some(item) = stream.next().await {
        match item.unwrap() {
            ReplyItem::Event(e) => {
                if let AgentEvent::ReplyStart(start) = &e {
                    started.push(start.name.to_string());
                    if &*start.name == speaker {
                        assert!(interrupt(), "a running pipeline says it was interrupted");
                    }
                }
                events.push(e);
            }
            ReplyItem::Final(m) => last = Some(m),
        }
    }
    Read {
        last: last.unwrap(),
        started,
        events,
    }
}

#[tokio::test(start_paused = true)]
async fn an_interrupted_team_ends_interrupted_without_calling_the_leader_again() {
    let leader_model =
        ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("t1", "TeamAssign", r#"{"member": "worker", "prompt": "One."}"#)
                    .and_tool_call("t2", "TeamAssign", r#"{"member": "worker", "prompt": "Two."}"#),
                ScriptedResponse::text("continued"),
            ],
        );
    let (worker, _) = slow("worker", "done");
    let team = TeamPipeline::new(
        Agent::builder("lead").model(leader_model.clone()),
        [TeamMember::new(worker.clone(), "Works slowly.")],
    )
    .unwrap();

    let stream = team.reply_stream(Msg::user("user", "Do two things.").into());
    let Read { last, started, events } = interrupt_once_started(stream, "worker", || team.interrupt()).await;

    assert_eq!(
        last.finished_reason,
        Some(ReplyFinishedReason::Interrupted),
        "{}",
        line(&last)
    );
    assert_eq!(&*last.name, "lead");
    assert_eq!(
        leader_model.calls(),
        1,
        "the leader is not asked again after the interrupt"
    );
    assert_eq!(
        started,
        ["lead", "worker"],
        "one task started; the leader only closes its parked reply"
    );
    let tasks: Vec<String> = common::context(&worker)
        .into_iter()
        .filter(|l| l.starts_with("lead:"))
        .collect();
    assert_eq!(tasks, ["lead: One."], "the task queued for the worker never starts");
    assert!(!team.interrupt(), "nothing runs any more");
    // The leader closes its parked reply once: one interrupted result per call, one end.
    for call in ["t1", "t2"] {
        let count = |kind: &str| {
            let of_call = |e: &&AgentEvent| match e {
                AgentEvent::ToolResultTextDelta(d) => d.tool_call_id == call,
                AgentEvent::ToolResultEnd(d) => d.tool_call_id == call,
                _ => false,
            };
            events
                .iter()
                .filter(of_call)
                .filter(|e| e.event_type().as_str() == kind)
                .count()
        };
        assert_eq!(count("TOOL_RESULT_TEXT_DELTA"), 1, "{call}");
        assert_eq!(count("TOOL_RESULT_END"), 1, "{call}");
    }
    let leader_ends = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ReplyEnd(end) if end.reply_id == last.id))
        .count();
    assert_eq!(leader_ends, 1, "the leader's reply ends once");

    // The team is usable again: the next reply runs as usual.
    let again = team.reply(Msg::user("user", "And now?").into()).await.unwrap();
    assert_eq!(line(&again), "lead: continued");
}

#[tokio::test(start_paused = true)]
async fn an_interrupted_goal_team_ends_interrupted_without_a_check() {
    let leader_model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("t1", "TeamAssign", r#"{"member": "worker", "prompt": "One."}"#),
            ScriptedResponse::tool_call("r1", "GenerateStructuredOutput", r#"{"report": "done"}"#),
        ],
    );
    let (worker, _) = slow("worker", "done");
    let team = TeamPipeline::new(
        Agent::builder("lead").model(leader_model.clone()),
        [TeamMember::new(worker, "Works slowly.")],
    )
    .unwrap();
    let verifier_model = ScriptedModel::new("m", [ScriptedResponse::text("unused")]);
    let verifier = Agent::builder("checker").model(verifier_model.clone()).build().unwrap();
    let goal = GoalPipeline::team(team, verifier);

    let stream = goal.reply_stream(Msg::user("user", "Do it.").into());
    let Read { last, started, .. } = interrupt_once_started(stream, "worker", || goal.interrupt()).await;

    assert_eq!(
        last.finished_reason,
        Some(ReplyFinishedReason::Interrupted),
        "{}",
        line(&last)
    );
    assert_eq!(
        leader_model.calls(),
        1,
        "the leader is not asked again after the interrupt"
    );
    assert_eq!(verifier_model.calls(), 0, "an interrupted run is not checked");
    assert_eq!(started, ["lead", "worker"]);
}

#[tokio::test(start_paused = true)]
async fn an_interrupted_fanout_says_so_in_its_combined_message() {
    let (a, _) = slow("a", "A.");
    let (b, _) = slow("b", "B.");
    let panel = FanoutPipeline::new([a, b]);
    let stream = panel.reply_stream(Msg::user("host", "Go.").into());
    let Read { last, .. } = interrupt_once_started(stream, "b", || panel.interrupt()).await;
    assert_eq!(&*last.name, "fanout");
    assert_eq!(
        last.finished_reason,
        Some(ReplyFinishedReason::Interrupted),
        "{}",
        line(&last)
    );
}

#[tokio::test(start_paused = true)]
async fn an_interrupted_row_starts_no_further_member() {
    let (first, _) = slow("first", "1.");
    let (second, second_model) = slow("second", "2.");
    let row = SequentialPipeline::new([first, second]);
    let stream = row.reply_stream(Msg::user("host", "Go.").into());
    let Read { last, started, .. } = interrupt_once_started(stream, "first", || row.interrupt()).await;
    assert_eq!(started, ["first"], "the next member does not start");
    assert_eq!(second_model.calls(), 0);
    assert_eq!(&*last.name, "first");
    assert_eq!(
        last.finished_reason,
        Some(ReplyFinishedReason::Interrupted),
        "{}",
        line(&last)
    );
}

#[tokio::test]
async fn an_interrupt_between_two_members_starts_no_further_member() {
    let says = |text: &str| ScriptedModel::new("m", [ScriptedResponse::text(text), ScriptedResponse::text(text)]);
    let (first_model, second_model) = (says("1."), says("2."));
    let first = Agent::builder("first").model(first_model).build().unwrap();
    let second = Agent::builder("second").model(second_model.clone()).build().unwrap();
    let row = SequentialPipeline::new([first, second]);

    // The first member's reply is over when its final message comes: the interrupt reaches
    // no member, only the row.
    let mut stream = row.stream(Msg::user("host", "Go.").into());
    let (mut started, mut finals) = (Vec::new(), Vec::new());
    while let Some(tagged) = stream.next().await {
        match tagged.item.unwrap() {
            ReplyItem::Event(AgentEvent::ReplyStart(e)) => started.push(e.name.to_string()),
            ReplyItem::Final(m) => {
                if finals.is_empty() {
                    assert!(row.interrupt(), "a running row says it was interrupted");
                }
                finals.push(m);
            }
            ReplyItem::Event(_) => {}
        }
    }
    assert_eq!(started, ["first"], "the next member does not start");
    assert_eq!(second_model.calls(), 0);
    let last = finals.last().unwrap();
    assert_eq!(
        last.finished_reason,
        Some(ReplyFinishedReason::Interrupted),
        "{}",
        line(last)
    );
    assert_eq!(line(last), "first: 1.", "the row ends with the reply it had");
    assert!(!row.interrupt(), "nothing runs any more");

    let again = row.reply(Msg::user("host", "Again.").into()).await.unwrap();
    assert_eq!(line(&again), "second: 2.", "the next run goes through");
}

#[tokio::test]
async fn an_interrupt_after_a_failed_check_starts_no_further_round() {
    let output = |id: &str, args: &str| ScriptedResponse::tool_call(id, "GenerateStructuredOutput", args);
    let executor_model = ScriptedModel::new(
        "m",
        [
            output("r1", r#"{"report": "first try"}"#),
            output("r2", r#"{"report": "second try"}"#),
        ],
    );
    let verifier_model = ScriptedModel::new(
        "m",
        [
            output("v1", r#"{"result": "fail", "message": "again"}"#),
            output("v2", r#"{"result": "pass", "message": ""}"#),
        ],
    );
    let executor = Agent::builder("coder").model(executor_model.clone()).build().unwrap();
    let verifier = Agent::builder("checker").model(verifier_model.clone()).build().unwrap();
    let goal = GoalPipeline::new(executor, verifier);

    let mut stream = goal.reply_stream(Msg::user("user", "Do it.").into());
    let (mut started, mut last) = (Vec::new(), None);
    while let Some(item) = stream.next().await {
        match item.unwrap() {
            ReplyItem::Event(AgentEvent::ReplyStart(e)) => started.push(e.name.to_string()),
            ReplyItem::Event(AgentEvent::Custom(c)) if c.name == GOAL_VERIFICATION => {
                assert!(goal.interrupt(), "a running goal says it was interrupted");
            }
            ReplyItem::Final(m) => last = Some(m),
            ReplyItem::Event(_) => {}
        }
    }
    assert_eq!(started, ["coder", "checker"], "the executor is not sent back");
    assert_eq!((executor_model.calls(), verifier_model.calls()), (1, 1));
    let last = last.unwrap();
    assert_eq!(
        last.finished_reason,
        Some(ReplyFinishedReason::Interrupted),
        "{}",
        line(&last)
    );
    assert_eq!(
        last.structured_output.unwrap()["report"],
        "first try",
        "the run ends with the executor's last report"
    );
    assert!(!goal.interrupt(), "nothing runs any more");
}

/// A leader whose model assigns `One.` to the worker, then says `next`, and a slow worker.
fn team_with_a_slow_worker() -> (TeamPipeline, ScriptedModel) {
    let leader_model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("t1", "TeamAssign", r#"{"member": "worker", "prompt": "One."}"#),
            ScriptedResponse::text("next"),
        ],
    );
    let (worker, _) = slow("worker", "done");
    let team = TeamPipeline::new(
        Agent::builder("lead").model(leader_model.clone()),
        [TeamMember::new(worker, "Works slowly.")],
    )
    .unwrap();
    (team, leader_model)
}

/// Reads `stream` until `speaker` starts its reply.
async fn read_until_started(stream: &mut EventStream, speaker: &str) {
    while let Some(item) = stream.next().await {
        if let ReplyItem::Event(AgentEvent::ReplyStart(start)) = item.unwrap()
            && &*start.name == speaker
        {
            return;
        }
    }
    panic!("{speaker} never started");
}

#[tokio::test(start_paused = true)]
async fn a_team_dropped_while_its_members_work_closes_the_leaders_assignments_on_its_next_run() {
    let (team, leader_model) = team_with_a_slow_worker();
    let mut dropped = team.reply_stream(Msg::user("user", "Do it.").into());
    read_until_started(&mut dropped, "worker").await;
    drop(dropped);

    // The next run closes the dropped reply's assignment first, without a word in its stream.
    let mut stream = team.stream(Msg::user("user", "And now?").into());
    let mut items = Vec::new();
    while let Some(tagged) = stream.next().await {
        items.push(tagged.item.unwrap());
    }
    let Some(ReplyItem::Event(AgentEvent::ReplyStart(start))) = items.first() else {
        panic!("the new reply starts the stream: {items:?}");
    };
    let Some(ReplyItem::Final(last)) = items.last() else {
        panic!("a final message ends the stream");
    };
    assert_eq!(start.reply_id, last.id, "the stream is the new reply's alone");
    assert_eq!(line(last), "lead: next");

    // The model saw the dropped reply's assignment closed as interrupted.
    let request = &leader_model.requests()[1];
    let results: Vec<_> = request.messages.iter().flat_map(|m| m.tool_results()).collect();
    assert_eq!(results.len(), 1, "{:?}", request.messages);
    assert_eq!(results[0].id, "t1");
    assert_eq!(results[0].state, towerscope_core::ToolResultState::Interrupted);
    let dropped = team
        .leader()
        .state()
        .context
        .iter()
        .find(|m| m.tool_calls().next().is_some())
        .cloned();
    assert_eq!(
        dropped.unwrap().finished_reason,
        Some(ReplyFinishedReason::Interrupted),
        "the dropped reply is stored as interrupted"
    );
}

#[tokio::test(start_paused = true)]
async fn a_run_refused_while_another_carries_out_the_assignments_leaves_them_alone() {
    let (team, leader_model) = team_with_a_slow_worker();
    let mut first = team.reply_stream(Msg::user("user", "Do it.").into());
    read_until_started(&mut first, "worker").await;

    let refused = team.reply(Msg::user("user", "Meanwhile?").into()).await;
    assert!(
        refused.is_err(),
        "the leader waits on the first run's members: {refused:?}"
    );

    let mut last = None;
    while let Some(item) = first.next().await {
        if let ReplyItem::Final(m) = item.unwrap() {
            last = Some(m);
        }
    }
    assert_eq!(line(&last.unwrap()), "lead: next", "the first run goes on");
    let results: Vec<_> = leader_model.requests()[1]
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| (r.id.to_string(), r.state))
        .collect();
    assert_eq!(results, [("t1".to_owned(), towerscope_core::ToolResultState::Success)]);
}
