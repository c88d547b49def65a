//! Server-sent events: the framing of a `text/event-stream` body, decoded in time linear in
//! the body, whatever its chunking.
//!
//! The model providers read their streamed answers with it, and the A2A client its remote
//! agent's updates. [`SseDecoder`] takes the body's bytes as they arrive and gives back the
//! events completed so far; [`SseStream`] does the same over a stream of byte chunks.
//!
//! Each byte is looked at once to find the end of its line and moved at most once (when the
//! lines before it are dropped from the buffer), so a line that arrives in many small pieces,
//! or many events that arrive in one chunk, cost what their bytes cost. (A decoder that parses
//! its buffer from the start at every chunk, or copies the rest of the buffer after every
//! line, costs the square of the line's length or of the chunk's events.) An event larger than
//! the decoder's limit ([`SseDecoder::DEFAULT_MAX_EVENT_BYTES`] unless set) is an error instead
//! of a buffer that grows without end.
//!
//! What is decoded follows the HTML standard's event-stream interpretation: lines end with
//! CRLF, LF or CR; a leading byte-order mark is skipped; `data` lines are joined with `\n`;
//! `event` names the event (`message` when none); `id` sets the last event id (kept across
//! events); comments and unknown fields are ignored (a decoder may ask for one as events of
//! its own: [`SseDecoder::field_as_event`]); an event without `data` is not dispatched; an
//! unfinished event at the end of the body is dropped. A line that is not UTF-8 is an error.
//!
//! # Example
//!
//! ```
//! use towerscope_core::sse::SseDecoder;
//!
//! let mut decoder = SseDecoder::new();
//! decoder.push(b"event: delta\ndata: {\"text\":");
//! assert!(decoder.next_event()?.is_none()); // the event is not over yet
//! decoder.push(b" \"hi\"}\n\n: a comment\ndata: done\r\n\r\n");
//! let first = decoder.next_event()?.expect("complete");
//! assert_eq!((first.event.as_str(), first.data.as_str()), ("delta", r#"{"text": "hi"}"#));
//! let second = decoder.next_event()?.expect("complete");
//! assert_eq!((second.event.as_str(), second.data.as_str()), ("message", "done"));
//! assert!(decoder.next_event()?.is_none());
//! # Ok::<(), towerscope_core::sse::SseError>(())
//! ```

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use pin_project_lite::pin_project;

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The event's name: its `event` field, or `message`.
    pub event: String,
    /// Its `data` lines, joined with `\n`.
    pub data: String,
    /// The last event id the stream set (with `id`), at this event; empty when none.
    pub id: String,
}

/// Why an event-stream body cannot be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SseError {
    /// A line is not UTF-8.
    Utf8 {
        /// The offset of the line in the body.
        line_at: u64,
    },
    /// An event (its data and the line being read) grew past the limit.
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Utf8 { line_at } => write!(f, "the event-stream line at byte {line_at} is not UTF-8"),
            Self::TooLarge { limit } => write!(f, "an event of the event stream is larger than {limit} bytes"),
        }
    }
}

impl std::error::Error for SseError {}

/// Decodes an event-stream body pushed in chunks. See the [module docs](self).
#[derive(Debug)]
pub struct SseDecoder {
    /// Bytes received and not yet dropped; `buf[start..]` is still to be read.
    buf: Vec<u8>,
    /// Where the first unread line starts.
    start: usize,
    /// How far the unread line was searched for its end (it has none before this).
    scanned: usize,
    /// The previous line ended with CR: an LF right after it belongs to that line end.
    after_cr: bool,
    /// Whether the body's first bytes were checked for a byte-order mark.
    bom_checked: bool,
    /// The offset of `buf[0]` in the body.
    offset: u64,
    /// The event being read.
    event: String,
    data: String,
    has_data: bool,
    last_id: String,
    max_event_bytes: usize,
    /// Fields outside the standard read as events of their own.
    field_events: Vec<String>,
    failed: Option<SseError>,
    /// Bytes looked at to find line ends (the tests check each is looked at once).
    #[cfg(test)]
    examined: usize,
}

