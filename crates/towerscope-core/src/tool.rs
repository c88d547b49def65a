//! What tools return: streamed [`ToolChunk`]s, accumulated into a [`ToolResponse`].
//!
//! A tool yields chunks; the toolkit folds them into one response with a [`ChunkFold`] (in
//! time linear in the chunks), by the rules of [`ToolResponse::append_chunk`], as the reference
//! does:
//!
//! * blocks with the same id are merged: text is concatenated, base64 data joined as bytes;
//! * then consecutive text blocks are merged into one;
//! * metadata is merged, except the transient `mcp_progress` key, which is never kept;
//! * the state only gets worse: `error` beats `interrupted`, which beats `denied`, which beats
//!   `success`; a `running` chunk leaves it as it is.
//!
//! # Example
//!
//! ```
//! use towerscope_core::message::{MediaBlock, TextBlock, ToolResultState};
//! use towerscope_core::tool::{ToolChunk, ToolResponse};
//!
//! let mut response = ToolResponse::new(Vec::new());
//! response.append_chunk(&ToolChunk::new(vec![TextBlock::new("a").with_id("b1").into()]));
//! response.append_chunk(&ToolChunk::new(vec![TextBlock::new("b").with_id("b1").into()]));
//! response.append_chunk(&ToolChunk::text("c").with_state(ToolResultState::Error));
//!
//! assert_eq!(response.text_content().as_deref(), Some("abc"));
//! assert_eq!(response.state, ToolResultState::Error);
//! assert_eq!(response.content.len(), 1);
//! ```

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::id::{Id, new_id};
use crate::message::{
    DataBlock, DataSource, MediaBlock, ToolOutput, ToolResultBlock, ToolResultState, base64, join_text,
};

/// The metadata key of transient MCP progress, never accumulated into a response.
pub const MCP_PROGRESS_KEY: &str = "mcp_progress";

fn default_true() -> bool {
    true
}

fn success() -> ToolResultState {
    ToolResultState::Success
}

/// One piece of a tool's output.
///
/// Pieces of one block (text, or base64 data of one file) share the block's id so that they are
/// joined.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolChunk {
    /// The chunk's blocks.
    pub content: Vec<MediaBlock>,
    /// The state of the execution so far (default `running`).
    #[serde(default)]
    pub state: ToolResultState,
    /// Whether this is the tool's last chunk (default `true`).
    #[serde(default = "default_true")]
    pub is_last: bool,
    /// Metadata for the agent; `mcp_progress` carries transient progress.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// The chunk's id.
    #[serde(default = "new_id")]
    pub id: Id,
}

impl ToolChunk {
    /// A `running`, last chunk with these blocks.
    pub fn new(content: Vec<MediaBlock>) -> Self {
        Self {
            content,
            state: ToolResultState::Running,
            is_last: true,
            metadata: Map::new(),
            id: new_id(),
        }
    }

    /// A chunk holding one new text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![MediaBlock::text(text)])
    }

    /// Sets the state.
    #[must_use]
    pub fn with_state(mut self, state: ToolResultState) -> Self {
        self.state = state;
        self
    }

    /// Sets whether this is the last chunk.
    #[must_use]
    pub fn with_is_last(mut self, is_last: bool) -> Self {
        self.is_last = is_last;
        self
    }

    /// Sets the metadata.
    #[must_use]
    pub fn with_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = metadata;
        self
    }
}

/// The complete result of a tool execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResponse {
    /// The result's blocks.
    #[serde(default)]
    pub content: Vec<MediaBlock>,
    /// How the execution ended (default `success`).
    #[serde(default = "success")]
    pub state: ToolResultState,
    /// Metadata for the agent (not sent to the model).
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// The response's id (the tool call id when produced by a toolkit).
    #[serde(default = "new_id")]
    pub id: Id,
}

impl ToolResponse {
    /// A successful response with these blocks.
    pub fn new(content: Vec<MediaBlock>) -> Self {
        Self {
            content,
            state: ToolResultState::Success,
            metadata: Map::new(),
            id: new_id(),
        }
    }

