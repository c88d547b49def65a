//! A durable agent on Restate: kill its process in the middle of a reply, start it again, and
//! the reply finishes without charging the card twice.
//!
//! ```sh
//! eval "$(scripts/restate-server.sh start)"            # Restate on 127.0.0.1 (ingress :28080)
//! cargo run --example durable --features restate &      # this endpoint on 127.0.0.1:9080
//! scripts/restate-server.sh register http://127.0.0.1:9080
//! curl -X POST $TOWERSCOPE_RESTATE_INGRESS/Agent/alice/reply \
//!      -H 'content-type: application/json' -d '{"text": "buy the blue mug"}'
//! # after "charging" is printed: kill -9 the pid the example printed (not cargo's), start it
//! # again; the curl call completes
//! ```
//!
//! The model is a stand-in that takes 3 s per call (so there is time to kill the process), asks
//! for `charge`, then `ship`, then answers. Each tool prints when it runs: after a restart,
//! `charge` does not run again, and the model calls already answered are read from Restate's
//! journal. Each event prints as it happens, numbered: the restarted process prints the first
//! attempt's events again, with the same numbers and ids.
//!
//! Settings: `DURABLE_PORT` (default 9080).

use std::time::Duration;

use towerscope::prelude::*;
use towerscope::restate::DurableAgent;
use towerscope::{ModelFuture, TextBlock};

/// Charge the customer's card.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Charge {
    /// The amount in cents.
    cents: u32,
}

/// Ship the order.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Ship {
    /// Where to.
    address: String,
}

/// A stand-in model: answers by how many tool results the conversation holds, after 3 s.
#[derive(Debug)]
struct SlowShopModel;

impl ChatModel for SlowShopModel {
    fn model_name(&self) -> &str {
        "slow-shop"
    }

    fn call(&self, request: ModelCallRequest) -> ModelFuture {
        let results = request
            .messages
            .iter()
            .flat_map(|m| m.content.iter())
            .filter(|b| matches!(b, ContentBlock::ToolResult(_)))
            .count();
        println!("model: call {} (thinking for 3 s)", results + 1);
        Box::pin(async move {
            tokio::time::sleep(Duration::from_secs(3)).await;
            let block: ContentBlock = match results {
                0 => ToolCallBlock::new("call_charge", "charge", r#"{"cents": 1200}"#).into(),
                1 => ToolCallBlock::new("call_ship", "ship", r#"{"address": "1 Main St"}"#).into(),
                _ => TextBlock::new("Charged 12.00 and shipped your mug.").into(),
            };
            Ok(ModelOutput::Complete(ChatResponse::new(vec![block])))
        })
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::var("DURABLE_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(9080);
    let durable = DurableAgent::new(|ctx| {
        ctx.agent_builder("shop")
            .system_prompt("You sell mugs.")
            .model(SlowShopModel)
            .tool(FunctionTool::new("charge", |c: Charge| async move {
                println!("tool: charging {} cents (a side effect)", c.cents);
                "charged"
            }))
            .tool(FunctionTool::new("ship", |s: Ship| async move {
                println!("tool: shipping to {}", s.address);
                "shipped"
            }))
            .build()
    })
    .event_sink(|session: &str, _invocation: &str, seq: u64, event: &AgentEvent| {
        println!(
            "event {seq} of {session}: {} {}",
            event.event_type().as_str(),
            event.id()
        );
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!(
        "serving the durable agent on 127.0.0.1:{port} (pid {})",
        std::process::id()
    );
    durable.serve(listener).await;
    Ok(())
}
