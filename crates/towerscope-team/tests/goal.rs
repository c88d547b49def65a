//! The goal pipeline (the reference's `GoalPipeline`) on scripted models: what the executor
//! and the verifier each received and in which order, the verifier's check, the executor sent
//! back with the feedback when the check fails, the bound on rounds and on structured-output
//! retries, and a run parked for the user and resumed.
#![allow(clippy::unwrap_used)]

mod common;

use common::hint_only;
use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_core::event::{ConfirmResult, UserConfirmResultEvent};
use towerscope_core::{AgentEvent, Msg, ReplyFinishedReason, ReplyItem, Role};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_team::Participant;
use towerscope_team::pipeline::{GOAL_VERIFICATION, GoalPipeline, TeamMember, TeamPipeline, Verdict};

const OUTPUT: &str = "GenerateStructuredOutput";

fn report(id: &str, text: &str) -> ScriptedResponse {
    ScriptedResponse::tool_call(id, OUTPUT, serde_json::json!({ "report": text }).to_string())
}

fn verdict(id: &str, result: &str, message: &str) -> ScriptedResponse {
    ScriptedResponse::tool_call(
        id,
        OUTPUT,
        serde_json::json!({ "result": result, "message": message }).to_string(),
    )
}

fn agent(name: &str, model: &ScriptedModel) -> Agent {
    Agent::builder(name).model(model.clone()).build().unwrap()
}

/// The texts of the user-side messages a model call received (past the system prompt, the
/// hint-only reply in progress, and tool traffic), each as `name: text` (a message's blocks
/// joined by newlines).
fn received(model: &ScriptedModel, call: usize) -> Vec<String> {
    model.requests()[call]
        .messages
        .iter()
        .filter(|m| m.role == Role::User && !hint_only(m))
        .map(|m| format!("{}: {}", m.name, m.text_content().unwrap_or_default()))
        .collect()
}

struct Run {
    /// `REPLY_START` speakers, in order.
    speakers: Vec<String>,
    /// `(round, result, message)` of each verification event.
    verifications: Vec<(u64, String, String)>,
    finals: Vec<Msg>,
    error: Option<towerscope_core::AgentError>,
}

async fn run(goal: &GoalPipeline, input: towerscope_core::ReplyInput) -> Run {
    let mut out = Run {
        speakers: Vec::new(),
        verifications: Vec::new(),
        finals: Vec::new(),
        error: None,
    };
    let mut stream = goal.reply_stream(input);
    while let Some(item) = stream.next().await {
        match item {
            Ok(ReplyItem::Event(AgentEvent::ReplyStart(e))) => out.speakers.push(e.name.to_string()),
            Ok(ReplyItem::Event(AgentEvent::Custom(c))) if c.name == GOAL_VERIFICATION => out.verifications.push((
                c.value["round"].as_u64().unwrap(),
                c.value["result"].as_str().unwrap().to_owned(),
                c.value["message"].as_str().unwrap().to_owned(),
            )),
            Ok(ReplyItem::Final(m)) => out.finals.push(m),
            Ok(ReplyItem::Event(_)) => {}
            Err(e) => out.error = Some(e),
        }
    }
    out
}

const HINT: &str = "<system-reminder>When you finish the goal, you should summarize your output (if any) so that a \
                    verifier can check whether you have achieved the goal (e.g., file paths, entry points, how-to-run, \
                    runtime environment, etc.).</system-reminder>";

fn verify_text(goal: &str, report: &str) -> String {
    format!(
        "user: <system-reminder>Now you should verify the work done by the executor. The goal is as follows, you \
         should verify whether the executor has achieved the goal.\n<goal>\n{goal}\n</goal>\nThe executor's achievement \
         report is as follows:\n<report>{report}</report></system-reminder>"
    )
}

