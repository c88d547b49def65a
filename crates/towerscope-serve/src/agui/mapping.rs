//! The one place where our [`AgentEvent`]s become AG-UI events.
//!
//! | our event                              | AG-UI                                              |
//! |----------------------------------------|----------------------------------------------------|
//! | (the run opens)                        | `RUN_STARTED`                                      |
//! | `TEXT_BLOCK_START / DELTA / END`       | `TEXT_MESSAGE_START / CONTENT / END`               |
//! | `THINKING_BLOCK_START / DELTA / END`   | `REASONING_START`, `REASONING_MESSAGE_START / CONTENT / END`, `REASONING_END` |
//! | `TOOL_CALL_START / DELTA / END`        | `TOOL_CALL_START / ARGS / END`                     |
//! | `TOOL_RESULT_*`                        | one `TOOL_CALL_RESULT` at `TOOL_RESULT_END` (none for a result the client gave) |
//! | `MODEL_CALL_START / END`               | token usage, summed per model into `RUN_FINISHED.usage` |
//! | `REQUIRE_USER_CONFIRM`                 | `RUN_FINISHED` outcome `interrupt`, one per call   |
//! | `REQUIRE_EXTERNAL_EXECUTION`           | `RUN_FINISHED` `pendingToolCallIds`                |
//! | `REPLY_END` interrupted / error        | `RUN_FINISHED` outcome `cancelled` / `RUN_ERROR`   |
//! | (no `REPLY_END`: the reply parked)     | the outcome from [`EventMapper::settle`]           |
//! | `CUSTOM`                               | `CUSTOM`                                           |
//! | `CUSTOM` `model_call_restart`          | the `*_END`s of the discarded blocks still open, then `CUSTOM` |
//!
//! Data blocks, hints and the echo of resume inputs have no AG-UI counterpart and are not sent.
//!
//! The `REQUIRE_*` events name a call when the agent first decides it waits, so a reply that
//! parked is settled from [`Agent::waiting_calls`](towerscope_agent::Agent::waiting_calls): a
//! resume that answers one call of a turn and parks again on another sends no event. An
//! interrupted reply ends `cancelled` whatever it asked for before (the interrupt closed it).
//!
//! A run sent again whose messages the thread already holds is answered by
//! [`EventMapper::replay`]: the stored reply to them, as the events its run sent (text,
//! reasoning, tool calls and results; the calls and results under their ids, the text and
//! reasoning under the stored blocks' ids, which the streamed events did not carry), and the
//! same outcome (calls still waiting for a confirmation or a front-end result).
//!
//! ```
//! use towerscope_core::{AgentEvent, TextBlockDeltaEvent, TextBlockStartEvent};
//! use towerscope_serve::agui::{AguiEvent, EventMapper};
//!
//! let mut mapper = EventMapper::new("thread-1", "run-1");
//! let mut out = Vec::new();
//! mapper.map(&AgentEvent::from(TextBlockStartEvent::new("r1", "b1")), &mut out);
//! mapper.map(&AgentEvent::from(TextBlockDeltaEvent::new("r1", "b1", "Hi")), &mut out);
//! let kinds: Vec<_> = out.iter().map(AguiEvent::type_name).collect();
//! assert_eq!(kinds, ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]);
//! assert_eq!(mapper.finish().type_name(), "RUN_FINISHED");
//! ```

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};
use towerscope_agent::WaitingCalls;
use towerscope_core::chat::RESTART_EVENT;
use towerscope_core::{
    AgentError, AgentEvent, ContentBlock, DataSource, Id, Msg, ReplyFinishedReason, Role, ToolCallBlock,
    ToolResultDataDeltaEvent, ToolResultStartEvent,
};

use super::event::{AguiEvent, Interrupt, PROTOCOL_VERSION, RunOutcome, TokenUsage};
use crate::error::client_message;

