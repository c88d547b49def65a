//! A person as a participant: [`UserAgent`], and where its replies come from ([`UserInput`]).
//!
//! - [`TerminalInput`] (the default): prints the prompt and reads a line from standard input.
//! - [`ChannelInput`]: replies sent through a channel by a test or a web front end, which can
//!   also be told when the person is asked ([`ChannelInput::with_prompts`]).
//! - Any other source implements [`UserInput`].
//!
//! # Example
//!
//! ```
//! use towerscope_core::Msg;
//! use towerscope_team::user::{ChannelInput, UserAgent};
//! use towerscope_team::Participant;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let (input, person) = ChannelInput::new();
//! let user = UserAgent::new("ann").with_input(input);
//! person.send_text("Paris, please.")?;
//! let msg = user.reply(Msg::user("bot", "Which city?").into()).await?;
//! assert_eq!((msg.name.as_ref(), msg.text_content().as_deref()), ("ann", Some("Paris, please.")));
//!
//! drop(person); // the input ends
//! assert!(user.next_message().await?.is_none());
//! # Ok(()) }
//! ```

mod agent;
mod channel;
mod input;
mod terminal;

pub use agent::{DEFAULT_OBSERVED_LIMIT, UserAgent};
pub use channel::{ChannelInput, ReplySender};
pub use input::{InputFuture, InputRequest, UserInput, UserReply};
pub use terminal::{TerminalInput, read_line};