#[tokio::test]
async fn a_failed_check_sends_the_executor_back_with_the_feedback_until_it_passes() {
    let executor_model = ScriptedModel::new("m", [report("r1", "draft in a.txt"), report("r2", "fixed a.txt")]);
    let verifier_model = ScriptedModel::new(
        "m",
        [verdict("v1", "fail", "a.txt lacks a title"), verdict("v2", "pass", "")],
    );
    let goal = GoalPipeline::new(agent("coder", &executor_model), agent("checker", &verifier_model));
    let out = run(&goal, Msg::user("user", "Write a.txt with a title.").into()).await;
    assert!(out.error.is_none(), "{:?}", out.error);

    // The order: work, check, work again, check again.
    assert_eq!(out.speakers, ["coder", "checker", "coder", "checker"]);
    assert_eq!(
        out.verifications,
        [
            (1, "fail".to_owned(), "a.txt lacks a title".to_owned()),
            (2, "pass".to_owned(), String::new())
        ]
    );
    // One final message: the executor's last, with its report.
    assert_eq!(out.finals.len(), 1);
    assert_eq!(&*out.finals[0].name, "coder");
    assert_eq!(
        out.finals[0].structured_output.as_ref().unwrap()["report"],
        "fixed a.txt"
    );
    let outcome = goal.outcome().unwrap();
    assert_eq!((outcome.verdict, outcome.rounds), (Verdict::Pass, 2));
    assert_eq!(outcome.report, "fixed a.txt");

    // What the executor received: the goal with the reminder to report, then the feedback.
    assert_eq!(
        received(&executor_model, 0),
        [format!("user: Write a.txt with a title.\n{HINT}")]
    );
    assert_eq!(
        received(&executor_model, 1).last().unwrap(),
        "system: <system-reminder>You've failed to pass the verification. Now recorrect your work based on the \
         following feedback:\na.txt lacks a title</system-reminder>"
    );
    // What the verifier received: the goal and each report, afresh each round (its
    // conversation is cleared after a failed check).
    assert_eq!(
        received(&verifier_model, 0),
        [verify_text("Write a.txt with a title.", "draft in a.txt")]
    );
    assert_eq!(
        received(&verifier_model, 1),
        [verify_text("Write a.txt with a title.", "fixed a.txt")]
    );
}

#[tokio::test]
async fn without_reset_the_verifier_remembers_the_earlier_rounds() {
    let executor_model = ScriptedModel::new("m", [report("r1", "one"), report("r2", "two")]);
    let verifier_model = ScriptedModel::new("m", [verdict("v1", "fail", "more"), verdict("v2", "pass", "ok")]);
    let goal = GoalPipeline::new(agent("coder", &executor_model), agent("checker", &verifier_model))
        .verifier_reset_context(false);
    run(&goal, Msg::user("user", "Count.").into()).await;
    assert_eq!(
        received(&verifier_model, 1),
        [verify_text("Count.", "one"), verify_text("Count.", "two")]
    );
}

#[tokio::test]
async fn the_rounds_are_bounded_and_impossible_ends_at_once() {
    let executor_model = ScriptedModel::new("m", [report("r1", "a"), report("r2", "b"), report("r3", "c")]);
    let verifier_model = ScriptedModel::new(
        "m",
        [
            verdict("v1", "fail", "no"),
            verdict("v2", "fail", "still no"),
            verdict("v3", "pass", ""),
        ],
    );
    let goal = GoalPipeline::new(agent("coder", &executor_model), agent("checker", &verifier_model)).max_iters(2);
    let out = run(&goal, Msg::user("user", "Do it.").into()).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(
        out.speakers,
        ["coder", "checker", "coder", "checker"],
        "two rounds, no third"
    );
    assert_eq!(executor_model.requests().len(), 2);
    let outcome = goal.outcome().unwrap();
    assert_eq!((outcome.verdict, outcome.rounds), (Verdict::Fail, 2));
    assert_eq!(outcome.message, "still no");
    assert_eq!(out.finals[0].structured_output.as_ref().unwrap()["report"], "b");

    let executor_model = ScriptedModel::new("m", [report("r1", "tried")]);
    let verifier_model = ScriptedModel::new("m", [verdict("v1", "impossible", "needs a time machine")]);
    let goal = GoalPipeline::new(agent("coder", &executor_model), agent("checker", &verifier_model));
    let out = run(&goal, Msg::user("user", "Go back to 1999.").into()).await;
    assert_eq!(out.speakers, ["coder", "checker"]);
    let outcome = goal.outcome().unwrap();
    assert_eq!((outcome.verdict, outcome.rounds), (Verdict::Impossible, 1));
}

