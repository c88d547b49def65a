//! [`merge`]: several reply streams as one, each item tagged with its speaker (the reference's
//! `stream_printing_messages`).

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;

use futures_core::Stream;
use futures_util::StreamExt;
use towerscope_core::{AgentError, EventStream, ReplyItem};

/// One item of a [`MergedStream`]: who said it, and the item (an event, the speaker's final
/// message, or the error that ended the speaker's stream).
#[derive(Debug)]
pub struct Tagged {
    /// The speaker's name.
    pub agent: Arc<str>,
    /// The item of the speaker's reply stream.
    pub item: Result<ReplyItem, AgentError>,
}

impl Tagged {
    /// `item` said by `agent`.
    pub fn new(agent: impl Into<Arc<str>>, item: Result<ReplyItem, AgentError>) -> Self {
        Self {
            agent: agent.into(),
            item,
        }
    }
}

/// Several speakers' reply streams as one, in the order items arrive; a speaker's error ends
/// its own stream only.
pub type MergedStream = Pin<Box<dyn Stream<Item = Tagged> + Send>>;

/// One speaker's stream, tagged.
pub fn tag(agent: impl Into<Arc<str>>, stream: EventStream) -> MergedStream {
    let agent: Arc<str> = agent.into();
    Box::pin(stream.map(move |item| Tagged {
        agent: Arc::clone(&agent),
        item,
    }))
}

/// Merges named reply streams: they run concurrently (polled together, no task spawned) and
/// their items come out as they arrive, each tagged with its speaker.
///
/// # Example
///
/// ```
/// use futures_util::StreamExt;
/// use towerscope_agent::Agent;
/// use towerscope_core::{Msg, ReplyItem};
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
/// use towerscope_team::pipeline::merge;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), towerscope_core::AgentError> {
/// let agent = |name: &str| {
///     Agent::builder(name).model(ScriptedModel::new("m", [ScriptedResponse::text(format!("I am {name}."))])).build()
/// };
/// let (a, b) = (agent("a")?, agent("b")?);
/// let mut merged = merge([
///     ("a", Box::pin(a.reply_stream(Msg::user("user", "Who are you?"))) as _),
///     ("b", Box::pin(b.reply_stream(Msg::user("user", "Who are you?"))) as _),
/// ]);
/// let mut finals = Vec::new();
/// while let Some(tagged) = merged.next().await {
///     if let ReplyItem::Final(msg) = tagged.item? {
///         finals.push(format!("{}: {}", tagged.agent, msg.text_content().unwrap_or_default()));
///     }
/// }
/// finals.sort();
/// assert_eq!(finals, ["a: I am a.", "b: I am b."]);
/// # Ok(()) }
/// ```
pub fn merge<N: Into<Arc<str>>>(streams: impl IntoIterator<Item = (N, EventStream)>) -> MergedStream {
    Box::pin(futures_util::stream::select_all(
        streams.into_iter().map(|(name, stream)| tag(name, stream)),
    ))
}

impl fmt::Display for Tagged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.item {
            Ok(ReplyItem::Event(e)) => write!(f, "{}: {}", self.agent, e.event_type().as_str()),
            Ok(ReplyItem::Final(m)) => write!(f, "{}: final {}", self.agent, m.text_content().unwrap_or_default()),
            Err(e) => write!(f, "{}: error {e}", self.agent),
        }
    }
}
