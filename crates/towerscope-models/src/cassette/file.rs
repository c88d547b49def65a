//! The cassette file: JSON lines, each naming the interaction it belongs to (`n`), so the
//! chunks of a streamed answer are one line each, in the order and with the boundaries they
//! arrived in:
//!
//! ```text
//! {"n":1,"request":{"method":"POST","path":"/v1/chat/completions","headers":{...},"body":{...}}}
//! {"n":1,"response":{"status":200,"headers":{"content-type":"text/event-stream"}}}
//! {"n":1,"chunk":"data: {\"choices\":[...]}\n\n"}
//! {"n":1,"end":"complete"}
//! ```
//!
//! A chunk that is not UTF-8 on its own (a character split between two reads) is written as
//! `chunk_hex`. The end is `complete`, `{"broke": "why"}` (the connection failed mid-body),
//! or `stopped` (the client stopped reading before the body had arrived: replaying past the
//! last chunk is an error). A request that failed
//! before any response has `{"failed": "why"}` instead of a response. A failure that timed out
//! or could not connect is written `{"text": "why", "class": "timeout"}` (or `"connect"`), so
//! that its replay is the same error as the recording's (a timeout, not a model error).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use towerscope_core::AgentError;

/// A recorded request, redacted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RecordedRequest {
    pub(crate) method: String,
    /// The path and query, without scheme, host or port.
    pub(crate) path: String,
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// The body, when it is JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) body: Option<Value>,
    /// The body, when it is not JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) body_text: Option<String>,
}

/// A recorded response head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ResponseHead {
    pub(crate) status: u16,
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
}

/// A recorded failure: its text (scrubbed of secrets) and what kind of transport failure it
/// was, when that decides how the provider reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "FailureLine", into = "FailureLine")]
pub(crate) struct Failure {
    pub(crate) text: String,
    pub(crate) class: Option<FailureClass>,
}

/// What kind of transport failure a recorded one was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FailureClass {
    /// The read or connection timed out.
    Timeout,
    /// The connection could not be made.
    Connect,
}

/// A failure as written: its text alone (as files before the class was recorded hold it), or
/// its text and class.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum FailureLine {
    Text(String),
    Classified { text: String, class: FailureClass },
}

impl From<FailureLine> for Failure {
    fn from(line: FailureLine) -> Self {
        match line {
            FailureLine::Text(text) => Self { text, class: None },
            FailureLine::Classified { text, class } => Self {
                text,
                class: Some(class),
            },
        }
    }
}

impl From<Failure> for FailureLine {
    fn from(failure: Failure) -> Self {
        match failure.class {
            None => Self::Text(failure.text),
            Some(class) => Self::Classified {
                text: failure.text,
                class,
            },
        }
    }
}

impl From<&str> for Failure {
    fn from(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            class: None,
        }
    }
}

/// How a recorded body ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum End {
    /// The body ended normally.
    Complete,
    /// The client stopped reading before the end.
    Stopped,
    /// The body failed: the error.
    Broke(Failure),
}

/// One line of the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Line {
    pub(crate) n: u32,
    #[serde(flatten)]
    pub(crate) item: Item,
}

/// What a line holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Item {
    Request(RecordedRequest),
    Response(ResponseHead),
    Chunk(String),
    ChunkHex(String),
    End(End),
    Failed(Failure),
}

/// A whole interaction.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Interaction {
    pub(crate) n: u32,
    pub(crate) request: RecordedRequest,
    pub(crate) outcome: Outcome,
}

/// What the server answered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// A response: its head, body chunks and how the body ended.
    Response {
        head: ResponseHead,
        chunks: Vec<Vec<u8>>,
        end: End,
    },
    /// No response: the request failed (could not connect, ...).
    Failed(Failure),
}

impl Interaction {
    /// The interaction's lines.
    pub(crate) fn lines(&self) -> Vec<Line> {
        let n = self.n;
        let line = |item| Line { n, item };
        let mut lines = vec![line(Item::Request(self.request.clone()))];
        match &self.outcome {
            Outcome::Failed(why) => lines.push(line(Item::Failed(why.clone()))),
            Outcome::Response { head, chunks, end } => {
                lines.push(line(Item::Response(head.clone())));
                for chunk in chunks {
                    lines.push(line(match std::str::from_utf8(chunk) {
                        Ok(text) => Item::Chunk(text.to_owned()),
                        Err(_) => Item::ChunkHex(hex(chunk)),
                    }));
                }
                lines.push(line(Item::End(end.clone())));
            }
        }
        lines
    }
}