#[tokio::test]
async fn an_executor_that_never_reports_is_asked_again_then_fails() {
    // One model call per reply: the reply ends (exceed_max_iters) without structured output.
    let executor_model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::text("done, trust me"),
            ScriptedResponse::text("really done"),
            ScriptedResponse::text("done!"),
        ],
    );
    let executor = Agent::builder("coder")
        .model(executor_model.clone())
        .max_iters(0)
        .structured_output_grace_iters(1)
        .build()
        .unwrap();
    let verifier_model = ScriptedModel::new("m", [verdict("v1", "pass", "")]);
    let goal = GoalPipeline::new(executor, agent("checker", &verifier_model)).max_retries(2);
    let out = run(&goal, Msg::user("user", "Do it.").into()).await;
    let err = out.error.unwrap();
    assert!(
        err.to_string()
            .contains("The executor failed to generate a valid execution report after 2 retries."),
        "{err}"
    );
    assert_eq!(executor_model.requests().len(), 3, "the first reply and two retries");
    let retry = "system: <system-reminder>You have failed to generate valid execution report. You should call the \
                 'GenerateStructuredOutput' tool with a valid structured output that matches the schema. \
                 </system-reminder>";
    assert_eq!(received(&executor_model, 1).last().unwrap(), retry);
    assert_eq!(received(&executor_model, 2).last().unwrap(), retry);
    assert!(verifier_model.requests().is_empty(), "nothing to verify");
    assert!(out.finals.is_empty());
}

#[tokio::test]
async fn a_verifier_reply_without_a_valid_result_is_asked_again() {
    let executor_model = ScriptedModel::new("m", [report("r1", "done")]);
    // The first verdict breaks the schema: the reply ends (exceed_max_iters) without output.
    let verifier_model = ScriptedModel::new("m", [verdict("v1", "maybe", "not sure"), verdict("v2", "pass", "fine")]);
    let verifier = Agent::builder("checker")
        .model(verifier_model.clone())
        .max_iters(0)
        .structured_output_grace_iters(1)
        .build()
        .unwrap();
    let goal = GoalPipeline::new(agent("coder", &executor_model), verifier);
    let out = run(&goal, Msg::user("user", "Do it.").into()).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.speakers, ["coder", "checker", "checker"]);
    assert_eq!(out.verifications, [(1, "pass".to_owned(), "fine".to_owned())]);
    // The retry repeats the instruction, as the reference's does.
    assert_eq!(
        received(&verifier_model, 1),
        [verify_text("Do it.", "done"), verify_text("Do it.", "done")]
    );
}

/// An executor with a `delete` tool that asks the user before every call.
fn asking_cleaner(model: &ScriptedModel) -> Agent {
    common::asking_agent("cleaner", model.clone())
}

#[tokio::test]
async fn an_executor_parked_for_the_user_parks_the_run_and_the_resume_continues_it() {
    let executor_model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/x"}"#),
            report("r1", "deleted /tmp/x"),
        ],
    );
    let executor = asking_cleaner(&executor_model);
    let verifier_model = ScriptedModel::new("m", [verdict("v1", "pass", "gone")]);
    let goal = GoalPipeline::new(executor, agent("checker", &verifier_model));
    park_and_resume(&goal, &verifier_model).await;
}

