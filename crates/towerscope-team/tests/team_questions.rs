//! A team member that parks for the user (a confirmation, a tool run outside): its question
//! goes to the team's caller, the answer reaches the member, and the leader goes on once every
//! assignment has its result.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{asking_agent, line};
use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_core::event::{ConfirmResult, RequireUserConfirmEvent, UserConfirmResultEvent, UserInterruptEvent};
use towerscope_core::{
    AgentError, AgentEvent, ContentBlock, EventStream, Msg, ReplyFinishedReason, ReplyItem, ToolResultState,
};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_team::Participant;
use towerscope_team::pipeline::{ASSIGN_TOOL, TeamMember, TeamPipeline};

/// The leader's call giving `member` the task `prompt`, under call id `id`.
fn assign(id: &str, member: &str, prompt: &str) -> ScriptedResponse {
    let input = serde_json::json!({"member": member, "prompt": prompt}).to_string();
    ScriptedResponse::tool_call(id, ASSIGN_TOOL, input)
}

/// One model answer calling `TeamAssign` once for each (call id, member, prompt).
fn assign_all(calls: &[(&str, &str, &str)]) -> ScriptedResponse {
    let mut calls = calls.iter();
    let Some((id, member, prompt)) = calls.next() else {
        panic!("no call")
    };
    calls.fold(assign(id, member, prompt), |response, (id, member, prompt)| {
        let input = serde_json::json!({"member": member, "prompt": prompt}).to_string();
        response.and_tool_call(*id, ASSIGN_TOOL, input)
    })
}

