//! Pipelines: participants composed into one participant.
//!
//! | Pipeline                | What it does                                                        | Reference |
//! |-------------------------|---------------------------------------------------------------------|-----------|
//! | [`SequentialPipeline`]  | each member answers the previous member's reply                     | 1.x `sequential_pipeline` |
//! | [`FanoutPipeline`]      | every member answers the same input concurrently; replies in order  | 1.x `fanout_pipeline` |
//! | [`merge`]               | several reply streams as one, each item tagged with its speaker     | 1.x `stream_printing_messages` |
//! | [`TeamPipeline`]        | a leader assigns tasks to members through an external tool          | 2.x `TeamPipeline` |
//! | [`GoalPipeline`]        | an executor works on a goal until a verifier passes its report      | 2.x `GoalPipeline` |
//!
//! Every pipeline is a [`Participant`](crate::Participant): it streams its members' events and
//! ends with one final message, observes by passing messages to its members, and interrupts
//! them. So pipelines nest (a fan-out inside a sequence), join hubs as listeners, and render in
//! a [`console`](crate::console) like any agent. A member parked for the user parks the
//! pipeline; the resuming input, addressed to the parked reply, reaches that member.
//!
//! # Example
//!
//! A panel answers at once, then an editor sums up what the panel said:
//!
//! ```
//! use std::sync::Arc;
//! use towerscope_agent::Agent;
//! use towerscope_core::Msg;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//! use towerscope_team::pipeline::{FanoutPipeline, SequentialPipeline};
//! use towerscope_team::Participant;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let says = |text: &str| ScriptedModel::new("m", [ScriptedResponse::text(text)]);
//! let editor_model = says("Two votes, one each.");
//! let ann = Agent::builder("ann").model(says("Tea.")).build()?;
//! let bo = Agent::builder("bo").model(says("Coffee.")).build()?;
//! let editor = Agent::builder("editor").model(editor_model.clone()).build()?;
//!
//! let panel: Arc<dyn Participant> = Arc::new(FanoutPipeline::new([ann, bo]).named("panel"));
//! let row = SequentialPipeline::from_shared([panel, Arc::new(editor)]);
//! let summary = row.reply(Msg::user("host", "Tea or coffee?").into()).await?;
//! assert_eq!(summary.text_content().as_deref(), Some("Two votes, one each."));
//! // The newest message not the editor's own (its reply in progress holds a runtime-state hint).
//! let requests = editor_model.requests();
//! let given = requests[0].messages.iter().rev().find(|m| &*m.name != "editor");
//! let given = given.and_then(|m| m.text_content());
//! assert_eq!(given.as_deref(), Some("ann: Tea.\nbo: Coffee."));
//! # Ok(()) }
//! ```

mod assign;
mod fanout;
mod goal;
mod merge;
mod sequential;
mod team;

pub use assign::ASSIGN_TOOL;
pub use fanout::FanoutPipeline;
pub use goal::{GOAL_VERIFICATION, GoalOutcome, GoalPipeline, Verdict};
pub use merge::{MergedStream, Tagged, merge, tag};
pub use sequential::SequentialPipeline;
pub use team::{TeamMember, TeamPipeline};

use towerscope_core::{Id, ReplyInput};

/// The parked reply a resuming input is addressed to; `None` for new messages.
pub(crate) fn resumed_reply(input: &ReplyInput) -> Option<&Id> {
    match input {
        ReplyInput::Messages(_) => None,
        ReplyInput::Confirm(e) => Some(&e.reply_id),
        ReplyInput::External(e) => Some(&e.reply_id),
        ReplyInput::Interrupt(e) => Some(&e.reply_id),
    }
}