    /// A successful response holding one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![MediaBlock::text(text)])
    }

    /// An `error` response holding the message as one text block.
    pub fn error(message: impl Into<String>) -> Self {
        Self::text(message).with_state(ToolResultState::Error)
    }

    /// Sets the state.
    #[must_use]
    pub fn with_state(mut self, state: ToolResultState) -> Self {
        self.state = state;
        self
    }

    /// Sets the id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<Id>) -> Self {
        self.id = id.into();
        self
    }

    /// The text of the text blocks joined with `"\n"`; `None` when there is none.
    pub fn text_content(&self) -> Option<String> {
        join_text(&self.content)
    }

    /// The blocks as a tool result output.
    pub fn into_output(self) -> ToolOutput {
        ToolOutput::Blocks(self.content)
    }

    /// The result block of the call `self.id` to the tool `name`, with this state and metadata.
    pub fn into_result_block(self, name: impl Into<String>) -> ToolResultBlock {
        ToolResultBlock::new(self.id, name, ToolOutput::Blocks(self.content), self.state).with_metadata(self.metadata)
    }

    /// Accumulates a chunk (see the [module docs](self) for the rules).
    ///
    /// Deviations from the reference, which would raise: a data piece whose id matches a URL data
    /// block, or a block of the other kind, is added as a new block with a new id; base64 that does
    /// not decode is joined as text.
    ///
    /// Each call merges the response's text blocks and looks its blocks up afresh, so folding a
    /// whole stream this way costs the square of its blocks; [`ChunkFold`] folds a stream in time
    /// linear in its chunks.
    pub fn append_chunk(&mut self, chunk: &ToolChunk) {
        // One chunk: a scan finds its pieces' blocks sooner than an index built for it would.
        let mut blocks = BlockIndex {
            by_id: None,
            index: false,
        };
        blocks.fold(self, chunk, true);
    }
}

/// Folds a tool's chunks into its response, by the rules of [`ToolResponse::append_chunk`], in
/// time linear in the chunks: the blocks are looked up by id in an index (once there are more
/// than a few), and only the blocks a chunk adds are merged with the text before them.
///
/// ```
/// use towerscope_core::message::{MediaBlock, TextBlock};
/// use towerscope_core::tool::{ChunkFold, ToolChunk, ToolResponse};
///
/// let mut fold = ChunkFold::new(ToolResponse::new(Vec::new()));
/// for piece in ["a", "b", "c"] {
///     fold.push(&ToolChunk::new(vec![TextBlock::new(piece).with_id("t").into()]));
/// }
/// assert_eq!(fold.response().text_content().as_deref(), Some("abc"));
/// assert_eq!(fold.into_response().content.len(), 1);
/// ```
#[derive(Debug, Clone)]
pub struct ChunkFold {
    response: ToolResponse,
    blocks: BlockIndex,
    /// Whether a chunk was folded (the first one also merges the response's own text blocks).
    started: bool,
}

impl ChunkFold {
    /// Starts from `response` (usually empty).
    pub fn new(response: ToolResponse) -> Self {
        Self {
            response,
            blocks: BlockIndex {
                by_id: None,
                index: true,
            },
            started: false,
        }
    }

    /// Folds in one chunk.
    pub fn push(&mut self, chunk: &ToolChunk) {
        let first = !std::mem::replace(&mut self.started, true);
        self.blocks.fold(&mut self.response, chunk, first);
    }

    /// The response so far.
    pub fn response(&self) -> &ToolResponse {
        &self.response
    }

    /// The response.
    pub fn into_response(self) -> ToolResponse {
        self.response
    }
}

/// How many blocks a response has before [`BlockIndex`] indexes them by id.
const FEW_BLOCKS: usize = 16;