/// Turns one run's [`AgentEvent`]s into AG-UI events, and ends the run.
#[derive(Debug)]
pub struct EventMapper {
    thread_id: String,
    run_id: String,
    /// Tool results being streamed, by call id, folded as `Msg::append_event` folds them.
    results: HashMap<Id, Msg>,
    /// Text and reasoning messages and tool calls started and not ended, by id: a restarted
    /// model call discards some, which must still be ended (the client refuses a run that
    /// finishes with a message or call open).
    open: HashMap<String, Open>,
    interrupts: Vec<Interrupt>,
    pending: Vec<String>,
    finished: Option<ReplyFinishedReason>,
    error: Option<(String, String)>,
    model: String,
    usage: Vec<TokenUsage>,
    /// Calls whose results the client gave (see [`results_from_client`](Self::results_from_client)).
    from_client: HashSet<Id>,
}

impl EventMapper {
    /// A mapper for the run `run_id` of thread `thread_id`.
    pub fn new(thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        Self {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            results: HashMap::new(),
            open: HashMap::new(),
            interrupts: Vec::new(),
            pending: Vec::new(),
            finished: None,
            error: None,
            model: String::new(),
            usage: Vec::new(),
            from_client: HashSet::new(),
        }
    }

    /// The results of `calls` came from the client (a front-end tool's results, which the run
    /// carried): they are not sent back as `TOOL_CALL_RESULT`s, live or replayed. The official
    /// client adds a tool message for every `TOOL_CALL_RESULT`, so it would hold each of them
    /// twice.
    #[must_use]
    pub fn results_from_client(mut self, calls: impl IntoIterator<Item = Id>) -> Self {
        self.from_client.extend(calls);
        self
    }

    /// `RUN_STARTED`, the run's first event.
    pub fn start(&self) -> AguiEvent {
        AguiEvent::RunStarted {
            thread_id: self.thread_id.clone(),
            run_id: self.run_id.clone(),
            protocol_version: PROTOCOL_VERSION,
        }
    }

    /// Appends the AG-UI events `event` stands for to `out` (none, one or two).
    pub fn map(&mut self, event: &AgentEvent, out: &mut Vec<AguiEvent>) {
        if !self.from_client.is_empty()
            && let Some(call) = result_of(event)
            && self.from_client.contains(call)
        {
            return;
        }
        match event {
            AgentEvent::TextBlockStart(e) => {
                let id = e.block_id.to_string();
                self.open.insert(id.clone(), Open::Text);
                out.push(AguiEvent::TextMessageStart {
                    message_id: id,
                    role: "assistant",
                });
            }
            AgentEvent::TextBlockDelta(e) if !e.delta.is_empty() => out.push(AguiEvent::TextMessageContent {
                message_id: e.block_id.to_string(),
                delta: e.delta.clone(),
            }),
            AgentEvent::TextBlockEnd(e) => {
                let id = e.block_id.to_string();
                self.open.remove(&id);
                out.push(AguiEvent::TextMessageEnd { message_id: id });
            }
            AgentEvent::ThinkingBlockStart(e) => {
                let id = e.block_id.to_string();
                self.open.insert(id.clone(), Open::Reasoning);
                out.push(AguiEvent::ReasoningStart { message_id: id.clone() });
                out.push(AguiEvent::ReasoningMessageStart {
                    message_id: id,
                    role: "reasoning",
                });
            }
            AgentEvent::ThinkingBlockDelta(e) if !e.delta.is_empty() => {
                out.push(AguiEvent::ReasoningMessageContent {
                    message_id: e.block_id.to_string(),
                    delta: e.delta.clone(),
                });
            }
            AgentEvent::ThinkingBlockEnd(e) => {
                let id = e.block_id.to_string();
                self.open.remove(&id);
                end(Open::Reasoning, id, out);
            }
            AgentEvent::ToolCallStart(e) => {
                let id = e.tool_call_id.to_string();
                self.open.insert(id.clone(), Open::ToolCall);
                out.push(AguiEvent::ToolCallStart {
                    tool_call_id: id,
                    tool_call_name: e.tool_call_name.clone(),
                });
            }
            AgentEvent::ToolCallDelta(e) if !e.delta.is_empty() => out.push(AguiEvent::ToolCallArgs {
                tool_call_id: e.tool_call_id.to_string(),
                delta: e.delta.clone(),
            }),
            AgentEvent::ToolCallEnd(e) => {
                let id = e.tool_call_id.to_string();
                self.open.remove(&id);
                out.push(AguiEvent::ToolCallEnd { tool_call_id: id });
            }
            AgentEvent::ToolResultStart(e) => {
                self.results.remove(&e.tool_call_id);
                self.result(&e.reply_id, &e.tool_call_id);
            }
            AgentEvent::ToolResultTextDelta(e) => {
                self.result(&e.reply_id, &e.tool_call_id).append_event(event);
            }
            AgentEvent::ToolResultDataDelta(e) => {
                // Only where a data block splits the result's text matters here: its bytes are
                // not copied.
                // Empty base64 (not a URL): pieces of one image still join into one block.
                let placeholder = DataSource::Base64 {
                    data: String::new(),
                    media_type: String::new(),
                };
                let piece = ToolResultDataDeltaEvent::new(e.reply_id.clone(), e.tool_call_id.clone(), placeholder)
                    .with_block_id(e.block_id.clone());
                self.result(&e.reply_id, &e.tool_call_id).append_event(&piece.into());
            }
            AgentEvent::ToolResultEnd(e) => {
                // The result's texts joined as the stored result's are (and as a run sent again
                // replays them), not its pieces run together.
                let content = self
                    .results
                    .remove(&e.tool_call_id)
                    .and_then(|result| result.tool_results().next().and_then(|r| r.output.text_content()))
                    .unwrap_or_default();
                let id = e.tool_call_id.to_string();
                out.push(AguiEvent::ToolCallResult {
                    message_id: format!("result-{id}"),
                    tool_call_id: id,
                    content,
                    role: "tool",
                });
            }
            AgentEvent::ModelCallStart(e) => self.model = e.model_name.to_string(),
            AgentEvent::ModelCallEnd(e) => self.add_usage(e.input_tokens, e.output_tokens),
            AgentEvent::RequireUserConfirm(e) => {
                self.interrupts.extend(e.tool_calls.iter().map(interrupt));
            }
            AgentEvent::RequireExternalExecution(e) => {
                self.pending.extend(e.tool_calls.iter().map(|c| c.id.to_string()));
            }
            AgentEvent::ReplyEnd(e) => {
                self.finished = Some(e.finished_reason);
                if let Some(info) = &e.error {
                    self.error = Some((info.kind.clone(), info.message.clone()));
                }
            }
            AgentEvent::Custom(e) => {
                if e.name == RESTART_EVENT {
                    self.end_discarded(&e.value, out);
                }
                out.push(AguiEvent::Custom {
                    name: e.name.clone(),
                    value: Value::Object(e.value.clone()),
                });
            }
            _ => {}
        }
    }

