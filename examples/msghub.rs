//! Three agents discuss through a hub, on scripted models: no network, no setup.
//!
//! ```sh
//! cargo run --example msghub
//! ```
//!
//! Each agent is built with a `Broadcaster` (first in its middleware), so inside the hub every
//! finished reply is heard by the two others, thinking stripped. The opening round is a fan-out:
//! the three answer at once, and the console renders the merged stream, each line under its
//! speaker; an agent still answering hears the others as soon as its own answer is done. The
//! second round is a sequence of turns. At the end, what Carol heard.

use std::time::Duration;

use towerscope::console::Console;
use towerscope::hub::{Broadcaster, MsgHub};
use towerscope::pipeline::FanoutPipeline;
use towerscope::prelude::*;

fn panelist(name: &str, opening: ScriptedResponse, reply: &str) -> Result<Agent, AgentError> {
    let model = ScriptedModel::new(
        "scripted",
        [
            opening,
            ScriptedResponse::text(reply).chunk_delay(Duration::from_millis(15)),
        ],
    );
    Agent::builder(name)
        .system_prompt(format!("You are {name}, on a panel about programming languages."))
        .model(model)
        .middleware(Broadcaster::new())
        .build()
}

#[tokio::main]
async fn main() -> Result<(), AgentError> {
    let slowly = |text: &str, ms: u64| ScriptedResponse::text(text).chunk_delay(Duration::from_millis(ms));
    let alice = panelist(
        "alice",
        ScriptedResponse::thinking("Keep it short; they will argue anyway.")
            .and_text("Rust: the compiler is a colleague who never sleeps.")
            .chunk_delay(Duration::from_millis(20)),
        "Bob, speed without safety is a loan you pay back at 3 a.m.",
    )?;
    let bob = panelist(
        "bob",
        slowly("C: nothing between me and the machine.", 25),
        "Carol has a point about reading code.",
    )?;
    let carol = panelist(
        "carol",
        slowly("Python: the fastest language is the one you finish in.", 30),
        "Then we agree: choose for the people who will read it.",
    )?;

    let mut console = Console::stdout();
    let hub = MsgHub::builder()
        .participants([alice.clone(), bob.clone(), carol.clone()])
        .announcement(Msg::user(
            "host",
            "Which language would you pick for a new project, and why?",
        ))
        .enter()?;

    console.note("— Opening statements, all at once (a fan-out) —");
    let panel = FanoutPipeline::new([alice.clone(), bob.clone(), carol.clone()]);
    console.show_merged(panel.stream(Vec::<Msg>::new().into())).await;

    console.note("— Replies, one after the other —");
    for speaker in [&alice, &bob, &carol] {
        console.show(Box::pin(speaker.reply_stream(Vec::<Msg>::new()))).await?;
    }
    hub.close();

    console.note("— What Carol heard —");
    for msg in carol.state().context.iter() {
        console.note(&format!("  {}: {}", msg.name, msg.text_content().unwrap_or_default()));
    }
    Ok(())
}
