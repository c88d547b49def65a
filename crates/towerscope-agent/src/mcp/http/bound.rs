//! Bounds on what an HTTP MCP server sends: a JSON answer is read up to the limit and no
//! further ([`read_bounded`]), and an event stream's events are counted byte by byte as they
//! arrive ([`EventBound`]), so that a server sending one endless answer or event cannot fill
//! the agent's memory.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;

/// Why a read stopped: the server's answer, or one event of its stream, passed the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::mcp) struct TooLong {
    /// The limit, in bytes.
    pub(super) max: usize,
}

impl std::fmt::Display for TooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the server sent a message longer than {} bytes (McpServer::max_message_bytes); it was not read further",
            self.max
        )
    }
}

impl std::error::Error for TooLong {}

/// Reads `response`'s body whole, unless it is longer than `max` bytes: then fails at once
/// when the length is announced, or as soon as the bytes read pass it.
pub(super) async fn read_bounded(mut response: reqwest::Response, max: usize) -> Result<Vec<u8>, HttpError> {
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(HttpError::TooLong(TooLong { max }));
    }
    // Room for the announced length (within the limit), so that the buffer does not double
    // past what it holds.
    let announced = response.content_length().and_then(|n| usize::try_from(n).ok());
    let mut body = Vec::with_capacity(announced.unwrap_or(0));
    while let Some(chunk) = response.chunk().await.map_err(HttpError::request)? {
        if body.len() + chunk.len() > max {
            return Err(HttpError::TooLong(TooLong { max }));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// How much of a body [`read_prefix`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Prefix {
    /// All of it.
    Whole,
    /// Its first bytes: it is longer, it did not end in time, or its reading failed.
    Cut,
}

/// The first `max` bytes of `response`'s body at most, read for no longer than `wait` (an
/// error answer's text, shown cut anyway), and whether that is all of it.
pub(super) async fn read_prefix(
    mut response: reqwest::Response,
    max: usize,
    wait: std::time::Duration,
) -> (Vec<u8>, Prefix) {
    let mut body = Vec::new();
    let read = async {
        loop {
            match response.chunk().await {
                Ok(None) => return Prefix::Whole,
                Err(_) => return Prefix::Cut,
                Ok(Some(chunk)) => {
                    // Never negative: the body holds at most `max` bytes.
                    let room = max - body.len();
                    if chunk.len() > room {
                        body.extend_from_slice(&chunk[..room]);
                        return Prefix::Cut;
                    }
                    body.extend_from_slice(&chunk);
                }
            }
        }
    };
    let read = tokio::time::timeout(wait, read).await.unwrap_or(Prefix::Cut);
    (body, read)
}

/// Where [`EventBound`] is in the stream's text (events end at a blank line; a line ends at a
/// line feed, a carriage return, or both).
#[derive(Debug, Clone, Copy)]
struct Scan {
    /// Bytes of the event read so far (line ends not counted).
    event: usize,
    /// Whether the current line has no byte yet.
    line_empty: bool,
    /// Whether the last byte was a carriage return (a line feed right after it ends no line).
    after_cr: bool,
}

impl Scan {
    fn new() -> Self {
        Self {
            event: 0,
            line_empty: true,
            after_cr: false,
        }
    }

    /// Reads `bytes`. Once the event being read is longer than `max`, fails with the length of
    /// the prefix of `bytes` that holds only whole events (up to the last blank line's end).
    fn read(&mut self, bytes: &[u8], max: usize) -> Result<(), usize> {
        let mut whole = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let after_cr = std::mem::replace(&mut self.after_cr, b == b'\r');
            if b == b'\n' && after_cr {
                // The line feed of a CRLF: the line ended at the carriage return.
                if whole == i {
                    whole = i + 1;
                }
                continue;
            }
            if b == b'\n' || b == b'\r' {
                if self.line_empty {
                    // A blank line: the event is complete.
                    self.event = 0;
                    whole = i + 1;
                } else {
                    self.line_empty = true;
                }
                continue;
            }
            self.line_empty = false;
            self.event += 1;
            if self.event > max {
                return Err(whole);
            }
        }
        Ok(())
    }
}

/// An event stream's bytes, ending with [`TooLong`] once one event (its bytes, line ends not
/// counted) passes `max`: the events complete before it are passed on first. The parser behind
/// it then holds at most `max` bytes of that event and one read's worth. Each byte is looked at
/// once.
pub(super) struct EventBound<S> {
    inner: S,
    max: usize,
    scan: Scan,
    /// Set once the limit was passed: the error is yielded next, then the stream ends.
    state: Bound,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    Reading,
    Failing,
    Done,
}

