//! [`Participant`]: the interface of anything that takes part in a conversation.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_core::{AgentError, EventStream, Id, Msg, ReplyInput, ReplyItem};
use towerscope_layers::Hooks;

use crate::hub::Broadcaster;

/// The future of [`Participant::reply`]: the final message.
pub type ReplyFuture = Pin<Box<dyn Future<Output = Result<Msg, AgentError>> + Send>>;

/// Anything that takes part in a conversation: an [`Agent`], a
/// [`UserAgent`](crate::user::UserAgent), a pipeline of participants.
///
/// Object safe: `Vec<Arc<dyn Participant>>` holds agents, people and pipelines alike, and a
/// pipeline is a participant of another. `Arc<P>` is a participant when `P` is.
///
/// # Contract
///
/// - [`reply_stream`](Self::reply_stream) streams events and ends with exactly one
///   [`ReplyItem::Final`] message, as [`Agent::reply_stream`] does. A final message whose
///   `finished_reason` is `None` means the reply is parked for the user (a confirmation or an
///   external tool); resuming inputs (`ReplyInput::Confirm`, `External`, `Interrupt`) carry the
///   parked reply's id.
/// - [`observe`](Self::observe) never loses a message: a participant that cannot take it now
///   (an agent in the middle of a reply) keeps it until it can. It fails only for messages it
///   will never accept.
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use towerscope_agent::Agent;
/// use towerscope_core::Msg;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
/// use towerscope_team::Participant;
/// use towerscope_team::user::{ChannelInput, UserAgent};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), towerscope_core::AgentError> {
/// let (input, typed) = ChannelInput::new();
/// let people: Vec<Arc<dyn Participant>> = vec![
///     Arc::new(Agent::builder("bot").model(ScriptedModel::new("m", [ScriptedResponse::text("Hi!")])).build()?),
///     Arc::new(UserAgent::new("ann").with_input(input)),
/// ];
/// typed.send_text("Hello bot.")?;
/// let mut said = Vec::new();
/// for p in &people {
///     let msg = p.reply(Msg::user("host", "Say something.").into()).await?;
///     said.push(format!("{}: {}", p.name(), msg.text_content().unwrap_or_default()));
/// }
/// assert_eq!(said, ["bot: Hi!", "ann: Hello bot."]);
/// # Ok(()) }
/// ```
pub trait Participant: Send + Sync + 'static {
    /// The participant's name (what others see as the speaker).
    fn name(&self) -> &str;

    /// Streams a reply to `input`: events, then the final message.
    fn reply_stream(&self, input: ReplyInput) -> EventStream;

    /// Replies to `input` and returns the final message.
    fn reply(&self, input: ReplyInput) -> ReplyFuture {
        Box::pin(final_msg(self.reply_stream(input)))
    }

    /// Adds messages to what the participant knows, without a reply; kept until it can take
    /// them (see the [contract](Self#contract)).
    fn observe(&self, msgs: Vec<Msg>) -> Result<(), AgentError>;

    /// Interrupts the running reply. Returns whether one was running.
    fn interrupt(&self) -> bool;

    /// The id of the reply this participant is parked in, waiting for the user or for a result
    /// from outside, if it is (default: `None`). A pipeline asks its members when their
    /// stream ended without saying so (it failed, or was dropped while the member parked),
    /// so that the resume naming that reply still reaches the member.
    fn parked_reply(&self) -> Option<Id> {
        None
    }

    /// Whether a resume naming `reply` is for this participant: it is parked in that reply
    /// (default: [`parked_reply`](Self::parked_reply) is that reply), or, a pipeline, one of
    /// its members is (a fan-out with several members parked waits on each).
    fn waits_on(&self, reply: &Id) -> bool {
        self.parked_reply().as_ref() == Some(reply)
    }

    /// The broadcaster that shares this participant's replies with the hubs it is in, if it has
    /// one (an agent built with a [`Broadcaster`] middleware; a user agent always).
    fn broadcaster(&self) -> Option<&Broadcaster> {
        None
    }

    /// The hooks whose `pre_print`/`post_print` hooks a console runs around printing this
    /// participant's messages (an agent's installed [`Hooks`]).
    fn print_hooks(&self) -> Option<&Hooks> {
        None
    }
}