    /// A restarted model call discards the blocks its first attempt streamed (the restart
    /// event lists them): those still open are ended, in the order listed, so that the run
    /// can finish (the client keeps what they showed, and the `CUSTOM` event after says to
    /// drop them).
    fn end_discarded(&mut self, restart: &Map<String, Value>, out: &mut Vec<AguiEvent>) {
        let ids = restart.get("discarded_block_ids").and_then(Value::as_array);
        for id in ids.into_iter().flatten().filter_map(Value::as_str) {
            if let Some(open) = self.open.remove(id) {
                end(open, id.to_owned(), out);
            }
        }
    }

    /// The result of call `call_id` being streamed, started if its deltas come first (results
    /// given from outside, which a resumed reply sends without a start).
    fn result(&mut self, reply_id: &Id, call_id: &Id) -> &mut Msg {
        self.results.entry(call_id.clone()).or_insert_with(|| {
            let mut result = Msg::assistant_blocks("tool", Vec::new()).with_id(reply_id.clone());
            result.append_event(&ToolResultStartEvent::new(reply_id.clone(), call_id.clone(), "").into());
            result
        })
    }

    /// Appends the AG-UI events a stored message's run sent for it to `out`: its text,
    /// thinking, tool calls and tool results in order (text and thinking under the stored
    /// blocks' ids: a streamed answer's events carry generated ones). Calls of an
    /// assistant message left waiting for the user's confirmation or a front-end result (no
    /// result in the message) become the run's outcome, as when the run parked. Other roles
    /// and blocks have no AG-UI event and are skipped.
    ///
    /// ```
    /// use towerscope_core::Msg;
    /// use towerscope_serve::agui::{AguiEvent, EventMapper};
    ///
    /// let mut mapper = EventMapper::new("thread-1", "run-2");
    /// let mut out = Vec::new();
    /// mapper.replay(&Msg::assistant("assistant", "Hello!"), &mut out);
    /// let kinds: Vec<_> = out.iter().map(AguiEvent::type_name).collect();
    /// assert_eq!(kinds, ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"]);
    /// ```
    pub fn replay(&mut self, msg: &Msg, out: &mut Vec<AguiEvent>) {
        self.replay_from(msg, 0, out);
    }