impl<S> EventBound<S> {
    pub(super) fn new(inner: S, max: usize) -> Self {
        Self {
            inner,
            max,
            scan: Scan::new(),
            state: Bound::Reading,
        }
    }
}

/// What went wrong reading an HTTP answer (by [`read_bounded`] or an [`EventBound`] stream, and
/// the client's error): the connection's failure, or an answer past the limit.
#[derive(Debug)]
pub(in crate::mcp) enum HttpError {
    /// The request failed (connecting, sending, reading); its error names no URL.
    Request(reqwest::Error),
    /// The answer passed the limit.
    TooLong(TooLong),
}

impl HttpError {
    /// The connection's failure, its URL left out (it may carry a key).
    pub(super) fn request(e: reqwest::Error) -> Self {
        Self::Request(e.without_url())
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Request(e) => e.fmt(f),
            Self::TooLong(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Request(e) => Some(e),
            Self::TooLong(e) => Some(e),
        }
    }
}

impl<S> Stream for EventBound<S>
where
    S: Stream<Item = Result<Bytes, reqwest::Error>> + Unpin,
{
    type Item = Result<Bytes, HttpError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        match this.state {
            Bound::Done => return Poll::Ready(None),
            Bound::Failing => {
                this.state = Bound::Done;
                return Poll::Ready(Some(Err(HttpError::TooLong(TooLong { max: this.max }))));
            }
            Bound::Reading => {}
        }
        match std::task::ready!(Pin::new(&mut this.inner).poll_next(cx)) {
            Some(Ok(bytes)) => match this.scan.read(&bytes, this.max) {
                Ok(()) => Poll::Ready(Some(Ok(bytes))),
                Err(0) => {
                    this.state = Bound::Done;
                    Poll::Ready(Some(Err(HttpError::TooLong(TooLong { max: this.max }))))
                }
                Err(whole) => {
                    this.state = Bound::Failing;
                    Poll::Ready(Some(Ok(bytes.slice(..whole))))
                }
            },
            Some(Err(e)) => Poll::Ready(Some(Err(HttpError::request(e)))),
            None => Poll::Ready(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Scan;

    /// Reads `parts` in order; whether every event stayed within `max`.
    fn fits(parts: &[&str], max: usize) -> bool {
        let mut scan = Scan::new();
        parts.iter().all(|p| scan.read(p.as_bytes(), max).is_ok())
    }

    #[test]
    fn an_event_is_counted_until_its_blank_line_whatever_the_line_ends() {
        // Each event has 10 bytes of fields; many of them pass a limit of 10.
        for end in ["\n", "\r", "\r\n"] {
            let event = format!("data: 1234{end}{end}");
            let many: Vec<&str> = std::iter::repeat_n(event.as_str(), 50).collect();
            assert!(fits(&many, 10), "{end:?}");
            assert!(!fits(&many, 9), "{end:?}");
        }
    }

    #[test]
    fn lines_of_one_event_add_up_and_a_split_read_changes_nothing() {
        // Two lines of one event: 7 + 7 bytes.
        assert!(fits(&["data: a\ndata: b\n\n"], 14));
        assert!(!fits(&["data: a\ndata: b\n\n"], 13));
        // A CRLF split between reads is one line end, not a blank line.
        assert!(!fits(&["data: a\r", "\ndata: b\r\n\r\n"], 13));
        // An endless line fails once it passes the limit, in whatever pieces it comes.
        let mut scan = Scan::new();
        assert!(scan.read(b"data: ", 100).is_ok());
        assert!(!(0..100).all(|_| scan.read(b"x", 100).is_ok()));
    }

    #[test]
    fn the_events_complete_before_the_long_one_are_kept_whole() {
        for (text, whole) in [
            ("data: a\n\ndata: bbbbbbbbbbbb", "data: a\n\n"),
            ("data: a\r\n\r\ndata: bbbbbbbbbbbb", "data: a\r\n\r\n"),
            ("data: a\r\rdata: bbbbbbbbbbbb", "data: a\r\r"),
            ("data: bbbbbbbbbbbb", ""),
        ] {
            let mut scan = Scan::new();
            assert_eq!(scan.read(text.as_bytes(), 10), Err(whole.len()), "{text:?}");
        }
    }
}
