//! `on_acting` as a journaled step: the first run executes the tool and journals its final
//! [`ToolResponse`](towerscope_core::ToolResponse); a replay reads the response from the
//! journal and runs no tool. A tool's side effect happens at most once per completed step
//! (a process killed while the tool runs retries the step: make such tools idempotent, or key
//! their effect by the call id).
//!
//! Install it first on `on_acting` (outermost), as [`JournalModelLayer`](crate::JournalModelLayer)
//! on `on_model_call`. The response's chunks are not replayed: the agent gets the final
//! response as one item.
//!
//! # Example
//!
//! ```
//! use towerscope_agent::{Agent, toolkit::FunctionTool};
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//! use towerscope_restate::acting::JournalToolLayer;
//! use towerscope_restate::step::Steps;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Order { id: u32 }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let (steps, mut handler) = Steps::channel();
//! let agent = Agent::builder("a")
//!     .on_acting(JournalToolLayer::new(steps))
//!     .model(ScriptedModel::new("m", [
//!         ScriptedResponse::tool_call("c1", "refund", r#"{"id": 7}"#),
//!         ScriptedResponse::text("refunded"),
//!     ]))
//!     .tool(FunctionTool::new("refund", |o: Order| async move { format!("refunded {}", o.id) }))
//!     .build()?;
//! let journaled = tokio::spawn(async move {
//!     let mut results = Vec::new();
//!     while let Some(step) = handler.recv().await {
//!         let output = step.work.await.map(|record| record.output);
//!         results.push(format!("{output:?}"));
//!         let _ = step.reply.send(output.map_err(Into::into));
//!     }
//!     results
//! });
//! let msg = agent.reply(towerscope_core::Msg::user("u", "refund order 7")).await?;
//! assert_eq!(msg.text_content().as_deref(), Some("refunded"));
//! drop(agent);
//! let results = journaled.await.unwrap();
//! assert_eq!(results.len(), 1);
//! assert!(results[0].contains("refunded 7"));
//! # Ok(()) }
//! ```

mod layer;
mod service;

pub use layer::JournalToolLayer;
pub use service::JournalToolService;