/// A new goal while the run waits for the user is refused, and the parked run keeps its goal:
/// the answer's report is checked against the first goal, not the refused one.
#[tokio::test]
async fn a_new_goal_while_the_run_is_parked_is_refused_and_the_parked_goal_stays() {
    let executor_model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/x"}"#),
            report("r1", "deleted /tmp/x"),
        ],
    );
    let verifier_model = ScriptedModel::new("m", [verdict("v1", "pass", "gone")]);
    let goal = GoalPipeline::new(asking_cleaner(&executor_model), agent("checker", &verifier_model));
    let (asked, _) = parked_on_a_question(goal.reply_stream(Msg::user("user", "Remove /tmp/x.").into())).await;

    let err = goal
        .reply(Msg::user("user", "Something else.").into())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("waits on reply"), "{err}");
    let confirm = UserConfirmResultEvent::new(
        asked.reply_id.clone(),
        vec![ConfirmResult::new(true, asked.tool_calls[0].clone())],
    );
    let out = run(&goal, confirm.into()).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(
        received(&verifier_model, 0),
        [verify_text("Remove /tmp/x.", "deleted /tmp/x")]
    );
}

/// A new goal while another run works on one is refused, and the running goal is checked
/// against its own text.
#[tokio::test(start_paused = true)]
async fn a_new_goal_while_a_run_works_is_refused_and_the_running_goal_stays() {
    let slow = report("r1", "draft in a.txt").delay(std::time::Duration::from_millis(100));
    let executor_model = ScriptedModel::new("m", [slow]);
    let verifier_model = ScriptedModel::new("m", [verdict("v1", "pass", "")]);
    let goal = GoalPipeline::new(agent("coder", &executor_model), agent("checker", &verifier_model));
    let mut first = goal.reply_stream(Msg::user("user", "Write a.txt.").into());
    let _started = first.next().await;

    let err = goal
        .reply(Msg::user("user", "Something else.").into())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("working on a goal"), "{err}");
    while first.next().await.is_some() {}
    assert_eq!(
        received(&verifier_model, 0),
        [verify_text("Write a.txt.", "draft in a.txt")]
    );
}

