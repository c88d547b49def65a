//! How the chunks of a streamed chat response accumulate.

use super::ChatResponse;
use crate::message::{ContentBlock, DataBlock, DataSource, TextBlock, ThinkingBlock, ToolCallBlock, base64};

impl ChatResponse {
    /// Appends text to the text block `block_id` (to the first text block when `None`), or adds
    /// a new text block.
    pub fn append_text(&mut self, text: &str, block_id: Option<&str>) {
        let target = self.content.iter_mut().find_map(|block| match block {
            ContentBlock::Text(b) if block_id.is_none_or(|id| id == b.id) => Some(b),
            _ => None,
        });
        match target {
            Some(block) => block.text.push_str(text),
            None => {
                let block = TextBlock::new(text);
                let block = match block_id {
                    Some(id) => block.with_id(id),
                    None => block,
                };
                self.content.push(block.into());
            }
        }
    }

    /// Appends reasoning to the thinking block `block_id` (to the first thinking block when
    /// `None`), or adds a new thinking block.
    pub fn append_thinking(&mut self, thinking: &str, block_id: Option<&str>) {
        let target = self.content.iter_mut().find_map(|block| match block {
            ContentBlock::Thinking(b) if block_id.is_none_or(|id| id == b.id) => Some(b),
            _ => None,
        });
        match target {
            Some(block) => block.thinking.push_str(thinking),
            None => {
                let block = ThinkingBlock::new(thinking);
                let block = match block_id {
                    Some(id) => block.with_id(id),
                    None => block,
                };
                self.content.push(block.into());
            }
        }
    }

    /// Appends an arguments fragment to the tool call `block_id`, or adds a new call.
    pub fn append_tool_call(&mut self, block_id: &str, name: &str, input: &str) {
        let target = self.content.iter_mut().find_map(|block| match block {
            ContentBlock::ToolCall(call) if call.id == block_id => Some(call),
            _ => None,
        });
        match target {
            Some(call) => call.input.push_str(input),
            None => self.content.push(ToolCallBlock::new(block_id, name, input).into()),
        }
    }

    /// Appends raw media bytes to the base64 data block `block_id` of the same media type, or
    /// adds a new data block (`name` is only used then). Meant for streamable media (`audio/*`).
    pub fn append_data_block(&mut self, block_id: &str, bytes: &[u8], media_type: &str, name: Option<&str>) {
        let target = self.content.iter_mut().find_map(|block| match block {
            ContentBlock::Data(DataBlock {
                id,
                source:
                    DataSource::Base64 {
                        data,
                        media_type: existing,
                    },
                ..
            }) if id == block_id && existing == media_type => Some(data),
            _ => None,
        });
        match target {
            Some(data) => base64::append_bytes(data, bytes),
            None => {
                let mut block = DataBlock::base64(base64::encode(bytes), media_type).with_id(block_id);
                block.name = name.map(str::to_owned);
                self.content.push(block.into());
            }
        }
    }

    /// Accumulates a later chunk of the same stream into this response, by block id:
    ///
    /// * text and thinking are appended (non-null thinking extras such as `signature` are
    ///   copied), tool-call input is appended;
    /// * base64 `audio/*` data of the same media type is joined as bytes; other media are
    ///   replaced by the latest;
    /// * blocks with new ids are appended in order;
    /// * the chunk's usage, when present, replaces the usage.
    ///
    /// As in the reference, `is_last`, `finished_reason` and `metadata` are left unchanged. A block
    /// whose id matches a block of another kind replaces it (the reference would fail).
    pub fn append_chat_response(&mut self, other: &ChatResponse) {
        // Piece by piece, in order: a chunk may carry several pieces of one block (each is
        // merged), or a new block and then more of it.
        for delta in &other.content {
            match self.content.iter().rposition(|block| block.id() == delta.id()) {
                Some(index) => merge_block(&mut self.content[index], delta),
                None => self.content.push(delta.clone()),
            }
        }
        if let Some(usage) = &other.usage {
            self.usage = Some(usage.clone());
        }
    }
}

fn merge_block(block: &mut ContentBlock, delta: &ContentBlock) {
    match (block, delta) {
        (ContentBlock::Text(b), ContentBlock::Text(d)) => b.text.push_str(&d.text),
        (ContentBlock::Thinking(b), ContentBlock::Thinking(d)) => {
            b.thinking.push_str(&d.thinking);
            for (key, value) in d.extra.iter().filter(|(_, value)| !value.is_null()) {
                b.extra.insert(key.clone(), value.clone());
            }
        }
        (ContentBlock::ToolCall(b), ContentBlock::ToolCall(d)) => b.input.push_str(&d.input),
        (ContentBlock::Data(b), ContentBlock::Data(d)) => merge_source(&mut b.source, &d.source),
        (block, delta) => *block = delta.clone(),
    }
}

