//! [`ChannelInput`]: a person's replies sent through a channel (tests, a web front end).

use std::sync::Arc;

use tokio::sync::{Mutex, mpsc};
use towerscope_core::AgentError;

use super::{InputFuture, InputRequest, UserInput, UserReply};

/// Replies fed through a channel: whatever holds the [`ReplySender`] (a test, a web socket
/// handler) types for the person. The input ends when every sender is dropped.
#[derive(Debug, Clone)]
pub struct ChannelInput {
    replies: Arc<Mutex<mpsc::UnboundedReceiver<UserReply>>>,
    prompts: Option<mpsc::UnboundedSender<InputRequest>>,
}

/// Sends replies to a [`ChannelInput`].
#[derive(Debug, Clone)]
pub struct ReplySender {
    tx: mpsc::UnboundedSender<UserReply>,
}

impl ReplySender {
    /// Sends a reply. Fails when the input was dropped.
    pub fn send(&self, reply: UserReply) -> Result<(), AgentError> {
        self.tx.send(reply).map_err(|_| {
            AgentError::State("the user agent's input was dropped; nothing reads replies any more".to_owned())
        })
    }

    /// Sends a reply of one text block.
    pub fn send_text(&self, text: impl Into<String>) -> Result<(), AgentError> {
        self.send(UserReply::text(text))
    }
}

impl ChannelInput {
    /// An input and the sender that feeds it.
    pub fn new() -> (Self, ReplySender) {
        let (tx, rx) = mpsc::unbounded_channel();
        let input = Self {
            replies: Arc::new(Mutex::new(rx)),
            prompts: None,
        };
        (input, ReplySender { tx })
    }

    /// Also sends every request (the prompt, the schema asked for) to `prompts`, so a front end
    /// knows when and what to ask.
    #[must_use]
    pub fn with_prompts(mut self, prompts: mpsc::UnboundedSender<InputRequest>) -> Self {
        self.prompts = Some(prompts);
        self
    }
}

impl UserInput for ChannelInput {
    fn read(&self, request: InputRequest) -> InputFuture {
        if let Some(prompts) = &self.prompts {
            // A front end that went away does not stop the replies already sent.
            let _ = prompts.send(request);
        }
        let replies = Arc::clone(&self.replies);
        Box::pin(async move { Ok(replies.lock().await.recv().await) })
    }
}