#[tokio::test]
async fn an_interrupt_of_the_parked_executor_ends_the_run_without_a_check() {
    let executor_model = ScriptedModel::new(
        "m",
        [ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/x"}"#)],
    );
    let executor = asking_cleaner(&executor_model);
    let verifier_model = ScriptedModel::new("m", [verdict("v1", "pass", "")]);
    let goal = GoalPipeline::new(executor, agent("checker", &verifier_model));
    let parked = goal.reply(Msg::user("user", "Remove /tmp/x.").into()).await.unwrap();
    assert_eq!(parked.finished_reason, None);
    let interrupt = towerscope_core::event::UserInterruptEvent::new(parked.id);
    let out = run(&goal, interrupt.into()).await;
    assert_eq!(out.finals.len(), 1);
    assert_eq!(out.finals[0].finished_reason, Some(ReplyFinishedReason::Interrupted));
    assert!(
        verifier_model.requests().is_empty(),
        "an interrupted run is not checked"
    );
    assert_eq!(executor_model.requests().len(), 1, "nor retried");
}

/// Reads a stream that parks on a confirmation: the question, and the waiting message.
async fn parked_on_a_question(
    mut stream: towerscope_core::EventStream,
) -> (towerscope_core::event::RequireUserConfirmEvent, Msg) {
    let (mut asked, mut parked) = (None, None);
    while let Some(item) = stream.next().await {
        match item.unwrap() {
            ReplyItem::Event(AgentEvent::RequireUserConfirm(e)) => asked = Some(e),
            ReplyItem::Final(m) => parked = Some(m),
            ReplyItem::Event(_) => {}
        }
    }
    (asked.unwrap(), parked.unwrap())
}

async fn park_and_resume(goal: &GoalPipeline, verifier_model: &ScriptedModel) {
    let (asked, parked) = parked_on_a_question(goal.reply_stream(Msg::user("user", "Remove /tmp/x.").into())).await;
    assert_eq!(parked.finished_reason, None, "parked, waiting for the user");
    assert!(verifier_model.requests().is_empty());

    let confirm = UserConfirmResultEvent::new(
        parked.id.clone(),
        vec![ConfirmResult::new(true, asked.tool_calls[0].clone())],
    );
    let out = run(goal, confirm.into()).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(
        out.speakers,
        ["checker"],
        "the executor resumed (no new REPLY_START), then the check"
    );
    assert_eq!(out.finals.len(), 1);
    assert_eq!(out.finals[0].finished_reason, Some(ReplyFinishedReason::Completed));
    assert_eq!(
        received(verifier_model, 0),
        [verify_text("Remove /tmp/x.", "deleted /tmp/x")]
    );
    assert_eq!(goal.outcome().unwrap().verdict, Verdict::Pass);

    // A resume of the finished reply is the executor's to refuse; one for a reply nobody had is
    // the pipeline's.
    let stale = UserConfirmResultEvent::new(parked.id, vec![]);
    let err = goal.reply(stale.into()).await.unwrap_err();
    assert!(err.to_string().contains("not waiting for user confirmation"), "{err}");
    let unknown = UserConfirmResultEvent::new(towerscope_core::Id::new(), vec![]);
    let err = goal.reply(unknown.into()).await.unwrap_err();
    assert!(err.to_string().contains("waits on the reply"), "{err}");
}

/// A team executor whose member asks the user: the question parks the goal's run, and its
/// answer, sent to the goal, reaches the member; the leader reports and the checker checks.
#[tokio::test]
async fn a_team_members_question_parks_the_run_and_its_answer_continues_it() {
    let assign = serde_json::json!({ "member": "cleaner", "prompt": "Remove /tmp/x." }).to_string();
    let leader_model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("a1", "TeamAssign", assign),
            report("r1", "the cleaner removed it"),
        ],
    );
    let cleaner_model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/x"}"#),
            ScriptedResponse::text("Removed."),
        ],
    );
    let team = TeamPipeline::new(
        Agent::builder("lead").model(leader_model.clone()),
        [TeamMember::new(asking_cleaner(&cleaner_model), "Removes files.")],
    )
    .unwrap();
    let verifier_model = ScriptedModel::new("m", [verdict("v1", "pass", "gone")]);
    let goal = GoalPipeline::team(team, agent("checker", &verifier_model));

    let (asked, parked) = parked_on_a_question(goal.reply_stream(Msg::user("user", "Remove /tmp/x.").into())).await;
    assert_eq!(parked.finished_reason, None, "parked on the cleaner's question");
    assert_eq!(&*parked.name, "cleaner");
    assert_eq!(
        parked.id, asked.reply_id,
        "the waiting message names the member's reply"
    );
    assert_eq!(goal.parked_reply(), Some(asked.reply_id.clone()));
    assert!(verifier_model.requests().is_empty());

    let confirm = UserConfirmResultEvent::new(
        asked.reply_id.clone(),
        vec![ConfirmResult::new(true, asked.tool_calls[0].clone())],
    );
    let out = run(&goal, confirm.into()).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(
        out.speakers,
        ["checker"],
        "the member and the leader resumed, then the check"
    );
    assert_eq!(
        out.finals.last().unwrap().finished_reason,
        Some(ReplyFinishedReason::Completed)
    );
    assert_eq!(cleaner_model.calls(), 2);
    let result = leader_model.requests()[1].messages.last().cloned().unwrap();
    let result = result.tool_results().next().and_then(|r| r.output.text_content());
    assert_eq!(
        result.as_deref(),
        Some("Removed."),
        "the member's answer reached the leader"
    );
    assert_eq!(
        received(&verifier_model, 0),
        [verify_text("Remove /tmp/x.", "the cleaner removed it")]
    );
    assert_eq!(goal.outcome().unwrap().verdict, Verdict::Pass);
    assert_eq!(goal.parked_reply(), None);
}