fn merge_source(source: &mut DataSource, delta: &DataSource) {
    match (&mut *source, delta) {
        (
            DataSource::Base64 { data, media_type },
            DataSource::Base64 {
                data: more,
                media_type: more_type,
            },
        ) if media_type == more_type => {
            if media_type.starts_with("audio/") {
                base64::merge(data, more);
            } else {
                data.clone_from(more);
            }
        }
        _ => *source = delta.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::chat::ChatUsage;
    use crate::message::BlockKind;
    use serde_json::{Value, json};

    /// A chunk with two pieces of one block, or a new block and then more of it: every piece
    /// is kept, in order (only the last piece of an id was, and the earlier text was lost).
    #[test]
    fn every_piece_of_a_block_in_one_chunk_is_kept() {
        let mut acc = ChatResponse::chunk(vec![TextBlock::new("Hel").with_id("t1").into()]);
        acc.append_chat_response(&ChatResponse::chunk(vec![
            TextBlock::new("lo, ").with_id("t1").into(),
            TextBlock::new("world").with_id("t1").into(),
            TextBlock::new("Bye").with_id("t2").into(),
            TextBlock::new(".").with_id("t2").into(),
        ]));
        let texts: Vec<_> = acc
            .content
            .iter()
            .filter_map(|b| b.as_text())
            .map(|t| t.text.as_str())
            .collect();
        assert_eq!(texts, ["Hello, world", "Bye."]);
    }

    fn audio(data: &str) -> ContentBlock {
        DataBlock::base64(data, "audio/wav").with_id("a1").into()
    }

    #[test]
    fn chunks_merge_by_block_id() {
        let mut thinking = ThinkingBlock::new("Hm").with_id("th");
        thinking.extra.insert("signature".into(), Value::Null);
        let mut response = ChatResponse::chunk(vec![
            thinking.into(),
            TextBlock::new("Hel").with_id("t1").into(),
            ToolCallBlock::new("c1", "search", "{\"q\":").into(),
            audio("YWI="),
            DataBlock::base64("AAAA", "image/png").with_id("img").into(),
        ]);
        let mut more_thinking = ThinkingBlock::new("m.").with_id("th");
        more_thinking.extra.insert("signature".into(), json!("sig"));
        let chunk = ChatResponse::chunk(vec![
            more_thinking.into(),
            TextBlock::new("lo").with_id("t1").into(),
            ToolCallBlock::new("c1", "search", "\"rust\"}").into(),
            audio("Yw=="),
            DataBlock::base64("BBBB", "image/png").with_id("img").into(),
            ToolCallBlock::new("c2", "fetch", "{}").into(),
        ])
        .with_usage(ChatUsage::new(5, 6).with_time(0.1));
        response.append_chat_response(&chunk);

        assert_eq!(response.content.len(), 6);
        let thinking = response.content[0].as_thinking().unwrap();
        assert_eq!(thinking.thinking, "Hmm.");
        assert_eq!(thinking.extra["signature"], "sig");
        assert_eq!(response.text().as_deref(), Some("Hello"));
        let inputs: Vec<&str> = response.tool_calls().map(|c| c.input.as_str()).collect();
        assert_eq!(inputs, ["{\"q\":\"rust\"}", "{}"]);
        let audio = response.content[3].as_data().unwrap();
        assert_eq!(
            audio.source,
            DataSource::Base64 {
                data: "YWJj".into(),
                media_type: "audio/wav".into()
            }
        );
        let image = response.content[4].as_data().unwrap();
        assert_eq!(
            image.source,
            DataSource::Base64 {
                data: "BBBB".into(),
                media_type: "image/png".into()
            }
        );
        assert_eq!(response.usage, Some(ChatUsage::new(5, 6).with_time(0.1)));
        assert!(
            !response.is_last,
            "the accumulator keeps its own is_last, as in the reference"
        );
    }

    #[test]
    fn mismatched_sources_and_kinds_are_replaced() {
        let mut response = ChatResponse::chunk(vec![audio("YWI="), TextBlock::new("x").with_id("same").into()]);
        let chunk = ChatResponse::chunk(vec![
            DataBlock::url("https://x/a.wav", "audio/wav").with_id("a1").into(),
            ThinkingBlock::new("y").with_id("same").into(),
        ]);
        response.append_chat_response(&chunk);
        assert_eq!(response.content.len(), 2);
        assert!(matches!(&response.content[0], ContentBlock::Data(d) if matches!(d.source, DataSource::Url { .. })));
        assert_eq!(response.content[1].kind(), BlockKind::Thinking);
    }

    #[test]
    fn append_helpers_accumulate() {
        let mut response = ChatResponse::chunk(Vec::new());
        response.append_text("a", None);
        response.append_text("b", None);
        response.append_text("c", Some("other"));
        response.append_thinking("t", Some("th"));
        response.append_thinking("u", Some("th"));
        response.append_tool_call("c1", "f", "{");
        response.append_tool_call("c1", "f", "}");
        response.append_data_block("a1", b"ab", "audio/pcm", Some("speech"));
        response.append_data_block("a1", b"c", "audio/pcm", None);
        response.append_data_block("a1", b"d", "audio/wav", None);
        assert_eq!(response.text().as_deref(), Some("ab\nc"));
        assert_eq!(
            response.content[2].as_thinking().map(|t| t.thinking.as_str()),
            Some("tu")
        );
        assert_eq!(response.tool_calls().next().map(|c| c.input.as_str()), Some("{}"));
        let pcm = response.content[4].as_data().unwrap();
        assert_eq!(
            pcm.source,
            DataSource::Base64 {
                data: "YWJj".into(),
                media_type: "audio/pcm".into()
            }
        );
        assert_eq!(pcm.name.as_deref(), Some("speech"));
        assert_eq!(
            response.content.len(),
            6,
            "another media type under the same id is a new block"
        );
    }
}
