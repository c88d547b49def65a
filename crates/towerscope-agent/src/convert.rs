//! Converting model output to block events, exactly as the reference's
//! `_convert_chat_response_to_event` does (see the crate docs for the rules).

use towerscope_core::id::new_id;
use towerscope_core::{
    AgentEvent, ChatResponse, ContentBlock, DataBlockDeltaEvent, DataBlockEndEvent, DataBlockStartEvent, DataSource,
    TextBlockDeltaEvent, TextBlockEndEvent, TextBlockStartEvent, ThinkingBlockDeltaEvent, ThinkingBlockEndEvent,
    ThinkingBlockStartEvent, ToolCallDeltaEvent, ToolCallEndEvent, ToolCallStartEvent,
};

/// Which blocks are open while a model response streams.
#[derive(Debug, Default)]
pub(crate) struct ChunkConverter {
    reply_id: String,
    thinking: Option<String>,
    text: Option<String>,
    tools: Vec<String>,
    data: Vec<String>,
    /// Every block id opened during this model call (for a restart).
    opened: Vec<String>,
}

impl ChunkConverter {
    pub(crate) fn new(reply_id: &str) -> Self {
        Self {
            reply_id: reply_id.to_owned(),
            ..Self::default()
        }
    }

    /// Converts one non-last chunk (or a whole, non-streamed response) to events.
    pub(crate) fn convert(&mut self, chunk: &ChatResponse, out: &mut Vec<AgentEvent>) {
        let has_data = chunk.content.iter().any(|b| matches!(b, ContentBlock::Data(_)));

        // Thinking first, then text.
        let thinking: String = chunk
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Thinking(t) => Some(t.thinking.as_str()),
                _ => None,
            })
            .collect();
        let has_thinking = chunk.content.iter().any(|b| matches!(b, ContentBlock::Thinking(_)));
        if has_thinking {
            let id = self.thinking.get_or_insert_with(|| {
                let id = new_id();
                self.opened.push(id.clone());
                out.push(AgentEvent::ThinkingBlockStart(ThinkingBlockStartEvent::new(
                    &self.reply_id,
                    &id,
                )));
                id
            });
            out.push(AgentEvent::ThinkingBlockDelta(ThinkingBlockDeltaEvent::new(
                &self.reply_id,
                id.as_str(),
                thinking,
            )));
        } else if !has_data {
            if let Some(id) = self.thinking.take() {
                out.push(AgentEvent::ThinkingBlockEnd(ThinkingBlockEndEvent::new(
                    &self.reply_id,
                    id,
                )));
            }
        }

        let has_text = chunk.content.iter().any(|b| matches!(b, ContentBlock::Text(_)));
        if has_text {
            let text: String = chunk
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect();
            let id = self.text.get_or_insert_with(|| {
                let id = new_id();
                self.opened.push(id.clone());
                out.push(AgentEvent::TextBlockStart(TextBlockStartEvent::new(
                    &self.reply_id,
                    &id,
                )));
                id
            });
            out.push(AgentEvent::TextBlockDelta(TextBlockDeltaEvent::new(
                &self.reply_id,
                id.as_str(),
                text,
            )));
        } else if !has_data {
            if let Some(id) = self.text.take() {
                out.push(AgentEvent::TextBlockEnd(TextBlockEndEvent::new(&self.reply_id, id)));
            }
        }

        // Tool calls: start if new, then the delta; open calls missing from this chunk end now.
        let mut seen: Vec<&str> = Vec::new();
        for block in &chunk.content {
            if let ContentBlock::ToolCall(call) = block {
                if !self.tools.contains(&call.id) {
                    self.tools.push(call.id.clone());
                    self.opened.push(call.id.clone());
                    out.push(AgentEvent::ToolCallStart(ToolCallStartEvent::new(
                        &self.reply_id,
                        &call.id,
                        &call.name,
                    )));
                }
                out.push(AgentEvent::ToolCallDelta(ToolCallDeltaEvent::new(
                    &self.reply_id,
                    &call.id,
                    &call.input,
                )));
                seen.push(&call.id);
            }
        }
        let reply_id = &self.reply_id;
        self.tools.retain(|id| {
            let keep = seen.contains(&id.as_str());
            if !keep {
                out.push(AgentEvent::ToolCallEnd(ToolCallEndEvent::new(reply_id, id)));
            }
            keep
        });

        // Base64 data blocks; URL sources are not streamed.
        for block in &chunk.content {
            if let ContentBlock::Data(d) = block {
                if let DataSource::Base64 { data, media_type } = &d.source {
                    if !self.data.contains(&d.id) {
                        self.data.push(d.id.clone());
                        self.opened.push(d.id.clone());
                        out.push(AgentEvent::DataBlockStart({
                            let mut start = DataBlockStartEvent::new(&self.reply_id, &d.id, media_type);
                            start.name.clone_from(&d.name);
                            start
                        }));
                    }
                    out.push(AgentEvent::DataBlockDelta(DataBlockDeltaEvent::new(
                        &self.reply_id,
                        &d.id,
                        DataSource::Base64 {
                            data: data.clone(),
                            media_type: media_type.clone(),
                        },
                    )));
                }
            }
        }
    }

    /// A restart of the model call: forget every block of this call and return their ids, which
    /// the consumer must discard.
    pub(crate) fn restart(&mut self) -> Vec<String> {
        self.thinking = None;
        self.text = None;
        self.tools.clear();
        self.data.clear();
        std::mem::take(&mut self.opened)
    }

    /// Closes whatever is still open: text, thinking, tool calls (first seen first), data.
    pub(crate) fn close(&mut self, out: &mut Vec<AgentEvent>) {
        if let Some(id) = self.text.take() {
            out.push(AgentEvent::TextBlockEnd(TextBlockEndEvent::new(&self.reply_id, id)));
        }
        if let Some(id) = self.thinking.take() {
            out.push(AgentEvent::ThinkingBlockEnd(ThinkingBlockEndEvent::new(
                &self.reply_id,
                id,
            )));
        }
        for id in self.tools.drain(..) {
            out.push(AgentEvent::ToolCallEnd(ToolCallEndEvent::new(&self.reply_id, id)));
        }
        for id in self.data.drain(..) {
            out.push(AgentEvent::DataBlockEnd(DataBlockEndEvent::new(&self.reply_id, id)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use towerscope_core::{TextBlock, ThinkingBlock, ToolCallBlock};

    fn kinds(events: &[AgentEvent]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e {
                AgentEvent::ThinkingBlockDelta(d) => format!("THINKING Δ{}", d.delta),
                AgentEvent::TextBlockDelta(d) => format!("TEXT Δ{}", d.delta),
                AgentEvent::ToolCallStart(s) => format!("TOOL_CALL_START {}", s.tool_call_id),
                AgentEvent::ToolCallDelta(d) => format!("TOOL Δ{}", d.delta),
                AgentEvent::ToolCallEnd(s) => format!("TOOL_CALL_END {}", s.tool_call_id),
                other => other.event_type().as_str().to_owned(),
            })
            .collect()
    }

    fn chunk(block: ContentBlock) -> ChatResponse {
        ChatResponse::chunk(vec![block])
    }

    /// The reference's probe (§3.4): thinking a, b; text c, d; tool t1 in two pieces; tool t2.
    #[test]
    fn streamed_chunks_become_the_reference_event_sequence() {
        let think = |t: &str| chunk(ContentBlock::Thinking(ThinkingBlock::new(t).with_id("th")));
        let text = |t: &str| chunk(ContentBlock::Text(TextBlock::new(t).with_id("tx")));
        let tool = |id: &str, input: &str| chunk(ContentBlock::ToolCall(ToolCallBlock::new(id, "f", input)));
        let mut conv = ChunkConverter::new("r");
        let mut out = Vec::new();
        for c in [
            think("a"),
            think("b"),
            text("c"),
            text("d"),
            tool("t1", r#"{"a""#),
            tool("t1", ":1}"),
            tool("t2", "{}"),
        ] {
            conv.convert(&c, &mut out);
        }
        conv.close(&mut out);
        assert_eq!(
            kinds(&out),
            [
                "THINKING_BLOCK_START",
                "THINKING Δa",
                "THINKING Δb",
                "THINKING_BLOCK_END",
                "TEXT_BLOCK_START",
                "TEXT Δc",
                "TEXT Δd",
                "TEXT_BLOCK_END",
                "TOOL_CALL_START t1",
                r#"TOOL Δ{"a""#,
                "TOOL Δ:1}",
                "TOOL_CALL_START t2",
                "TOOL Δ{}",
                "TOOL_CALL_END t1",
                "TOOL_CALL_END t2",
            ]
        );
    }

    /// A whole response holding two tool calls: START c1, Δc1, START c2, Δc2, END c1, END c2.
    #[test]
    fn a_whole_response_with_two_calls() {
        let response = ChatResponse::new(vec![
            ContentBlock::ToolCall(ToolCallBlock::new("c1", "f", "{}")),
            ContentBlock::ToolCall(ToolCallBlock::new("c2", "f", "{}")),
        ]);
        let mut conv = ChunkConverter::new("r");
        let mut out = Vec::new();
        conv.convert(&response, &mut out);
        conv.close(&mut out);
        assert_eq!(
            kinds(&out),
            [
                "TOOL_CALL_START c1",
                "TOOL Δ{}",
                "TOOL_CALL_START c2",
                "TOOL Δ{}",
                "TOOL_CALL_END c1",
                "TOOL_CALL_END c2"
            ]
        );
    }

    #[test]
    fn a_restart_returns_every_block_of_the_call() {
        let mut conv = ChunkConverter::new("r");
        let mut out = Vec::new();
        conv.convert(&chunk(ContentBlock::Text(TextBlock::new("partial"))), &mut out);
        conv.convert(
            &chunk(ContentBlock::ToolCall(ToolCallBlock::new("c1", "f", "{"))),
            &mut out,
        );
        let AgentEvent::TextBlockStart(start) = &out[0] else {
            panic!("expected a text start")
        };
        assert_eq!(conv.restart(), [start.block_id.clone(), "c1".to_owned()]);
        let mut after = Vec::new();
        conv.close(&mut after);
        assert!(after.is_empty(), "nothing stays open after a restart");
    }
}