/// A goal whose team has two members asking, inside a row: the row takes the answer to either
/// question (the second one first), each reaches its member, and the goal's check follows.
#[tokio::test]
async fn a_row_reaches_either_question_of_a_goals_team() {
    use std::sync::Arc;
    use towerscope_team::pipeline::SequentialPipeline;

    let assign = |member: &str| serde_json::json!({ "member": member, "prompt": "Remove a file." }).to_string();
    let leader_model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("a1", "TeamAssign", assign("ann")).and_tool_call(
                "a2",
                "TeamAssign",
                assign("bo"),
            ),
            report("r1", "both removed"),
        ],
    );
    let asker = |name: &str| {
        let model = ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/x"}"#),
                ScriptedResponse::text(format!("{name} removed it.")),
            ],
        );
        common::asking_agent(name, model)
    };
    let team = TeamPipeline::new(
        Agent::builder("lead").model(leader_model.clone()),
        [
            TeamMember::new(asker("ann"), "Removes files."),
            TeamMember::new(asker("bo"), "Removes files."),
        ],
    )
    .unwrap();
    let verifier_model = ScriptedModel::new("m", [verdict("v1", "pass", "gone")]);
    let goal = GoalPipeline::team(team, agent("checker", &verifier_model));
    let row = SequentialPipeline::from_shared([Arc::new(goal) as Arc<dyn Participant>]);

    let asked = |items: &[ReplyItem]| -> Vec<towerscope_core::event::RequireUserConfirmEvent> {
        let events = items.iter().filter_map(|item| match item {
            ReplyItem::Event(AgentEvent::RequireUserConfirm(e)) => Some(e.clone()),
            _ => None,
        });
        events.collect()
    };
    let allow = |e: &towerscope_core::event::RequireUserConfirmEvent| {
        let allowed = e
            .tool_calls
            .iter()
            .map(|c| ConfirmResult::new(true, c.clone()))
            .collect();
        UserConfirmResultEvent::new(e.reply_id.clone(), allowed)
    };
    let first: Vec<ReplyItem> = row
        .reply_stream(Msg::user("user", "Remove both.").into())
        .map(Result::unwrap)
        .collect()
        .await;
    let questions = asked(&first);
    assert_eq!(questions.len(), 2);
    let Some(ReplyItem::Final(waiting)) = first.last() else {
        panic!("{first:?}")
    };
    assert_eq!(waiting.id, questions[0].reply_id, "the row waits on the first question");

    let second = row.reply(allow(&questions[1]).into()).await.unwrap();
    assert_eq!(second.finished_reason, None, "still waiting on the first: {second:?}");
    assert_eq!(second.id, questions[0].reply_id);
    let done = row.reply(allow(&questions[0]).into()).await.unwrap();
    assert_eq!(done.finished_reason, Some(ReplyFinishedReason::Completed), "{done:?}");
    assert_eq!(verifier_model.calls(), 1, "checked once");
    let results = leader_model.requests()[1].messages.last().cloned().unwrap();
    let texts: Vec<String> = results.tool_results().filter_map(|r| r.output.text_content()).collect();
    assert_eq!(texts, ["ann removed it.", "bo removed it."]);
}

