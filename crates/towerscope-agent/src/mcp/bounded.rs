//! [`LineBound`]: a stdio MCP server's output, one JSON-RPC message a line, with each line
//! bounded, so that a server writing one endless line cannot fill the agent's memory (the
//! SDK's transport reads a line whole before it parses it).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// Whether a server's message went past its limit: set by its [`LineBound`], read when a
/// request fails (the connection closed because of it).
#[derive(Debug, Clone, Default)]
pub(super) struct Overflow(Arc<AtomicBool>);

impl Overflow {
    /// Whether a message was too long.
    pub(super) fn happened(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Reads `inner`, failing with [`io::ErrorKind::InvalidData`] once a line grows past `max`
/// bytes (the transport then closes the connection).
pub(super) struct LineBound<R> {
    inner: R,
    max: usize,
    /// The length of the line being read so far.
    line: usize,
    overflow: Overflow,
}

impl<R> LineBound<R> {
    /// `inner` with lines of at most `max` bytes; `overflow` is raised when one is longer.
    pub(super) fn new(inner: R, max: usize, overflow: Overflow) -> Self {
        Self {
            inner,
            max,
            line: 0,
            overflow,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineBound<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        std::task::ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        let read = &buf.filled()[before..];
        self.line = match read.iter().rposition(|b| *b == b'\n') {
            Some(at) => read.len() - at - 1,
            None => self.line.saturating_add(read.len()),
        };
        if self.line > self.max {
            self.overflow.0.store(true, Ordering::Relaxed);
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a message longer than {} bytes", self.max),
            )));
        }
        Poll::Ready(Ok(()))
    }
}

/// A stdio server's output, holding its process: the process is ended when the output is
/// dropped (it is spawned with `kill_on_drop`).
pub(super) struct ServerOutput {
    stdout: tokio::process::ChildStdout,
    _process: tokio::process::Child,
}

impl ServerOutput {
    /// Starts `command` with its stdin and stdout piped (its stderr is the agent's): the
    /// server's output, and its input.
    pub(super) fn spawn(mut command: tokio::process::Command) -> io::Result<(Self, tokio::process::ChildStdin)> {
        let stdio = std::process::Stdio::piped;
        let mut process = command
            .stdin(stdio())
            .stdout(stdio())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;
        let (Some(stdout), Some(stdin)) = (process.stdout.take(), process.stdin.take()) else {
            return Err(io::Error::other("the server's stdin and stdout were not piped"));
        };
        let output = Self {
            stdout,
            _process: process,
        };
        Ok((output, stdin))
    }
}

impl AsyncRead for ServerOutput {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stdout).poll_read(cx, buf)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use tokio::io::{AsyncBufReadExt, BufReader};

    use super::*;

    /// Lines up to the limit pass, whole (a line split over many reads counts from its
    /// start); the first longer one fails the read and raises the flag.
    #[tokio::test]
    async fn lines_up_to_the_limit_pass_and_a_longer_one_fails() {
        let mut input = b"12345\n123\n".to_vec();
        input.extend_from_slice(&[b'x'; 100]);
        let overflow = Overflow::default();
        // One byte a read: the limit holds across reads.
        let chunks = tokio_test_reader(&input);
        let mut lines = BufReader::new(LineBound::new(chunks, 5, overflow.clone()));
        let mut line = Vec::new();
        lines.read_until(b'\n', &mut line).await.unwrap();
        assert_eq!(line, b"12345\n");
        line.clear();
        lines.read_until(b'\n', &mut line).await.unwrap();
        assert_eq!(line, b"123\n");
        assert!(!overflow.happened());
        line.clear();
        let err = lines.read_until(b'\n', &mut line).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(overflow.happened());
        assert!(line.len() <= 6, "at most the limit is kept: {}", line.len());
    }

    /// A reader handing out one byte at a time.
    fn tokio_test_reader(bytes: &[u8]) -> impl AsyncRead + Unpin {
        struct OneByte(std::collections::VecDeque<u8>);
        impl AsyncRead for OneByte {
            fn poll_read(
                mut self: Pin<&mut Self>,
                _cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<io::Result<()>> {
                if let Some(b) = self.0.pop_front() {
                    buf.put_slice(&[b]);
                }
                Poll::Ready(Ok(()))
            }
        }
        OneByte(bytes.iter().copied().collect())
    }
}
