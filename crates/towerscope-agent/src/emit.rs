//! Building and sending a reply's items: the [`Emitter`] every step writes to, and the
//! messages and hints the loop makes itself.
//!
//! A streamed reply carries a few dozen events. When nobody can read them (the caller asked
//! for the final message only, [`Agent::reply`](crate::Agent::reply), and no layer is
//! installed on `on_reply` or `on_reasoning`), the emitter does not build them: events are
//! passed as closures and only called when they will be read. What a layer or a stream reader
//! sees is unchanged: with either installed, every event is built.

use std::sync::Arc;

use towerscope_core::{AgentError, AgentEvent, HintBlock, Id, Msg, ReplyItem};

use crate::generator::Yielder;

/// The yielding half of a reply's (or a reasoning step's, or a tool call's) stream.
pub(crate) type Out = Yielder<Result<ReplyItem, AgentError>>;

/// The per-reply marker (a context extension) saying nobody reads the events.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EventsUnread;

/// Where a step sends its items.
#[derive(Clone)]
pub(crate) struct Emitter {
    out: Out,
    events: bool,
}

impl Emitter {
    /// Sends to `out`; builds events only when `events` is true.
    pub(crate) fn new(out: Out, events: bool) -> Self {
        Self { out, events }
    }

    /// Whether events are built and sent.
    pub(crate) fn wants_events(&self) -> bool {
        self.events
    }

    /// Sends the event `make` builds, if events are read.
    pub(crate) async fn event(&self, make: impl FnOnce() -> AgentEvent) {
        if self.events {
            self.out.emit(Ok(ReplyItem::Event(make()))).await;
        }
    }

    /// Sends an event that is already built (one that passed through a layer), if events are
    /// read.
    pub(crate) async fn forward(&self, event: AgentEvent) {
        if self.events {
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
