//! [`UserAgent`]: a person as a participant.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::StreamExt;
use tokio::sync::Notify;
use towerscope_core::{
    AgentError, AgentEvent, ContentBlock, DataBlockDeltaEvent, DataBlockEndEvent, DataBlockStartEvent, EventStream, Id,
    Msg, ReplyEndEvent, ReplyFinishedReason, ReplyInput, ReplyItem, ReplyStartEvent, Role, StructuredSchema,
    TextBlockDeltaEvent, TextBlockEndEvent, TextBlockStartEvent,
};
use towerscope_layers::Hooks;

use super::{InputRequest, TerminalInput, UserInput, UserReply};
use crate::Participant;
use crate::hub::Broadcaster;

/// The agent waits for the person's reply.
const REPLYING: u8 = 1;
/// An interrupt was asked for the reply waiting.
const INTERRUPT: u8 = 2;

/// How many observed messages a user agent keeps unless told otherwise.
pub const DEFAULT_OBSERVED_LIMIT: usize = 1_000;

/// The newest messages the person was shown, at most `limit`.
struct Observed {
    msgs: VecDeque<Msg>,
    limit: usize,
}

impl Observed {
    fn extend(&mut self, msgs: impl IntoIterator<Item = Msg>) {
        self.msgs.extend(msgs);
        let over = self.msgs.len().saturating_sub(self.limit);
        self.msgs.drain(..over);
    }
}

/// What every clone of a user agent shares.
struct Shared {
    observed: Mutex<Observed>,
    /// [`REPLYING`] and [`INTERRUPT`]: one word, so that a reply's start clears an earlier
    /// interrupt in the same step that marks it replying (an interrupt landing between the two
    /// was lost).
    status: AtomicU8,
    interrupt: Notify,
    session: Id,
}

/// A person taking part in the conversation: each reply is read from a [`UserInput`] (the
/// terminal by default).
///
/// Its reply stream has the events of any agent's (`REPLY_START` with role `user`, a text block
/// start, delta and end per text, data blocks, `REPLY_END`), so renderers and recorders show a
/// person like an agent; the final message is a user message named after the agent, with the
/// structured data the input attached as its `structured_output`. It has its own
/// [`Broadcaster`], so in a hub the others hear what the person says. `observe` keeps what the
/// person was shown ([`observed`](Self::observed), the newest
/// [`DEFAULT_OBSERVED_LIMIT`] unless [`with_observed_limit`](Self::with_observed_limit) says
/// otherwise, so a long chat does not grow it without end; [`take_observed`](Self::take_observed)
/// empties it); `interrupt` gives up the read in progress (the reply ends interrupted).
///
/// # Example
///
/// ```
/// use futures_util::StreamExt;
/// use towerscope_core::{Msg, ReplyItem};
/// use towerscope_team::user::{ChannelInput, UserAgent, UserReply};
/// use towerscope_team::Participant;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), towerscope_core::AgentError> {
/// let (input, person) = ChannelInput::new();
/// let user = UserAgent::new("ann").with_input(input);
/// let mut data = serde_json::Map::new();
/// data.insert("rating".into(), 5.into());
/// person.send(UserReply::text("Loved it.").with_structured(data))?;
///
/// let mut kinds = Vec::new();
/// let mut stream = user.reply_stream(Msg::user("bot", "How was it?").into());
/// while let Some(item) = stream.next().await {
///     match item? {
///         ReplyItem::Event(e) => kinds.push(e.event_type().as_str()),
///         ReplyItem::Final(msg) => {
///             assert_eq!(msg.text_content().as_deref(), Some("Loved it."));
///             assert_eq!(msg.structured_output.as_ref().and_then(|d| d.get("rating")), Some(&5.into()));
///         }
///     }
/// }
/// assert_eq!(kinds, ["REPLY_START", "TEXT_BLOCK_START", "TEXT_BLOCK_DELTA", "TEXT_BLOCK_END", "REPLY_END"]);
/// assert_eq!(user.observed()[0].text_content().as_deref(), Some("How was it?"));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct UserAgent {
    name: Arc<str>,
    input: Arc<dyn UserInput>,
    broadcaster: Broadcaster,
    hooks: Option<Hooks>,
    shared: Arc<Shared>,
}

