//! Building and sending a reply's items: the [`Emitter`] every step writes to, and the
//! messages and hints the loop makes itself.
//!
//! A streamed reply carries about a hundred events. The emitter builds only the kinds someone
//! reads: events are passed as closures with their kind, and only called when that kind is
//! read. Who reads them: the stream's reader (everything for `Agent::reply_stream`, nothing
//! for [`Agent::reply`](crate::Agent::reply)), and the layers on `on_reply` (and, for a
//! reasoning step's stream, `on_reasoning`), each what its middleware declared with
//! `Middleware::reads_events` (everything unless it said less). What a layer or a stream reader
//! sees is unchanged: every kind it reads is built and sent, in order.

use std::sync::Arc;

use towerscope_core::{AgentError, AgentEvent, EventKinds, EventType, HintBlock, Id, Msg, ReplyItem};

use crate::generator::Yielder;

/// The yielding half of a reply's (or a reasoning step's, or a tool call's) stream.
pub(crate) type Out = Yielder<Result<ReplyItem, AgentError>>;

/// The per-reply marker (a context extension) saying which events are read: by the reply's
/// stream (its reader and the `on_reply` layers), and by a reasoning step's stream (also the
/// `on_reasoning` layers). No marker: every event is read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EventsRead {
    pub(crate) reply: EventKinds,
    pub(crate) reasoning: EventKinds,
}

/// The kinds a model answer's conversion builds (`ChunkConverter`).
pub(crate) const ANSWER_KINDS: EventKinds = EventKinds::of(&[
    EventType::TextBlockStart,
    EventType::TextBlockDelta,
    EventType::TextBlockEnd,
    EventType::DataBlockStart,
    EventType::DataBlockDelta,
    EventType::DataBlockEnd,
    EventType::ThinkingBlockStart,
    EventType::ThinkingBlockDelta,
    EventType::ThinkingBlockEnd,
    EventType::ToolCallStart,
    EventType::ToolCallDelta,
    EventType::ToolCallEnd,
]);

/// The kinds of a tool result's deltas (text or data, known once the block is seen).
pub(crate) const TOOL_RESULT_DELTAS: EventKinds =
    EventKinds::of(&[EventType::ToolResultTextDelta, EventType::ToolResultDataDelta]);

/// Where a step sends its items.
#[derive(Clone)]
pub(crate) struct Emitter {
    out: Out,
    reads: EventKinds,
}

impl Emitter {
    /// Sends to `out`; builds and sends only the events of the kinds in `reads`.
    pub(crate) fn new(out: Out, reads: EventKinds) -> Self {
        Self { out, reads }
    }

    /// The kinds of events built and sent.
    pub(crate) fn reads(&self) -> EventKinds {
        self.reads
    }

    /// Whether any event is built and sent.
    pub(crate) fn wants_events(&self) -> bool {
        !self.reads.is_empty()
    }

    /// Whether events of `kind` are built and sent.
    pub(crate) fn wants(&self, kind: EventType) -> bool {
        self.reads.contains(kind)
    }

    /// Sends the event of kind `kind` that `make` builds, if that kind is read.
    pub(crate) async fn event(&self, kind: EventType, make: impl FnOnce() -> AgentEvent) {
        if self.reads.contains(kind) {
            let event = make();
            debug_assert_eq!(event.event_type(), kind, "an event built under another kind");
            self.out.emit(Ok(ReplyItem::Event(event))).await;
        }
    }

    /// Sends the event `make` builds, one of `kinds`, if it is read (for a step whose event's
    /// kind is known only once built).
    pub(crate) async fn event_of(&self, kinds: EventKinds, make: impl FnOnce() -> AgentEvent) {
        if self.reads.intersects(kinds) {
            self.forward(make()).await;
        }
    }

    /// Sends an event that is already built (one that passed through a layer), if its kind is
    /// read.
    pub(crate) async fn forward(&self, event: AgentEvent) {
        if self.reads.contains(event.event_type()) {
            self.out.emit(Ok(ReplyItem::Event(event))).await;
        }
    }

    /// Sends the final (or candidate final) message.
    pub(crate) async fn final_msg(&self, msg: Msg) {
        self.out.emit(Ok(ReplyItem::Final(msg))).await;
    }

    /// Sends an error; the stream ends after it.
    pub(crate) async fn error(&self, err: AgentError) {
        self.out.emit(Err(err)).await;
    }
}

/// An assistant message of the reply `reply_id` holding one text block.
pub(crate) fn assistant_msg(name: &Arc<str>, reply_id: &Id, text: &str) -> Msg {
    Msg::assistant(Arc::clone(name), text).with_id(reply_id)
}

/// A hint from the system, labelled as the reference labels it.
pub(crate) fn system_hint(sublabel: &str, text: String) -> HintBlock {
    HintBlock::new(
        text,
        Some(format!(r#"{{"label": "System", "sublabel": "{sublabel}"}}"#)),
    )
}
