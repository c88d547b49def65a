//! The future a journal layer returns: the step's output, once the handler has journaled (or
//! replayed) it.
//!
//! # Example
//!
//! ```
//! use towerscope_core::{AgentError, ToolResponse};
//! use towerscope_restate::step::{Fingerprint, StepOutput, Steps};
//! use towerscope_restate::step_future::StepFuture;
//! use towerscope_restate::StepKind;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let (steps, mut handler) = Steps::channel();
//! let fingerprint = Fingerprint::new(StepKind::ToolCall);
//! let rx = steps.request(fingerprint, Box::pin(async { Err(AgentError::model("unused")) }));
//! let future = StepFuture::new(rx, |output| match output {
//!     StepOutput::Tool { response } => Ok(response.text_content()),
//!     _ => Err(AgentError::model("not a tool")),
//! });
//! // The handler's side: a replay answers from the journal without running the work.
//! let request = handler.recv().await.unwrap();
//! let _ = request.reply.send(Ok(StepOutput::Tool { response: ToolResponse::text("done") }));
//! assert_eq!(future.await.unwrap().as_deref(), Some("done"));
//! # }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use tokio::sync::oneshot;
use towerscope_core::AgentError;

use crate::error::DurableError;
use crate::step::StepOutput;

pin_project! {
    /// Resolves to a journaled step's output, mapped to the position's response.
    pub struct StepFuture<T> {
        #[pin]
        rx: oneshot::Receiver<Result<StepOutput, DurableError>>,
        map: fn(StepOutput) -> Result<T, AgentError>,
    }
}

impl<T> StepFuture<T> {
    /// Awaits `rx` and maps the output with `map`.
    pub fn new(
        rx: oneshot::Receiver<Result<StepOutput, DurableError>>,
        map: fn(StepOutput) -> Result<T, AgentError>,
    ) -> Self {
        Self { rx, map }
    }
}

impl<T> std::fmt::Debug for StepFuture<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepFuture").finish_non_exhaustive()
    }
}

impl<T> Future for StepFuture<T> {
    type Output = Result<T, AgentError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        Poll::Ready(match ready!(this.rx.poll(cx)) {
            Ok(Ok(output)) => (this.map)(output),
            Ok(Err(err)) => Err(AgentError::other(err)),
            Err(_) => Err(AgentError::other(DurableError::Restate(
                "the durable reply's handler stopped before this step was journaled".to_owned(),
            ))),
        })
    }
}
