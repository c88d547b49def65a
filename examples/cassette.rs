//! A test for your own agent, replayed from a cassette: the agent runs as in production, its
//! model's HTTP traffic comes from `examples/cassettes/friday.jsonl` (recorded once from a real
//! server), and its reply and stored conversation are the same on every run, with no network.
//!
//! ```sh
//! cargo run --example cassette --features cassette,openai      # replays, offline
//! # records it again from any OpenAI-compatible server (here scripts/llm-server.sh's):
//! TOWERSCOPE_CASSETTE=record OPENAI_BASE_URL=http://127.0.0.1:18080/v1 OPENAI_API_KEY=sk-unused \
//!     cargo run --example cassette --features cassette,openai
//! ```
//!
//! In a test, the same ten lines end with a snapshot (`insta::assert_json_snapshot!(reply)`)
//! instead of `println!`.

use towerscope::models::cassette::Cassette;
use towerscope::prelude::*;

/// Your agent, built as in production from whatever model it is given.
fn friday(model: impl ChatModel) -> Result<Agent, AgentError> {
    Agent::builder("Friday")
        .system_prompt("You are Friday, a concise travel guide.")
        .model(model)
        .build()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), AgentError> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/cassettes/friday.jsonl");
    let base_url = std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| "http://127.0.0.1:18080/v1".into());

    // The ten lines of a test:
    let cassette = Cassette::open(path)?; // TOWERSCOPE_CASSETTE: replay (default), record, record-missing
    let model = OpenAiChatModel::builder("smollm2-135m-instruct")
        .base_url(base_url)
        .api_key(cassette.api_key("OPENAI_API_KEY")?) // a placeholder in replay; never written
        .max_tokens(24)
        .http_service(cassette.http_service()?)
        .build()?;
    let (reply, stored) = cassette // ids from 1, a clock that stands still: the same on every run
        .scope(async {
            let agent = friday(model)?;
            let reply = agent
                .reply(Msg::user("user", "Describe Paris in one sentence."))
                .await?;
            Ok::<_, AgentError>((reply, agent.state().context))
        })
        .await?;

    println!("mode: {}", cassette.mode());
    println!("reply {}: {}", reply.id, reply.text_content().unwrap_or_default());
    println!("stored messages: {}", stored.len());
    println!("unplayed interactions: {:?}", cassette.unplayed());
    Ok(())
}
