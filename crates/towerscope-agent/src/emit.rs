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

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use towerscope_core::{
    AgentContext, AgentError, AgentEvent, EventKinds, EventStream, EventType, HintBlock, Id, Msg, ReasoningRequest,
    ReplyItem,
};

use crate::generator::{Emit, Yielder};

/// The yielding half of a reply's (or a reasoning step's, or a tool call's) stream.
pub(crate) type Out = Yielder<Result<ReplyItem, AgentError>>;

/// What the layers on `on_reply` and `on_reasoning` read, as their middlewares declared
/// (`Middleware::reads_events`); all for a layer pushed on a stack directly.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LayersRead {
    pub(crate) reply: EventKinds,
    pub(crate) reasoning: EventKinds,
    /// Whether any layer is installed on `on_reply` or `on_reasoning`.
    pub(crate) installed: bool,
}

/// Who reads a reply's events: a context extension the agent adds when a layer is installed on
/// `on_reply` or `on_reasoning`, or when the caller reads less than every event. No plan: every
/// event is read.
///
/// A layer can read a stream's events only by wrapping the stream. When a stack hands back the
/// very stream its innermost service made (the same live allocation: pass-through layers,
/// layers that act before the call and not on the events), no layer reads its events, whatever
/// the layers declared: then the reply's events are built only for its caller, and a reasoning
/// step runs inline on the reply's emitter, as with no `on_reasoning` layer at all. What any
/// layer or reader sees is unchanged.
#[derive(Clone, Debug)]
pub(crate) struct EventsRead {
    caller: EventKinds,
    /// `None` with no layer on `on_reply` or `on_reasoning` (nothing to note: no allocation).
    plan: Option<Arc<ReadPlan>>,
}

#[derive(Debug)]
struct ReadPlan {
    layers: LayersRead,
    /// The address of the newest stream the innermost `on_reply` service made.
    reply_stream: AtomicUsize,
    /// Whether the `on_reply` stack handed that stream back unwrapped.
    reply_unwrapped: AtomicBool,
    /// The requests of the reasoning steps the innermost `on_reasoning` service made whose
    /// streams are alive and not polled yet, by the address of their stream (usually one). A
    /// step takes its request out when first polled, and out it goes when the step is dropped,
    /// so an address here is always that of a live step's stream.
    reasoning: Mutex<HeldSteps>,
    /// How many requests `reasoning` holds (changed under its lock): a step dropped after its
    /// request was taken, the usual case, finds none without taking the lock.
    held: AtomicUsize,
}

/// The requests held for unpolled steps: one in place (a reply runs one step at a time), more
/// only when a layer makes several steps at once.
#[derive(Debug, Default)]
struct HeldSteps {
    first: Option<(usize, ReasoningRequest)>,
    more: Vec<(usize, ReasoningRequest)>,
}

/// The address of a stream's allocation (the identity of a live boxed stream).
fn address(stream: &EventStream) -> usize {
    // The boxed stream itself: `&EventStream` would also coerce to `&dyn Stream` (a pinned box
    // is a stream), giving the address of the box instead of its contents.
    address_of(std::pin::Pin::get_ref(stream.as_ref()))
}

/// Where `value` lives: what identifies a boxed stream by its contents (see [`EventsRead`]).
pub(crate) fn address_of<T: ?Sized>(value: &T) -> usize {
    std::ptr::from_ref(value).cast::<()>() as usize
}

impl EventsRead {
    /// The plan of a reply whose caller reads `caller`.
    pub(crate) fn new(caller: EventKinds, layers: LayersRead) -> Self {
        let plan = layers.installed.then(|| {
            Arc::new(ReadPlan {
                layers,
                reply_stream: AtomicUsize::new(0),
                reply_unwrapped: AtomicBool::new(false),
                reasoning: Mutex::new(HeldSteps::default()),
                held: AtomicUsize::new(0),
            })
        });
        Self { caller, plan }
    }

    /// The plan in `ctx`, if any.
    pub(crate) fn of(ctx: &AgentContext) -> Option<Self> {
        ctx.get::<Self>()
    }

    /// The kinds the reply's stream carries: its caller's, and its layers' unless the
    /// `on_reply` stack handed the stream back unwrapped.
    pub(crate) fn reply(&self) -> EventKinds {
        match &self.plan {
            Some(plan) if !plan.reply_unwrapped.load(Ordering::Acquire) => self.caller.union(plan.layers.reply),
            _ => self.caller,
        }
    }