/// A worker that asks before it deletes `/tmp/<file>` (call `c<file>`), once for each file,
/// and says `Deleted <file>.` after each.
fn deleter(files: &[&str]) -> (Agent, ScriptedModel) {
    let answers = files.iter().flat_map(|f| {
        let call = ScriptedResponse::tool_call(format!("c{f}"), "delete", format!(r#"{{"path": "/tmp/{f}"}}"#));
        [call, ScriptedResponse::text(format!("Deleted {f}."))]
    });
    let model = ScriptedModel::new("m", answers.collect::<Vec<_>>());
    (asking_agent("deleter", model.clone()), model)
}

/// An agent that says `text` after `ms` milliseconds.
fn says_after(name: &str, text: &str, ms: u64) -> (Agent, ScriptedModel) {
    let model = ScriptedModel::new("m", [ScriptedResponse::text(text).delay(Duration::from_millis(ms))]);
    (Agent::builder(name).model(model.clone()).build().unwrap(), model)
}

/// The team: a leader on `leader` with the members.
fn team(leader: &ScriptedModel, members: impl IntoIterator<Item = Agent>) -> TeamPipeline {
    let members = members.into_iter().map(|m| TeamMember::new(m, "Helps."));
    TeamPipeline::new(Agent::builder("lead").model(leader.clone()), members).unwrap()
}

/// A team whose one member is a fan-out of `members` named `panel`.
fn panel_team(leader: &ScriptedModel, members: impl IntoIterator<Item = Agent>) -> TeamPipeline {
    let panel = towerscope_team::pipeline::FanoutPipeline::new(members).named("panel");
    let members = [TeamMember::new(panel, "A panel.")];
    TeamPipeline::new(Agent::builder("lead").model(leader.clone()), members).unwrap()
}

/// The questions (`REQUIRE_USER_CONFIRM` events) among a stream's items.
fn questions<'a>(items: impl IntoIterator<Item = &'a ReplyItem>) -> Vec<RequireUserConfirmEvent> {
    let asked = items.into_iter().filter_map(|item| match item {
        ReplyItem::Event(AgentEvent::RequireUserConfirm(e)) => Some(e.clone()),
        _ => None,
    });
    asked.collect()
}

/// The answer allowing every call `request` asks about.
fn allow_all(request: &RequireUserConfirmEvent) -> UserConfirmResultEvent {
    let allow = request
        .tool_calls
        .iter()
        .map(|c| ConfirmResult::new(true, c.clone()))
        .collect();
    UserConfirmResultEvent::new(request.reply_id.clone(), allow)
}

/// Reads a stream to its end: the questions asked, and the final message.
async fn read(stream: EventStream) -> (Vec<RequireUserConfirmEvent>, Msg) {
    let items: Vec<ReplyItem> = stream.map(Result::unwrap).collect().await;
    let asked = questions(&items);
    let finals: Vec<&Msg> = items
        .iter()
        .filter_map(|item| match item {
            ReplyItem::Final(m) => Some(m),
            ReplyItem::Event(_) => None,
        })
        .collect();
    let [last] = finals[..] else {
        panic!("one final message: {finals:?}");
    };
    assert!(matches!(items.last(), Some(ReplyItem::Final(_))), "it ends the stream");
    (asked, last.clone())
}

/// The results the leader's model was given in its request `n`, as (call id, state, text).
fn results_given(leader: &ScriptedModel, n: usize) -> Vec<(String, ToolResultState, String)> {
    let request = &leader.requests()[n];
    let blocks = request.messages.iter().flat_map(|m| m.content.iter());
    let results = blocks.filter_map(|b| match b {
        ContentBlock::ToolResult(r) => Some((r.id.to_string(), r.state, r.output.text_content().unwrap_or_default())),
        _ => None,
    });
    results.collect()
}

#[tokio::test(start_paused = true)]
async fn a_members_question_reaches_the_caller_and_its_answer_the_member() {
    let leader = ScriptedModel::new(
        "m",
        [
            assign_all(&[("a1", "deleter", "Delete /tmp/x."), ("a2", "helper", "Say fine.")]),
            ScriptedResponse::text("All done."),
        ],
    );
    let (deleter, deleter_model) = deleter(&["x"]);
    let (helper, _) = says_after("helper", "Fine.", 20);
    let team = team(&leader, [deleter.clone(), helper]);

    let (asked, waiting) = read(team.reply_stream(Msg::user("user", "Clean up.").into())).await;
    let [question] = &asked[..] else {
        panic!("one question: {asked:?}")
    };
    let parked = deleter.waiting_calls().unwrap().reply_id;
    assert_eq!(question.reply_id, parked, "the member's own question");
    assert_eq!(waiting.finished_reason, None, "the team waits: {}", line(&waiting));
    assert_eq!(waiting.id, parked, "its waiting message names the member's reply");
    assert_eq!(team.parked_reply(), Some(parked.clone()));
    assert!(team.waits_on(&parked));
    assert_eq!(leader.calls(), 1, "the leader waits for both results");

    let (_, done) = read(team.reply_stream(allow_all(question).into())).await;
    assert_eq!(line(&done), "lead: All done.");
    assert_eq!(done.finished_reason, Some(ReplyFinishedReason::Completed));
    assert_eq!(deleter_model.calls(), 2, "the member went on after the confirmation");
    assert_eq!(
        results_given(&leader, 1),
        [
            ("a1".to_owned(), ToolResultState::Success, "Deleted x.".to_owned()),
            ("a2".to_owned(), ToolResultState::Success, "Fine.".to_owned()),
        ],
        "each assignment's result, in the leader's order"
    );
    assert_eq!(team.parked_reply(), None);
    assert_eq!(deleter.waiting_calls(), None);
}

#[tokio::test]
async fn a_parked_members_later_task_waits_for_the_answer() {
    let leader = ScriptedModel::new(
        "m",
        [
            assign_all(&[("a1", "deleter", "Delete /tmp/x."), ("a2", "deleter", "Delete /tmp/y.")]),
            ScriptedResponse::text("Both gone."),
        ],
    );
    let (deleter, deleter_model) = deleter(&["x", "y"]);
    let team = team(&leader, [deleter]);

    let (asked, _) = read(team.reply_stream(Msg::user("user", "Clean up.").into())).await;
    assert_eq!(asked.len(), 1);
    // Had it started, the parked member would have refused it, and its call's result would be
    // that refusal rather than the deletion checked below.
    assert_eq!(deleter_model.calls(), 1, "the second task has not run");
    // The second task asks again: its question is the team's next.
    let (asked, waiting) = read(team.reply_stream(allow_all(&asked[0]).into())).await;
    assert_eq!(asked.len(), 1, "the second task's question");
    assert_eq!(waiting.finished_reason, None);
    assert_eq!(leader.calls(), 1);
    let (_, done) = read(team.reply_stream(allow_all(&asked[0]).into())).await;
    assert_eq!(line(&done), "lead: Both gone.");
    let given = results_given(&leader, 1);
    let texts: Vec<&str> = given.iter().map(|(_, _, t)| t.as_str()).collect();
    assert_eq!(texts, ["Deleted x.", "Deleted y."]);
}

#[tokio::test]
async fn a_new_message_or_a_wrong_answer_while_a_member_waits_is_refused_and_loses_nothing() {
    let leader = ScriptedModel::new(
        "m",
        [
            assign("a1", "deleter", "Delete /tmp/x."),
            ScriptedResponse::text("Done."),
        ],
    );
    let (deleter, _) = deleter(&["x"]);
    let team = team(&leader, [deleter]);
    let (asked, _) = read(team.reply_stream(Msg::user("user", "Clean up.").into())).await;

    let err = team
        .reply(Msg::user("user", "Something else.").into())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AgentError::State(m) if m.contains("deleter") && m.contains(&asked[0].reply_id.to_string())),
        "{err}"
    );
    // An answer about another call: the member refuses it, and still waits.
    let mut wrong = allow_all(&asked[0]);
    wrong.confirm_results[0].tool_call.id = "not-asked".into();
    assert!(team.reply(wrong.into()).await.is_err());
    assert_eq!(team.parked_reply(), Some(asked[0].reply_id.clone()));
    assert_eq!(leader.calls(), 1);

    let done = team.reply(allow_all(&asked[0]).into()).await.unwrap();
    assert_eq!(line(&done), "lead: Done.");
}

