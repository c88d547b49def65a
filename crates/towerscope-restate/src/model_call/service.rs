use std::task::{Context, Poll};

use futures_util::StreamExt;
use futures_util::future::poll_fn;
use tower_service::Service;
use towerscope_core::{AgentError, ChatResponse, ModelCallRequest, ModelOutput};

use crate::error::StepKind;
use crate::replay::ReplaySource;
use crate::step::{Fingerprint, StepOutput, Steps, model_record};
use crate::step_future::StepFuture;

/// The service of [`JournalModelLayer`](super::JournalModelLayer).
#[derive(Debug, Clone)]
pub struct JournalModelService<S> {
    inner: S,
    steps: Steps,
}

impl<S> JournalModelService<S> {
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

/// What a model step depends on: the tools offered (names, descriptions, schemas) and the
/// number of messages sent.
pub(crate) fn fingerprint(req: &ModelCallRequest) -> Fingerprint {
    let mut fp = Fingerprint::new(StepKind::ModelCall).number(req.messages.len() as u64);
    for tool in req.tools.iter() {
        fp = fp
            .text(&tool.name)
            .text(&tool.description)
            .text(&tool.parameters.to_string());
    }
    fp
}

impl<S> Service<ModelCallRequest> for JournalModelService<S>
where
    S: Service<ModelCallRequest, Response = ModelOutput, Error = AgentError> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = ModelOutput;
    type Error = AgentError;
    type Future = StepFuture<ModelOutput>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), AgentError>> {
        // The inner service is made ready inside the step: a replay never needs it.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: ModelCallRequest) -> Self::Future {
        let fingerprint = fingerprint(&req);
        let mut inner = self.inner.clone();
        let work = ReplaySource::unjournaled().scope(async move {
            poll_fn(|cx| inner.poll_ready(cx)).await?;
            let response = collect(inner.call(req).await?).await?;
            Ok(model_record(fingerprint, response))
        });
        StepFuture::new(self.steps.request(fingerprint, Box::pin(work)), into_output)
    }
}

/// A model's output as one complete response: a stream is read to its end, as the agent reads
/// it; its first final (`is_last`) chunk is the answer, and an error after it (a layer inside
/// the step rejecting the answer) fails the step.
async fn collect(output: ModelOutput) -> Result<ChatResponse, AgentError> {
    match output {
        ModelOutput::Complete(response) => Ok(response),
        ModelOutput::Stream(mut stream) => {
            let mut last = None;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk?;
                if chunk.is_last && last.is_none() {
                    last = Some(chunk);
                }
            }
            last.ok_or_else(|| AgentError::model_retryable("the model's stream ended without its last chunk"))
        }
    }
}

fn into_output(output: StepOutput) -> Result<ModelOutput, AgentError> {
    match output {
        StepOutput::Model { response } => Ok(ModelOutput::Complete(response)),
        StepOutput::Failed { message, limit } => Err(StepOutput::model_error(message, limit)),
        StepOutput::Tool { .. } => Err(AgentError::model(
            "the journal holds a tool call where a model call was asked for",
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use futures_util::stream;
    use towerscope_core::ContentBlock;

    use super::*;

    fn answer() -> Vec<Result<ChatResponse, AgentError>> {
        let text = || vec![ContentBlock::text("a")];
        vec![Ok(ChatResponse::chunk(text())), Ok(ChatResponse::new(text()))]
    }

    /// A layer inside the step rejected the answer after its final chunk: the step fails, and
    /// the rejected answer is not journaled.
    #[tokio::test]
    async fn an_error_after_the_final_chunk_fails_the_step() {
        let mut items = answer();
        items.push(Err(AgentError::validation("the answer broke a rule")));
        let err = collect(ModelOutput::Stream(Box::pin(stream::iter(items))))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("broke a rule"), "{err}");

        let whole = collect(ModelOutput::Stream(Box::pin(stream::iter(answer()))))
            .await
            .unwrap();
        assert!(whole.is_last);
        assert_eq!(whole.text().as_deref(), Some("a"));
    }
}
