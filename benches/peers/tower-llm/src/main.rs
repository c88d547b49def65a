//! The peer-benchmark scenario on tower-llm 0.0.13: `Agent::builder(..).with_provider(..)` over a
//! scripted model service, an `add` tool service, and a policy that loops until the model stops
//! calling tools (at most 5 steps); each reply is `tower_llm::run(&mut agent, system, user)`.
//!
//! ```sh
//! cargo run --release -- single --replies 2000 --middlewares 5
//! cargo run --release -- many --n 10000
//! ```
//!
//! tower-llm is tower all the way down, so `--middlewares M` wraps M pass-through layers, boxed
//! one by one as a user adding them in a loop would, around the three services a user can reach
//! through the builder: the whole agent (`map_agent_service`), the model (`with_provider`) and
//! the tool (`ToolDef::service`). Its step and loop services are built inside the builder and
//! cannot be wrapped from outside; towerscope's middleware hooks six positions plus the system
//! prompt, so the two overheads are per layer, not per position-for-position equivalent.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use async_openai::types::{
    ChatCompletionMessageToolCall, ChatCompletionRequestAssistantMessageContent, ChatCompletionRequestMessage,
    ChatCompletionResponseMessage, ChatCompletionToolType, CreateChatCompletionRequest, FunctionCall, Role,
};
use peer_harness::{BoxError, Calls, FINAL_TEXT, Peer, QUESTION, SYSTEM_PROMPT, Setup, TOOL_ARGS};
use tower::util::{BoxCloneService, BoxService};
use tower::{Service, ServiceExt};
use tower_llm::provider::ProviderResponse;
use tower_llm::{AgentSvc, ToolDef, ToolInvocation, ToolOutput, ToolSvc};

type ModelSvc = BoxCloneService<CreateChatCompletionRequest, ProviderResponse, BoxError>;

/// The scripted model service: answer number `i % 4` of the scenario.
#[derive(Clone)]
struct ScriptedModel {
    calls: Arc<Calls>,
    delay: Option<Duration>,
}

#[allow(deprecated)] // `function_call` is a deprecated field that must still be set
fn answer(step: usize) -> ProviderResponse {
    let (content, tool_calls) = match TOOL_ARGS.get(step % 4) {
        Some((a, b)) => (
            None,
            Some(vec![ChatCompletionMessageToolCall {
                id: format!("call_{step}"),
                r#type: ChatCompletionToolType::Function,
                function: FunctionCall {
                    name: "add".to_owned(),
                    arguments: format!(r#"{{"a": {a}, "b": {b}}}"#),
                },
            }]),
        ),
        None => (Some(FINAL_TEXT.to_owned()), None),
    };
    ProviderResponse {
        assistant: ChatCompletionResponseMessage {
            content,
            refusal: None,
            tool_calls,
            role: Role::Assistant,
            function_call: None,
            audio: None,
        },
        prompt_tokens: 50,
        completion_tokens: 10,
    }
}

impl Service<CreateChatCompletionRequest> for ScriptedModel {
    type Response = ProviderResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<ProviderResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _req: CreateChatCompletionRequest) -> Self::Future {
        let step = self.calls.model_called();
        let delay = self.delay;
        Box::pin(async move {
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            Ok(answer(step))
        })
    }
}

/// A service that forwards everything: the cheapest possible layer.
#[derive(Clone)]
struct PassThrough<S>(S);

impl<S: Service<R>, R> Service<R> for PassThrough<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> S::Future {
        self.0.call(req)
    }
}

fn add_tool(calls: Arc<Calls>, middlewares: usize) -> ToolDef {
    let add = tower::service_fn(move |inv: ToolInvocation| {
        calls.tool_called();
        let sum = match (inv.arguments["a"].as_i64(), inv.arguments["b"].as_i64()) {
            (Some(a), Some(b)) => Ok(a + b),
            _ => Err(BoxError::from(format!(
                "add needs integer a and b, got {}",
                inv.arguments
            ))),
        };
        std::future::ready(sum.map(|sum| ToolOutput {
            id: inv.id,
            result: sum.into(),
        }))
    });
    let mut service: ToolSvc = BoxCloneService::new(add);
    for _ in 0..middlewares {
        service = BoxCloneService::new(PassThrough(service));
    }
    ToolDef {
        name: "add",
        description: "Add two integers.",
        parameters_schema: serde_json::json!({
            "type": "object",
            "properties": { "a": { "type": "integer" }, "b": { "type": "integer" } },
            "required": ["a", "b"]
        }),
        service,
    }
}

struct TowerLlm {
    agent: AgentSvc,
    calls: Arc<Calls>,
}

impl Peer for TowerLlm {
    const NAME: &'static str = "tower-llm";
    const VERSION: &'static str = "0.0.13";
    const MIDDLEWARE: bool = true;

    fn build(setup: &Setup) -> Result<Self, BoxError> {
        let calls = Arc::new(Calls::new());
        let mut model: ModelSvc = BoxCloneService::new(ScriptedModel {
            calls: Arc::clone(&calls),
            delay: setup.model_delay,
        });
        for _ in 0..setup.middlewares {
            model = BoxCloneService::new(PassThrough(model));
        }
        let middlewares = setup.middlewares;
        let policy = tower_llm::Policy::new().until_no_tool_calls().or_max_steps(5).build();
        // The builder wants an OpenAI client; it is never used (every model call goes to the
        // scripted provider). Building one takes about 10 ms (an HTTP client with its TLS
        // roots), so all agents share one, as an application would.
        static CLIENT: OnceLock<Arc<tower_llm::Client<tower_llm::OpenAIConfig>>> = OnceLock::new();
        let client = Arc::clone(CLIENT.get_or_init(|| Arc::new(tower_llm::Client::new())));
        let agent = tower_llm::Agent::builder(client)
            .model("scripted")
            .with_provider(model)
            .tool(add_tool(Arc::clone(&calls), setup.middlewares))
            .policy(policy)
            .map_agent_service(move |mut agent: AgentSvc| {
                for _ in 0..middlewares {
                    agent = BoxService::new(PassThrough(agent));
                }
                agent
            })
            .build();
        Ok(Self { agent, calls })
    }

    fn calls(&self) -> &Calls {
        &self.calls
    }

    async fn reply(&mut self) -> Result<String, BoxError> {
        let request = tower_llm::simple_chat_request(SYSTEM_PROMPT, QUESTION);
        let run = self.agent.ready().await?.call(request).await?;
        match run.messages.last() {
            Some(ChatCompletionRequestMessage::Assistant(msg)) => match &msg.content {
                Some(ChatCompletionRequestAssistantMessageContent::Text(text)) => Ok(text.clone()),
                other => Err(format!("the last assistant message has no text: {other:?}").into()),
            },
            other => Err(format!("the run did not end with an assistant message: {other:?}").into()),
        }
    }
}

fn main() -> std::process::ExitCode {
    peer_harness::main::<TowerLlm>()
}