#[tokio::test]
async fn interrupting_a_members_question_ends_the_teams_reply_and_frees_it() {
    for name_the_leader in [false, true] {
        let leader = ScriptedModel::new(
            "m",
            [
                assign("a1", "deleter", "Delete /tmp/x."),
                ScriptedResponse::text("Not reached."),
            ],
        );
        let (deleter, deleter_model) = deleter(&["x"]);
        let team = team(&leader, [deleter.clone()]);
        let (asked, _) = read(team.reply_stream(Msg::user("user", "Clean up.").into())).await;
        let leader_reply = team.leader().waiting_calls().unwrap().reply_id;

        let named = if name_the_leader {
            leader_reply
        } else {
            asked[0].reply_id.clone()
        };
        let (_, ended) = read(team.reply_stream(UserInterruptEvent::new(named).into())).await;
        assert_eq!(
            ended.finished_reason,
            Some(ReplyFinishedReason::Interrupted),
            "{}",
            line(&ended)
        );
        assert_eq!(leader.calls(), 1, "no model call after the interrupt");
        assert_eq!(deleter_model.calls(), 1);
        assert_eq!(deleter.waiting_calls(), None, "the member's question is closed");
        assert_eq!(team.leader().waiting_calls(), None, "and the leader's assignment");
        assert_eq!(team.parked_reply(), None);
        let leader_context = team.leader().state().context;
        let closed = leader_context.iter().flat_map(|m| m.content.iter()).any(
            |b| matches!(b, ContentBlock::ToolResult(r) if r.id == "a1" && r.state == ToolResultState::Interrupted),
        );
        assert!(closed, "the assignment's result says it was interrupted");
    }
}

#[tokio::test(start_paused = true)]
async fn a_run_dropped_after_a_member_asked_keeps_the_question_and_cuts_off_the_others() {
    let leader = ScriptedModel::new(
        "m",
        [
            assign_all(&[("a1", "deleter", "Delete /tmp/x."), ("a2", "helper", "Say fine.")]),
            ScriptedResponse::text("Went on."),
        ],
    );
    let (deleter, _) = deleter(&["x"]);
    let (helper, _) = says_after("helper", "Fine.", 1_000);
    let team = team(&leader, [deleter.clone(), helper]);

    let mut stream = team.reply_stream(Msg::user("user", "Clean up.").into());
    let question = loop {
        if let ReplyItem::Event(AgentEvent::RequireUserConfirm(e)) = stream.next().await.unwrap().unwrap() {
            break e;
        }
    };
    // Dropped before the member's waiting message is read, while the helper still works.
    drop(stream);
    assert_eq!(
        team.parked_reply(),
        Some(question.reply_id.clone()),
        "the question still waits"
    );

    let (_, done) = read(team.reply_stream(allow_all(&question).into())).await;
    assert_eq!(line(&done), "lead: Went on.");
    assert_eq!(
        results_given(&leader, 1),
        [
            ("a1".to_owned(), ToolResultState::Success, "Deleted x.".to_owned()),
            (
                "a2".to_owned(),
                ToolResultState::Interrupted,
                "The member was interrupted.".to_owned()
            ),
        ]
    );
}

/// The team is interrupted while a member's question waits for the others, before or after
/// the run read the member's waiting message: the run closes the question once the others
/// stopped, then the leader's reply.
#[tokio::test(start_paused = true)]
async fn the_team_is_interrupted_while_a_member_waits_and_another_works() {
    for waiting_message_read in [false, true] {
        let leader = ScriptedModel::new(
            "m",
            [
                assign_all(&[("a1", "deleter", "Delete /tmp/x."), ("a2", "helper", "Say fine.")]),
                ScriptedResponse::text("Not reached."),
            ],
        );
        let (deleter, _) = deleter(&["x"]);
        let (helper, _) = says_after("helper", "Fine.", 1_000);
        let team = team(&leader, [deleter.clone(), helper]);

        let mut stream = team.reply_stream(Msg::user("user", "Clean up.").into());
        let mut items = Vec::new();
        while let Some(item) = stream.next().await {
            let asked = matches!(&item, Ok(ReplyItem::Event(AgentEvent::RequireUserConfirm(_))));
            items.push(item.unwrap());
            if asked {
                if waiting_message_read {
                    // The run reads on (the member's waiting message) until only the helper works.
                    while let Ok(item) = tokio::time::timeout(Duration::from_millis(500), stream.next()).await {
                        items.push(item.unwrap().unwrap());
                    }
                }
                assert!(team.interrupt());
            }
        }
        let Some(ReplyItem::Final(last)) = items.last() else {
            panic!("{items:?}")
        };
        assert_eq!(
            last.finished_reason,
            Some(ReplyFinishedReason::Interrupted),
            "{}",
            line(last)
        );
        assert_eq!(deleter.waiting_calls(), None, "the parked member was closed");
        assert_eq!(team.leader().waiting_calls(), None);
        assert_eq!(team.parked_reply(), None);
        assert_eq!(leader.calls(), 1);
    }
}

/// A lookup run on the user's side (an external tool).
struct Lookup;

impl towerscope_agent::toolkit::Tool for Lookup {
    fn name(&self) -> &str {
        "lookup"
    }
    fn description(&self) -> &str {
        "Look something up (runs outside the agent)."
    }
    fn input_schema(&self) -> &serde_json::Value {
        static SCHEMA: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
        SCHEMA.get_or_init(|| serde_json::json!({"type": "object"}))
    }
    fn external(&self) -> bool {
        true
    }
    fn call(&self, _input: serde_json::Value) -> towerscope_agent::toolkit::ToolChunkStream {
        Box::pin(futures_util::stream::empty())
    }
}

