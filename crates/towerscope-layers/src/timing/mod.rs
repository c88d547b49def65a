//! Timing: how long each call of a position takes, and for streamed answers the time to the
//! first item and to the end of the stream.
//!
//! One [`TimingLayer`] serves `on_model_call`, `on_acting`, `on_reasoning` and `on_reply`. Each
//! call gives one [`TimingSample`]:
//!
//! - `open`: until the position answered (the response future resolved). For a streaming model
//!   this is only the time to set up the call, which is all the reference's timing example
//!   measures;
//! - `first_item`: until the first streamed item (chunk, event, tool chunk);
//! - `total`: until the end of the stream (the agent reads it to its end, past the `is_last`
//!   chunk, the final tool response or the final message; see
//!   [`PositionItem`](crate::position::PositionItem)), its first error item, or its drop; the
//!   answer for a complete response.
//!
//! Samples go to the [`Timings`] handle (per position: count, errors, open/first-item/total
//! aggregates with min and max, the last [`Timings::DEFAULT_CAPACITY`] samples) and to a
//! `tracing` debug event with target `towerscope::timing`. A stream that yields an error item is
//! recorded as [`Outcome::Error`] when that item passes (consumers drop a stream at its first
//! error), also after its last item (a layer rejecting an answer it saw whole); one dropped
//! before its last item is recorded as [`Outcome::Dropped`], one dropped after it as
//! [`Outcome::Ok`].
//!
//! Streamed answers are wrapped in a [`TimingStream`] and boxed again (the positions' stream
//! types are boxed trait objects anyway); complete answers cost no allocation besides the
//! sample's name.
//!
//! # Example
//!
//! ```
//! use towerscope_agent::Agent;
//! use towerscope_core::{Msg, PositionKind};
//! use towerscope_layers::timing::TimingLayer;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let timing = TimingLayer::new();
//! let timings = timing.timings().clone();
//! let agent = Agent::builder("assistant")
//!     .model(ScriptedModel::new("scripted", [ScriptedResponse::text("Hello there")]))
//!     .on_reply(timing.clone())
//!     .on_model_call(timing)
//!     .build()?;
//! agent.reply(Msg::user("user", "Hi")).await?;
//!
//! let model_calls = timings.stats(PositionKind::ModelCall);
//! assert_eq!(model_calls.count, 1);
//! assert_eq!(model_calls.recent[0].name, "scripted");
//! assert!(model_calls.recent[0].first_item.is_some()); // the scripted model streams
//! assert_eq!(timings.stats(PositionKind::Reply).count, 1);
//! # Ok(()) }
//! ```

mod future;
mod layer;
mod record;
mod service;
mod stream;

pub use future::ResponseFuture;
pub use layer::TimingLayer;
pub use record::{Aggregate, Outcome, TimingSample, TimingStats, Timings};
pub use service::Timing;
pub use stream::TimingStream;

#[cfg(test)]
mod tests;
