//! Shared helpers of the agent's integration tests.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use futures_util::StreamExt;
use towerscope_agent::ReplyStream;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{AgentError, AgentEvent, ContentBlock, Msg, ReplyItem, ToolResultBlock};

/// Everything a reply produced.
pub struct Collected {
    pub events: Vec<AgentEvent>,
    pub final_msg: Option<Msg>,
    pub error: Option<AgentError>,
}

impl Collected {
    pub fn kinds(&self) -> Vec<&'static str> {
        self.events.iter().map(|e| e.event_type().as_str()).collect()
    }

    pub fn final_text(&self) -> Option<String> {
        self.final_msg.as_ref().and_then(Msg::text_content)
    }
}

pub async fn collect(mut stream: ReplyStream) -> Collected {
    let mut out = Collected {
        events: Vec::new(),
        final_msg: None,
        error: None,
    };
    while let Some(item) = stream.next().await {
        match item {
            Ok(ReplyItem::Event(e)) => {
                assert!(out.final_msg.is_none(), "an event came after the final message");
                out.events.push(e)
            }
            Ok(ReplyItem::Final(m)) => out.final_msg = Some(m),
            Err(e) => {
                out.error = Some(e);
                break;
            }
        }
    }
    out
}

/// The tool results stored in a message.
pub fn results(msg: &Msg) -> Vec<&ToolResultBlock> {
    msg.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// Asserts every tool call in `context` has exactly one result.
pub fn assert_consistent(context: &towerscope_core::Messages) {
    for msg in context {
        for block in &msg.content {
            if let ContentBlock::ToolCall(call) = block {
                let n = context
                    .iter()
                    .flat_map(|m| m.content.iter())
                    .filter(|b| matches!(b, ContentBlock::ToolResult(r) if r.id == call.id))
                    .count();
                assert_eq!(n, 1, "tool call {} has {n} results", call.id);
            }
        }
    }
}

/// The test Redis (`TOWERSCOPE_REDIS_URL`, exported by `scripts/redis-server.sh start`).
/// Without it the calling test is skipped (`None`), unless `TOWERSCOPE_REQUIRE_REDIS=1`, where it
/// fails: `scripts/test.sh` sets both, so a missing server can never pass silently there.
pub fn redis_url(test: &str) -> Option<String> {
    require_env("TOWERSCOPE_REDIS_URL", test)
}

/// The `redis-server` binary (`TOWERSCOPE_REDIS_SERVER`), for tests that start and stop a
/// server of their own; skipped or failing as [`redis_url`].
pub fn redis_server_binary(test: &str) -> Option<String> {
    require_env("TOWERSCOPE_REDIS_SERVER", test)
}

fn require_env(var: &str, test: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(value) if !value.is_empty() => Some(value),
        _ if std::env::var("TOWERSCOPE_REQUIRE_REDIS").as_deref() == Ok("1") => {
            panic!(
                "{test} needs Redis: TOWERSCOPE_REQUIRE_REDIS=1 but {var} is not set; run `eval \"$(scripts/redis-server.sh start)\"`"
            )
        }
        _ => {
            eprintln!("skipping {test}: {var} is not set (run `eval \"$(scripts/redis-server.sh start)\"`)");
            None
        }
    }
}

/// The arguments of [`add_tool`].
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Add {
    /// The first number.
    pub a: i64,
    /// The second number.
    pub b: i64,
}

/// The `add(a, b)` tool, answering the sum as text.
pub fn add_tool() -> FunctionTool {
    FunctionTool::new("add", |x: Add| async move { (x.a + x.b).to_string() })
}

/// A tool the caller runs (`search`): the agent parks and waits for its result.
pub struct RemoteSearch;

impl towerscope_agent::toolkit::Tool for RemoteSearch {
    fn name(&self) -> &str {
        "search"
    }
    fn description(&self) -> &str {
        "Search the user's intranet (runs on the user's side)."
    }
    fn input_schema(&self) -> &serde_json::Value {
        static SCHEMA: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
        SCHEMA.get_or_init(
            || serde_json::json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
        )
    }
    fn external(&self) -> bool {
        true
    }
    fn call(&self, _input: serde_json::Value) -> towerscope_agent::toolkit::ToolChunkStream {
        Box::pin(futures_util::stream::empty())
    }
}
