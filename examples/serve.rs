//! The quickstart's weather assistant behind HTTP: AG-UI at `POST /agui`, the chat page at `/`,
//! the A2A card at `/.well-known/agent-card.json`.
//!
//! ```sh
//! cargo run --example serve --features serve          # then open http://127.0.0.1:3000
//! TOWERSCOPE_ADDR=127.0.0.1:8080 cargo run --example serve --features serve
//! # a real model, chosen by environment as in `real_model`:
//! OPENAI_BASE_URL=... OPENAI_MODEL=... cargo run --example serve --features serve,openai,anthropic
//! ```
//!
//! On the scripted model (the default) the assistant looks the weather up for "weather in
//! <city>", asks for confirmation before "email the forecast", and says what it can do
//! otherwise. Sessions are kept in files under `$TOWERSCOPE_SESSIONS` (default: a folder in the
//! temporary directory), so a conversation survives a restart, or (feature `redis`) in the Redis
//! at `$TOWERSCOPE_REDIS_URL`, so several server processes share them; `TOWERSCOPE_TOKEN`
//! requires that bearer token.

use std::env;
use std::sync::Arc;
use std::time::Duration;

use towerscope::agent::session::{JsonFileStore, SessionStore};
use towerscope::prelude::*;
use towerscope::serve::{AgentInfo, RouterBuilder, agui::frontend_tools};
use towerscope::{ContentBlock, Id, Role};

#[path = "weather/mod.rs"]
#[allow(dead_code)] // the console renderer is the quickstart's
mod weather;

/// Email the forecast to someone (asks for confirmation first).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct EmailForecast {
    /// Who gets it.
    to: String,
}

/// The scripted weather model, answering from the conversation instead of a fixed script, so
/// that every session gets the same behaviour.
fn scripted_model() -> ScriptedModel {
    ScriptedModel::cycle("scripted-weather", [ScriptedResponse::text("…")]).respond_with(move |req| {
        let last = req.messages.last()?;
        if let Some(ContentBlock::ToolResult(result)) = last.content.last() {
            let text = result.output.text_content().unwrap_or_default();
            let answer = match result.name.as_str() {
                "get_weather" => format!("Here is what I found: {text}. Anything else?"),
                _ => format!("Done ({}): {text}", result.name),
            };
            return Some(ScriptedResponse::text(answer).chunk_delay(Duration::from_millis(15)));
        }
        let question = req
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .and_then(|m| m.text_content())
            .unwrap_or_default()
            .to_lowercase();
        let id = Id::new();
        if question.contains("email") {
            return Some(ScriptedResponse::tool_call(
                id,
                "email_forecast",
                r#"{"to": "me@example.com"}"#,
            ));
        }
        if question.contains("weather") {
            let city = question
                .split(" in ")
                .nth(1)
                .map(|c| c.trim_matches(|ch: char| !ch.is_alphanumeric()).to_owned())
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| "paris".to_owned());
            return Some(
                ScriptedResponse::thinking(format!("The user wants the weather in {city}; I should look it up."))
                    .and_tool_call(id, "get_weather", serde_json::json!({ "city": city }).to_string()),
            );
        }
        Some(
            ScriptedResponse::text(
                "I am Friday. Ask me \"what's the weather in Paris?\" or to \"email the forecast\".",
            )
            .chunk_delay(Duration::from_millis(15)),
        )
    })
}

#[cfg(all(feature = "openai", feature = "anthropic"))]
fn model() -> ModelRef {
    use towerscope::models::anthropic::AnthropicChatModel;
    use towerscope::models::openai::OpenAiChatModel;
    let set = |name: &str| env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let built: Option<Result<ModelRef, AgentError>> = if set("ANTHROPIC_API_KEY") || set("ANTHROPIC_BASE_URL") {
        let name = env::var("ANTHROPIC_MODEL").unwrap_or_else(|_| "claude-sonnet-4-5".into());
        Some(
            AnthropicChatModel::builder(name)
                .max_tokens(1024)
                .build()
                .map(|m| Arc::new(m) as ModelRef),
        )
    } else if set("OPENAI_API_KEY") || set("OPENAI_BASE_URL") {
        let name = env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into());
        Some(OpenAiChatModel::builder(name).build().map(|m| Arc::new(m) as ModelRef))
    } else {
        None
    };
    match built {
        Some(Ok(model)) => model,
        Some(Err(e)) => {
            eprintln!("the model from the environment could not be built ({e}); using the scripted one");
            Arc::new(scripted_model())
        }
        None => Arc::new(scripted_model()),
    }
}

#[cfg(not(all(feature = "openai", feature = "anthropic")))]
fn model() -> ModelRef {
    Arc::new(scripted_model())
}

/// The router: the weather agent of each session, its state in `store`.
fn router(store: impl SessionStore + Clone, model: ModelRef, token: Option<String>) -> towerscope::serve::axum::Router {
    let factory = move |session: &str| {
        let mut builder = Agent::builder("Friday")
            .system_prompt("You are Friday, a concise weather assistant. Use the get_weather tool.")
            .model_ref(Arc::clone(&model))
            .tool(FunctionTool::new("get_weather", weather::get_weather).read_only(true))
            .tool(
                FunctionTool::new("email_forecast", |args: EmailForecast| async move {
                    format!("forecast emailed to {}", args.to)
                })
                .requires_confirmation(|_| true),
            )
            .session(store.clone(), "web", session);
        for tool in frontend_tools() {
            builder = builder.tool(tool);
        }
        builder.build()
    };
    let mut router =
        RouterBuilder::new(factory).agent_info(AgentInfo::new("Friday").description("A concise weather assistant"));
    if let Some(token) = token {
        router = router.bearer_token(token);
    }
    router.build()
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = env::var("TOWERSCOPE_ADDR").unwrap_or_else(|_| "127.0.0.1:3000".to_owned());
    let model = model();
    let token = env::var("TOWERSCOPE_TOKEN").ok();
    #[cfg(feature = "redis")]
    if let Ok(url) = env::var("TOWERSCOPE_REDIS_URL") {
        let store = towerscope::agent::session::RedisStore::open(&url).map_err(std::io::Error::other)?;
        eprintln!("model: {}; sessions in Redis", model.model_name());
        eprintln!("serving on http://{addr}  (AG-UI: POST /agui, chat page: /)");
        return towerscope::serve::run(addr, router(store, model, token)).await;
    }
    let sessions = env::var("TOWERSCOPE_SESSIONS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| env::temp_dir().join("towerscope-serve-sessions"));
    eprintln!("model: {}; sessions in {}", model.model_name(), sessions.display());
    eprintln!("serving on http://{addr}  (AG-UI: POST /agui, chat page: /)");
    towerscope::serve::run(addr, router(JsonFileStore::new(&sessions), model, token)).await
}
