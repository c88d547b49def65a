//! The innermost services of `on_model_call`, `on_acting`, `on_check_permission` and
//! `on_compress_context`: what runs when no middleware is installed.

use std::future::Ready;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures_util::stream;
use serde_json::Value;
use tower::Service;
use towerscope_core::{
    ActingRequest, AgentError, CompressRequest, ModelCallRequest, ModelFuture, ModelOutput, PermissionBehavior,
    PermissionDecision, PermissionRequest, ToolCallState, ToolItem, ToolResponse, ToolStream,
};

use crate::state::AgentState;
use crate::structured::{self, Generated};
use crate::toolkit::{Toolkit, ToolkitService};

/// Calls the model named in the request.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ModelCallImpl;

impl Service<ModelCallRequest> for ModelCallImpl {
    type Response = ModelOutput;
    type Error = AgentError;
    type Future = ModelFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: ModelCallRequest) -> ModelFuture {
        let model = Arc::clone(&req.model);
        model.call(req)
    }
}

/// Runs a tool: the structured-output tool of the reply, or one of the toolkit's.
#[derive(Clone)]
pub(crate) struct ActingImpl {
    pub(crate) toolkit: ToolkitService,
}

impl Service<ActingRequest> for ActingImpl {
    type Response = ToolStream;
    type Error = AgentError;
    type Future = Ready<Result<ToolStream, AgentError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: ActingRequest) -> Self::Future {
        if req.tool_call.name != structured::TOOL_NAME {
            return self.toolkit.call(req);
        }
        std::future::ready(Ok(generate_structured_output(&req)))
    }
}

fn generate_structured_output(req: &ActingRequest) -> ToolStream {
    let response = match (
        structured::mounted(&req.ctx),
        serde_json::from_str::<Value>(&req.tool_call.input),
    ) {
        (None, _) => ToolResponse::error(format!(
            "ToolNotFoundError: The tool named '{}' doesn't exist.",
            structured::TOOL_NAME
        )),
        (Some(schema), Ok(Value::Object(map))) => {
            match crate::toolkit::validate(&Value::Object(map.clone()), &schema.schema) {
                Ok(()) => {
                    req.ctx.insert(Generated(map));
                    ToolResponse::text(structured::SUCCESS_TEXT)
                }
                Err(e) => ToolResponse::error(format!(
                    "ValidationError: Structured output validation failed with error: {e}"
                )),
            }
        }
        (Some(_), Ok(other)) => ToolResponse::error(format!(
            "ValidationError: Structured output validation failed with error: expected an object, got {other}"
        )),
        (Some(_), Err(e)) => ToolResponse::error(format!("ValidationError: Structured output is not valid JSON: {e}")),
    };
    let mut response = response;
    response.id = req.tool_call.id.clone();
    Box::pin(stream::iter([Ok(ToolItem::Response(response))]))
}

/// Decides whether a tool call may run: rules of the state, the tool's own opinion, read-only
/// tools, then the configured default.
#[derive(Clone)]
pub(crate) struct PermissionImpl {
    pub(crate) state: Arc<Mutex<AgentState>>,
    pub(crate) toolkit: Arc<Toolkit>,
    pub(crate) default: PermissionDecision,
}

impl Service<PermissionRequest> for PermissionImpl {
    type Response = PermissionDecision;
    type Error = AgentError;
    type Future = Ready<Result<PermissionDecision, AgentError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: PermissionRequest) -> Self::Future {
        std::future::ready(Ok(self.decide(&req)))
    }
}

impl PermissionImpl {
    fn decide(&self, req: &PermissionRequest) -> PermissionDecision {
        if req.tool_call.state == ToolCallState::Allowed {
            return PermissionDecision::Allow;
        }
        let name = req.tool_call.name.as_str();
        {
            let state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if state.has_rule(name, PermissionBehavior::Deny) {
                return PermissionDecision::Deny {
                    message: format!("The tool '{name}' is denied by a permission rule."),
                };
            }
            if state.has_rule(name, PermissionBehavior::Ask) {
                return PermissionDecision::Ask {
                    suggested_rules: vec![suggested_rule(name)],
                };
            }
        }
        if let Some(decision) = self.toolkit.get(name).and_then(|t| t.check_permission(&req.input)) {
            return decision;
        }
        if req.tool.read_only {
            return PermissionDecision::Allow;
        }
        let allowed = {
            let state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            state.has_rule(name, PermissionBehavior::Allow)
        };
        if allowed {
            return PermissionDecision::Allow;
        }
        match &self.default {
            PermissionDecision::Ask { .. } => PermissionDecision::Ask {
                suggested_rules: vec![suggested_rule(name)],
            },
            other => other.clone(),
        }
    }
}

/// The reference's default suggestion: allow this tool from now on.
pub(crate) fn suggested_rule(tool_name: &str) -> towerscope_core::PermissionRule {
    towerscope_core::PermissionRule::new(tool_name, PermissionBehavior::Allow, "suggested")
}

/// Context compression. Summarising by the model is not implemented yet; the position exists
/// so that middleware (a custom compressor, a guard) can be installed on it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CompressImpl;

impl Service<CompressRequest> for CompressImpl {
    type Response = ();
    type Error = AgentError;
    type Future = Ready<Result<(), AgentError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _req: CompressRequest) -> Self::Future {
        std::future::ready(Ok(()))
    }
}
