//! Rendering replies in a terminal, and a terminal chat with confirmations and Ctrl-C.
//!
//! [`Console`] renders any reply stream, or several merged
//! ([`MergedStream`](crate::pipeline::MergedStream)), as it arrives:
//!
//! ```text
//! alice (thinking): The user wants Paris.        thinking, dimmed, streamed
//! alice: It is sunny in Paris.                   text, streamed, after the speaker's name
//! alice → get_weather {"city":"Paris"}           a tool call, once its arguments are complete
//!   ✓ get_weather: sunny, 21 °C                  its result: ✓ success, ✗ failed, ⊘ denied, ⚠ interrupted
//! ? alice wants to run delete {"path":"/tmp/a"}  waiting for a confirmation
//! ⚠ alice: interrupted                           how a reply ended, when not completed
//! ```
//!
//! - Colours only on a terminal, never with `NO_COLOR` ([`use_colors`]);
//!   [`TOWERSCOPE_DISABLE_CONSOLE_OUTPUT`](DISABLE_OUTPUT_ENV)`=true` silences everything (the
//!   reference's `AGENTSCOPE_DISABLE_CONSOLE_OUTPUT`).
//! - The 1.x `pre_print`/`post_print` hooks run around each printed piece, instance then
//!   class hooks, found on each speaker ([`Participant::print_hooks`](crate::Participant::print_hooks):
//!   the [`Hooks`](towerscope_layers::Hooks) installed on an agent) or given to the console.
//!   A `pre_print` hook may rewrite a piece, or suppress it by returning empty text.
//! - [`Chat`] runs an interactive chat: the person's messages, confirmations asked `y/N/a/e`
//!   per tool call, Ctrl-C to interrupt a reply ([`ctrl_c`] with the `ctrl-c` feature).
//!
//! # Example
//!
//! ```
//! use towerscope_agent::Agent;
//! use towerscope_core::Msg;
//! use towerscope_layers::hooks::{Hook, Hooks, PrintChunk, PrintKind};
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//! use towerscope_team::console::Console;
//! use towerscope_team::Participant;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let hooks = Hooks::new();
//! hooks.register("quiet-thinking", Hook::pre_print(|_, chunk| {
//!     (chunk.kind == PrintKind::Thinking).then(|| PrintChunk::new(chunk.kind, "", chunk.last))
//! }));
//! let model = ScriptedModel::new("m", [ScriptedResponse::thinking("Greet back.").and_text("Hello!")]);
//! let agent = Agent::builder("bot").model(model).middleware(hooks).build()?;
//!
//! let mut console = Console::new(Vec::new());
//! console.watch(&agent);
//! let reply = console.show(Participant::reply_stream(&agent, Msg::user("user", "Hi").into())).await?;
//! assert_eq!(reply.text_content().as_deref(), Some("Hello!"));
//! assert_eq!(String::from_utf8_lossy(console.get_ref()), "bot: Hello!\n");
//! # Ok(()) }
//! ```

mod chat;
mod confirm;
mod printer;
mod render;
#[cfg(feature = "ctrl-c")]
mod signal;
mod style;

pub use chat::{Chat, ChatEnd};
pub use confirm::{Answer, Interrupts, prompt};
pub use render::Console;
#[cfg(feature = "ctrl-c")]
pub use signal::ctrl_c;
pub use style::{DISABLE_OUTPUT_ENV, use_colors};