/// A member answered on one question parks again, without asking, on a call it asked about
/// before (an external one of the same turn), and the stream is dropped before its waiting
/// message is read: the team still waits on it, and the result from outside reaches it.
#[tokio::test]
async fn a_member_that_parks_again_without_asking_as_the_stream_is_dropped_still_waits() {
    let leader = ScriptedModel::new(
        "m",
        [
            assign("a1", "mixed", "Delete /tmp/x and look it up."),
            ScriptedResponse::text("All done."),
        ],
    );
    let both = ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/x"}"#).and_tool_call("c2", "lookup", "{}");
    let mixed_model = ScriptedModel::new("m", [both, ScriptedResponse::text("Deleted and looked up.")]);
    let mixed = Agent::builder("mixed")
        .model(mixed_model.clone())
        .tool(
            towerscope_agent::toolkit::FunctionTool::new("delete", |a: common::Delete| async move {
                format!("deleted {}", a.path)
            })
            .requires_confirmation(|_| true),
        )
        .tool(Lookup)
        .build()
        .unwrap();
    let team = team(&leader, [mixed.clone()]);
    let (asked, _) = read(team.reply_stream(Msg::user("user", "Go.").into())).await;
    let reply = asked[0].reply_id.clone();

    // The answer: the delete runs, then the member parks on the lookup (it asked about it in
    // the first run); the stream is dropped once the delete's result is out.
    let mut stream = team.reply_stream(allow_all(&asked[0]).into());
    while let Some(item) = stream.next().await {
        if let Ok(ReplyItem::Event(AgentEvent::ToolResultEnd(e))) = item
            && e.tool_call_id == "c1"
        {
            break;
        }
    }
    drop(stream);
    let waiting = mixed.waiting_calls().unwrap();
    assert_eq!(
        (waiting.reply_id.clone(), waiting.external.len()),
        (reply.clone(), 1),
        "{waiting:?}"
    );
    assert_eq!(team.parked_reply(), Some(reply.clone()), "the team still waits on it");

    let result = towerscope_core::ToolResultBlock::new("c2", "lookup", "found", ToolResultState::Success);
    let resume = towerscope_core::event::ExternalExecutionResultEvent::new(reply, vec![result]);
    let (_, done) = read(team.reply_stream(resume.into())).await;
    assert_eq!(line(&done), "lead: All done.");
    let given = results_given(&leader, 1);
    assert_eq!(given[0].2, "Deleted and looked up.");
}

/// An interrupt naming the leader's reply while another run answers a member: refused (that
/// run carries out the leader's assignments); the run goes on, and parks on the other member's
/// question, whose answer completes the leader's reply.
#[tokio::test(start_paused = true)]
async fn an_interrupt_of_the_leaders_reply_while_a_member_is_answered_is_refused() {
    let leader = ScriptedModel::new(
        "m",
        [
            assign_all(&[("a1", "ann", "Delete /tmp/x."), ("a2", "bo", "Delete /tmp/y.")]),
            ScriptedResponse::text("Both gone."),
        ],
    );
    let asker = |name: &str, file: &str, ms: u64| {
        let call = ScriptedResponse::tool_call(format!("c{file}"), "delete", format!(r#"{{"path": "/tmp/{file}"}}"#));
        let after = ScriptedResponse::text(format!("Deleted {file}.")).delay(Duration::from_millis(ms));
        asking_agent(name, ScriptedModel::new("m", [call, after]))
    };
    let team = team(&leader, [asker("ann", "x", 1_000), asker("bo", "y", 0)]);
    let (asked, _) = read(team.reply_stream(Msg::user("user", "Clean up.").into())).await;
    assert_eq!(asked.len(), 2);
    let leader_reply = team.leader().waiting_calls().unwrap().reply_id;

    let mut answering_ann = team.reply_stream(allow_all(&asked[0]).into());
    let _first = answering_ann.next().await;
    let err = team
        .reply(UserInterruptEvent::new(leader_reply).into())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AgentError::State(m) if m.contains("another run")),
        "{err}"
    );
    let (_, waiting) = read(answering_ann).await;
    assert_eq!(waiting.id, asked[1].reply_id, "parked on bo's question");
    let (_, done) = read(team.reply_stream(allow_all(&asked[1]).into())).await;
    assert_eq!(line(&done), "lead: Both gone.");
    let texts: Vec<String> = results_given(&leader, 1).into_iter().map(|(_, _, t)| t).collect();
    assert_eq!(texts, ["Deleted x.", "Deleted y."]);
}

/// A member that is a fan-out fails (one of its members did) while another of its members
/// asks: the error ends the team's call, the question still waits in the team, and its answer
/// completes the fan-out's round, whose message the leader gets.
#[tokio::test]
async fn a_pipeline_member_that_fails_with_a_question_waiting_keeps_it() {
    let leader = ScriptedModel::new(
        "m",
        [
            assign("a1", "panel", "Delete /tmp/x."),
            ScriptedResponse::text("Reported."),
        ],
    );
    let (deleter, _) = deleter(&["x"]);
    let broken = Agent::builder("broken")
        .model(ScriptedModel::new(
            "m",
            [ScriptedResponse::error(AgentError::model("the model is down"))],
        ))
        .build()
        .unwrap();
    let team = panel_team(&leader, [deleter.clone(), broken]);

    // The panel's error ends the call (as a fan-out's does), and the question is in it.
    let items: Vec<_> = team.reply_stream(Msg::user("user", "Clean up.").into()).collect().await;
    let asked = questions(items.iter().filter_map(|item| item.as_ref().ok()));
    let Some(Err(err)) = items.last() else {
        panic!("the call ends with the error: {items:?}")
    };
    assert!(err.to_string().contains("the model is down"), "{err}");
    assert_eq!(
        team.parked_reply(),
        Some(asked[0].reply_id.clone()),
        "the question still waits"
    );
    assert_eq!(leader.calls(), 1, "the leader waits for the panel");

    let (_, done) = read(team.reply_stream(allow_all(&asked[0]).into())).await;
    assert_eq!(line(&done), "lead: Reported.");
    let given = results_given(&leader, 1);
    assert!(given[0].2.contains("deleter: Deleted x."), "{given:?}");
    assert_eq!(deleter.waiting_calls(), None);
}