    /// [`replay`](Self::replay) from the block at `from` on: what followed an earlier run's
    /// last event (a resumed reply goes on in its message). The outcome counts every call of
    /// the message left waiting, before `from` too; past the last block, only the outcome.
    pub fn replay_from(&mut self, msg: &Msg, from: usize, out: &mut Vec<AguiEvent>) {
        if msg.role != Role::Assistant {
            return;
        }
        if let Some(waiting) = WaitingCalls::of(msg) {
            self.wait_on(&waiting);
        }
        for block in msg.content.iter().skip(from) {
            match block {
                ContentBlock::Text(t) => {
                    let id = t.id.to_string();
                    out.push(AguiEvent::TextMessageStart {
                        message_id: id.clone(),
                        role: "assistant",
                    });
                    if !t.text.is_empty() {
                        out.push(AguiEvent::TextMessageContent {
                            message_id: id.clone(),
                            delta: t.text.clone(),
                        });
                    }
                    out.push(AguiEvent::TextMessageEnd { message_id: id });
                }
                ContentBlock::Thinking(t) => {
                    let id = t.id.to_string();
                    out.push(AguiEvent::ReasoningStart { message_id: id.clone() });
                    out.push(AguiEvent::ReasoningMessageStart {
                        message_id: id.clone(),
                        role: "reasoning",
                    });
                    if !t.thinking.is_empty() {
                        out.push(AguiEvent::ReasoningMessageContent {
                            message_id: id.clone(),
                            delta: t.thinking.clone(),
                        });
                    }
                    out.push(AguiEvent::ReasoningMessageEnd { message_id: id.clone() });
                    out.push(AguiEvent::ReasoningEnd { message_id: id });
                }
                ContentBlock::ToolCall(call) => {
                    let id = call.id.to_string();
                    out.push(AguiEvent::ToolCallStart {
                        tool_call_id: id.clone(),
                        tool_call_name: call.name.clone(),
                    });
                    if !call.input.is_empty() {
                        out.push(AguiEvent::ToolCallArgs {
                            tool_call_id: id.clone(),
                            delta: call.input.clone(),
                        });
                    }
                    out.push(AguiEvent::ToolCallEnd { tool_call_id: id });
                }
                ContentBlock::ToolResult(result) if !self.from_client.contains(&result.id) => {
                    let id = result.id.to_string();
                    out.push(AguiEvent::ToolCallResult {
                        message_id: format!("result-{id}"),
                        tool_call_id: id,
                        content: result.output.text_content().unwrap_or_default(),
                        role: "tool",
                    });
                }
                _ => {}
            }
        }
    }

    /// Takes what the agent's parked reply waits for as the run's outcome, when the reply
    /// ended without a `REPLY_END` (it parked): every waiting call, not only those the events
    /// named. The events name a call when the agent first decides it waits; a resumed reply
    /// that parks again on another call of the same turn names none, and its run must still
    /// end waiting for that call. Call it when the reply's final message comes, with
    /// [`Agent::waiting_calls`](towerscope_agent::Agent::waiting_calls); `waiting` is not called
    /// for a reply that ended.
    ///
    /// ```
    /// use towerscope_agent::Agent;
    /// use towerscope_models::{ScriptedModel, ScriptedResponse};
    /// use towerscope_serve::agui::EventMapper;
    ///
    /// let agent = Agent::builder("assistant")
    ///     .model(ScriptedModel::new("m", [ScriptedResponse::text("Hi!")]))
    ///     .build()?;
    /// let mut mapper = EventMapper::new("thread-1", "run-1");
    /// // ... the reply's events through `map`, then its final message:
    /// mapper.settle(|| agent.waiting_calls());
    /// assert_eq!(mapper.finish().type_name(), "RUN_FINISHED");
    /// # Ok::<(), towerscope_core::AgentError>(())
    /// ```
    pub fn settle(&mut self, waiting: impl FnOnce() -> Option<WaitingCalls>) {
        if self.finished.is_some() {
            return;
        }
        if let Some(waiting) = waiting() {
            self.interrupts.clear();
            self.pending.clear();
            self.wait_on(&waiting);
        }
    }