/// A UTF-8 byte-order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// The default limit on one event's size (its data and the line being read): 64 MiB.
    pub const DEFAULT_MAX_EVENT_BYTES: usize = 64 << 20;

    /// A decoder at the start of a body, with the default limit.
    pub fn new() -> Self {
        Self::with_max_event_bytes(Self::DEFAULT_MAX_EVENT_BYTES)
    }

    /// A decoder whose events may hold at most `limit` bytes (data and the line being read).
    pub fn with_max_event_bytes(limit: usize) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            after_cr: false,
            bom_checked: false,
            offset: 0,
            event: String::new(),
            data: String::new(),
            has_data: false,
            last_id: String::new(),
            max_event_bytes: limit,
            field_events: Vec::new(),
            failed: None,
            #[cfg(test)]
            examined: 0,
        }
    }

    /// The same decoder, reading each `field` line (a field the standard ignores) as an event
    /// of its own: named `field`, its data the line's value, dispatched at the end of the line,
    /// apart from the event being read. The fields the standard reads (`data`, `event`, `id`,
    /// `retry`) keep their meaning.
    ///
    /// A server may report a failure this way: llama.cpp's, failing mid-stream, writes
    /// `error: {...}` and then ends its stream as it ends an answer.
    ///
    /// ```
    /// use towerscope_core::sse::SseDecoder;
    ///
    /// let body = b"data: a\n\nerror: {\"message\": \"out of memory\"}\n\ndata: [DONE]\n\n";
    /// let mut decoder = SseDecoder::new().field_as_event("error");
    /// decoder.push(body);
    /// let mut events = Vec::new();
    /// while let Some(e) = decoder.next_event()? {
    ///     events.push((e.event, e.data));
    /// }
    /// assert_eq!(events[1], ("error".to_owned(), r#"{"message": "out of memory"}"#.to_owned()));
    /// assert_eq!(events.len(), 3);
    /// # Ok::<(), towerscope_core::sse::SseError>(())
    /// ```
    #[must_use]
    pub fn field_as_event(mut self, field: impl Into<String>) -> Self {
        self.field_events.push(field.into());
        self
    }

    /// Adds the body's next bytes. Events they complete are taken with
    /// [`next_event`](Self::next_event).
    pub fn push(&mut self, bytes: &[u8]) {
        if self.failed.is_some() || bytes.is_empty() {
            return;
        }
        if self.start > 0 {
            // Drop the lines already read: what remains is the unfinished line, moved once.
            self.buf.drain(..self.start);
            self.offset += self.start as u64;
            self.scanned -= self.start;
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete event, if the bytes pushed so far complete one.
    ///
    /// After an error, every call returns the same error.
    pub fn next_event(&mut self) -> Result<Option<SseEvent>, SseError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        if !self.bom_checked {
            // Nothing was read yet (`start` is 0): skip a byte-order mark once it can be told
            // from the first line.
            if self.buf.len() < BOM.len() && BOM.starts_with(&self.buf) {
                return Ok(None);
            }
            self.bom_checked = true;
            if self.buf.starts_with(BOM) {
                self.start = BOM.len();
                self.scanned = BOM.len();
            }
        }
        loop {
            if self.after_cr && self.start < self.buf.len() {
                self.after_cr = false;
                if self.buf[self.start] == b'\n' {
                    self.start += 1;
                    self.scanned = self.scanned.max(self.start);
                }
            }
            let unread = &self.buf[self.scanned..];
            let found = unread.iter().position(|&b| b == b'\n' || b == b'\r');
            #[cfg(test)]
            {
                self.examined += found.map_or(unread.len(), |end| end + 1);
            }
            let Some(end) = found else {
                self.scanned = self.buf.len();
                let pending = self.buf.len() - self.start + self.data.len();
                if pending > self.max_event_bytes {
                    return Err(self.fail(SseError::TooLarge {
                        limit: self.max_event_bytes,
                    }));
                }
                return Ok(None);
            };
            let end = self.scanned + end;
            self.after_cr = self.buf[end] == b'\r';
            let line_at = self.offset + self.start as u64;
            let line = std::mem::take(&mut self.buf);
            let result = self.line(&line[self.start..end], line_at);
            self.buf = line;
            self.start = end + 1;
            self.scanned = self.start;
            match result {
                Ok(Some(event)) => return Ok(Some(event)),
                Ok(None) => {}
                Err(err) => return Err(self.fail(err)),
            }
        }
    }

    fn fail(&mut self, err: SseError) -> SseError {
        self.failed = Some(err.clone());
        self.buf = Vec::new();
        self.start = 0;
        self.scanned = 0;
        err
    }

    /// Reads one line (without its end); an empty line dispatches the event.
    fn line(&mut self, line: &[u8], line_at: u64) -> Result<Option<SseEvent>, SseError> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line[0] == b':' {
            return Ok(None);
        }
        let line = std::str::from_utf8(line).map_err(|_| SseError::Utf8 { line_at })?;
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.data.len() + value.len() + 1 > self.max_event_bytes {
                    return Err(SseError::TooLarge {
                        limit: self.max_event_bytes,
                    });
                }
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "event" => value.clone_into(&mut self.event),
            "id" if !value.contains('\0') => value.clone_into(&mut self.last_id),
            // An id holding NUL, and `retry` (nothing here reconnects), as the standard reads them.
            "id" | "retry" => {}
            other if self.field_events.iter().any(|f| f == other) => {
                return Ok(Some(SseEvent {
                    event: other.to_owned(),
                    data: value.to_owned(),
                    id: self.last_id.clone(),
                }));
            }
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let mut event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // the last data line's `\n`
        if event.is_empty() {
            "message".clone_into(&mut event);
        }
        Some(SseEvent {
            event,
            data,
            id: self.last_id.clone(),
        })
    }
}

