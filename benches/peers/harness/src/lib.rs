//! What every peer benchmark under `benches/peers/` shares, written once.
//!
//! A peer binary implements [`Peer`] for its framework's agent (built over a scripted model and
//! an `add(a, b)` tool that both count their calls in [`Calls`]) and calls [`main`]:
//!
//! ```ignore
//! fn main() -> std::process::ExitCode {
//!     peer_harness::main::<MyPeer>()
//! }
//! ```
//!
//! The scenario of one reply: the model is called 4 times; its first 3 answers each call
//! `add(a, b)` once, the 4th answers the text `done`. [`Calls::check_reply`] enforces 4 model
//! calls and 3 tool calls after every reply, so no peer is timed doing less work.
//!
//! The binary's CLI (see [`cli`]) prints one JSON line per result on stdout:
//!
//! - `single --replies N --middlewares M [--warmup W]`: replies one at a time on a
//!   current-thread tokio runtime: per-reply median/p10/p90, allocations and bytes per reply
//!   (the counting allocator in [`alloc`]) and the live bytes of one idle agent.
//! - `many --n N [--workers W]`: N replies in flight at once, each on its own agent, the model
//!   sleeping 50 ms before each answer, on a multi-thread runtime with 2 workers (`--workers`
//!   changes that; 0 is the current-thread runtime): wall time, peak RSS and CPU time per reply.
//! - `floor --n N [--workers W]`: the same runtime and N tasks that only sleep 50 ms four times,
//!   with no agent: the CPU per reply that the runtime spends whatever the framework.

pub mod alloc;
pub mod calls;
pub mod cli;
pub mod json;
pub mod process;
mod run;
pub mod stats;

pub use calls::Calls;
pub use run::main;

use std::future::Future;
use std::time::Duration;

/// Any error a peer or the harness reports; the binary prints it and exits with status 1.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The answers of the scripted model, in order: `add(1, 2)`, `add(3, 4)`, `add(5, 6)`, then text.
pub const TOOL_ARGS: [(i64, i64); 3] = [(1, 2), (3, 4), (5, 6)];

/// The text of the scripted model's 4th and last answer, and so of every reply.
pub const FINAL_TEXT: &str = "done";

/// The user's question sent with every reply.
pub const QUESTION: &str = "What is 1+2, 3+4 and 5+6?";

/// The system prompt of every agent.
pub const SYSTEM_PROMPT: &str = "You are a calculator.";

/// How to build one agent.
#[derive(Clone, Debug, Default)]
pub struct Setup {
    /// Pass-through middlewares to install (0 unless the peer has middleware).
    pub middlewares: usize,
    /// How long the scripted model sleeps (tokio time) before each answer.
    pub model_delay: Option<Duration>,
    /// One pass-through layer on this position only (one of [`Peer::POSITIONS`]).
    pub layer_on: Option<String>,
    /// Read every event of each reply (`--events read`): for a peer that builds its events
    /// only for a reader; a peer that always builds them ignores it.
    pub events: bool,
}

/// One framework's agent running the scenario.
pub trait Peer: Sized + Send + 'static {
    /// The peer's name in the results (`towerscope`, `rig`, ...).
    const NAME: &'static str;
    /// The version of the framework benchmarked.
    const VERSION: &'static str;
    /// Whether the peer can install `Setup::middlewares` pass-through middlewares.
    const MIDDLEWARE: bool;
    /// The positions `Setup::layer_on` may name (none unless the peer says).
    const POSITIONS: &'static [&'static str] = &[];

    /// Builds one agent with its own scripted model, tool and [`Calls`].
    fn build(setup: &Setup) -> Result<Self, BoxError>;

    /// The counters the agent's scripted model and tool increment.
    fn calls(&self) -> &Calls;

    /// Runs one reply from a fresh conversation (the peer clears its memory or history first)
    /// and returns the reply's final text.
    fn reply(&mut self) -> impl Future<Output = Result<String, BoxError>> + Send;
}