    /// Adds `waiting`'s calls to the outcome: those waiting for the user's confirmation as
    /// interrupts, those waiting for a front-end result as pending.
    fn wait_on(&mut self, waiting: &WaitingCalls) {
        self.interrupts.extend(waiting.confirm.iter().map(interrupt));
        self.pending.extend(waiting.external.iter().map(|c| c.id.to_string()));
    }

    fn add_usage(&mut self, input: u64, output: u64) {
        if input == 0 && output == 0 {
            return;
        }
        let entry = match self.usage.iter_mut().position(|u| u.model == self.model) {
            Some(i) => &mut self.usage[i],
            None => {
                self.usage.push(TokenUsage {
                    model: self.model.clone(),
                    input_tokens: 0,
                    output_tokens: 0,
                    total_tokens: 0,
                });
                let last = self.usage.len() - 1;
                &mut self.usage[last]
            }
        };
        entry.input_tokens += input;
        entry.output_tokens += output;
        entry.total_tokens += input + output;
    }

    /// The run's last event, once the reply's stream ended: `RUN_FINISHED` (completed, waiting
    /// for front-end tools, interrupted for confirmations, or cancelled), or `RUN_ERROR` when
    /// the reply ended with an error.
    pub fn finish(&mut self) -> AguiEvent {
        if let (Some(ReplyFinishedReason::Error), Some((code, message))) = (self.finished, self.error.take()) {
            return AguiEvent::RunError { message, code };
        }
        // An interrupted reply closed the calls it had asked about: nothing waits for an answer.
        let outcome = if self.finished == Some(ReplyFinishedReason::Interrupted) {
            RunOutcome::Cancelled
        } else if !self.interrupts.is_empty() {
            RunOutcome::Interrupt {
                interrupts: std::mem::take(&mut self.interrupts),
            }
        } else {
            RunOutcome::Success {
                pending_tool_call_ids: std::mem::take(&mut self.pending),
            }
        };
        AguiEvent::RunFinished {
            thread_id: self.thread_id.clone(),
            run_id: self.run_id.clone(),
            outcome,
            usage: std::mem::take(&mut self.usage),
        }
    }

    /// `RUN_ERROR` for a reply that failed (its text only where it is about the request).
    pub fn fail(&self, err: &AgentError) -> AguiEvent {
        if !matches!(err, AgentError::Interrupted) {
            tracing::warn!(error = %err, kind = err.kind(), thread = %self.thread_id, "an AG-UI run failed");
        }
        AguiEvent::RunError {
            message: client_message(err),
            code: err.kind().to_owned(),
        }
    }
}

/// What a started, not yet ended, AG-UI message or call is.
#[derive(Debug, Clone, Copy)]
enum Open {
    Text,
    Reasoning,
    ToolCall,
}

/// The events that end `open` of id `id`.
fn end(open: Open, id: String, out: &mut Vec<AguiEvent>) {
    match open {
        Open::Text => out.push(AguiEvent::TextMessageEnd { message_id: id }),
        Open::Reasoning => {
            out.push(AguiEvent::ReasoningMessageEnd { message_id: id.clone() });
            out.push(AguiEvent::ReasoningEnd { message_id: id });
        }
        Open::ToolCall => out.push(AguiEvent::ToolCallEnd { tool_call_id: id }),
    }
}

/// The interrupt of a call that waits for the user's confirmation.
fn interrupt(call: &ToolCallBlock) -> Interrupt {
    Interrupt {
        id: call.id.to_string(),
        reason: "tool_confirmation",
        message: format!("Run {} with {}?", call.name, call.input),
        tool_call_id: call.id.to_string(),
        response_schema: confirmation_schema(),
    }
}