/// Why an [`SseStream`] failed: its body's transport, or the framing.
#[derive(Debug)]
pub enum SseStreamError<E> {
    /// The body's stream failed.
    Transport(E),
    /// The body is not a valid event stream.
    Sse(SseError),
}

impl<E: fmt::Display> fmt::Display for SseStreamError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Transport(err) => err.fmt(f),
            Self::Sse(err) => err.fmt(f),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for SseStreamError<E> {}

pin_project! {
    /// The events of a body that arrives as a stream of byte chunks. After an error it ends.
    ///
    /// ```
    /// use futures_util::{StreamExt, stream};
    /// use towerscope_core::sse::SseStream;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let body = stream::iter([Ok::<_, std::io::Error>("data: a\n\nda"), Ok("ta: b\n\n")]);
    /// let data: Vec<String> = SseStream::new(body).map(|e| e.map(|e| e.data).unwrap_or_default()).collect().await;
    /// assert_eq!(data, ["a", "b"]);
    /// # }
    /// ```
    #[must_use = "streams do nothing unless polled"]
    pub struct SseStream<S> {
        #[pin]
        body: S,
        decoder: SseDecoder,
        done: bool,
    }
}

impl<S> SseStream<S> {
    /// Decodes `body` with the default event limit.
    pub fn new(body: S) -> Self {
        Self::with_decoder(body, SseDecoder::new())
    }

    /// Decodes `body` with `decoder` (one made with a limit of its own).
    pub fn with_decoder(body: S, decoder: SseDecoder) -> Self {
        Self {
            body,
            decoder,
            done: false,
        }
    }
}

impl<S> fmt::Debug for SseStream<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseStream")
            .field("decoder", &self.decoder)
            .finish_non_exhaustive()
    }
}