    /// The kinds a reasoning step's stream carries when an `on_reasoning` layer wraps it.
    pub(crate) fn reasoning(&self) -> EventKinds {
        let layers = self.plan.as_ref().map_or(EventKinds::NONE, |p| p.layers.reasoning);
        self.reply().union(layers)
    }

    /// Notes the stream the innermost `on_reply` service made.
    pub(crate) fn made_reply_stream(&self, stream: &EventStream) {
        if let Some(plan) = &self.plan {
            plan.reply_stream.store(address(stream), Ordering::Release);
            plan.reply_unwrapped.store(false, Ordering::Release);
        }
    }

    /// Notes the stream the `on_reply` stack answered with: when it is the innermost one
    /// (still alive: it is the one handed back), no `on_reply` layer reads the events.
    pub(crate) fn answered_reply_stream(&self, stream: &EventStream) {
        if let Some(plan) = &self.plan {
            let unwrapped = plan.reply_stream.load(Ordering::Acquire) == address(stream);
            plan.reply_unwrapped.store(unwrapped, Ordering::Release);
        }
    }

    /// Holds the request of the step the innermost `on_reasoning` service made, until its
    /// stream (at `address`) is first polled or dropped; `Err` gives the request back when
    /// there is nothing to note (no layer installed).
    pub(crate) fn hold_step(&self, address: usize, request: ReasoningRequest) -> Result<(), ReasoningRequest> {
        let Some(plan) = &self.plan else {
            return Err(request);
        };
        let mut held = plan.reasoning.lock().unwrap_or_else(PoisonError::into_inner);
        match held.first {
            None => held.first = Some((address, request)),
            Some(_) => held.more.push((address, request)),
        }
        plan.held.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// The request held for the step whose stream is at `address` (taken out).
    pub(crate) fn take_step(&self, address: usize) -> Option<ReasoningRequest> {
        let plan = self.plan.as_ref()?;
        if plan.held.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut held = plan.reasoning.lock().unwrap_or_else(PoisonError::into_inner);
        let taken = if held.first.as_ref().is_some_and(|(at, _)| *at == address) {
            let taken = held.first.take();
            if !held.more.is_empty() {
                held.first = Some(held.more.swap_remove(0));
            }
            taken
        } else {
            let index = held.more.iter().position(|(at, _)| *at == address)?;
            Some(held.more.swap_remove(index))
        };
        plan.held.fetch_sub(1, Ordering::AcqRel);
        taken.map(|(_, request)| request)
    }

    /// The request of the step whose stream the `on_reasoning` stack answered with, when that
    /// stream is the step's own, unwrapped and never polled: the caller runs the step itself
    /// instead of reading the stream.
    pub(crate) fn unwrapped_step(&self, stream: &EventStream) -> Option<ReasoningRequest> {
        self.take_step(address(stream))
    }
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

    // The senders below are plain functions returning the one-byte `Emit`, not `async fn`s: an
    // `async fn` keeps its argument (an event, a message: 200-250 bytes) in its future across
    // the await, and every step that emits carried that future inline (a reply in flight held
    // several of them).

    /// Sends the event of kind `kind` that `make` builds, if that kind is read.
    pub(crate) fn event(&self, kind: EventType, make: impl FnOnce() -> AgentEvent) -> Emit {
        if !self.reads.contains(kind) {
            return Emit::skipped();
        }
        let event = make();
        debug_assert_eq!(event.event_type(), kind, "an event built under another kind");
        self.out.emit(Ok(ReplyItem::Event(event)))
    }

    /// Sends the event `make` builds, one of `kinds`, if it is read (for a step whose event's
    /// kind is known only once built).
    pub(crate) fn event_of(&self, kinds: EventKinds, make: impl FnOnce() -> AgentEvent) -> Emit {
        if self.reads.intersects(kinds) {
            self.forward(make())
        } else {
            Emit::skipped()
        }
    }

    /// Sends an event that is already built (one that passed through a layer), if its kind is
    /// read.
    pub(crate) fn forward(&self, event: AgentEvent) -> Emit {
        if self.reads.contains(event.event_type()) {
            self.out.emit(Ok(ReplyItem::Event(event)))
        } else {
            Emit::skipped()
        }
    }

    /// [`forward`](Self::forward) for an event that may not exist. Taking the `Option` whole
    /// keeps it out of the caller's future (an `if let` holds its scrutinee across the await).
    pub(crate) fn forward_some(&self, event: Option<AgentEvent>) -> Emit {
        match event {
            Some(event) => self.forward(event),
            None => Emit::skipped(),
        }
    }

    /// Sends the final (or candidate final) message.
    pub(crate) fn final_msg(&self, msg: Msg) -> Emit {
        self.out.emit(Ok(ReplyItem::Final(msg)))
    }

    /// Sends an error; the stream ends after it.
    pub(crate) fn error(&self, err: AgentError) -> Emit {
        self.out.emit(Err(err))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> EventsRead {
        let layers = LayersRead {
            reply: EventKinds::ALL,
            reasoning: EventKinds::ALL,
            installed: true,
        };
        EventsRead::new(EventKinds::NONE, layers)
    }

    fn step(plan: &EventsRead) -> EventStream {
        let req = ReasoningRequest {
            ctx: AgentContext::new("a", "s", "r"),
            tool_choice: None,
        };
        // A stream with state, so that it has an allocation of its own.
        let stream: EventStream = Box::pin(futures_util::StreamExt::chain(
            futures_util::stream::empty(),
            futures_util::stream::empty(),
        ));
        assert!(plan.hold_step(address(&stream), req).is_ok());
        stream
    }

    #[test]
    fn the_step_whose_own_stream_comes_back_is_run_by_the_caller() {
        let plan = plan();
        let stream = step(&plan);
        assert!(plan.unwrapped_step(&stream).is_some());
        // Taken once only.
        assert!(plan.unwrapped_step(&stream).is_none());
    }

    #[test]
    fn a_wrapped_step_is_not_and_keeps_its_request() {
        let plan = plan();
        let stream = step(&plan);
        let at = address(&stream);
        let wrapped: EventStream = Box::pin(stream);
        assert!(plan.unwrapped_step(&wrapped).is_none());
        assert!(plan.take_step(at).is_some(), "the step still finds its request");
    }

    #[test]
    fn steps_made_at_once_each_find_their_own_request_in_any_order() {
        let plan = plan();
        let request = |iteration: u32| ReasoningRequest {
            ctx: AgentContext::new("a", "s", "r").with_iteration(iteration),
            tool_choice: None,
        };
        for (at, iteration) in [(10, 1), (20, 2), (30, 3), (40, 4)] {
            assert!(plan.hold_step(at, request(iteration)).is_ok());
        }
        for (at, iteration) in [(20, 2), (10, 1), (40, 4)] {
            let taken = plan.take_step(at).map(|r| r.ctx.iteration());
            assert_eq!(taken, Some(iteration), "the request held for {at}");
            assert!(plan.take_step(at).is_none(), "taken once only");
        }
        assert!(plan.take_step(99).is_none(), "an address never held");
        assert_eq!(plan.take_step(30).map(|r| r.ctx.iteration()), Some(3));
        assert!(plan.take_step(30).is_none(), "none left");
        assert!(plan.hold_step(50, request(5)).is_ok(), "held again once emptied");
        assert_eq!(plan.take_step(50).map(|r| r.ctx.iteration()), Some(5));
    }

    #[test]
    fn without_layers_nothing_is_held() {
        let layers = LayersRead {
            reply: EventKinds::NONE,
            reasoning: EventKinds::NONE,
            installed: false,
        };
        let plan = EventsRead::new(EventKinds::ALL, layers);
        let req = ReasoningRequest {
            ctx: AgentContext::new("a", "s", "r"),
            tool_choice: None,
        };
        assert!(plan.hold_step(1, req).is_err());
    }

    #[test]
    fn a_reply_stream_handed_back_unwrapped_is_read_by_its_caller_only() {
        let plan = plan();
        let stream: EventStream = Box::pin(futures_util::StreamExt::chain(
            futures_util::stream::empty(),
            futures_util::stream::empty(),
        ));
        plan.made_reply_stream(&stream);
        assert_eq!(plan.reply(), EventKinds::ALL);
        plan.answered_reply_stream(&stream);
        assert_eq!(plan.reply(), EventKinds::NONE);
        let wrapped: EventStream = Box::pin(stream);
        plan.answered_reply_stream(&wrapped);
        assert_eq!(plan.reply(), EventKinds::ALL);
    }
}
