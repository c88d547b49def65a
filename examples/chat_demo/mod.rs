//! The chat example's scripted assistant: a model that answers from what it is asked, so the
//! demo needs no network and behaves the same every time.
//!
//! - a question naming a city asks for `get_weather` (the chat asks you to allow it);
//! - after the tool's result, a sentence about it (or about being denied);
//! - a question with "story" in it gets a long story streamed slowly: press Ctrl-C in the
//!   middle to interrupt it;
//! - anything else gets a hint of what to ask.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use towerscope::prelude::*;
use towerscope::{GenerationParams, Messages, ModelFuture, Role, ToolResultState};

/// Get the current weather of a city.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct GetWeather {
    /// The city, e.g. "Paris".
    city: String,
}

/// The tool. A real one would call a weather service.
pub(crate) async fn get_weather(args: GetWeather) -> String {
    let (sky, celsius) = match args.city.to_lowercase().as_str() {
        "paris" => ("sunny", 21),
        "london" => ("drizzly", 14),
        "rome" => ("clear", 25),
        _ => ("cloudy", 17),
    };
    format!("{sky}, {celsius} °C in {}", args.city)
}

const CITIES: [&str; 6] = ["Paris", "London", "Rome", "Tokyo", "Oslo", "Lima"];

const STORY: &str = "Once upon a time, in a town where it always rained on Tuesdays, a \
    weather station fell in love with a lighthouse. Every evening the station sent it the \
    forecast, and every night the lighthouse answered with three long flashes. The townsfolk \
    never understood why the fog lifted whenever the two of them talked, but the fishermen \
    knew, and they told the story to their children, who told it to theirs, until one day a \
    storm came that neither of them had predicted, and the whole town climbed the hill to watch.";

/// The demo model: a scripted model fed one response per call, chosen from the request.
#[derive(Debug, Clone)]
pub(crate) struct DemoModel {
    script: ScriptedModel,
    calls: Arc<AtomicUsize>,
}

impl DemoModel {
    pub(crate) fn new() -> Self {
        Self {
            script: ScriptedModel::new("demo", []).record(false),
            calls: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Answers the newest tool result of the conversation's last message, if it has one (the
    /// agent's reply message, which also holds the runtime-state hint), else the newest user
    /// message.
    fn respond(&self, messages: &Messages) -> ScriptedResponse {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        if let Some(result) = messages.last().and_then(|m| m.tool_results().last()) {
            let output = result.output.text_content().unwrap_or_default();
            let text = match result.state {
                ToolResultState::Success => format!("It is {output} right now."),
                ToolResultState::Denied => "All right, I won't look it up.".to_owned(),
                _ => "The lookup did not work, sorry.".to_owned(),
            };
            return ScriptedResponse::text(text).chunk_delay(Duration::from_millis(20));
        }
        let asked = messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .and_then(Msg::text_content)
            .unwrap_or_default();
        if asked.to_lowercase().contains("story") {
            return ScriptedResponse::text(STORY).chunk_delay(Duration::from_millis(150));
        }
        match CITIES.iter().find(|c| asked.to_lowercase().contains(&c.to_lowercase())) {
            Some(city) => ScriptedResponse::thinking(format!("The user asks about {city}; I will look it up."))
                .and_tool_call(format!("call-{n}"), "get_weather", format!(r#"{{"city": "{city}"}}"#)),
            None => {
                ScriptedResponse::text("Ask me about the weather in a city (Paris, London, Rome...), or for a story.")
            }
        }
    }
}

impl ChatModel for DemoModel {
    fn model_name(&self) -> &str {
        "demo"
    }

    fn provider(&self) -> &str {
        "scripted"
    }

    fn parameters(&self) -> &GenerationParams {
        ChatModel::parameters(&self.script)
    }

    fn call(&self, request: ModelCallRequest) -> ModelFuture {
        self.script.push(self.respond(&request.messages));
        self.script.call(request)
    }
}
