//! The peer-benchmark scenario on rig 0.44 (`rig-core` + its agent runtime `rig-agent`): an
//! `Agent` whose model is a scripted transport, prompted with a multi-turn budget
//! (`agent.prompt(q).max_turns(5)`), and an `add` tool.
//!
//! ```sh
//! cargo run --release -- single --replies 2000
//! cargo run --release -- many --n 10000
//! ```
//!
//! In rig 0.44 a model is a wire (how requests are encoded and replies decoded) bound to a
//! transport (how they travel). The scripted model reuses rig's own scripted completion wire
//! (`MockScript`, feature `test-utils`) and brings its own transport, [`ScriptedTransport`],
//! which counts the calls, sleeps when asked to, and answers each call with one whole
//! `CompletionResponse`. rig has no middleware stack (its hooks are callbacks), so
//! `--middlewares M > 0` is reported as skipped. The agent has no memory: every prompt starts a
//! fresh conversation.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use peer_harness::{BoxError, Calls, FINAL_TEXT, Peer, QUESTION, SYSTEM_PROMPT, Setup, TOOL_ARGS};
use rig_agent::Agent;
use rig_core::completion::{AssistantContent, CompletionRequest, CompletionResponse, Usage};
use rig_core::driver::{Exchange, Model, Opened, Opening, Transport};
use rig_core::error::ProviderError;
use rig_core::message::{Api, Origin, ToolCall, ToolFunction, ToolName};
use rig_core::test_utils::{MockFrame, MockScript};
use rig_core::tool::PortableTool;
use rig_core::wire::Mode;

/// The transport behind the scripted wire: answer number `i % 4` of the scenario, whole.
#[derive(Clone)]
struct ScriptedTransport {
    calls: Arc<Calls>,
    delay: Option<Duration>,
}

fn answer(step: usize) -> Result<CompletionResponse, ProviderError> {
    let content = match TOOL_ARGS.get(step % 4) {
        Some((a, b)) => AssistantContent::ToolCall(ToolCall::from_wire(
            format!("call_{step}"),
            ToolFunction::new(
                ToolName::new("add").map_err(|e| ProviderError::Provider(e.to_string()))?,
                serde_json::json!({ "a": a, "b": b }),
            ),
        )),
        None => AssistantContent::text(FINAL_TEXT),
    };
    let origin = Origin::new(Api::from_static("scripted"), "scripted", "scripted");
    Ok(CompletionResponse::new(
        vec![content],
        Usage::default(),
        origin,
        serde_json::Value::Null,
    ))
}

impl Transport<MockScript> for ScriptedTransport {
    fn send(&self, _request: CompletionRequest, exchange: Exchange) -> Opening<MockFrame> {
        if !matches!(exchange.mode, Mode::Unary) {
            return Opening::failed(ProviderError::Provider(
                "the scripted transport answers whole (unary) calls only".to_owned(),
            ));
        }
        let step = self.calls.model_called();
        let delay = self.delay;
        Opening::new(async move {
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            let response = answer(step)?;
            let frames = futures::stream::iter([Ok(MockFrame::Response(Box::new(response)))]);
            Ok(Opened::new(frames).with_document(serde_json::Value::Null))
        })
    }
}

/// `add(a, b)`.
struct Add {
    calls: Arc<Calls>,
}

#[derive(serde::Deserialize)]
struct AddArgs {
    a: i64,
    b: i64,
}

impl PortableTool for Add {
    const NAME: &'static str = "add";
    type Args = AddArgs;
    type Output = i64;
    type Error = Infallible;

    fn description(&self) -> String {
        "Add two integers.".to_owned()
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": { "a": { "type": "integer" }, "b": { "type": "integer" } },
            "required": ["a", "b"]
        })
    }

    async fn call(&self, args: AddArgs) -> Result<i64, Infallible> {
        self.calls.tool_called();
        Ok(args.a + args.b)
    }
}

struct Rig {
    agent: Agent,
    calls: Arc<Calls>,
}

impl Peer for Rig {
    const NAME: &'static str = "rig";
    const VERSION: &'static str = "0.44.0";
    const MIDDLEWARE: bool = false;

    fn build(setup: &Setup) -> Result<Self, BoxError> {
        let calls = Arc::new(Calls::new());
        let transport = ScriptedTransport {
            calls: Arc::clone(&calls),
            delay: setup.model_delay,
        };
        let model = Model::new(MockScript::new("scripted"), transport);
        let agent = rig_agent::AgentBuilder::new(model)
            .preamble(SYSTEM_PROMPT)
            .tool(Add {
                calls: Arc::clone(&calls),
            })
            .build();
        Ok(Self { agent, calls })
    }

    fn calls(&self) -> &Calls {
        &self.calls
    }

    async fn reply(&mut self) -> Result<String, BoxError> {
        let response = self.agent.prompt(QUESTION).max_turns(5).await?;
        Ok(response.output().to_string())
    }
}

fn main() -> std::process::ExitCode {
    peer_harness::main::<Rig>()
}
