//! Shared helpers of the end-to-end tests.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use futures_util::StreamExt;
use towerscope_agent::{Agent, ReplyStream};
use towerscope_core::{AgentError, AgentEvent, ContentBlock, CustomEvent, Msg, ReplyItem, Role, ToolResultBlock};

/// Everything a reply produced.
#[derive(Debug)]
pub struct Collected {
    pub events: Vec<AgentEvent>,
    pub final_msg: Option<Msg>,
    pub error: Option<AgentError>,
}

impl Collected {
    pub fn kinds(&self) -> Vec<&'static str> {
        self.events.iter().map(|e| e.event_type().as_str()).collect()
    }

    pub fn count(&self, kind: &str) -> usize {
        self.kinds().iter().filter(|k| **k == kind).count()
    }

    pub fn final_text(&self) -> Option<String> {
        self.final_msg.as_ref().and_then(Msg::text_content)
    }

    pub fn custom(&self, name: &str) -> Vec<&CustomEvent> {
        self.events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Custom(c) if c.name == name => Some(c),
                _ => None,
            })
            .collect()
    }

    /// The reply's message rebuilt from its events, as a consumer of the stream would.
    pub fn rebuilt(&self, agent_name: &str) -> Msg {
        let reply_id = self.final_msg.as_ref().map(|m| m.id.clone()).unwrap_or_default();
        let mut msg = Msg::new(agent_name, Role::Assistant, vec![]).unwrap().with_id(reply_id);
        for e in &self.events {
            msg.append_event(e);
        }
        msg
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
            Ok(ReplyItem::Event(e)) => out.events.push(e),
            Ok(ReplyItem::Final(m)) => out.final_msg = Some(m),
            Err(e) => {
                out.error = Some(e);
                break;
            }
        }
    }
    out
}

/// The tool results stored in the agent's context, in order.
pub fn results(agent: &Agent) -> Vec<ToolResultBlock> {
    agent
        .state()
        .context
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

/// The test Redis (`TOWERSCOPE_REDIS_URL`, exported by `scripts/redis-server.sh start`).
/// Without it the calling test is skipped (`None`), unless `TOWERSCOPE_REQUIRE_REDIS=1`, where it
/// fails: `scripts/test.sh` sets both, so a missing server can never pass silently there.
pub fn redis_url(test: &str) -> Option<String> {
    match std::env::var("TOWERSCOPE_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("TOWERSCOPE_REQUIRE_REDIS").as_deref() == Ok("1") => panic!(
            "{test} needs Redis: TOWERSCOPE_REQUIRE_REDIS=1 but TOWERSCOPE_REDIS_URL is not set; run `eval \"$(scripts/redis-server.sh start)\"`"
        ),
        _ => {
            eprintln!(
                "skipping {test}: TOWERSCOPE_REDIS_URL is not set (run `eval \"$(scripts/redis-server.sh start)\"`)"
            );
            None
        }
    }
}