/// A member resumed directly (not through the team) and still replying when the team is told
/// to interrupt its question: the member refuses the interrupt (it is busy), and the team
/// still closes the rest of the reply (the leader's assignment) and waits for nothing.
#[tokio::test(start_paused = true)]
async fn an_interrupt_the_member_refuses_still_closes_the_teams_reply() {
    let leader = ScriptedModel::new(
        "m",
        [
            assign("a1", "deleter", "Delete /tmp/x."),
            ScriptedResponse::text("Not reached."),
        ],
    );
    let call = ScriptedResponse::tool_call("cx", "delete", r#"{"path": "/tmp/x"}"#);
    let slow = ScriptedResponse::text("Deleted x.").delay(Duration::from_millis(1_000));
    let deleter = asking_agent("deleter", ScriptedModel::new("m", [call, slow]));
    let team = team(&leader, [deleter.clone()]);
    let (asked, _) = read(team.reply_stream(Msg::user("user", "Clean up.").into())).await;

    // Answered directly, and still replying.
    let mut direct = Participant::reply_stream(&deleter, allow_all(&asked[0]).into());
    let _first = direct.next().await;
    let (_, ended) = read(team.reply_stream(UserInterruptEvent::new(asked[0].reply_id.clone()).into())).await;
    assert_eq!(
        ended.finished_reason,
        Some(ReplyFinishedReason::Interrupted),
        "{}",
        line(&ended)
    );
    assert_eq!(team.parked_reply(), None);
    assert_eq!(team.leader().waiting_calls(), None, "the leader's assignment is closed");
    assert_eq!(leader.calls(), 1);
    drop(direct);
}

/// A fan-out member with two members asking: answered on one, whose reply then fails, the
/// fan-out still waits on the other (its own older question); the team keeps it, and that
/// answer completes the round.
#[tokio::test]
async fn a_pipeline_member_answered_on_one_question_keeps_its_other() {
    let leader = ScriptedModel::new(
        "m",
        [
            assign("a1", "panel", "Delete a file."),
            ScriptedResponse::text("Reported."),
        ],
    );
    let call = |file: &str| ScriptedResponse::tool_call("c1", "delete", format!(r#"{{"path": "/tmp/{file}"}}"#));
    let failing = asking_agent(
        "ann",
        ScriptedModel::new(
            "m",
            [
                call("x"),
                ScriptedResponse::error(AgentError::model("the model is down")),
            ],
        ),
    );
    let bo = asking_agent(
        "bo",
        ScriptedModel::new("m", [call("y"), ScriptedResponse::text("Deleted y.")]),
    );
    let team = panel_team(&leader, [failing, bo.clone()]);

    let (asked, _) = read(team.reply_stream(Msg::user("user", "Clean up.").into())).await;
    let [ann_asked, bo_asked] = &asked[..] else {
        panic!("{asked:?}")
    };
    let items: Vec<_> = team.reply_stream(allow_all(ann_asked).into()).collect().await;
    assert!(
        matches!(items.last(), Some(Err(_))),
        "ann's failure ends the call: {items:?}"
    );
    assert!(
        team.waits_on(&bo_asked.reply_id),
        "bo's question still waits in the team"
    );

    let (_, done) = read(team.reply_stream(allow_all(bo_asked).into())).await;
    assert_eq!(line(&done), "lead: Reported.");
    assert_eq!(bo.waiting_calls(), None);
    assert!(results_given(&leader, 1)[0].2.contains("bo: Deleted y."));
}

/// A leader that asks the user in the same turn as it assigns: its own question comes first,
/// alone (no member starts); answered, its reply parks again on the assignment, which runs,
/// and a member's question then comes, whose answer completes the reply.
#[tokio::test]
async fn a_leader_asking_as_it_assigns_is_answered_before_its_members_start() {
    let both = assign("a1", "deleter", "Delete /tmp/x.").and_tool_call("l1", "delete", r#"{"path": "/tmp/lead"}"#);
    let leader = ScriptedModel::new("m", [both, ScriptedResponse::text("Both done.")]);
    let builder = Agent::builder("lead")
        .model(leader.clone())
        .tool(towerscope_agent::toolkit::FunctionTool::new(
            "delete",
            |a: common::Delete| async move { format!("deleted {}", a.path) },
        ))
        .default_permission(towerscope_core::PermissionDecision::Ask {
            suggested_rules: vec![],
        });
    let (deleter, deleter_model) = deleter(&["x"]);
    let team = TeamPipeline::new(builder, [TeamMember::new(deleter, "Deletes.")]).unwrap();

    let (asked, waiting) = read(team.reply_stream(Msg::user("user", "Clean up.").into())).await;
    let [leader_asked] = &asked[..] else {
        panic!("the leader's question alone: {asked:?}")
    };
    let leader_reply = team.leader().waiting_calls().unwrap().reply_id;
    assert_eq!((&leader_asked.reply_id, &waiting.id), (&leader_reply, &leader_reply));
    assert_eq!(team.parked_reply(), Some(leader_reply));
    assert_eq!(
        deleter_model.calls(),
        0,
        "no member starts while the leader waits for the user"
    );

    let (asked, waiting) = read(team.reply_stream(allow_all(leader_asked).into())).await;
    let [member_asked] = &asked[..] else {
        panic!("the member's question: {asked:?}")
    };
    assert_eq!(waiting.id, member_asked.reply_id);
    let (_, done) = read(team.reply_stream(allow_all(member_asked).into())).await;
    assert_eq!(line(&done), "lead: Both done.");
    let given = results_given(&leader, 1);
    let texts: Vec<&str> = given.iter().map(|(_, _, t)| t.as_str()).collect();
    assert_eq!(texts, ["deleted /tmp/lead", "Deleted x."]);
}

/// A wrong answer sent as the team is interrupted: the member refuses it (it still waits), and
/// the interrupted run closes its question with the leader's reply; nothing is left parked.
#[tokio::test]
async fn a_refused_answer_as_the_team_is_interrupted_closes_the_member_too() {
    let leader = ScriptedModel::new(
        "m",
        [
            assign("a1", "deleter", "Delete /tmp/x."),
            ScriptedResponse::text("Not reached."),
        ],
    );
    let (deleter, _) = deleter(&["x"]);
    let team = team(&leader, [deleter.clone()]);
    let (asked, _) = read(team.reply_stream(Msg::user("user", "Clean up.").into())).await;

    let mut wrong = allow_all(&asked[0]);
    wrong.confirm_results[0].tool_call.id = "not-asked".into();
    let stream = team.reply_stream(wrong.into());
    assert!(team.interrupt(), "the run is in progress");
    let items: Vec<_> = stream.collect().await;
    let Some(Ok(ReplyItem::Final(last))) = items.last() else {
        panic!("{items:?}")
    };
    assert_eq!(last.finished_reason, Some(ReplyFinishedReason::Interrupted));
    assert_eq!(deleter.waiting_calls(), None, "the member's question is closed");
    assert_eq!(team.leader().waiting_calls(), None);
    assert_eq!(team.parked_reply(), None);
}

/// A fan-out member given two tasks: in the first, one of its members asks and the other
/// fails. The team's call ends with the failure, and the second task waits with the question
/// (it does not start beside it); answered, the first task's round completes and the second
/// runs once.
#[tokio::test]
async fn a_failed_pipeline_members_later_task_waits_and_runs_once() {
    let leader = ScriptedModel::new(
        "m",
        [
            assign_all(&[("a1", "panel", "First."), ("a2", "panel", "Second.")]),
            ScriptedResponse::text("Reported."),
        ],
    );
    let ann_model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/x"}"#),
            ScriptedResponse::text("Ann first."),
            ScriptedResponse::text("Ann second."),
        ],
    );
    let bo_model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::error(AgentError::model("the model is down")),
            ScriptedResponse::text("Bo second."),
        ],
    );
    let ann = asking_agent("ann", ann_model.clone());
    let bo = Agent::builder("bo").model(bo_model.clone()).build().unwrap();
    let team = panel_team(&leader, [ann, bo]);

    let items: Vec<_> = team.reply_stream(Msg::user("user", "Go.").into()).collect().await;
    assert!(
        matches!(items.last(), Some(Err(_))),
        "bo's failure ends the call: {items:?}"
    );
    let [asked] = &questions(items.iter().filter_map(|item| item.as_ref().ok()))[..] else {
        panic!("one question: {items:?}")
    };
    assert_eq!(bo_model.calls(), 1, "the second task waits with the question");

    let (_, done) = read(team.reply_stream(allow_all(asked).into())).await;
    assert_eq!(line(&done), "lead: Reported.");
    assert_eq!((ann_model.calls(), bo_model.calls()), (3, 2), "each task ran once");
    let texts: Vec<String> = results_given(&leader, 1).into_iter().map(|(_, _, t)| t).collect();
    assert_eq!(texts, ["ann: Ann first.", "ann: Ann second.\nbo: Bo second."]);
}

