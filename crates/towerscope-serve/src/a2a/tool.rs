//! [`RemoteAgentTool`]: a remote A2A agent as a tool of our agent.

use std::sync::Arc;

use futures_util::stream;
use serde_json::{Value, json};
use towerscope_agent::toolkit::{Tool, ToolChunkStream, ToolError};
use towerscope_core::{ContentBlock, MediaBlock, ToolChunk, ToolResultState};

use super::client::{A2aClient, ClientError};
use super::wire::{Part, SendMessageResponse};

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
        let description = format!(
            "Ask the agent `{}` and get its answer. {}",
            cut(&card.name, MAX_NAME_CHARS),
            cut(&card.description, MAX_DESCRIPTION_CHARS)
        );
        Self {
            name: tool_name(&card.name),
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
            // The answer's text, then its files (an image the remote agent made) as the blocks
            // the model reads.
            let parts: Vec<&Part> = match &answer {
                SendMessageResponse::Task(task) => task.file_parts(),
                SendMessageResponse::Message(m) => m.parts.iter().collect(),
            };
            let sender = &client.card().name;
            let mut content = vec![MediaBlock::text(answer.answer_text())];
            content.extend(parts.into_iter().filter_map(|p| match p.answer_block(sender)? {
                ContentBlock::Data(d) => Some(MediaBlock::Data(d)),
                ContentBlock::Text(t) => Some(MediaBlock::Text(t)),
                _ => None,
            }));
            Ok(ToolChunk::new(content).with_state(ToolResultState::Success))
        }))
    }
}

/// The most characters of a remote card's description that go into the tool's description
/// (sent with every model call).
const MAX_DESCRIPTION_CHARS: usize = 2_000;

/// The most characters of a remote card's name quoted in the tool's description.
const MAX_NAME_CHARS: usize = 200;

/// `ask_` and the card's name in letters, digits, `-` and `_`, at most 64 characters (the
/// providers' limit on a tool's name).
fn tool_name(card_name: &str) -> String {
    let slug = card_name.chars().take(60).map(|c| {
        if c.is_ascii_alphanumeric() || c == '-' {
            c.to_ascii_lowercase()
        } else {
            '_'
        }
    });
    std::iter::once("ask_").flat_map(str::chars).chain(slug).collect()
}

/// `text`'s first `max` characters.
fn cut(text: &str, max: usize) -> &str {
    text.char_indices().nth(max).map_or(text, |(at, _)| &text[..at])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A remote card's name makes a tool name providers take (at most 64 characters), and a long
    /// description is cut (it goes with every model call).
    #[test]
    fn a_long_card_name_makes_a_short_tool_name() {
        assert_eq!(tool_name("Travel Agent v2"), "ask_travel_agent_v2");
        let long = tool_name(&"é".repeat(200));
        assert_eq!(long.chars().count(), 64);
        assert!(long.starts_with("ask____"));
        assert_eq!(cut(&"x".repeat(3_000), MAX_DESCRIPTION_CHARS).len(), 2_000);
        assert_eq!(cut("short", 10), "short");
    }
}