/// Where a response's blocks are by id: a scan while they are few, a map past that (the first
/// block with each id) when `index`.
#[derive(Debug, Clone)]
struct BlockIndex {
    by_id: Option<HashMap<Id, usize>>,
    index: bool,
}

impl BlockIndex {
    /// The first block with `id`.
    fn find(&mut self, content: &[MediaBlock], id: &Id) -> Option<usize> {
        if self.index && self.by_id.is_none() && content.len() > FEW_BLOCKS {
            let mut by_id = HashMap::with_capacity(content.len());
            for (i, block) in content.iter().enumerate() {
                by_id.entry(block.id().clone()).or_insert(i);
            }
            self.by_id = Some(by_id);
        }
        match &self.by_id {
            Some(by_id) => by_id.get(id).copied(),
            None => content.iter().position(|block| block.id() == id),
        }
    }

    /// Notes the block just pushed at `at` (its id is new: it was looked up first).
    fn pushed(&mut self, content: &[MediaBlock], at: usize) {
        if let (Some(by_id), Some(block)) = (&mut self.by_id, content.get(at)) {
            by_id.entry(block.id().clone()).or_insert(at);
        }
    }

    /// Notes that the block with `id` moved from `from` to `to`, or is gone (`None`).
    fn moved(&mut self, id: &Id, from: usize, to: Option<usize>) {
        let Some(by_id) = &mut self.by_id else { return };
        if by_id.get(id) == Some(&from) {
            match to {
                Some(to) => {
                    by_id.insert(id.clone(), to);
                }
                None => {
                    by_id.remove(id);
                }
            }
        }
    }

    /// Folds `chunk` into `response`; `whole` then merges every run of text blocks (at the
    /// first chunk of a fold, whose response may come with its own), else only the ones `chunk`
    /// adds.
    fn fold(&mut self, response: &mut ToolResponse, chunk: &ToolChunk, whole: bool) {
        let content = &mut response.content;
        if content.is_empty() {
            // Most tools answer with one chunk, and its blocks are the whole result: room for
            // them alone, not the four blocks a first push reserves (the result is kept in the
            // conversation as it is). Later chunks grow the vector as usual.
            content.reserve_exact(chunk.content.len());
        }
        let before = content.len();
        for piece in &chunk.content {
            let index = self.find(content, piece.id());
            let merged = match index.and_then(|index| content.get_mut(index)) {
                Some(target) => merge_piece(target, piece),
                None => {
                    content.push(piece.clone());
                    self.pushed(content, content.len() - 1);
                    true
                }
            };
            if !merged {
                let mut copy = piece.clone();
                match &mut copy {
                    MediaBlock::Text(block) => block.id = new_id(),
                    MediaBlock::Data(block) => block.id = new_id(),
                }
                content.push(copy);
                self.pushed(content, content.len() - 1);
            }
        }
        // Merging into a block of the same kind changes no neighbour: once a fold has merged
        // its response's runs of text, only the added blocks can make one, with the block
        // before them.
        let from = if whole { 0 } else { before.saturating_sub(1) };
        merge_text_from(content, from, self);

        if severity(chunk.state) > severity(response.state) {
            response.state = chunk.state;
        }
        for (key, value) in chunk
            .metadata
            .iter()
            .filter(|(key, _)| key.as_str() != MCP_PROGRESS_KEY)
        {
            response.metadata.insert(key.clone(), value.clone());
        }
    }
}

/// How bad a state is; `running` (a chunk still in progress) counts as success.
fn severity(state: ToolResultState) -> u8 {
    match state {
        ToolResultState::Success | ToolResultState::Running => 0,
        ToolResultState::Denied => 1,
        ToolResultState::Interrupted => 2,
        ToolResultState::Error => 3,
    }
}