impl<S, B, E> Stream for SseStream<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    type Item = Result<SseEvent, SseStreamError<E>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            if *this.done {
                return Poll::Ready(None);
            }
            match this.decoder.next_event() {
                Ok(Some(event)) => return Poll::Ready(Some(Ok(event))),
                Ok(None) => {}
                Err(err) => {
                    *this.done = true;
                    return Poll::Ready(Some(Err(SseStreamError::Sse(err))));
                }
            }
            match this.body.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(bytes))) => this.decoder.push(bytes.as_ref()),
                Poll::Ready(Some(Err(err))) => {
                    *this.done = true;
                    return Poll::Ready(Some(Err(SseStreamError::Transport(err))));
                }
                Poll::Ready(None) => {
                    // An unfinished event at the end of the body is dropped.
                    *this.done = true;
                    return Poll::Ready(None);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(decoder: &mut SseDecoder) -> Result<Vec<(String, String, String)>, SseError> {
        let mut out = Vec::new();
        while let Some(e) = decoder.next_event()? {
            out.push((e.event, e.data, e.id));
        }
        Ok(out)
    }

    fn whole(body: &[u8]) -> Result<Vec<(String, String, String)>, SseError> {
        let mut decoder = SseDecoder::new();
        decoder.push(body);
        decode_all(&mut decoder)
    }

    fn byte_by_byte(body: &[u8]) -> Result<Vec<(String, String, String)>, SseError> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for b in body {
            decoder.push(std::slice::from_ref(b));
            out.extend(decode_all(&mut decoder)?);
        }
        Ok(out)
    }

    fn ev(event: &str, data: &str, id: &str) -> (String, String, String) {
        (event.to_owned(), data.to_owned(), id.to_owned())
    }

    #[test]
    fn the_standard_s_interpretation() {
        let body = b"\xEF\xBB\xBFdata: a\ndata:b\n\n: comment\nevent: e\rid: 7\r\ndata\r\n\r\nevent: only\n\nretry: 5\nfoo: bar\ndata:  two spaces\n\nid: x\0y\ndata: z\n\ndata: unfinished";
        let expected = vec![
            ev("message", "a\nb", ""),
            ev("e", "", "7"),
            ev("message", " two spaces", "7"),
            ev("message", "z", "7"),
        ];
        assert_eq!(whole(body), Ok(expected.clone()));
        assert_eq!(byte_by_byte(body), Ok(expected));
    }

    #[test]
    fn a_field_asked_for_is_an_event_of_its_own_and_ignored_otherwise() {
        // llama.cpp's server failing mid-stream: its `error` line, then `[DONE]`.
        let body = b"data: a\n\nid: 3\nerror: {\"code\":500}\n\ndata: b\nerror: x\nretry: 5\ndata: c\n\nerror\n\ndata: [DONE]\n\n";
        let standard = vec![
            ev("message", "a", ""),
            ev("message", "b\nc", "3"),
            ev("message", "[DONE]", "3"),
        ];
        assert_eq!(whole(body), Ok(standard.clone()));
        assert_eq!(byte_by_byte(body), Ok(standard));

        let asked = vec![
            ev("message", "a", ""),
            ev("error", "{\"code\":500}", "3"),
            // Apart from the event being read, which goes on around it.
            ev("error", "x", "3"),
            ev("message", "b\nc", "3"),
            ev("error", "", "3"),
            ev("message", "[DONE]", "3"),
        ];
        let mut decoder = SseDecoder::new().field_as_event("error").field_as_event("retry");
        decoder.push(body);
        assert_eq!(decode_all(&mut decoder), Ok(asked.clone()), "retry keeps its meaning");
        let mut decoder = SseDecoder::new().field_as_event("error");
        let mut out = Vec::new();
        for b in body {
            decoder.push(std::slice::from_ref(b));
            out.extend(decode_all(&mut decoder).unwrap_or_default());
        }
        assert_eq!(out, asked);
    }

    #[test]
    fn a_cr_at_the_end_of_a_chunk_and_its_lf_in_the_next_make_one_line_end() {
        let mut decoder = SseDecoder::new();
        decoder.push(b"data: a\r");
        assert_eq!(decoder.next_event(), Ok(None));
        decoder.push(b"\n\r");
        assert_eq!(
            decoder.next_event().map(|e| e.map(|e| e.data)),
            Ok(Some("a".to_owned()))
        );
        decoder.push(b"\ndata: b\n\n");
        // The LF after the blank line's CR is that line's end, not another blank line.
        assert_eq!(
            decoder.next_event().map(|e| e.map(|e| e.data)),
            Ok(Some("b".to_owned()))
        );
        assert_eq!(decoder.next_event(), Ok(None));
    }

    #[test]
    fn a_line_that_is_not_utf8_is_an_error_that_stays() {
        let mut decoder = SseDecoder::new();
        decoder.push(b"data: ok\n\ndata: \xff\n\ndata: after\n\n");
        assert!(decoder.next_event().is_ok_and(|e| e.is_some()));
        let err = decoder.next_event();
        assert_eq!(err, Err(SseError::Utf8 { line_at: 10 }));
        decoder.push(b"data: more\n\n");
        assert_eq!(decoder.next_event(), err);
    }

    #[test]
    fn an_event_past_the_limit_is_an_error_not_a_growing_buffer() {
        // One line that never ends.
        let mut decoder = SseDecoder::with_max_event_bytes(64);
        for _ in 0..10 {
            decoder.push(b"data: xxxxxxxxxx");
            if decoder.next_event().is_err() {
                break;
            }
        }
        assert_eq!(decoder.next_event(), Err(SseError::TooLarge { limit: 64 }));
        assert!(decoder.buf.capacity() == 0, "the buffer is freed");
        // Many short data lines in one event.
        let mut decoder = SseDecoder::with_max_event_bytes(64);
        decoder.push(&b"data: xxxxxxxxxx\n".repeat(10));
        assert_eq!(decoder.next_event(), Err(SseError::TooLarge { limit: 64 }));
        // Events under the limit, however many, are fine.
        let mut decoder = SseDecoder::with_max_event_bytes(64);
        decoder.push(&b"data: xxxxxxxxxx\n\n".repeat(100));
        assert_eq!(decode_all(&mut decoder).map(|v| v.len()), Ok(100));
    }

    #[test]
    fn each_byte_is_searched_once_and_moved_at_most_once() {
        // A 1 MiB line in 1-byte pieces: the search resumes where it stopped, and nothing is
        // moved while no line ends.
        let mut decoder = SseDecoder::new();
        decoder.push(b"data: ");
        for pushed in "data: x".len()..="data: ".len() + (1 << 20) {
            decoder.push(b"x");
            assert_eq!(decoder.next_event(), Ok(None));
            assert!(
                decoder.examined <= pushed,
                "{} bytes looked at after {pushed}",
                decoder.examined
            );
        }
        decoder.push(b"\n\n");
        assert_eq!(decoder.next_event().map(|e| e.map(|e| e.data.len())), Ok(Some(1 << 20)));
        // 10,000 events in one chunk: read in place, the buffer dropped once, at the next push.
        let mut decoder = SseDecoder::new();
        decoder.push(&b"data: e\n\n".repeat(10_000));
        let ptr = decoder.buf.as_ptr();
        assert_eq!(decode_all(&mut decoder).map(|v| v.len()), Ok(10_000));
        assert!(decoder.examined <= 9 * 10_000, "{} bytes looked at", decoder.examined);
        assert_eq!(decoder.buf.as_ptr(), ptr, "no line moved the buffer");
        assert_eq!(decoder.start, decoder.buf.len());
        decoder.push(b"data: last\n\n");
        assert_eq!(decoder.buf.len(), 12, "the read lines were dropped at once");
    }
}
