//! [`MsgHub`]: participants that hear each other (the reference's 1.x `MsgHub`).
//!
//! While a hub lives, every finished reply of a participant is observed by the other
//! participants (never by the speaker itself):
//!
//! - **What is shared**: the reply's final message as [`shared_copy`](crate::shared_copy) makes
//!   it: text and data, thinking stripped, no tool calls or results (they stay in the
//!   speaker's context), as a user message under the speaker's name. A reply parked for the
//!   user is shared when the reply resuming it finishes; interrupted replies are shared too, as
//!   in the reference. A reply that ended with an error (a call limit) is not: its message is
//!   the error's text (in the reference, the error is raised and nothing is shared).
//! - **How**: by a layer on the speaker's `on_reply`, the [`Broadcaster`] middleware, which the
//!   hub finds on each participant. Every reply passes it, however it is started (`reply`,
//!   `reply_stream`, a pipeline, another hub). Install it first so it broadcasts what the
//!   caller receives, after your own `on_reply` layers (see [`Broadcaster`]).
//! - **Busy participants**: an agent refuses `observe` in the middle of a reply, so a
//!   participant that is replying when another's reply is broadcast gets it through its
//!   mailbox (`Agent::observe_when_free`): it observes the message the moment its own reply
//!   ends (or, parked for a confirmation, when the resumed reply ends), in the order the
//!   messages were broadcast, once. Nothing is lost, and nothing changes its conversation
//!   mid-reply; the message lands after its own reply, exactly where a person who was talking
//!   would have heard it.
//! - **Lifetime**: the hub is a guard. Dropping it (end of scope, a panic, a cancelled task)
//!   removes every subscription; [`MsgHub::run`] scopes it to a block. Messages already posted
//!   to a busy participant are still delivered after the hub ends.
//! - `add`, `delete`, a manual [`broadcast`](MsgHub::broadcast) to everyone, and
//!   [`set_auto_broadcast`](MsgHub::set_auto_broadcast) as in the reference.
//!
//! ```text
//!   alice.reply ─▶ on_reply: Broadcaster ─▶ … ─▶ loop        final message
//!                          └─ shared_copy ─▶ bob.observe   (now, or when bob's reply ends)
//!                                        └─▶ carol.observe
//! ```
//!
//! # Example
//!
//! Two agents answer the same question at once (a fan-out inside the hub): each is replying
//! when the other's answer is broadcast, and hears it right after its own.
//!
//! ```
//! use std::time::Duration;
//! use towerscope_agent::Agent;
//! use towerscope_core::Msg;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//! use towerscope_team::hub::{Broadcaster, MsgHub};
//! use towerscope_team::pipeline::FanoutPipeline;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let agent = |name: &str, says: &str, ms: u64| {
//!     let answer = ScriptedResponse::text(says).delay(Duration::from_millis(ms));
//!     Agent::builder(name)
//!         .model(ScriptedModel::new("scripted", [answer]))
//!         .middleware(Broadcaster::new())
//!         .build()
//! };
//! let (fast, slow) = (agent("fast", "Done.", 10)?, agent("slow", "Finally.", 50)?);
//! let answers = MsgHub::builder()
//!     .participants([fast.clone(), slow.clone()])
//!     .enter()?
//!     .run(async |_hub| FanoutPipeline::new([fast.clone(), slow.clone()]).replies(Msg::user("host", "Go!").into()).await)
//!     .await?;
//! assert_eq!(answers.len(), 2);
//!
//! let context = |a: &Agent| -> Vec<String> {
//!     a.state().context.iter().map(|m| format!("{}: {}", m.name, m.text_content().unwrap_or_default())).collect()
//! };
//! assert_eq!(context(&slow), ["host: Go!", "slow: Finally.", "fast: Done."]);
//! assert_eq!(context(&fast), ["host: Go!", "fast: Done.", "slow: Finally."]);
//! let subscribers = towerscope_team::Participant::broadcaster(&fast).map(|b| b.subscribers());
//! assert_eq!(subscribers, Some(vec![]), "the hub ended with the block");
//! # Ok(()) }
//! ```

mod broadcaster;
mod layer;
mod msghub;

pub use broadcaster::Broadcaster;
pub use layer::{BroadcastFuture, BroadcastLayer, BroadcastService};
pub use msghub::{MsgHub, MsgHubBuilder};