/// A team inside a row, parked on a member's question: an interrupt naming the leader's reply,
/// sent to the row, reaches the team, which closes the whole reply.
#[tokio::test]
async fn an_interrupt_of_the_leaders_reply_reaches_a_team_inside_a_row() {
    use std::sync::Arc;
    use towerscope_team::pipeline::SequentialPipeline;

    let leader = ScriptedModel::new(
        "m",
        [
            assign("a1", "deleter", "Delete /tmp/x."),
            ScriptedResponse::text("Not reached."),
        ],
    );
    let (deleter, _) = deleter(&["x"]);
    let team = team(&leader, [deleter.clone()]);
    let lead = team.leader().clone();
    let row = SequentialPipeline::from_shared([Arc::new(team) as Arc<dyn Participant>]);
    let (_, waiting) = read(row.reply_stream(Msg::user("user", "Clean up.").into())).await;
    assert_eq!(waiting.finished_reason, None);
    let leader_reply = lead.waiting_calls().unwrap().reply_id;

    let (_, ended) = read(row.reply_stream(UserInterruptEvent::new(leader_reply).into())).await;
    assert_eq!(
        ended.finished_reason,
        Some(ReplyFinishedReason::Interrupted),
        "{}",
        line(&ended)
    );
    assert_eq!(deleter.waiting_calls(), None);
    assert_eq!(lead.waiting_calls(), None);
    assert_eq!(leader.calls(), 1);
}

