//! A stdio MCP server's transport: its process, its output read one JSON-RPC message a line
//! with each line bounded ([`LineBound`], so that a server writing one endless line cannot fill
//! the agent's memory: the SDK's transport reads a line whole before it parses it), and a
//! graceful close (stdin closed, a moment for the process to exit, then it is killed).
//!
//! A server that cannot read a request answers, as JSON-RPC asks, with an error whose id is
//! `null`, which the SDK drops (it cannot tell which request it answers), leaving the call to
//! wait for its timeout. While exactly one request is waiting and nothing else was written
//! since the server last spoke, such an error is that request's answer ([`Outstanding`]), as
//! the HTTP transport makes an error answer on a request's stream that request's.

use std::collections::HashSet;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How long a server whose stdin was closed may take to exit before it is killed (as the MCP
/// SDK's own child-process transport waits).
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// Whether a server's message went past its limit: set by its [`LineBound`], read when a
/// request fails because the connection closed.
#[derive(Debug, Clone, Default)]
pub(super) struct Overflow(Arc<AtomicBool>);

impl Overflow {
    /// Whether a message was too long.
    pub(super) fn happened(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Notes that a message was too long.
    pub(super) fn raise(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Reads `inner`, failing with [`io::ErrorKind::InvalidData`] once a line (its bytes before the
/// newline, a carriage return before it not counted) is longer than `max` bytes; the transport
/// then closes the connection. Every line a read holds is checked, so at most `max` bytes of a
/// line and one read's worth are buffered.
pub(super) struct LineBound<R> {
    inner: R,
    max: usize,
    /// The length of the line being read so far.
    line: usize,
    /// Whether the last byte read was a carriage return (not counted if a newline follows).
    cr: bool,
    overflow: Overflow,
}

impl<R> LineBound<R> {
    /// `inner` with lines of at most `max` bytes; `overflow` is raised when one is longer.
    pub(super) fn new(inner: R, max: usize, overflow: Overflow) -> Self {
        Self {
            inner,
            max,
            line: 0,
            cr: false,
            overflow,
        }
    }

    /// Counts `read`'s bytes into the lines they belong to; whether every line is within `max`.
    fn count(&mut self, read: &[u8]) -> bool {
        let mut rest = read;
        while let Some(at) = rest.iter().position(|b| *b == b'\n') {
            let cr = if at == 0 { self.cr } else { rest[at - 1] == b'\r' };
            if self.line.saturating_add(at) - usize::from(cr) > self.max {
                return false;
            }
            self.line = 0;
            self.cr = false;
            rest = &rest[at + 1..];
        }
        self.line = self.line.saturating_add(rest.len());
        self.cr = rest.last().map_or(self.cr, |b| *b == b'\r');
        // A carriage return at the end may be the line's last byte, before its newline.
        self.line - usize::from(self.cr) <= self.max
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineBound<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        std::task::ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        if !self.count(&buf.filled()[before..]) {
            self.overflow.raise();
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a message longer than {} bytes", self.max),
            )));
        }
        Poll::Ready(Ok(()))
    }
}

/// The server's stdin, failing a write or flush that makes no progress for `limit` (the server
/// stopped reading and its input pipe is full), and every one after it.
struct StallBound<W> {
    inner: W,
    limit: Option<Duration>,
    /// Since when the pending write has made no progress.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
    /// A write stalled for `limit`: the server stopped reading.
    stuck: Arc<AtomicBool>,
}

impl<W> StallBound<W> {
    fn new(inner: W, limit: Option<Duration>, stuck: Arc<AtomicBool>) -> Self {
        Self {
            inner,
            limit,
            stalled: None,
            stuck,
        }
    }

    /// `poll` of the inner writer, bounded: progress (or an error) clears the wait; pending,
    /// the wait starts or goes on, and past `limit` the write fails.
    fn bounded<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: impl FnOnce(&mut W, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if self.stuck.load(Ordering::Acquire) {
            return Poll::Ready(Err(stopped_reading()));
        }
        match poll(&mut self.inner, cx) {
            Poll::Ready(done) => {
                self.stalled = None;
                Poll::Ready(done)
            }
            Poll::Pending => {
                let Some(limit) = self.limit else {
                    return Poll::Pending;
                };
                let stalled = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                match stalled.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        self.stalled = None;
                        self.stuck.store(true, Ordering::Release);
                        Poll::Ready(Err(stopped_reading()))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for StallBound<W> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.get_mut().bounded(cx, |w, cx| Pin::new(w).poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().bounded(cx, |w, cx| Pin::new(w).poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// The ids of the requests sent to a server and neither answered nor cancelled, so that an
/// error answer of id `null` can be given to the one request that waits, and what was written
/// since the server last spoke, so that it is given only when that request is the one message
/// the server can have failed to read.
#[derive(Debug, Default)]
pub(super) struct Outstanding {
    waiting: HashSet<RequestId>,
    /// Messages written since the server last sent one.
    since_heard: usize,
    /// Whether the last message written was a request.
    last_was_request: bool,
}

impl Outstanding {
    /// Notes a message sent: a request waits from now; a cancelled one no longer does (the
    /// server should not answer it, and the SDK has stopped waiting).
    ///
    /// Only requests and cancels count as messages the server may fail to read: the client's
    /// other notifications (`initialized`, progress) are the SDK's own, well formed, and the
    /// first listing follows `initialized` with no answer between.
    pub(super) fn sent(&mut self, message: &TxJsonRpcMessage<RoleClient>) {
        match message {
            JsonRpcMessage::Request(request) => {
                self.waiting.insert(request.id.clone());
                self.since_heard += 1;
                self.last_was_request = true;
            }
            JsonRpcMessage::Notification(note) => {
                if let ClientNotification::CancelledNotification(cancel) = &note.notification
                    && let Some(id) = &cancel.params.request_id
                {
                    self.waiting.remove(id);
                    self.since_heard += 1;
                    self.last_was_request = false;
                }
            }
            _ => {}
        }
    }

    /// Notes a message received and returns it: an answer ends its request's wait; an error of
    /// id `null` takes the id of the one request waiting, when no other message can be the one
    /// the server could not read (nothing else was written since it last spoke). Otherwise
    /// which message it answers is unknown: the error is left without an id (the SDK drops it)
    /// rather than given to a call it may not answer (a cancel of another call, written just
    /// before it, may be what the server could not read), and its message is logged.
    pub(super) fn received(&mut self, message: RxJsonRpcMessage<RoleClient>) -> RxJsonRpcMessage<RoleClient> {
        let only_the_request = self.since_heard == 0 || (self.since_heard == 1 && self.last_was_request);
        self.since_heard = 0;
        match message {
            JsonRpcMessage::Response(response) => {
                self.waiting.remove(&response.id);
                JsonRpcMessage::Response(response)
            }
            JsonRpcMessage::Error(mut error) => {
                match &error.id {
                    Some(id) => {
                        self.waiting.remove(id);
                    }
                    None if self.waiting.len() == 1 && only_the_request => error.id = self.waiting.drain().next(),
                    None => tracing::warn!(
                        waiting = self.waiting.len(),
                        code = error.error.code.0,
                        message = %error.error.message,
                        "an MCP server answered with an error of id null, and which message it answers is \
                         unknown (several requests wait, or another message was written since it last spoke); \
                         the requests wait for their answers or their timeouts"
                    ),
                }
                JsonRpcMessage::Error(error)
            }
            other => other,
        }
    }
}

/// The transport of a stdio server: the SDK's line transport over the process's stdin and its
/// bounded stdout, holding the process (killed if the transport is dropped unclosed).
pub(super) struct StdioTransport {
    lines: AsyncRwTransport<RoleClient, LineBound<ChildStdout>, StallBound<ChildStdin>>,
    /// The requests waiting for an answer.
    outstanding: Outstanding,
    process: Option<Child>,
    /// A write stalled: the server stopped reading, and its input may end in part of a
    /// message, so nothing more is sent.
    stuck: Arc<AtomicBool>,
}

impl StdioTransport {
    /// Starts `command` with its stdin and stdout piped (its stderr is the agent's), reading
    /// lines of at most `max` bytes; `overflow` is raised when one is longer. A write that makes
    /// no progress for `write_timeout` (the server stopped reading, and its input pipe is full)
    /// fails, and so does every later one: the SDK holds its writer while a write waits, so a
    /// write that never ended held back every later request, the cancel of a timed-out call
    /// (which then never failed), and the close (so the process was never killed). A server
    /// that reads slowly but steadily is never cut off: only a stall counts.
    pub(super) fn spawn(
        mut command: tokio::process::Command,
        max: usize,
        overflow: Overflow,
        write_timeout: Option<Duration>,
    ) -> io::Result<Self> {
        let piped = std::process::Stdio::piped;
        let mut process = command
            .stdin(piped())
            .stdout(piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;
        let (Some(stdout), Some(stdin)) = (process.stdout.take(), process.stdin.take()) else {
            return Err(io::Error::other("the server's stdin and stdout were not piped"));
        };
        let stuck = Arc::<AtomicBool>::default();
        let stdin = StallBound::new(stdin, write_timeout, Arc::clone(&stuck));
        Ok(Self {
            lines: AsyncRwTransport::new(LineBound::new(stdout, max, overflow), stdin),
            outstanding: Outstanding::default(),
            process: Some(process),
            stuck,
        })
    }
}

impl Transport<RoleClient> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let send = (!self.stuck.load(Ordering::Acquire)).then(|| {
            self.outstanding.sent(&item);
            self.lines.send(item)
        });
        async move {
            match send {
                Some(send) => send.await,
                None => Err(stopped_reading()),
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let received = self.lines.receive();
        let outstanding = &mut self.outstanding;
        async move { Some(outstanding.received(received.await?)) }
    }

    /// Closes the server's stdin (a server exits when its input ends), gives it [`EXIT_WAIT`]
    /// to exit, then kills it; closing the input is itself given [`EXIT_WAIT`] (it waits for a
    /// write in progress, which a server that stopped reading never lets end).
    async fn close(&mut self) -> Result<(), io::Error> {
        let closed = match tokio::time::timeout(EXIT_WAIT, self.lines.close()).await {
            Ok(closed) => closed,
            Err(_) => Err(stopped_reading()),
        };
        if let Some(mut process) = self.process.take() {
            let exited = closed.is_ok() && tokio::time::timeout(EXIT_WAIT, process.wait()).await.is_ok();
            if !exited {
                process.kill().await?;
            }
        }
        closed
    }
}

/// The error of a write to a server that stopped reading its input.
fn stopped_reading() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "the MCP server stopped reading its input: a message could not be written in time",
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

    use super::*;

    /// A reader that takes 64 bytes every 50 ms never trips a 100 ms bound, however long the
    /// whole write takes; one that reads nothing fails the write after 100 ms, and every write
    /// after it at once.
    #[tokio::test(start_paused = true)]
    async fn only_a_stalled_write_fails() {
        let limit = Some(Duration::from_millis(100));
        let (writer, mut reader) = tokio::io::duplex(64);
        let slow = tokio::spawn(async move {
            let mut got = 0;
            let mut buf = [0u8; 64];
            while let Ok(n @ 1..) = reader.read(&mut buf).await {
                got += n;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            got
        });
        let mut bounded = StallBound::new(writer, limit, Arc::default());
        bounded.write_all(&[b'x'; 4096]).await.unwrap();
        drop(bounded);
        assert_eq!(slow.await.unwrap(), 4096);

        let (writer, _reader) = tokio::io::duplex(64);
        let stuck = Arc::<AtomicBool>::default();
        let mut bounded = StallBound::new(writer, limit, Arc::clone(&stuck));
        let err = bounded.write_all(&[b'x'; 4096]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(stuck.load(Ordering::Acquire));
        assert!(bounded.write_all(b"x").await.is_err(), "nothing more is sent");
    }

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

    /// Every line of one read is checked, whatever its place: a long line before a short one,
    /// a long one between two short ones; a carriage return before the newline is not counted.
    #[test]
    fn every_line_of_a_read_is_checked_and_a_carriage_return_is_not_counted() {
        let fits = |chunks: &[&[u8]]| {
            let mut bound = LineBound::new((), 5, Overflow::default());
            chunks.iter().all(|chunk| bound.count(chunk))
        };
        assert!(fits(&[b"12345\n12\n12345"]));
        assert!(fits(&[b"12345\r\n", b"12345\r", b"\n"]), "CRLF lines of the limit");
        assert!(fits(&[b"123", b"45\n"]));
        assert!(!fits(&[b"1234567\n"]), "a long line with its newline in the same read");
        assert!(!fits(&[b"12\n1234567\n12\n"]), "a long line between two short ones");
        assert!(!fits(&[b"1234", b"567\n1"]), "a line across reads");
        assert!(!fits(&[b"123456\r\n"]));
        assert!(!fits(&[b"123456"]), "a line not ended yet");
    }

    /// An error of id `null` is the answer of the one request waiting, if nothing else was
    /// written since the server last spoke; with none or several waiting, or another message
    /// written (a cancel), it stays without an id. Answers and cancellations end a request's
    /// wait.
    #[test]
    fn a_null_id_error_answers_the_one_request_waiting_and_no_other() {
        let sent =
            |message: serde_json::Value| -> TxJsonRpcMessage<RoleClient> { serde_json::from_value(message).unwrap() };
        let call = |id: u32| {
            sent(serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "get"}}))
        };
        let cancel = |id: u32| {
            sent(
                serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}),
            )
        };
        let error = |id: serde_json::Value| -> RxJsonRpcMessage<RoleClient> {
            serde_json::from_value(
                serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": "unreadable"}}),
            )
            .unwrap()
        };
        let id_of_null = |outstanding: &mut Outstanding| match outstanding.received(error(serde_json::Value::Null)) {
            JsonRpcMessage::Error(e) => e.id,
            other => panic!("not an error: {other:?}"),
        };
        let mut outstanding = Outstanding::default();
        outstanding.sent(&call(1));
        assert_eq!(id_of_null(&mut outstanding), Some(RequestId::Number(1)));
        assert_eq!(id_of_null(&mut outstanding), None, "answered: nobody waits");
        outstanding.sent(&call(2));
        outstanding.sent(&call(3));
        assert_eq!(id_of_null(&mut outstanding), None, "two wait: which is unknown");
        outstanding.received(error(serde_json::json!(3)));
        assert_eq!(
            id_of_null(&mut outstanding),
            Some(RequestId::Number(2)),
            "3 was answered"
        );
        outstanding.sent(&call(4));
        outstanding.sent(&call(5));
        outstanding.sent(&cancel(4));
        assert_eq!(
            id_of_null(&mut outstanding),
            None,
            "5 waits alone, but the cancel of 4, written since, may be what the server could not read"
        );
        // Once the server spoke after them, 5 is the only message it can have failed to read.
        outstanding.sent(&call(6));
        outstanding.received(error(serde_json::json!(6)));
        assert_eq!(id_of_null(&mut outstanding), Some(RequestId::Number(5)));
        // The client's own notifications (`initialized` before the first listing) do not count.
        outstanding.sent(&call(9));
        outstanding.received(error(serde_json::json!(9)));
        outstanding.sent(&sent(
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ));
        outstanding.sent(&call(10));
        assert_eq!(
            id_of_null(&mut outstanding),
            Some(RequestId::Number(10)),
            "after initialized"
        );
        // A cancelled call, then the next: the error may be about the cancelled one's message.
        outstanding.sent(&call(7));
        outstanding.sent(&cancel(7));
        outstanding.sent(&call(8));
        assert_eq!(id_of_null(&mut outstanding), None, "a cancel was written before 8");
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
