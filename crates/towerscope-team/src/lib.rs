//! Several agents and a person: the [`Participant`] interface, [`MsgHub`](hub::MsgHub)
//! broadcast, [`pipeline`]s, a [`UserAgent`](user::UserAgent), and a terminal [`console`] that
//! renders replies, asks for confirmations and interrupts.
//!
//! - [`Participant`]: what anything taking part in a conversation offers: a name, a streamed
//!   reply and a final one, `observe` and `interrupt`. The [`Agent`](towerscope_agent::Agent),
//!   the user agent and every pipeline implement it, and it is object safe, so
//!   `Vec<Arc<dyn Participant>>` mixes them and pipelines nest.
//! - [`hub`]: the reference's 1.x `MsgHub`. Each participant's reply is broadcast to the others
//!   by a layer on its `on_reply` ([`Broadcaster`](hub::Broadcaster)); a participant that is
//!   busy replying receives it as soon as its reply ends.
//! - [`pipeline`]: sequential, fan-out, merged event streams tagged by speaker, and the 2.x team
//!   pipeline (a leader assigns tasks to members through an external tool) and goal pipeline (an
//!   executor works until a verifier passes its report).
//! - [`user`]: a participant whose replies are typed by a person: the terminal, or a channel
//!   fed by a test or a web front end.
//! - [`console`]: renders any reply stream to a terminal and runs an interactive chat with
//!   human-in-the-loop confirmations and Ctrl-C.
//!
//! # Why a crate of its own
//!
//! Everything here is built on the agent's public interface and adds nothing to its loop, so
//! the dependency arrows run one way: `towerscope-core` ← `towerscope-agent` ← this crate, and
//! `towerscope-layers` ← this crate for the 1.x print hooks. A program with one agent and no
//! terminal does not compile any of it; the facade re-exports it as `towerscope::hub`,
//! `towerscope::pipeline`, `towerscope::user` and `towerscope::console`.
//!
//! # Example
//!
//! Three agents discuss in a hub, one after the other: each hears the others.
//!
//! ```
//! use towerscope_agent::Agent;
//! use towerscope_core::{Msg, ReplyInput};
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//! use towerscope_team::hub::{Broadcaster, MsgHub};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let agent = |name: &str, says: &str| {
//!     Agent::builder(name)
//!         .model(ScriptedModel::new("scripted", [ScriptedResponse::text(says)]))
//!         .middleware(Broadcaster::new()) // first: broadcasts what the caller receives
//!         .build()
//! };
//! let (alice, bob, carol) = (agent("alice", "Tabs.")?, agent("bob", "Spaces.")?, agent("carol", "Both.")?);
//!
//! let hub = MsgHub::builder()
//!     .participants([alice.clone(), bob.clone(), carol.clone()])
//!     .announcement(Msg::user("host", "Tabs or spaces?"))
//!     .enter()?;
//! for speaker in [&alice, &bob, &carol] {
//!     speaker.reply(ReplyInput::from(Vec::new())).await?; // nothing new: the hub told them
//! }
//! drop(hub); // the subscriptions end with the hub
//!
//! let heard: Vec<String> = carol.state().context.iter().filter_map(|m| m.text_content()).collect();
//! assert_eq!(heard, ["Tabs or spaces?", "Tabs.", "Spaces.", "Both."]);
//! # Ok(()) }
//! ```

pub mod console;
pub mod hub;
mod participant;
pub mod pipeline;
mod share;
pub mod user;

pub use participant::{Participant, ReplyFuture, final_msg};
pub use share::shared_copy;