/// A member that answers every input, even an interrupt, with the same waiting message (it
/// never leaves its park): interrupting the team still ends, with the member's call
/// interrupted for the leader, instead of closing it for ever.
#[tokio::test]
async fn an_interrupt_ends_even_if_a_member_never_leaves_its_park() {
    use towerscope_core::{EventStream, Id};

    struct Stuck(Id);
    impl Participant for Stuck {
        fn name(&self) -> &str {
            "stuck"
        }
        fn reply_stream(&self, _input: towerscope_core::ReplyInput) -> EventStream {
            let waiting = Msg::assistant("stuck", "Still waiting.").with_id(self.0.clone());
            Box::pin(futures_util::stream::iter([Ok(ReplyItem::Final(waiting))]))
        }
        fn observe(&self, _msgs: Vec<Msg>) -> Result<(), AgentError> {
            Ok(())
        }
        fn interrupt(&self) -> bool {
            false
        }
        fn parked_reply(&self) -> Option<Id> {
            Some(self.0.clone())
        }
    }

    let leader = ScriptedModel::new("m", [assign("a1", "stuck", "Anything.")]);
    let stuck = Id::from("stuck-reply");
    let members = [TeamMember::new(Stuck(stuck.clone()), "Never done.")];
    let team = TeamPipeline::new(Agent::builder("lead").model(leader.clone()), members).unwrap();
    let (_, waiting) = read(team.reply_stream(Msg::user("user", "Go.").into())).await;
    assert_eq!(waiting.id, stuck);

    // On a thread of its own: a run that closed the member for ever would never yield, and
    // this test would hang rather than fail.
    let (done, ended) = std::sync::mpsc::channel();
    let closing = team.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let ended = runtime.block_on(read(closing.reply_stream(UserInterruptEvent::new(stuck).into())));
        let _ = done.send(ended);
    });
    let (_, ended) = ended.recv_timeout(Duration::from_secs(10)).expect("the interrupt ends");
    assert_eq!(ended.finished_reason, Some(ReplyFinishedReason::Interrupted));
    assert_eq!(team.leader().waiting_calls(), None);
}

