//! [`Chat`]: a person and a participant talking in the terminal, with confirmations and Ctrl-C.

use std::fmt;
use std::io::{Stdout, Write};
use std::sync::Arc;

use futures_core::Stream;
use futures_util::StreamExt;
use futures_util::future::Either;
use towerscope_core::event::{RequireUserConfirmEvent, UserInterruptEvent};
use towerscope_core::{AgentError, AgentEvent, Id, ReplyInput, ReplyItem};

use super::Console;
use super::confirm::{self, Asked, Interrupts};
use crate::Participant;
use crate::user::UserAgent;

/// Why a chat ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatEnd {
    /// The person typed `exit` or `quit`.
    Exit,
    /// The person's input ended (Ctrl-D, a closed channel).
    EndOfInput,
    /// Ctrl-C at the prompt, or twice during one reply.
    Interrupted,
}

/// An interactive chat between a person ([`UserAgent`]) and any participant, rendered by a
/// [`Console`]:
///
/// - the person's message goes to the participant, whose reply streams as it arrives;
/// - a tool call that needs permission is asked about, `y/N/a/e` per call (`a`: accept the
///   suggested rules, so similar calls run without asking; `e`: edit the arguments), and the
///   reply resumes with the answers; replies that park at once (a pipeline's members) are
///   asked about in turn, a question whose reply ended meanwhile (an interrupt closed it) is
///   not asked, and Ctrl-C or the end of input at a call's prompt interrupts that reply;
/// - Ctrl-C (from [`interrupts`](Self::interrupts)) interrupts the running reply, which ends
///   the reference's way (`⚠ … interrupted`), and the prompt comes back (after the questions
///   of replies still parked, such as a fan-out member that parked before); a second Ctrl-C
///   during the same reply, or one at the prompt, ends the chat;
/// - `exit`, `quit` or the end of input (Ctrl-D) end it too.
///
/// # Example
///
/// ```
/// use towerscope_agent::Agent;
/// use towerscope_models::{ScriptedModel, ScriptedResponse};
/// use towerscope_team::console::{Chat, ChatEnd, Console};
/// use towerscope_team::user::{ChannelInput, UserAgent};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), towerscope_core::AgentError> {
/// let bot = Agent::builder("bot").model(ScriptedModel::new("m", [ScriptedResponse::text("Hello, Ann!")])).build()?;
/// let (input, person) = ChannelInput::new();
/// person.send_text("Hi, I'm Ann.")?;
/// person.send_text("exit")?;
/// let chat = Chat::new(UserAgent::new("ann").with_input(input), bot).console(Console::new(Vec::new()));
/// let (end, console) = chat.run().await?;
/// assert_eq!(end, ChatEnd::Exit);
/// let screen = String::from_utf8_lossy(console.get_ref()).into_owned();
/// assert!(screen.ends_with("bot: Hello, Ann!\n"), "{screen}");
/// # Ok(()) }
/// ```
pub struct Chat<W: Write = Stdout> {
    user: UserAgent,
    agent: Arc<dyn Participant>,
    console: Console<W>,
    interrupts: Interrupts,
}

/// What one reply ended with.
enum Replied {
    /// The stream ended: the confirmations it asked for, one per parked reply (a pipeline's
    /// members may park at once), and the replies that ended in it (a parked reply closed by
    /// an interrupt waits for nothing any more).
    Done {
        asked: Vec<RequireUserConfirmEvent>,
        ended: Vec<Id>,
    },
    Quit,
}

impl Chat<Stdout> {
    /// `user` chats with `agent` on standard output ([`Console::stdout`]).
    pub fn new(user: UserAgent, agent: impl Participant) -> Self {
        Self::shared(user, Arc::new(agent))
    }

    /// `user` chats with a shared participant.
    pub fn shared(user: UserAgent, agent: Arc<dyn Participant>) -> Self {
        Self {
            user,
            agent,
            console: Console::stdout(),
            interrupts: Box::pin(futures_util::stream::pending()),
        }
    }
}

impl<W: Write> Chat<W> {
    /// Renders with `console` instead.
    pub fn console<W2: Write>(self, console: Console<W2>) -> Chat<W2> {
        Chat {
            user: self.user,
            agent: self.agent,
            console,
            interrupts: self.interrupts,
        }
    }

