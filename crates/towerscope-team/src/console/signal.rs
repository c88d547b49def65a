//! Ctrl-C as a stream of interruptions (feature `ctrl-c`).

use towerscope_core::AgentError;

use super::Interrupts;

/// Every Ctrl-C (SIGINT) from now on, as an item of a stream, for
/// [`Chat::interrupts`](super::Chat::interrupts). Once it is listened to, Ctrl-C no longer ends
/// the process: the chat decides (interrupt the reply, or quit). That lasts for the rest of
/// the process, after the chat and this stream are gone too (tokio does not give the signal
/// back): a program that goes on after its chat ends its process itself on Ctrl-C.
///
/// Needs a tokio runtime with its signal driver (`#[tokio::main]` has it).
pub fn ctrl_c() -> Result<Interrupts, AgentError> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let sigint =
            signal(SignalKind::interrupt()).map_err(|e| AgentError::State(format!("cannot listen for Ctrl-C: {e}")))?;
        Ok(Box::pin(futures_util::stream::unfold(
            sigint,
            |mut sigint| async move { sigint.recv().await.map(|()| ((), sigint)) },
        )))
    }
    #[cfg(not(unix))]
    {
        Ok(Box::pin(futures_util::stream::unfold((), |()| async {
            tokio::signal::ctrl_c().await.ok().map(|()| ((), ()))
        })))
    }
}
