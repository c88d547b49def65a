//! `on_model_call` as a journaled step: the first run calls the model and journals its
//! complete response; a replay reads the response from the journal and calls no model.
//!
//! Install it first on `on_model_call` (outermost), so that everything inside it (retry,
//! fallback, rate limits, tracing) runs once per step and is skipped on replay:
//!
//! ```text
//! on_model_call
//!  └─ JournalModelLayer       one journaled step: ctx.run, or the journal on replay
//!      └─ RetryLayer, FallbackLayer, ...   attempts inside the step
//!          └─ the chat model
//! ```
//!
//! A streamed answer is collected to its last chunk inside the step: the agent gets the
//! complete response.
//!
//! # Example
//!
//! ```
//! use towerscope_agent::Agent;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//! use towerscope_restate::model_call::JournalModelLayer;
//! use towerscope_restate::step::{StepOutput, Steps};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let (steps, mut handler) = Steps::channel();
//! let agent = Agent::builder("a")
//!     .on_model_call(JournalModelLayer::new(steps))
//!     .model(ScriptedModel::new("m", [ScriptedResponse::text("hi")]))
//!     .build()?;
//! // Stands in for the Restate handler: runs each step's work (a first run, not a replay).
//! tokio::spawn(async move {
//!     while let Some(step) = handler.recv().await {
//!         let output = step.work.await.map(|record| record.output).map_err(Into::into);
//!         let _ = step.reply.send(output);
//!     }
//! });
//! let msg = agent.reply(towerscope_core::Msg::user("u", "hello")).await?;
//! assert_eq!(msg.text_content().as_deref(), Some("hi"));
//! # Ok(()) }
//! ```

mod layer;
mod service;

pub use layer::JournalModelLayer;
pub use service::JournalModelService;
