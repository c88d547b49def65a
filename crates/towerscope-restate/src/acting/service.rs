use std::task::{Context, Poll};

use futures_util::StreamExt;
use futures_util::future::poll_fn;
use tower_service::Service;
use towerscope_core::{ActingRequest, AgentError, ToolItem, ToolResponse, ToolStream};

use crate::error::StepKind;
use crate::replay::ReplaySource;
use crate::step::{Fingerprint, StepOutput, Steps, tool_record};
use crate::step_future::StepFuture;

/// The service of [`JournalToolLayer`](super::JournalToolLayer).
#[derive(Debug, Clone)]
pub struct JournalToolService<S> {
    inner: S,
    steps: Steps,
}

impl<S> JournalToolService<S> {
    /// Journals `inner`'s calls through `steps`.
    pub fn new(inner: S, steps: Steps) -> Self {
        Self { inner, steps }
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

/// What a tool step depends on: the tool's name, the call's id and its arguments (the call's
/// text, which [`ActingRequest::set_input`] changes too).
pub(crate) fn fingerprint(req: &ActingRequest) -> Fingerprint {
    Fingerprint::new(StepKind::ToolCall)
        .text(&req.tool().name)
        .text(&req.tool_call().id.to_string())
        .text(&req.tool_call().input)
}

impl<S> Service<ActingRequest> for JournalToolService<S>
where
    S: Service<ActingRequest, Response = ToolStream, Error = AgentError> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = ToolStream;
    type Error = AgentError;
    type Future = StepFuture<ToolStream>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: ActingRequest) -> Self::Future {
        let fingerprint = fingerprint(&req);
        let mut inner = self.inner.clone();
        let work = ReplaySource::unjournaled().scope(async move {
            poll_fn(|cx| inner.poll_ready(cx)).await?;
            let response = collect(inner.call(req).await?).await?;
            Ok(tool_record(fingerprint, response))
        });
        StepFuture::new(self.steps.request(fingerprint, Box::pin(work)), into_output)
    }
}

/// A tool's stream read to its end, as the agent reads it: its first final response is the
/// result, and an error after it (a layer inside the step rejecting the result) fails the step.
async fn collect(mut stream: ToolStream) -> Result<ToolResponse, AgentError> {
    let mut result = None;
    while let Some(item) = stream.next().await {
        if let ToolItem::Response(response) = item?
            && result.is_none()
        {
            result = Some(response);
        }
    }
    result.ok_or_else(|| AgentError::model("the tool's stream ended without a final response"))
}

fn into_output(output: StepOutput) -> Result<ToolStream, AgentError> {
    match output {
        StepOutput::Tool { response } => Ok(Box::pin(futures_util::stream::once(async move {
            Ok(ToolItem::Response(response))
        }))),
        // As the agent takes a failed tool call: an error result the model sees.
        StepOutput::Failed { message, .. } => Ok(Box::pin(futures_util::stream::once(async move {
            Ok(ToolItem::Response(ToolResponse::error(message)))
        }))),
        StepOutput::Model { .. } => Err(AgentError::model(
            "the journal holds a model call where a tool call was asked for",
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use futures_util::stream;

    use super::*;

    /// A layer inside the step rejected the result after the tool's response: the step fails,
    /// and the rejected result is not journaled.
    #[tokio::test]
    async fn an_error_after_the_response_fails_the_step() {
        let response = || Ok(ToolItem::Response(ToolResponse::text("3")));
        let rejected = [response(), Err(AgentError::validation("result rejected"))];
        let err = collect(Box::pin(stream::iter(rejected))).await.unwrap_err();
        assert!(err.to_string().contains("result rejected"), "{err}");

        let whole = collect(Box::pin(stream::iter([response()]))).await.unwrap();
        assert_eq!(whole.state, towerscope_core::ToolResultState::Success);
    }
}
