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

/// A model-call service whose stream gives the text `a` as a chunk and as the final answer,
/// then the items of `tail()`: a layer that rejects the answer after seeing it whole, or a
/// stream that stays open after its final chunk.
pub fn answer_then<St, F>(
    tail: F,
) -> impl Service<ModelCallRequest, Response = ModelOutput, Error = AgentError, Future: Send> + Clone + Send + Sync + 'static
where
    F: Fn() -> St + Clone + Send + Sync + 'static,
    St: futures_core::Stream<Item = Result<towerscope_core::ChatResponse, AgentError>> + Send + 'static,
{
    use futures_util::StreamExt;
    use towerscope_core::{ChatResponse, ContentBlock};

    service_fn(move |_req: ModelCallRequest| {
        let tail = tail();
        async move {
            let text = || vec![ContentBlock::text("a")];
            let head = futures_util::stream::iter([Ok(ChatResponse::chunk(text())), Ok(ChatResponse::new(text()))]);
            Ok::<_, AgentError>(ModelOutput::Stream(Box::pin(head.chain(tail))))
        }
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

/// The events logged on the current thread while the guard of [`capture_logs`] lives, one line
/// each: the target, then every field as `name=value`.
#[derive(Debug, Clone, Default)]
pub struct Logs(Arc<std::sync::Mutex<Vec<String>>>);

impl Logs {
    /// The lines logged so far.
    pub fn lines(&self) -> Vec<String> {
        self.0.lock().map(|lines| lines.clone()).unwrap_or_default()
    }
}

/// Captures what is logged on the current thread (a `current_thread` test runtime) until the
/// guard is dropped.
///
/// The lines come through a process-wide subscriber, installed at the first capture, that
/// tells tracing to ask it about every log line each time (`Interest::sometimes`) and keeps a
/// line when its thread captures. A subscriber set for the thread alone let tracing cache
/// "nobody wants this line" for a log site while another test thread had no subscriber: about
/// one run in thirty under load captured nothing.
pub fn capture_logs() -> (Logs, CaptureGuard) {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        // Fails only if the binary set another global subscriber, whose lines are then not
        // captured (none of this crate's tests does).
        let _ = tracing::subscriber::set_global_default(Capture);
    });
    let logs = Logs::default();
    CAPTURING.with(|capturing| *capturing.borrow_mut() = Some(logs.clone()));
    (logs, CaptureGuard { _private: () })
}

thread_local! {
    /// The lines of this thread's capture, while one lives.
    static CAPTURING: std::cell::RefCell<Option<Logs>> = const { std::cell::RefCell::new(None) };
}

/// Ends the capture of [`capture_logs`] when dropped.
pub struct CaptureGuard {
    _private: (),
}

impl Drop for CaptureGuard {
    fn drop(&mut self) {
        let _ = CAPTURING.try_with(|capturing| capturing.borrow_mut().take());
    }
}

/// The process-wide subscriber behind [`capture_logs`].
struct Capture;

impl tracing::Subscriber for Capture {
    fn register_callsite(&self, _: &'static tracing::Metadata<'static>) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }

    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        CAPTURING
            .try_with(|capturing| capturing.borrow().is_some())
            .unwrap_or(false)
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let Some(logs) = CAPTURING
            .try_with(|capturing| capturing.borrow().clone())
            .ok()
            .flatten()
        else {
            return;
        };
        let mut line = event.metadata().target().to_owned();
        event.record(&mut Line(&mut line));
        if let Ok(mut lines) = logs.0.lock() {
            lines.push(line);
        }
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

struct Line<'a>(&'a mut String);

impl tracing::field::Visit for Line<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}