impl std::fmt::Debug for dyn Participant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Participant")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

/// The final message of a reply stream: the last [`ReplyItem::Final`], or the stream's error.
pub async fn final_msg(mut stream: EventStream) -> Result<Msg, AgentError> {
    let mut last = None;
    while let Some(item) = stream.next().await {
        if let ReplyItem::Final(m) = item? {
            last = Some(m);
        }
    }
    last.ok_or_else(|| AgentError::State("the reply stream ended without a final message".to_owned()))
}

/// Gives a parked reply's waiting message `msg` the parked reply's id, which a resume names
/// (as the `REQUIRE_*` events do): an `on_reply` layer or hook may have replaced that message
/// with one of its own, under a new id, and a pipeline keeps the id of the message it was
/// given. Other messages are left as they are.
pub(crate) fn named_by_its_reply(agent: &Agent, msg: &mut Msg) {
    if msg.finished_reason.is_none()
        && let Some(waiting) = agent.waiting_calls()
    {
        msg.id = waiting.reply_id;
    }
}

/// An agent replies, observes (when free: [`Agent::observe_when_free`]) and is interrupted as
/// itself; its broadcaster and hooks are the ones installed with `AgentBuilder::middleware`.
impl Participant for Agent {
    fn name(&self) -> &str {
        Agent::name(self)
    }

    /// The agent's stream, its parked reply's waiting message under that reply's id, which a
    /// resume names (an `on_reply` layer or hook may have replaced that message with one of
    /// its own, under a new id).
    fn reply_stream(&self, input: ReplyInput) -> EventStream {
        let agent = self.clone();
        Box::pin(Agent::reply_stream(self, input).map(move |item| match item {
            Ok(ReplyItem::Final(mut msg)) => {
                named_by_its_reply(&agent, &mut msg);
                Ok(ReplyItem::Final(msg))
            }
            item => item,
        }))
    }

    fn reply(&self, input: ReplyInput) -> ReplyFuture {
        let agent = self.clone();
        Box::pin(async move {
            let mut msg = agent.reply(input).await?;
            named_by_its_reply(&agent, &mut msg);
            Ok(msg)
        })
    }

    fn observe(&self, msgs: Vec<Msg>) -> Result<(), AgentError> {
        self.observe_when_free(msgs).map(|_| ())
    }

    fn interrupt(&self) -> bool {
        Agent::interrupt(self)
    }

    fn parked_reply(&self) -> Option<Id> {
        self.waiting_calls().map(|w| w.reply_id)
    }

    fn broadcaster(&self) -> Option<&Broadcaster> {
        self.middleware::<Broadcaster>()
    }

    fn print_hooks(&self) -> Option<&Hooks> {
        self.middleware::<Hooks>()
    }
}

impl<P: Participant + ?Sized> Participant for Arc<P> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn reply_stream(&self, input: ReplyInput) -> EventStream {
        (**self).reply_stream(input)
    }

    fn reply(&self, input: ReplyInput) -> ReplyFuture {
        (**self).reply(input)
    }

    fn observe(&self, msgs: Vec<Msg>) -> Result<(), AgentError> {
        (**self).observe(msgs)
    }

    fn interrupt(&self) -> bool {
        (**self).interrupt()
    }

    fn parked_reply(&self) -> Option<Id> {
        (**self).parked_reply()
    }

    fn waits_on(&self, reply: &Id) -> bool {
        (**self).waits_on(reply)
    }

    fn broadcaster(&self) -> Option<&Broadcaster> {
        (**self).broadcaster()
    }

    fn print_hooks(&self) -> Option<&Hooks> {
        (**self).print_hooks()
    }
}