    /// Listens to `interrupts` for Ctrl-C (see [`ctrl_c`](super::ctrl_c) with the `ctrl-c`
    /// feature); without it the chat cannot be interrupted. A stream that ends (a closed
    /// channel) interrupts nothing: the chat stops listening to it.
    #[must_use]
    pub fn interrupts(mut self, interrupts: impl Stream<Item = ()> + Send + 'static) -> Self {
        // Its end is not a press, and an ended stream is never polled again.
        self.interrupts = Box::pin(interrupts.chain(futures_util::stream::pending()));
        self
    }

    /// Runs the chat until it ends; returns why, and the console (with what it wrote).
    pub async fn run(mut self) -> Result<(ChatEnd, Console<W>), AgentError> {
        self.console.set_default_speaker(self.agent.name());
        self.console.watch(&*self.agent);
        self.console.watch(&self.user);
        let greeting = format!(
            "Chat with {}. Type 'exit' (or Ctrl-D) to quit; Ctrl-C interrupts a reply.",
            self.agent.name()
        );
        self.console.note(&greeting);
        let end = self.chat().await?;
        if end == ChatEnd::Interrupted {
            self.console.note("Bye.");
        }
        Ok((end, self.console))
    }

    async fn chat(&mut self) -> Result<ChatEnd, AgentError> {
        loop {
            self.console.end_line();
            let msg = {
                let next = std::pin::pin!(self.user.next_message());
                match futures_util::future::select(next, self.interrupts.next()).await {
                    Either::Left((msg, _)) => msg?,
                    Either::Right(_) => {
                        println!();
                        return Ok(ChatEnd::Interrupted);
                    }
                }
            };
            let Some(msg) = msg else {
                return Ok(ChatEnd::EndOfInput);
            };
            let text = msg.text_content().unwrap_or_default();
            match text.trim() {
                "exit" | "quit" => return Ok(ChatEnd::Exit),
                "" => continue,
                _ => {}
            }
            let mut input = ReplyInput::from(msg);
            // The replies waiting for the person, asked about in the order they parked.
            let mut waiting: Vec<RequireUserConfirmEvent> = Vec::new();
            loop {
                let Replied::Done { asked, ended } = self.reply(input).await else {
                    return Ok(ChatEnd::Interrupted);
                };
                waiting.retain(|w| !ended.contains(&w.reply_id));
                for request in asked {
                    match waiting.iter_mut().find(|w| w.reply_id == request.reply_id) {
                        Some(known) => *known = request,
                        None => waiting.push(request),
                    }
                }
                if waiting.is_empty() {
                    break;
                }
                let request = waiting.remove(0);
                self.console.end_line();
                input = match confirm::ask(&self.user, &request, &mut self.interrupts).await? {
                    Asked::Answers(answers) => answers.into(),
                    Asked::GaveUp => UserInterruptEvent::new(request.reply_id.clone()).into(),
                };
            }
        }
    }

    /// Streams one reply, rendering it; Ctrl-C interrupts it, a second one quits.
    async fn reply(&mut self, input: ReplyInput) -> Replied {
        let mut stream = self.agent.reply_stream(input);
        let mut interrupted = false;
        let mut parked: Vec<RequireUserConfirmEvent> = Vec::new();
        let mut ended = Vec::new();
        loop {
            match futures_util::future::select(stream.next(), self.interrupts.next()).await {
                Either::Left((None, _)) => break,
                Either::Left((Some(item), _)) => {
                    self.console.render(None, &item);
                    match item {
                        Ok(ReplyItem::Event(AgentEvent::RequireUserConfirm(request))) => {
                            match parked.iter_mut().find(|p| p.reply_id == request.reply_id) {
                                Some(p) => p.tool_calls.extend(request.tool_calls),
                                None => parked.push(request),
                            }
                        }
                        Ok(ReplyItem::Event(AgentEvent::ReplyEnd(end))) => {
                            parked.retain(|p| p.reply_id != end.reply_id);
                            ended.push(end.reply_id);
                        }
                        _ => {}
                    }
                }
                Either::Right(_) if interrupted => return Replied::Quit,
                Either::Right(_) => {
                    interrupted = true;
                    self.agent.interrupt();
                }
            }
        }
        self.console.end_line();
        Replied::Done { asked: parked, ended }
    }
}

impl<W: Write> fmt::Debug for Chat<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chat")
            .field("user", &self.user)
            .field("agent", &self.agent.name())
            .finish_non_exhaustive()
    }
}
