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
