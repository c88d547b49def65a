//! A team whose leader keeps assigning work ends at the leader's `max_iters`: each round the
//! team answers from outside the leader counts, as a round the leader finishes itself does.
#![allow(clippy::unwrap_used)]

use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_core::{Msg, ReplyFinishedReason, ReplyItem};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_team::Participant;
use towerscope_team::pipeline::{TeamMember, TeamPipeline};

#[tokio::test]
async fn a_leader_that_keeps_assigning_work_stops_at_its_max_iters() {
    let assign = ScriptedResponse::tool_call("t", "TeamAssign", r#"{"member": "worker", "prompt": "Again."}"#);
    let leader_model = ScriptedModel::cycle("m", [assign]);
    let worker = Agent::builder("worker")
        .model(ScriptedModel::cycle("w", [ScriptedResponse::text("done")]))
        .build()
        .unwrap();
    let team = TeamPipeline::new(
        Agent::builder("lead").model(leader_model.clone()).max_iters(2),
        [TeamMember::new(worker, "Does what it is told.")],
    )
    .unwrap();
    let mut stream = team.reply_stream(Msg::user("user", "Go.").into());
    let (mut last, mut items) = (None, 0);
    while let Some(item) = stream.next().await {
        items += 1;
        assert!(
            items < 5_000,
            "the team never stopped: {} leader calls",
            leader_model.calls()
        );
        if let ReplyItem::Final(m) = item.unwrap() {
            last = Some(m);
        }
    }
    let last = last.unwrap();
    assert_eq!(&*last.name, "lead");
    assert_eq!(last.finished_reason, Some(ReplyFinishedReason::ExceedMaxIters));
    assert_eq!(leader_model.calls(), 3, "max_iters rounds, then the forced last one");
}