/// Merges a piece into the block with its id; `false` when the two cannot be merged.
fn merge_piece(target: &mut MediaBlock, piece: &MediaBlock) -> bool {
    match (target, piece) {
        (MediaBlock::Text(target), MediaBlock::Text(piece)) => {
            target.text.push_str(&piece.text);
            true
        }
        (
            MediaBlock::Data(DataBlock {
                source: DataSource::Base64 { data, media_type },
                name,
                ..
            }),
            MediaBlock::Data(DataBlock {
                source:
                    DataSource::Base64 {
                        data: more,
                        media_type: more_type,
                    },
                name: more_name,
                ..
            }),
        ) => {
            base64::merge(data, more);
            if !more_type.is_empty() {
                media_type.clone_from(more_type);
            }
            if more_name.is_some() {
                name.clone_from(more_name);
            }
            true
        }
        _ => false,
    }
}

/// Merges each text block from `from` on into the text block before it (the first kept
/// keeps its id), in place, telling `blocks` where the others went.
fn merge_text_from(content: &mut Vec<MediaBlock>, from: usize, blocks: &mut BlockIndex) {
    if content.len() < 2 {
        return;
    }
    let mut kept = from;
    for next in from + 1..content.len() {
        let (head, tail) = content.split_at_mut(next);
        match (head.get_mut(kept), tail.first()) {
            (Some(MediaBlock::Text(last)), Some(MediaBlock::Text(text))) => {
                last.text.push_str(&text.text);
                blocks.moved(&text.id, next, None);
            }
            _ => {
                kept += 1;
                if kept != next {
                    content.swap(kept, next);
                    if let Some(block) = content.get(kept) {
                        blocks.moved(block.id(), next, Some(kept));
                    }
                }
            }
        }
    }
    content.truncate(kept + 1);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::message::TextBlock;
    use serde_json::json;

    fn text_with_id(text: &str, id: &str) -> MediaBlock {
        TextBlock::new(text).with_id(id).into()
    }

    #[test]
    fn reference_probe_abc_error() {
        let mut response = ToolResponse::new(Vec::new());
        response.append_chunk(&ToolChunk::new(vec![text_with_id("a", "x")]));
        response.append_chunk(&ToolChunk::new(vec![text_with_id("b", "x")]));
        response.append_chunk(&ToolChunk::text("c").with_state(ToolResultState::Error));
        assert_eq!(response.content.len(), 1);
        assert_eq!(response.text_content().as_deref(), Some("abc"));
        assert_eq!(response.content[0].id(), "x");
        assert_eq!(response.state, ToolResultState::Error);
    }

    #[test]
    fn a_one_chunk_result_keeps_no_spare_room_and_later_chunks_still_merge() {
        let mut response = ToolResponse::new(Vec::new());
        response.append_chunk(&ToolChunk::text("3"));
        // The result is stored in the conversation as it is: one block, room for one.
        assert_eq!((response.content.len(), response.content.capacity()), (1, 1));

        // Text pieces across chunks, between data blocks, still fold into one block each.
        let data = |i: usize| MediaBlock::from(DataBlock::url(format!("https://x/{i}.png"), "image/png"));
        for i in 0..1_000 {
            response.append_chunk(&ToolChunk::new(vec![MediaBlock::text("a"), MediaBlock::text("b")]));
            response.append_chunk(&ToolChunk::new(vec![data(i)]));
        }
        assert_eq!(response.content.len(), 2_000);
        assert_eq!(response.content[0].as_text().map(|t| t.text.as_str()), Some("3ab"));
        assert_eq!(response.content[2].as_text().map(|t| t.text.as_str()), Some("ab"));
        assert!(response.content[1_999].as_data().is_some());

        // Pieces of one chunk merge by id first, then the text blocks around them.
        let mut response = ToolResponse::new(Vec::new());
        response.append_chunk(&ToolChunk::new(vec![
            text_with_id("1", "b"),
            text_with_id("2", "c"),
            text_with_id("3", "b"),
        ]));
        assert_eq!(response.content.len(), 1);
        assert_eq!(response.content[0].id(), "b");
        assert_eq!(response.text_content().as_deref(), Some("132"));
    }

    #[test]
    fn state_only_gets_worse() {
        let cases = [
            (
                vec![ToolResultState::Running, ToolResultState::Running],
                ToolResultState::Success,
            ),
            (
                vec![ToolResultState::Denied, ToolResultState::Running],
                ToolResultState::Denied,
            ),
            (
                vec![ToolResultState::Interrupted, ToolResultState::Denied],
                ToolResultState::Interrupted,
            ),
            (
                vec![ToolResultState::Error, ToolResultState::Interrupted],
                ToolResultState::Error,
            ),
            (
                vec![
                    ToolResultState::Denied,
                    ToolResultState::Error,
                    ToolResultState::Success,
                ],
                ToolResultState::Error,
            ),
        ];
        for (states, expected) in cases {
            let mut response = ToolResponse::new(Vec::new());
            for state in &states {
                response.append_chunk(&ToolChunk::text("").with_state(*state));
            }
            assert_eq!(response.state, expected, "{states:?}");
        }
    }

    #[test]
    fn base64_pieces_join_as_bytes_and_text_around_data_stays_apart() {
        let mut response = ToolResponse::new(Vec::new());
        let piece = |data: &str| MediaBlock::from(DataBlock::base64(data, "audio/wav").with_id("audio"));
        response.append_chunk(&ToolChunk::new(vec![MediaBlock::text("before"), piece("YWI=")]));
        response.append_chunk(&ToolChunk::new(vec![piece("Yw==")]));
        response.append_chunk(&ToolChunk::text("after"));
        response.append_chunk(&ToolChunk::text(" more"));
        assert_eq!(response.content.len(), 3);
        let data = response.content[1].as_data().unwrap();
        assert_eq!(
            data.source,
            DataSource::Base64 {
                data: "YWJj".into(),
                media_type: "audio/wav".into()
            }
        );
        assert_eq!(response.text_content().as_deref(), Some("before\nafter more"));
    }

    #[test]
    fn conflicting_ids_keep_both_blocks() {
        let mut response = ToolResponse::new(vec![text_with_id("t", "same")]);
        response.append_chunk(&ToolChunk::new(vec![
            DataBlock::url("https://x/a.png", "image/png").with_id("same").into(),
        ]));
        assert_eq!(response.content.len(), 2);
        assert_ne!(response.content[1].id(), "same");
    }

    #[test]
    fn metadata_merges_without_mcp_progress() {
        let mut response = ToolResponse::new(Vec::new());
        let meta = |value: Value| value.as_object().cloned().unwrap();
        response
            .append_chunk(&ToolChunk::text("a").with_metadata(meta(json!({"k": 1, "mcp_progress": {"progress": 1}}))));
        response.append_chunk(&ToolChunk::text("b").with_metadata(meta(json!({"k": 2, "other": true}))));
        assert_eq!(Value::Object(response.metadata.clone()), json!({"k": 2, "other": true}));
    }

    #[test]
    fn constructors_and_wire_form() {
        let error = ToolResponse::error("boom").with_id("call_1");
        assert_eq!(error.state, ToolResultState::Error);
        let block = error.clone().into_result_block("t");
        assert_eq!(block.id, "call_1");
        assert_eq!(block.state, ToolResultState::Error);
        assert_eq!(block.output.text_content().as_deref(), Some("boom"));
        assert_eq!(error.clone().into_output().text_content().as_deref(), Some("boom"));

        let chunk: ToolChunk = serde_json::from_value(json!({"content": [{"type": "text", "text": "x"}]})).unwrap();
        assert_eq!(chunk.state, ToolResultState::Running);
        assert!(chunk.is_last);
        let response: ToolResponse = serde_json::from_value(json!({})).unwrap();
        assert_eq!(response.state, ToolResultState::Success);
        let value = serde_json::to_value(&error).unwrap();
        assert_eq!(value["state"], "error");
        assert_eq!(value["content"][0]["type"], "text");
        assert_eq!(serde_json::from_value::<ToolResponse>(value).unwrap(), error);
    }
}
