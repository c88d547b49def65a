//! Folding a reply's event stream back into its message ([`Msg::append_event`]).

use std::collections::HashSet;

use super::block::source_of;
use super::{AgentEvent, CustomEvent};
use crate::id::Id;
use crate::message::{
    ContentBlock, DataBlock, DataSource, HintBlock, MediaBlock, Msg, TextBlock, ThinkingBlock, ToolCallBlock,
    ToolCallState, ToolOutput, ToolResultBlock, ToolResultState, base64,
};

impl Msg {
    /// Applies one event of this message's reply, rebuilding the message from the stream as the
    /// reference's `Msg.append_event` does.
    ///
    /// * Events of another reply (`reply_id != self.id`) and `CUSTOM` events are ignored, except
    ///   the `model_call_restart` event of this reply, which removes the blocks it lists.
    /// * `*_START` appends a block whose id is the event's `block_id` (or `tool_call_id`);
    ///   deltas and ends find the first block of that kind with that id. Deltas for a block that
    ///   was never started are ignored.
    /// * Text and thinking deltas are appended; `TEXT_BLOCK_END` with `text` replaces the text.
    /// * Base64 data deltas are decoded, joined as bytes and re-encoded; a URL delta replaces the
    ///   source.
    /// * A tool result starts `running` with an empty list as output; its deltas are folded as
    ///   the stored result folds the tool's chunks: a text delta joins the text block of its
    ///   `block_id`, else the last block when that is text, else starts a block; a data delta
    ///   joins base64 pieces with the same block id, else adds a data block;
    ///   `TOOL_RESULT_END` sets its state, metadata and `finished_at`, and finishes the paired call.
    /// * `REQUIRE_USER_CONFIRM` sets the calls to `asking` with their suggested rules,
    ///   `USER_CONFIRM_RESULT` moves `asking` calls to `allowed` or `finished`,
    ///   `REQUIRE_EXTERNAL_EXECUTION` sets them to `submitted`, `EXTERNAL_EXECUTION_RESULT`
    ///   appends results for calls that have none yet.
    /// * `MODEL_CALL_END` adds its usage; `REPLY_END` sets `finished_at`, `finished_reason` and
    ///   `error`.
    ///
    /// The role rules are not checked: this is meant for assistant messages. Where the reference
    /// would raise on data it cannot decode, the base64 pieces are joined as strings instead.
    ///
    /// ```
    /// use towerscope_core::event::{AgentEvent, TextBlockDeltaEvent, TextBlockEndEvent, TextBlockStartEvent};
    /// use towerscope_core::message::{Msg, Role};
    ///
    /// let mut reply = Msg::new("bot", Role::Assistant, vec![])?.with_id("r1");
    /// let events: [AgentEvent; 4] = [
    ///     TextBlockStartEvent::new("r1", "b1").into(),
    ///     TextBlockDeltaEvent::new("r1", "b1", "Hello, ").into(),
    ///     TextBlockDeltaEvent::new("r1", "b1", "world").into(),
    ///     TextBlockEndEvent::new("r1", "b1").into(),
    /// ];
    /// for event in &events {
    ///     reply.append_event(event);
    /// }
    /// assert_eq!(reply.text_content().as_deref(), Some("Hello, world"));
    /// # Ok::<(), towerscope_core::AgentError>(())
    /// ```
    pub fn append_event(&mut self, event: &AgentEvent) {
        if let AgentEvent::Custom(custom) = event {
            self.apply_restart(custom);
            return;
        }
        match event.reply_id() {
            Some(reply_id) if *reply_id == self.id => {}
            _ => return,
        }
        match event {
            AgentEvent::ReplyEnd(e) => {
                self.finished_at = Some(e.created_at);
                self.finished_reason = Some(e.finished_reason);
                self.error.clone_from(&e.error);
            }
            AgentEvent::ModelCallEnd(e) => self.append_usage(&e.usage()),
            AgentEvent::TextBlockStart(e) => self.content.push(TextBlock::new("").with_id(&e.block_id).into()),
            AgentEvent::TextBlockDelta(e) => {
                if let Some(block) = self.text_block_mut(&e.block_id) {
                    block.text.push_str(&e.delta);
                }
            }
            AgentEvent::TextBlockEnd(e) => {
                if let Some(block) = self.text_block_mut(&e.block_id) {
                    if let Some(text) = &e.text {
                        block.text.clone_from(text);
                    }
                    block.finished_at = Some(e.created_at);
                }
            }
            AgentEvent::DataBlockStart(e) => {
                let source = DataSource::Base64 {
                    data: String::new(),
                    media_type: e.media_type.clone(),
                };
                let mut block = DataBlock::new(source).with_id(&e.block_id);
                block.name.clone_from(&e.name);
                self.content.push(block.into());
            }
            AgentEvent::DataBlockDelta(e) => {
                if let Some(block) = self.data_block_mut(&e.block_id) {
                    match (&e.url, &e.data, &mut block.source) {
                        (Some(url), _, _) => {
                            block.source = DataSource::Url {
                                url: url.clone(),
                                media_type: e.media_type.clone(),
                            };
                        }
                        (None, Some(data), _) if data.is_empty() => {}
                        (None, Some(data), DataSource::Base64 { data: existing, .. }) => {
                            base64::merge(existing, data);
                        }
                        (None, Some(data), DataSource::Url { .. }) => {
                            block.source = DataSource::Base64 {
                                data: data.clone(),
                                media_type: e.media_type.clone(),
                            };
                        }
                        (None, None, _) => {}
                    }
                }
            }
            AgentEvent::DataBlockEnd(e) => {
                if let Some(block) = self.data_block_mut(&e.block_id) {
                    block.finished_at = Some(e.created_at);
                }
            }
            AgentEvent::ThinkingBlockStart(e) => {
                self.content.push(ThinkingBlock::new("").with_id(&e.block_id).into());
            }
            AgentEvent::ThinkingBlockDelta(e) => {
                if let Some(block) = self.thinking_block_mut(&e.block_id) {
                    block.thinking.push_str(&e.delta);
                }
            }
            AgentEvent::ThinkingBlockEnd(e) => {
                if let Some(block) = self.thinking_block_mut(&e.block_id) {
                    block.finished_at = Some(e.created_at);
                }
            }
            AgentEvent::HintBlock(e) => {
                self.content.push(
                    HintBlock::new(e.hint.clone(), e.source.clone())
                        .with_id(&e.block_id)
                        .into(),
                );
            }
            AgentEvent::ToolCallStart(e) => {
                self.content
                    .push(ToolCallBlock::new(&e.tool_call_id, &e.tool_call_name, "").into());
            }
            AgentEvent::ToolCallDelta(e) => {
                if let Some(call) = self.tool_call_mut(&e.tool_call_id) {
                    call.input.push_str(&e.delta);
                }
            }
            AgentEvent::ToolCallEnd(e) => {
                if let Some(call) = self.tool_call_mut(&e.tool_call_id) {
                    call.finished_at = Some(e.created_at);
                }
            }
            AgentEvent::ToolResultStart(e) => {
                let output = ToolOutput::Blocks(Vec::new());
                let result = ToolResultBlock::new(&e.tool_call_id, &e.tool_call_name, output, ToolResultState::Running);
                self.content.push(result.into());
            }
            AgentEvent::ToolResultTextDelta(e) => {
                if let Some(result) = self.tool_result_mut(&e.tool_call_id) {
                    append_result_text(result.output.blocks_mut(), e.block_id.as_ref(), &e.delta);
                }
            }
            AgentEvent::ToolResultDataDelta(e) => {
                let Some(source) = source_of(e.data.as_ref(), e.url.as_ref(), &e.media_type) else {
                    return;
                };
                if let Some(result) = self.tool_result_mut(&e.tool_call_id) {
                    append_result_data(result.output.blocks_mut(), &e.block_id, source);
                }
            }
            AgentEvent::ToolResultEnd(e) => {
                if let Some(result) = self.tool_result_mut(&e.tool_call_id) {
                    result.state = e.state;
                    result.metadata.clone_from(&e.metadata);
                    result.finished_at = Some(e.created_at);
                }
                if let Some(call) = self.tool_call_mut(&e.tool_call_id) {
                    call.state = ToolCallState::Finished;
                }
            }
            AgentEvent::RequireUserConfirm(e) => {
                for asked in &e.tool_calls {
                    if let Some(call) = self.tool_call_mut(&asked.id) {
                        call.state = ToolCallState::Asking;
                        call.suggested_rules.clone_from(&asked.suggested_rules);
                    }
                }
            }
            AgentEvent::UserConfirmResult(e) => {
                for answer in &e.confirm_results {
                    if let Some(call) = self.tool_call_mut(&answer.tool_call.id) {
                        // Only asking calls move; a late answer (after an interrupt) is stale.
                        if call.state == ToolCallState::Asking {
                            call.state = if answer.confirmed {
                                ToolCallState::Allowed
                            } else {
                                ToolCallState::Finished
                            };
                        }
                    }
                }
            }
            AgentEvent::RequireExternalExecution(e) => {
                for submitted in &e.tool_calls {
                    if let Some(call) = self.tool_call_mut(&submitted.id) {
                        call.state = ToolCallState::Submitted;
                    }
                }
            }
            AgentEvent::ExternalExecutionResult(e) => {
                // Results for calls that already have one (a late arrival) are skipped.
                let answered: Vec<Id> = self.tool_results().map(|result| result.id.clone()).collect();
                for result in &e.execution_results {
                    if answered.contains(&result.id) {
                        continue;
                    }
                    let mut result = result.clone();
                    if result.finished_at.is_none() {
                        result.finished_at = Some(e.created_at);
                    }
                    self.content.push(result.into());
                }
            }
            AgentEvent::ReplyStart(_)
            | AgentEvent::ModelCallStart(_)
            | AgentEvent::ExceedMaxIters(_)
            | AgentEvent::UserInterrupt(_)
            | AgentEvent::Custom(_) => {}
        }
    }