impl UserAgent {
    /// A person named `name`, typing at the terminal.
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        Self {
            name: name.into(),
            input: Arc::new(TerminalInput::new()),
            broadcaster: Broadcaster::new(),
            hooks: None,
            shared: Arc::new(Shared {
                observed: Mutex::new(Observed {
                    msgs: VecDeque::new(),
                    limit: DEFAULT_OBSERVED_LIMIT,
                }),
                status: AtomicU8::new(0),
                interrupt: Notify::new(),
                session: Id::new(),
            }),
        }
    }

    /// Reads replies from `input` instead.
    #[must_use]
    pub fn with_input(mut self, input: impl UserInput) -> Self {
        self.input = Arc::new(input);
        self
    }

    /// Hooks whose print hooks a console runs around printing this person's messages.
    #[must_use]
    pub fn with_print_hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// Keeps at most the newest `limit` observed messages (default
    /// [`DEFAULT_OBSERVED_LIMIT`]; 0 keeps none). Shared by every clone of this agent.
    #[must_use]
    pub fn with_observed_limit(self, limit: usize) -> Self {
        let mut observed = self.lock_observed();
        observed.limit = limit;
        observed.extend([]);
        drop(observed);
        self
    }

    /// What the person was shown with `observe` (and the messages its replies answered), in
    /// order: the newest, up to the agent's limit.
    pub fn observed(&self) -> Vec<Msg> {
        self.lock_observed().msgs.iter().cloned().collect()
    }

    /// Like [`observed`](Self::observed), and forgets them: the next call returns only what
    /// was shown since.
    pub fn take_observed(&self) -> Vec<Msg> {
        self.lock_observed().msgs.drain(..).collect()
    }

    fn lock_observed(&self) -> std::sync::MutexGuard<'_, Observed> {
        self.shared.observed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads the person's next message (prompt `{name}> `), without the reply's events; `None`
    /// when the input has ended. The console's chat reads with this.
    pub async fn next_message(&self) -> Result<Option<Msg>, AgentError> {
        let request = InputRequest::new(format!("{}> ", self.name));
        match self.input.read(request).await? {
            Some(reply) => self.message(reply).map(Some),
            None => Ok(None),
        }
    }

    /// Asks the person `prompt` and reads their answer's text (a console's confirmations);
    /// `None` when the input has ended.
    pub async fn ask(&self, prompt: &str) -> Result<Option<String>, AgentError> {
        Ok(self
            .input
            .read(InputRequest::new(prompt))
            .await?
            .map(|reply| reply.text_content()))
    }

    /// A reply that must carry structured data of `schema` (the input is asked for it).
    pub fn reply_stream_structured(&self, input: ReplyInput, schema: StructuredSchema) -> EventStream {
        self.start(input, Some(Arc::new(schema)))
    }

    fn message(&self, reply: UserReply) -> Result<Msg, AgentError> {
        let mut msg = Msg::new(Arc::clone(&self.name), Role::User, reply.content)?;
        msg.structured_output = reply.structured;
        msg.finished_reason = Some(ReplyFinishedReason::Completed);
        Ok(msg)
    }

    fn start(&self, input: ReplyInput, structured: Option<Arc<StructuredSchema>>) -> EventStream {
        let msgs = match input {
            ReplyInput::Messages(msgs) => msgs,
            _ => {
                return failed(AgentError::validation(format!(
                    "user agent '{}' never waits for a confirmation or a tool, so it has no reply to resume",
                    self.name
                )));
            }
        };
        // Replying from now, and an interrupt asked for an earlier reply is not this one's; the
        // reply waiting keeps an interrupt asked for it.
        let started = self
            .shared
            .status
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                (s & REPLYING == 0).then_some(REPLYING)
            });
        if started.is_err() {
            return failed(AgentError::State(format!(
                "user agent '{}' is already waiting for the person's reply",
                self.name
            )));
        }
        // Held by the stream from now: dropping it, even before it is read, frees the agent.
        let replying = Replying(Arc::clone(&self.shared));
        self.lock_observed().extend(msgs.iter().cloned());
        let this = self.clone();
        let request = InputRequest {
            prompt: format!("{}> ", self.name),
            structured,
        };
        let reply = async move {
            let _replying = replying;
            let mut interrupted = std::pin::pin!(this.shared.interrupt.notified());
            interrupted.as_mut().enable();
            if this.shared.status.fetch_and(!INTERRUPT, Ordering::AcqRel) & INTERRUPT != 0 {
                return futures_util::stream::iter(this.interrupted());
            }
            let read = std::pin::pin!(this.input.read(request));
            let items = match futures_util::future::select(read, interrupted).await {
                futures_util::future::Either::Left((Ok(Some(reply)), _)) => match this.message(reply) {
                    Ok(msg) => this.events(msg),
                    Err(e) => vec![Err(e)],
                },
                futures_util::future::Either::Left((Ok(None), _)) => vec![Err(AgentError::State(format!(
                    "the input of user agent '{}' has ended",
                    this.name
                )))],
                futures_util::future::Either::Left((Err(e), _)) => vec![Err(e)],
                futures_util::future::Either::Right(((), _)) => this.interrupted(),
            };
            futures_util::stream::iter(items)
        };
        Box::pin(futures_util::stream::once(reply).flatten())
    }

    /// The events of a reply, then the reply (shared with the hubs the person is in).
    fn events(&self, msg: Msg) -> Vec<Result<ReplyItem, AgentError>> {
        let reply = msg.id.clone();
        let mut start = ReplyStartEvent::new(self.shared.session.clone(), reply.clone(), Arc::clone(&self.name));
        start.role = Role::User;
        let mut events: Vec<AgentEvent> = vec![start.into()];
        for block in &msg.content {
            match block {
                ContentBlock::Text(t) => {
                    events.push(TextBlockStartEvent::new(reply.clone(), t.id.clone()).into());
                    events.push(TextBlockDeltaEvent::new(reply.clone(), t.id.clone(), t.text.clone()).into());
                    events.push(TextBlockEndEvent::new(reply.clone(), t.id.clone()).into());
                }
                ContentBlock::Data(d) => {
                    let media = d.source.media_type().to_owned();
                    events.push(DataBlockStartEvent::new(reply.clone(), d.id.clone(), media).into());
                    events.push(DataBlockDeltaEvent::new(reply.clone(), d.id.clone(), d.source.clone()).into());
                    events.push(DataBlockEndEvent::new(reply.clone(), d.id.clone()).into());
                }
                _ => {}
            }
        }
        events.push(ReplyEndEvent::new(self.shared.session.clone(), reply, ReplyFinishedReason::Completed).into());
        self.broadcaster.broadcast(&msg);
        let mut items: Vec<_> = events.into_iter().map(|e| Ok(ReplyItem::Event(e))).collect();
        items.push(Ok(ReplyItem::Final(msg)));
        items
    }

    fn interrupted(&self) -> Vec<Result<ReplyItem, AgentError>> {
        let mut msg = Msg::assistant_blocks(Arc::clone(&self.name), Vec::new());
        msg.role = Role::User;
        msg.finished_reason = Some(ReplyFinishedReason::Interrupted);
        let end = ReplyEndEvent::new(
            self.shared.session.clone(),
            msg.id.clone(),
            ReplyFinishedReason::Interrupted,
        );
        vec![Ok(ReplyItem::Event(end.into())), Ok(ReplyItem::Final(msg))]
    }
}

/// Marks the user agent as waiting for the person until the reply's stream ends or is dropped
/// (read or not).
struct Replying(Arc<Shared>);

impl Drop for Replying {
    fn drop(&mut self) {
        self.0.status.store(0, Ordering::Release);
    }
}

fn failed(err: AgentError) -> EventStream {
    Box::pin(futures_util::stream::iter([Err(err)]))
}

impl Participant for UserAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn reply_stream(&self, input: ReplyInput) -> EventStream {
        self.start(input, None)
    }

    /// Keeps the messages as what the person was shown; never refuses.
    fn observe(&self, msgs: Vec<Msg>) -> Result<(), AgentError> {
        self.lock_observed().extend(msgs);
        Ok(())
    }

    fn interrupt(&self) -> bool {
        let asked = self
            .shared
            .status
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                (s & REPLYING != 0).then_some(s | INTERRUPT)
            });
        if asked.is_err() {
            return false;
        }
        self.shared.interrupt.notify_waiters();
        true
    }

    fn broadcaster(&self) -> Option<&Broadcaster> {
        Some(&self.broadcaster)
    }

    fn print_hooks(&self) -> Option<&Hooks> {
        self.hooks.as_ref()
    }
}

impl fmt::Debug for UserAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserAgent")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