/// What a confirmation's `resume` payload may hold.
fn confirmation_schema() -> Map<String, Value> {
    let schema = json!({
        "type": "object",
        "properties": {
            "approved": { "type": "boolean", "description": "Whether the call may run (default true)." },
            "arguments": { "type": "object", "description": "Replacement arguments, when the user edited them." }
        }
    });
    match schema {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The call whose result `event` streams, if it is a `TOOL_RESULT_*` event.
fn result_of(event: &AgentEvent) -> Option<&Id> {
    match event {
        AgentEvent::ToolResultStart(e) => Some(&e.tool_call_id),
        AgentEvent::ToolResultTextDelta(e) => Some(&e.tool_call_id),
        AgentEvent::ToolResultDataDelta(e) => Some(&e.tool_call_id),
        AgentEvent::ToolResultEnd(e) => Some(&e.tool_call_id),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use towerscope_core::{ReplyEndEvent, RequireUserConfirmEvent, ToolCallState};

    use super::*;

    fn asking(id: &str) -> ToolCallBlock {
        let mut call = ToolCallBlock::new(id, "delete_file", "{}");
        call.state = ToolCallState::Asking;
        call
    }

    fn outcome(event: &AguiEvent) -> Value {
        serde_json::to_value(event).expect("an event is JSON")["outcome"].clone()
    }

    /// A text, an image in 65 base64 pieces, then more of the first text: the result's content
    /// is the one text, as stored (the pieces were 65 blocks, and the text's block out of
    /// reach).
    #[test]
    fn an_image_in_many_pieces_keeps_the_text_around_it_whole() {
        use towerscope_core::{ToolResultEndEvent, ToolResultState, ToolResultTextDeltaEvent};
        let mut mapper = EventMapper::new("t", "r");
        let mut out = Vec::new();
        let mut events: Vec<AgentEvent> = vec![ToolResultStartEvent::new("r1", "c1", "draw").into()];
        events.push(
            ToolResultTextDeltaEvent::new("r1", "c1", "a")
                .with_block_id("t1")
                .into(),
        );
        for _ in 0..65 {
            let piece = DataSource::Base64 {
                data: "aGk=".into(),
                media_type: "image/png".into(),
            };
            events.push(
                ToolResultDataDeltaEvent::new("r1", "c1", piece)
                    .with_block_id("d1")
                    .into(),
            );
        }
        events.push(
            ToolResultTextDeltaEvent::new("r1", "c1", "b")
                .with_block_id("t1")
                .into(),
        );
        events.push(ToolResultEndEvent::new("r1", "c1", ToolResultState::Success, Map::new()).into());
        for event in &events {
            mapper.map(event, &mut out);
        }
        let content = out.iter().find_map(|e| match e {
            AguiEvent::ToolCallResult { content, .. } => Some(content.clone()),
            _ => None,
        });
        assert_eq!(content.as_deref(), Some("ab"));
    }

    #[test]
    fn an_interrupted_reply_ends_cancelled_even_after_asking_for_a_confirmation() {
        let mut mapper = EventMapper::new("t", "r");
        let mut out = Vec::new();
        mapper.map(&RequireUserConfirmEvent::new("r1", vec![asking("a")]).into(), &mut out);
        mapper.map(
            &ReplyEndEvent::new("s", "r1", ReplyFinishedReason::Interrupted).into(),
            &mut out,
        );
        // The interrupt closed the call it had asked about: nothing waits for an answer.
        mapper.settle(|| panic!("a reply that ended is not read as parked"));
        assert_eq!(outcome(&mapper.finish()), json!({"type": "cancelled"}));
    }

    #[test]
    fn a_parked_reply_ends_with_every_call_the_agent_waits_for() {
        let mut mapper = EventMapper::new("t", "r");
        let mut out = Vec::new();
        // The events named one call; the agent waits for another one too.
        mapper.map(&RequireUserConfirmEvent::new("r1", vec![asking("a")]).into(), &mut out);
        let mut external = ToolCallBlock::new("c", "pick_color", "{}");
        external.state = ToolCallState::Submitted;
        mapper.settle(|| {
            Some(WaitingCalls {
                reply_id: "r1".into(),
                confirm: vec![asking("a"), asking("b")],
                external: vec![external],
            })
        });
        let outcome = outcome(&mapper.finish());
        let ids: Vec<&str> = outcome["interrupts"]
            .as_array()
            .expect("interrupts")
            .iter()
            .filter_map(|i| i["toolCallId"].as_str())
            .collect();
        assert_eq!(ids, ["a", "b"], "{outcome}");
    }
}