    /// A `model_call_restart` event of this reply: drop the blocks the restarted attempt had
    /// streamed (see [`ChatResponse::restart`](crate::ChatResponse::restart)).
    fn apply_restart(&mut self, custom: &CustomEvent) {
        if custom.name != crate::chat::RESTART_EVENT
            || custom
                .value
                .get("reply_id")
                .and_then(serde_json::Value::as_str)
                .is_none_or(|reply_id| self.id != reply_id)
        {
            return;
        }
        let Some(ids) = custom
            .value
            .get("discarded_block_ids")
            .and_then(serde_json::Value::as_array)
        else {
            return;
        };
        // Hashed: a restarted answer may have had thousands of blocks (and a restart is rare,
        // so the set costs nothing that matters). An id read from its text equals a block's id
        // exactly when the block's id equals the text.
        let ids: HashSet<Id> = ids.iter().filter_map(serde_json::Value::as_str).map(Id::from).collect();
        self.content.retain(|b| !ids.contains(b.id()));
    }

    fn text_block_mut(&mut self, id: &Id) -> Option<&mut TextBlock> {
        self.content.iter_mut().find_map(|block| match block {
            ContentBlock::Text(text) if text.id == *id => Some(text),
            _ => None,
        })
    }

    fn thinking_block_mut(&mut self, id: &Id) -> Option<&mut ThinkingBlock> {
        self.content.iter_mut().find_map(|block| match block {
            ContentBlock::Thinking(thinking) if thinking.id == *id => Some(thinking),
            _ => None,
        })
    }