/// An interrupt of the leader's reply while two members wait, dropped after its first item:
/// the member whose question was not closed yet still waits in the team, and a second
/// interrupt closes everything.
#[tokio::test]
async fn an_interrupt_dropped_mid_way_leaves_the_unclosed_questions_to_the_team() {
    let leader = ScriptedModel::new(
        "m",
        [
            assign_all(&[("a1", "ann", "Delete /tmp/x."), ("a2", "bo", "Delete /tmp/y.")]),
            ScriptedResponse::text("Not reached."),
        ],
    );
    let asker = |name: &str, file: &str| {
        let call = ScriptedResponse::tool_call(format!("c{file}"), "delete", format!(r#"{{"path": "/tmp/{file}"}}"#));
        asking_agent(
            name,
            ScriptedModel::new("m", [call, ScriptedResponse::text("Deleted.")]),
        )
    };
    let (ann, bo) = (asker("ann", "x"), asker("bo", "y"));
    let team = team(&leader, [ann.clone(), bo.clone()]);
    let (asked, _) = read(team.reply_stream(Msg::user("user", "Clean up.").into())).await;
    assert_eq!(asked.len(), 2);
    let leader_reply = team.leader().waiting_calls().unwrap().reply_id;

    let mut closing = team.reply_stream(UserInterruptEvent::new(leader_reply.clone()).into());
    let _first = closing.next().await;
    drop(closing);
    let still: Vec<&RequireUserConfirmEvent> = asked
        .iter()
        .filter(|q| {
            [&ann, &bo]
                .iter()
                .any(|a| a.waiting_calls().is_some_and(|w| w.reply_id == q.reply_id))
        })
        .collect();
    assert!(!still.is_empty(), "a question was not closed yet");
    for question in &still {
        assert!(
            team.waits_on(&question.reply_id),
            "the team still reaches {}",
            question.reply_id
        );
    }

    let (_, ended) = read(team.reply_stream(UserInterruptEvent::new(leader_reply).into())).await;
    assert_eq!(ended.finished_reason, Some(ReplyFinishedReason::Interrupted));
    assert_eq!((ann.waiting_calls(), bo.waiting_calls()), (None, None));
    assert_eq!(team.leader().waiting_calls(), None);
}

/// A member answered directly (not through the team), then the same answer sent to the team:
/// the member refuses it (it waits on nothing), its call gets that error, and the leader goes
/// on; the team waits on nothing.
#[tokio::test]
async fn an_answer_the_member_no_longer_waits_for_fails_its_call_and_the_leader_goes_on() {
    let leader = ScriptedModel::new(
        "m",
        [
            assign("a1", "deleter", "Delete /tmp/x."),
            ScriptedResponse::text("Went on."),
        ],
    );
    let (deleter, _) = deleter(&["x"]);
    let team = team(&leader, [deleter.clone()]);
    let (asked, _) = read(team.reply_stream(Msg::user("user", "Clean up.").into())).await;
    let direct = Participant::reply(&deleter, allow_all(&asked[0]).into()).await.unwrap();
    assert_eq!(line(&direct), "deleter: Deleted x.");

    let (_, done) = read(team.reply_stream(allow_all(&asked[0]).into())).await;
    assert_eq!(line(&done), "lead: Went on.");
    let given = results_given(&leader, 1);
    assert_eq!(given[0].1, ToolResultState::Error, "{given:?}");
    assert!(given[0].2.contains("The member 'deleter' failed"), "{given:?}");
    assert_eq!(team.parked_reply(), None);
}

/// The leader's reply a member's question waited for is completed directly (the leader is a
/// public agent): the team no longer waits on that question and takes a new message.
#[tokio::test]
async fn a_question_whose_leader_reply_ended_elsewhere_no_longer_holds_the_team() {
    let leader = ScriptedModel::new(
        "m",
        [
            assign("a1", "deleter", "Delete /tmp/x."),
            ScriptedResponse::text("Finished elsewhere."),
            ScriptedResponse::text("Next."),
        ],
    );
    let (deleter, _) = deleter(&["x"]);
    let team = team(&leader, [deleter]);
    let (asked, _) = read(team.reply_stream(Msg::user("user", "Clean up.").into())).await;
    assert_eq!(team.parked_reply(), Some(asked[0].reply_id.clone()));
    let parked = team.leader().waiting_calls().unwrap();
    let result =
        towerscope_core::ToolResultBlock::new(&parked.external[0].id, ASSIGN_TOOL, "done", ToolResultState::Success);
    let resume = towerscope_core::event::ExternalExecutionResultEvent::new(parked.reply_id, vec![result]);
    team.leader().reply(resume).await.unwrap();
    // Already before the team's next run: a pipeline around it (a goal) asks these first.
    assert_eq!(team.parked_reply(), None);
    assert!(!team.waits_on(&asked[0].reply_id));

    let next = team.reply(Msg::user("user", "And now?").into()).await.unwrap();
    assert_eq!(line(&next), "lead: Next.");
    assert_eq!(team.parked_reply(), None);
}

/// The tagged stream (`TeamPipeline::stream`) carries a member's question under the member's
/// name and ends with its waiting message; answered, it ends with the leader's final message.
#[tokio::test]
async fn the_tagged_stream_shows_a_members_question_and_its_waiting_message() {
    let leader = ScriptedModel::new(
        "m",
        [
            assign("a1", "deleter", "Delete /tmp/x."),
            ScriptedResponse::text("Done."),
        ],
    );
    let (deleter, _) = deleter(&["x"]);
    let team = team(&leader, [deleter]);

    let tagged: Vec<_> = team.stream(Msg::user("user", "Clean up.").into()).collect().await;
    let question = tagged.iter().find_map(|t| match &t.item {
        Ok(ReplyItem::Event(AgentEvent::RequireUserConfirm(e))) => Some((t.agent.to_string(), e.clone())),
        _ => None,
    });
    let (asker, question) = question.unwrap();
    assert_eq!(asker, "deleter");
    let last = tagged.last().unwrap();
    let Ok(ReplyItem::Final(waiting)) = &last.item else {
        panic!("{tagged:?}")
    };
    assert_eq!(
        (&*last.agent, waiting.finished_reason, &waiting.id),
        ("deleter", None, &question.reply_id)
    );

    let tagged: Vec<_> = team.stream(allow_all(&question).into()).collect().await;
    let last = tagged.last().unwrap();
    let Ok(ReplyItem::Final(done)) = &last.item else {
        panic!("{tagged:?}")
    };
    assert_eq!(&*last.agent, "lead");
    assert_eq!(line(done), "lead: Done.");
}

/// A reply bound to structured output parks on a member's question; answered, the leader's
/// final message carries the structured output it was asked for.
#[tokio::test]
async fn a_structured_reply_keeps_its_schema_across_a_members_question() {
    let leader = ScriptedModel::new(
        "m",
        [
            assign("a1", "deleter", "Delete /tmp/x."),
            ScriptedResponse::tool_call("s1", "GenerateStructuredOutput", r#"{"deleted": 1}"#),
        ],
    );
    let (deleter, _) = deleter(&["x"]);
    let team = team(&leader, [deleter]);
    let schema = towerscope_core::StructuredSchema {
        name: "Report".to_owned(),
        schema: serde_json::json!({"type": "object", "properties": {"deleted": {"type": "integer"}}, "required": ["deleted"]}),
    };
    let (asked, _) = read(team.reply_stream_structured(Msg::user("user", "Clean up.").into(), schema)).await;
    let (_, done) = read(team.reply_stream(allow_all(&asked[0]).into())).await;
    assert_eq!(done.finished_reason, Some(ReplyFinishedReason::Completed), "{done:?}");
    let output = done.structured_output.unwrap();
    assert_eq!(output.get("deleted"), Some(&serde_json::json!(1)));
}
