//! Front-end tools: tools a run declares and the browser runs, external tools to the agent.
//!
//! AG-UI sends the front-end tools with every run; the agent's toolkit is fixed when the
//! factory builds it, so the factory adds them: while the AG-UI endpoint calls the factory,
//! [`frontend_tools`] returns the run's tools (elsewhere, none).
//!
//! ```
//! use towerscope_agent::Agent;
//! use towerscope_core::AgentError;
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//! use towerscope_serve::agui::frontend_tools;
//!
//! let factory = |_session: &str| -> Result<Agent, AgentError> {
//!     let mut builder = Agent::builder("assistant")
//!         .model(ScriptedModel::cycle("scripted", [ScriptedResponse::text("Hello!")]));
//!     for tool in frontend_tools() {
//!         builder = builder.tool(tool);
//!     }
//!     builder.build()
//! };
//! assert!(frontend_tools().is_empty());
//! # let _ = factory("t");
//! ```

use std::cell::RefCell;
use std::sync::Arc;

use futures_util::stream;
use serde_json::{Value, json};
use towerscope_agent::toolkit::{Tool, ToolChunkStream, ToolError};

thread_local! {
    static RUN_TOOLS: RefCell<Vec<FrontendTool>> = const { RefCell::new(Vec::new()) };
}

/// A tool the browser runs: the agent hands its calls to the client (`REQUIRE_EXTERNAL_EXECUTION`,
/// AG-UI's `pendingToolCallIds`) and the next run carries their results.
#[derive(Debug, Clone)]
pub struct FrontendTool {
    name: String,
    description: String,
    schema: Arc<Value>,
}

impl FrontendTool {
    /// A front-end tool; `parameters` is its JSON schema (an empty object schema when `None`).
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Option<Value>) -> Self {
        let schema = match parameters {
            Some(v @ Value::Object(_)) => v,
            _ => json!({ "type": "object", "properties": {} }),
        };
        Self {
            name: name.into(),
            description: description.into(),
            schema: Arc::new(schema),
        }
    }
}

impl Tool for FrontendTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn shared_input_schema(&self) -> Arc<Value> {
        Arc::clone(&self.schema)
    }

    fn external(&self) -> bool {
        true
    }

    /// The client's schema: its patterns are not compiled (a client could make the server
    /// compile gigabytes of them) and are the client's to check.
    fn checks_patterns(&self) -> bool {
        false
    }

    fn call(&self, _input: Value) -> ToolChunkStream {
        Box::pin(stream::iter([Err(ToolError::new(format!(
            "'{}' is a front-end tool: the browser runs it",
            self.name
        )))]))
    }
}

/// The front-end tools of the AG-UI run whose agent the factory is building now (none outside
/// the factory call of an AG-UI run).
pub fn frontend_tools() -> Vec<FrontendTool> {
    RUN_TOOLS.with(|t| t.borrow().clone())
}

/// Calls `f` (the factory) with `tools` as the run's front-end tools.
pub(crate) fn with_frontend_tools<R>(tools: Vec<FrontendTool>, f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            RUN_TOOLS.with(|t| t.borrow_mut().clear());
        }
    }
    RUN_TOOLS.with(|t| *t.borrow_mut() = tools);
    let _reset = Reset;
    f()
}
