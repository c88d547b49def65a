//! [`RemoteAgentTool`]: a remote A2A agent as a tool of our agent.

use std::sync::Arc;

use futures_util::stream;
use serde_json::{Value, json};
use towerscope_agent::toolkit::{Tool, ToolChunkStream, ToolError};
use towerscope_core::{ToolChunk, ToolResultState};

use super::client::{A2aClient, ClientError};
use super::wire::SendMessageResponse;

/// A remote A2A agent our agent can ask: the tool sends the model's `message` and returns the
/// remote agent's answer.
///
/// The tool is named `ask_<agent name>` (letters, digits, `_` and `-` only) and described by the
/// card's description; each call is a new remote conversation. A remote task that fails, is
/// canceled, or that the agent cannot reach, is an error result the model sees (without URLs);
/// a remote question (a task waiting for input) is returned as the answer.
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use towerscope_agent::Agent;
/// use towerscope_core::Msg;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
/// use towerscope_serve::a2a::{A2aConfig, RemoteAgentTool};
///
/// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let factory = |_: &str| Agent::builder("weather").model(ScriptedModel::new("m", [ScriptedResponse::text("Sunny, 21 °C.")])).build();
/// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// # let base = format!("http://{}", listener.local_addr()?);
/// # tokio::spawn(async move { axum::serve(listener, A2aConfig::new("weather").routes(Arc::new(factory))).await });
/// let weather = RemoteAgentTool::connect(&base).await?;
/// let model = ScriptedModel::new("m", [
///     ScriptedResponse::tool_call("c1", "ask_weather", r#"{"message": "Weather in Paris?"}"#),
///     ScriptedResponse::text("It is sunny in Paris."),
/// ]);
/// let agent = Agent::builder("assistant").model(model.clone()).tool(weather).build()?;
/// agent.reply(Msg::user("user", "How is Paris today?")).await?;
/// let asked = model.requests().last().map(|r| format!("{:?}", r.messages)).unwrap_or_default();
/// assert!(asked.contains("Sunny, 21 °C."), "the model saw the remote answer");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RemoteAgentTool {
    client: A2aClient,
    name: String,
    description: String,
    schema: Arc<Value>,
}

impl RemoteAgentTool {
    /// Connects to the agent at `base_url` (its card is fetched).
    pub async fn connect(base_url: &str) -> Result<Self, ClientError> {
        Ok(Self::new(A2aClient::connect(base_url).await?))
    }

    /// The agent `client` talks to, as a tool.
    pub fn new(client: A2aClient) -> Self {
        let card = client.card();
        let slug: String = card
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        let description = format!("Ask the agent `{}` and get its answer. {}", card.name, card.description);
        Self {
            name: format!("ask_{slug}"),
            description,
            schema: Arc::new(json!({
                "type": "object",
                "properties": {"message": {"type": "string", "description": "What to ask the agent."}},
                "required": ["message"],
            })),
            client,
        }
    }

    /// Renames the tool.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

impl Tool for RemoteAgentTool {
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

    fn call(&self, input: Value) -> ToolChunkStream {
        let client = self.client.clone();
        Box::pin(stream::once(async move {
            let message = input
                .get("message")
                .and_then(Value::as_str)
                .ok_or_else(|| ToolError::new("`message` must be a string"))?;
            let answer = client
                .send_text(message, None, None)
                .await
                .map_err(|e| ToolError::new(e.to_string()))?;
            if let SendMessageResponse::Task(task) = &answer
                && matches!(
                    task.status.state,
                    super::wire::TaskState::Failed
                        | super::wire::TaskState::Canceled
                        | super::wire::TaskState::Rejected
                )
            {
                return Err(ToolError::new(format!(
                    "the remote agent's task ended as {:?}: {}",
                    task.status.state,
                    task.answer_text()
                )));
            }
            Ok(ToolChunk::text(answer.answer_text()).with_state(ToolResultState::Success))
        }))
    }
}
