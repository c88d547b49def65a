//! Shared helpers of the provider tests: a scripted loopback HTTP server, and collecting what
//! an agent's reply emitted.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

mod server;

#[allow(unused_imports)]
pub use server::{MockServer, Recorded, Reply, cut_at, pieces};

use futures_util::StreamExt;
use towerscope_agent::ReplyStream;
use towerscope_core::{AgentError, AgentEvent, Msg, ReplyItem};

/// Everything a reply produced.
pub struct Collected {
    pub events: Vec<AgentEvent>,
    pub final_msg: Option<Msg>,
    pub error: Option<AgentError>,
}

impl Collected {
    /// Each event as a line: its type, and its delta or name where it has one. The agent's
    /// runtime-state hint (`HINT_BLOCK`, on by default) is left out: it is the agent's, not the
    /// provider's, and how it goes onto the wire is tested with the request bodies.
    pub fn lines(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|event| !matches!(event, AgentEvent::HintBlock(_)))
            .map(line)
            .collect()
    }

    pub fn final_text(&self) -> Option<String> {
        self.final_msg.as_ref().and_then(Msg::text_content)
    }

    /// The whole reply as one text to compare between runs: each event as JSON, the final
    /// message, the error, and the conversation the agent kept (`context`).
    pub fn transcript(&self, context: &towerscope_core::Messages) -> String {
        let mut out = String::new();
        for event in &self.events {
            out.push_str(&serde_json::to_string(event).unwrap());
            out.push('\n');
        }
        out.push_str(&format!("final: {}\n", serde_json::to_string(&self.final_msg).unwrap()));
        out.push_str(&format!("error: {:?}\n", self.error.as_ref().map(ToString::to_string)));
        out.push_str(&serde_json::to_string_pretty(context).unwrap());
        out
    }
}

pub fn line(event: &AgentEvent) -> String {
    let kind = event.event_type().as_str();
    match event {
        AgentEvent::ThinkingBlockDelta(e) => format!("{kind} {}", e.delta),
        AgentEvent::TextBlockDelta(e) => format!("{kind} {}", e.delta),
        AgentEvent::ToolCallStart(e) => format!("{kind} {} {}", e.tool_call_id, e.tool_call_name),
        AgentEvent::ToolCallDelta(e) => format!("{kind} {}", e.delta),
        AgentEvent::ToolCallEnd(e) => format!("{kind} {}", e.tool_call_id),
        AgentEvent::ToolResultStart(e) => format!("{kind} {}", e.tool_call_id),
        AgentEvent::ToolResultTextDelta(e) => format!("{kind} {}", e.delta),
        AgentEvent::ToolResultEnd(e) => format!("{kind} {}", e.state.as_str()),
        AgentEvent::ModelCallEnd(e) => format!(
            "{kind} in={} out={} cached={} written={}",
            e.input_tokens, e.output_tokens, e.cache_input_tokens, e.cache_creation_input_tokens
        ),
        AgentEvent::Custom(e) => format!("{kind} {}", e.name),
        _ => kind.to_owned(),
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

/// Consecutive text (or thinking) deltas joined, so a test does not depend on how the server's
/// pieces fell: `TEXT_BLOCK_DELTA Hel` + `TEXT_BLOCK_DELTA lo` = `TEXT_BLOCK_DELTA Hello`.
pub fn joined(lines: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in lines {
        let mergeable = ["TEXT_BLOCK_DELTA ", "THINKING_BLOCK_DELTA ", "TOOL_CALL_DELTA "]
            .into_iter()
            .find(|prefix| line.starts_with(prefix));
        match (mergeable, out.last_mut()) {
            (Some(prefix), Some(last)) if last.starts_with(prefix) => last.push_str(&line[prefix.len()..]),
            _ => out.push(line.clone()),
        }
    }
    out
}

/// The wire messages without the agent's runtime-state hints, and how many were taken out. A
/// hint goes out as user text starting `<system-reminder>`: a `user` message of its own for
/// OpenAI, a text part of a `user` turn for Anthropic (merged with the turn before it).
pub fn without_hints(messages: &serde_json::Value) -> (serde_json::Value, usize) {
    use serde_json::Value;
    let is_hint = |text: &Value| text.as_str().is_some_and(|t| t.starts_with("<system-reminder>"));
    let mut removed = 0;
    let mut out = Vec::new();
    for message in messages.as_array().into_iter().flatten() {
        if message["role"] != "user" {
            out.push(message.clone());
            continue;
        }
        match &message["content"] {
            Value::String(_) if is_hint(&message["content"]) => removed += 1,
            Value::Array(parts) => {
                let kept: Vec<Value> = parts
                    .iter()
                    .filter(|part| {
                        let hint = part["type"] == "text" && is_hint(&part["text"]);
                        removed += usize::from(hint);
                        !hint
                    })
                    .cloned()
                    .collect();
                if !kept.is_empty() {
                    let mut message = message.clone();
                    message["content"] = Value::Array(kept);
                    out.push(message);
                }
            }
            _ => out.push(message.clone()),
        }
    }
    (Value::Array(out), removed)
}