#[tokio::test]
async fn a_team_leader_plans_assigns_and_is_sent_back_when_the_check_fails() {
    let assign = |id: &str, prompt: &str| {
        ScriptedResponse::tool_call(
            id,
            "TeamAssign",
            serde_json::json!({ "member": "writer", "prompt": prompt }).to_string(),
        )
    };
    let leader_model = ScriptedModel::new(
        "m",
        [
            assign("a1", "Write a haiku on rain."),
            report("r1", "the writer's haiku"),
            assign("a2", "Make the haiku mention autumn."),
            report("r2", "the haiku, now in autumn"),
        ],
    );
    let writer_model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::text("Soft rain on the roof"),
            ScriptedResponse::text("Autumn rain on the roof"),
        ],
    );
    let team = TeamPipeline::new(
        Agent::builder("lead").model(leader_model.clone()),
        [TeamMember::new(agent("writer", &writer_model), "Writes short poems.")],
    )
    .unwrap();
    let verifier_model = ScriptedModel::new("m", [verdict("v1", "fail", "no season"), verdict("v2", "pass", "")]);
    let goal = GoalPipeline::team(team, agent("checker", &verifier_model));
    let out = run(&goal, Msg::user("user", "An autumn haiku.").into()).await;
    assert!(out.error.is_none(), "{:?}", out.error);

    // The leader plans and assigns, the member works, the checker checks; then again.
    assert_eq!(out.speakers, ["lead", "writer", "checker", "lead", "writer", "checker"]);
    assert_eq!(received(&writer_model, 0), ["lead: Write a haiku on rain."]);
    assert_eq!(
        received(&writer_model, 1).last().unwrap(),
        "lead: Make the haiku mention autumn."
    );
    // The leader's second round starts from the checker's feedback.
    let feedback = received(&leader_model, 2);
    assert!(
        feedback
            .last()
            .unwrap()
            .ends_with("feedback:\nno season</system-reminder>"),
        "{feedback:?}"
    );
    assert_eq!(
        received(&verifier_model, 1),
        [verify_text("An autumn haiku.", "the haiku, now in autumn")]
    );
    assert_eq!(&*out.finals[0].name, "lead");
    assert_eq!(goal.outcome().unwrap().rounds, 2);
    assert_eq!(goal.executor().name(), "lead");
}

/// An interrupt naming a reply of the run that ended (parked no more) is refused by name, as
/// the other pipelines refuse it; passed on to the executor, it ended the stream without a
/// final message.
#[tokio::test]
async fn an_interrupt_naming_a_finished_reply_is_refused() {
    let executor_model = ScriptedModel::new("m", [report("r1", "done")]);
    let verifier_model = ScriptedModel::new("m", [verdict("v1", "pass", "")]);
    let goal = GoalPipeline::new(agent("coder", &executor_model), agent("checker", &verifier_model));
    let last = goal.reply(Msg::user("user", "Do it.").into()).await.unwrap();
    assert_eq!(last.finished_reason, Some(ReplyFinishedReason::Completed));
    let executor_reply = goal.executor().state().reply_context.reply_id;
    let verifier_reply = goal.verifier().state().reply_context.reply_id;
    for finished in [executor_reply, verifier_reply] {
        let answer = goal
            .reply(towerscope_core::event::UserInterruptEvent::new(finished).into())
            .await;
        assert!(
            matches!(&answer, Err(towerscope_core::AgentError::Validation(m)) if m.contains("waits on the reply")),
            "{answer:?}"
        );
    }
}

/// The same for a team executor: an interrupt naming its leader's reply that ended is refused
/// by name.
#[tokio::test]
async fn an_interrupt_naming_a_team_leaders_finished_reply_is_refused() {
    let leader_model = ScriptedModel::new("m", [report("r1", "done")]);
    let writer_model = ScriptedModel::new("m", [ScriptedResponse::text("unused")]);
    let team = TeamPipeline::new(
        Agent::builder("lead").model(leader_model.clone()),
        [TeamMember::new(agent("writer", &writer_model), "Writes.")],
    )
    .unwrap();
    let verifier_model = ScriptedModel::new("m", [verdict("v1", "pass", "")]);
    let goal = GoalPipeline::team(team, agent("checker", &verifier_model));
    let last = goal.reply(Msg::user("user", "Do it.").into()).await.unwrap();
    assert_eq!(last.finished_reason, Some(ReplyFinishedReason::Completed));
    let leader_reply = goal.executor().state().reply_context.reply_id;
    let answer = goal
        .reply(towerscope_core::event::UserInterruptEvent::new(leader_reply).into())
        .await;
    assert!(
        matches!(&answer, Err(towerscope_core::AgentError::Validation(m)) if m.contains("waits on the reply")),
        "{answer:?}"
    );
}