/// The interactions of a cassette file, ordered by number.
pub(crate) fn read(path: &Path) -> Result<Vec<Interaction>, AgentError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        AgentError::validation(format!(
            "could not read the cassette {}: {e}; record it with TOWERSCOPE_CASSETTE=record",
            path.display()
        ))
    })?;
    let mut building: BTreeMap<u32, (Option<RecordedRequest>, Option<Outcome>)> = BTreeMap::new();
    let lines = text.lines().count();
    for (index, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let bad =
            |why: String| AgentError::validation(format!("cassette {} line {}: {why}", path.display(), index + 1));
        let line: Line = serde_json::from_str(raw).map_err(|e| {
            // A last line that ends mid-value, without its line break: a write cut short.
            if e.is_eof() && index + 1 == lines && !text.ends_with('\n') {
                bad(format!(
                    "{e}; the last line is cut short (a recording interrupted mid-write, a full disk?): remove \
                     it and the other lines of its interaction (its \"n\"), or record the cassette again"
                ))
            } else {
                bad(e.to_string())
            }
        })?;
        let (request, outcome) = building.entry(line.n).or_default();
        // Two interactions numbered alike (two recorders on one file, a hand edit) would
        // silently lose one: refused.
        let twice = || bad(format!("interaction {} is recorded twice (two lines start it)", line.n));
        match line.item {
            Item::Request(_) if request.is_some() => return Err(twice()),
            Item::Failed(_) | Item::Response(_) if outcome.is_some() => return Err(twice()),
            Item::Request(r) => *request = Some(r),
            Item::Failed(why) => *outcome = Some(Outcome::Failed(why)),
            Item::Response(head) => {
                *outcome = Some(Outcome::Response {
                    head,
                    chunks: Vec::new(),
                    end: End::Stopped,
                })
            }
            Item::Chunk(_) | Item::ChunkHex(_) | Item::End(_) => {
                let Some(Outcome::Response { chunks, end, .. }) = outcome else {
                    return Err(bad(format!(
                        "interaction {} has a body line before its response line",
                        line.n
                    )));
                };
                match line.item {
                    Item::Chunk(text) => chunks.push(text.into_bytes()),
                    Item::ChunkHex(text) => {
                        chunks.push(unhex(&text).ok_or_else(|| bad("chunk_hex is not hex".into()))?)
                    }
                    Item::End(e) => *end = e,
                    _ => {}
                }
            }
        }
    }
    building
        .into_iter()
        .map(|(n, parts)| match parts {
            (Some(request), Some(outcome)) => Ok(Interaction { n, request, outcome }),
            (None, _) => Err(AgentError::validation(format!(
                "cassette {}: interaction {n} has no request line",
                path.display()
            ))),
            (Some(_), None) => Err(AgentError::validation(format!(
                "cassette {}: interaction {n} has no response or failed line",
                path.display()
            ))),
        })
        .collect()
}

/// Appends an interaction's lines to the file (created with its directory if missing), in one
/// write.
pub(crate) fn append(path: &Path, interaction: &Interaction) -> Result<(), AgentError> {
    let mut out = String::new();
    for line in interaction.lines() {
        let json = serde_json::to_string(&line)
            .map_err(|e| AgentError::validation(format!("could not write a cassette line: {e}")))?;
        out.push_str(&json);
        out.push('\n');
    }
    let failed =
        |e: std::io::Error| AgentError::validation(format!("could not write the cassette {}: {e}", path.display()));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)
        .map_err(failed)?;
    // A file edited by hand may have lost its last newline: the new lines start on their own.
    if ends_without_newline(&mut file).map_err(failed)? {
        out.insert(0, '\n');
    }
    file.write_all(out.as_bytes()).map_err(failed)
}

/// Whether `file` is not empty and its last byte is not a newline.
fn ends_without_newline(file: &mut std::fs::File) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    if file.metadata()?.len() == 0 {
        return Ok(false);
    }
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] != b'\n')
}

/// Empties the file, creating it and its directory if missing.
pub(crate) fn truncate(path: &Path) -> Result<(), AgentError> {
    let failed =
        |e: std::io::Error| AgentError::validation(format!("could not create the cassette {}: {e}", path.display()));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(failed)?;
    }
    std::fs::write(path, b"").map_err(failed)
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0xf)]])
        .map(char::from)
        .collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| char::from(c).to_digit(16);
    text.as_bytes()
        .chunks(2)
        .map(|pair| match pair {
            [hi, lo] => Some((digit(*hi)? * 16 + digit(*lo)?) as u8),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn interactions_round_trip_with_their_chunk_boundaries() {
        let dir = std::env::temp_dir().join(format!("towerscope-cassette-file-{}", std::process::id()));
        let path = dir.join("round_trip.jsonl");
        truncate(&path).unwrap();
        let request = RecordedRequest {
            method: "POST".into(),
            path: "/v1/messages".into(),
            headers: BTreeMap::from([("x-api-key".into(), "[REDACTED]".into())]),
            body: Some(serde_json::json!({"model": "m"})),
            body_text: None,
        };
        let streamed = Interaction {
            n: 1,
            request: request.clone(),
            outcome: Outcome::Response {
                head: ResponseHead {
                    status: 200,
                    headers: BTreeMap::from([("content-type".into(), "text/event-stream".into())]),
                },
                chunks: vec![
                    b"data: \xc3".to_vec(),
                    b"\xa9\n\n".to_vec(),
                    b"data: [DONE]\n\n".to_vec(),
                ],
                end: End::Broke("connection reset".into()),
            },
        };
        let failed = Interaction {
            n: 2,
            request,
            outcome: Outcome::Failed("could not connect".into()),
        };
        append(&path, &failed).unwrap();
        append(&path, &streamed).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#"{"n":1,"chunk_hex":"646174613a20c3"}"#), "{text}");
        assert!(text.contains(r#"{"n":1,"chunk":"data: [DONE]\n\n"}"#), "{text}");
        assert_eq!(read(&path).unwrap(), vec![streamed, failed]);
        // A recording cut mid-write says so.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, &text[..text.len() - 10]).unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("the last line is cut short"), "{err}");
        std::fs::write(&path, "{\"n\":1,\"chunk\":\"x\"}\n").unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains("before its response"), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