    fn data_block_mut(&mut self, id: &Id) -> Option<&mut DataBlock> {
        self.content.iter_mut().find_map(|block| match block {
            ContentBlock::Data(data) if data.id == *id => Some(data),
            _ => None,
        })
    }
}

/// How many of a tool result's last blocks a piece's block is looked for in: the fold stays
/// linear in the pieces (a tool that adds to a block more than 64 blocks back, which none of
/// ours does, is folded into a new block).
const LOOK_BACK: usize = 64;

/// The index of the block with `id` among a result's last [`LOOK_BACK`] blocks, of any kind (as
/// the stored result finds a piece's block).
fn block_with_id(blocks: &[MediaBlock], id: &Id) -> Option<usize> {
    let from_end = blocks.iter().rev().take(LOOK_BACK).position(|block| block.id() == id)?;
    Some(blocks.len() - 1 - from_end)
}

/// A text piece of a tool result, folded as the stored result folds it (`ToolChunk`s): joined
/// to the text block of its id; a piece whose id is another kind's block's (a data block) is
/// a new block of its own id-less kind, as the stored result copies it under a new id; else
/// joined to the last block when that is text (the stored result joins neighbouring texts: a
/// tool streaming pieces with new ids makes one text); else a new block with its id. A piece
/// without an id joins the last block if it is text.
fn append_result_text(blocks: &mut Vec<MediaBlock>, block_id: Option<&Id>, delta: &str) {
    let found = block_id.and_then(|id| block_with_id(blocks, id));
    if let Some(index) = found
        && let Some(MediaBlock::Text(text)) = blocks.get_mut(index)
    {
        text.text.push_str(delta);
        return;
    }
    if let Some(MediaBlock::Text(last)) = blocks.last_mut() {
        last.text.push_str(delta);
        return;
    }
    let mut text = TextBlock::new(delta);
    if let (Some(id), None) = (block_id, found) {
        text.id = id.clone();
    }
    blocks.push(text.into());
}

/// Adds a data piece to a tool result's blocks: base64 joins the base64 block of its id (among
/// the last [`LOOK_BACK`]); a piece whose id is another block's it cannot join is a new block
/// under a new id (as the stored result copies it); anything else a new block with its id.
fn append_result_data(blocks: &mut Vec<MediaBlock>, block_id: &Id, source: DataSource) {
    let found = block_with_id(blocks, block_id);
    if let (
        Some(MediaBlock::Data(DataBlock {
            source: DataSource::Base64 { data, media_type },
            ..
        })),
        DataSource::Base64 {
            data: incoming,
            media_type: incoming_type,
        },
    ) = (found.and_then(|index| blocks.get_mut(index)), &source)
    {
        base64::merge(data, incoming);
        if !incoming_type.is_empty() {
            media_type.clone_from(incoming_type);
        }
        return;
    }
    let block = DataBlock::new(source);
    blocks.push(
        if found.is_some() {
            block
        } else {
            block.with_id(block_id)
        }
        .into(),
    );
}
