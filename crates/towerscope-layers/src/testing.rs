//! Helpers of the unit tests.
#![allow(unreachable_pub, dead_code)]

use std::sync::Arc;

use tower::Service;
use tower::service_fn;
use towerscope_core::{AgentContext, AgentError, ModelCallRequest, ModelOutput, Msg};
use towerscope_models::ScriptedModel;

/// A model-call request addressed to `model`, in reply `r` of session `s`.
pub fn model_request(model: &ScriptedModel) -> ModelCallRequest {
    request_in(model, AgentContext::new("agent", "s", "r"))
}

/// A model-call request addressed to `model` with the given context.
pub fn request_in(model: &ScriptedModel, ctx: AgentContext) -> ModelCallRequest {
    ModelCallRequest {
        ctx,
        model: Arc::new(model.clone()),
        messages: vec![Msg::user("user", "hi")].into(),
        tools: Arc::from(vec![]),
        tool_choice: None,
    }
}

/// The innermost model-call service: calls the model named in the request, as the agent does.
pub fn model_service()
-> impl Service<ModelCallRequest, Response = ModelOutput, Error = AgentError, Future: Send> + Clone + Send + Sync + 'static
{
    service_fn(|req: ModelCallRequest| {
        let model = Arc::clone(&req.model);
        model.call(req)
    })
}

/// Describes a model answer item by item: `text:<text>` for chunks, `restart:<reason>` for
/// restart markers, `last:<text>` for the final response, `err:<error>` for errors.
pub async fn describe(out: Result<ModelOutput, AgentError>) -> Vec<String> {
    use futures_util::StreamExt;
    use towerscope_core::ChatResponse;

    fn one(item: Result<ChatResponse, AgentError>) -> String {
        match item {
            Err(e) => format!("err:{e}"),
            Ok(r) if r.is_last => format!("last:{}", r.text().unwrap_or_default()),
            Ok(r) => match r.restart_reason() {
                Some(reason) => format!("restart:{reason}"),
                None => format!("text:{}", r.text().unwrap_or_default()),
            },
        }
    }
    match out {
        Err(e) => vec![one(Err(e))],
        Ok(ModelOutput::Complete(r)) => vec![one(Ok(r))],
        Ok(ModelOutput::Stream(s)) => s.map(one).collect().await,
    }
}
