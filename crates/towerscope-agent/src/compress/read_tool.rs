//! [`ReadTool`]: the reference's `Read` tool for text files, confined to an offload directory,
//! so the model can follow an offload reminder back to what was compressed away.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use futures_util::{StreamExt, stream};
use serde_json::{Value, json};
use towerscope_core::{ToolChunk, ToolResultState};

use crate::toolkit::{Tool, ToolChunkStream};

/// The longest line shown; longer ones end with `[truncated]` (the reference's default).
const MAX_LINE_CHARS: usize = 2000;

const DESCRIPTION: &str = "Reads a text file that the agent offloaded from its context (compressed messages, \
offloaded tool results). Use it when a reminder says that something was offloaded to a path and you need it.\n\n\
Usage:\n\
- The file_path parameter is the path given by the reminder\n\
- By default, it reads up to 2000 lines starting from the beginning of the file\n\
- You can optionally specify a line offset and limit (especially handy for long files)\n\
- Results are returned using cat -n format, with line numbers starting at 1";

fn schema() -> &'static Arc<Value> {
    static SCHEMA: OnceLock<Arc<Value>> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        Arc::new(json!({
            "properties": {
                "file_path": {"description": "The absolute path to the file to read.", "type": "string"},
                "offset": {
                    "default": 1,
                    "description": "Optional 1-based line number to start reading from. Only applies to plain text files (default: 1)",
                    "minimum": 1,
                    "type": "integer",
                },
                "limit": {
                    "default": 2000,
                    "description": "Optional maximum number of lines to read. Only applies to plain text files (default: 2000, max: 2000)",
                    "maximum": 2000,
                    "minimum": 1,
                    "type": "integer",
                },
            },
            "required": ["file_path"],
            "type": "object",
        }))
    })
}

/// Reads text files inside one directory, numbered as `cat -n` does. Read-only; a path outside
/// the directory (after resolving `..` and links) is an error result.
#[derive(Debug, Clone)]
pub struct ReadTool {
    dir: PathBuf,
    /// A directory inside `dir` it does not read (the named users' files, for the tool of an
    /// agent without a user id).
    except: Option<PathBuf>,
}

impl ReadTool {
    /// A tool reading inside `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            except: None,
        }
    }

    /// The tool, refusing the files under `except` too.
    pub(crate) fn except(mut self, except: PathBuf) -> Self {
        self.except = Some(except);
        self
    }
}

impl Tool for ReadTool {
    fn name(&self) -> &str {
        "Read"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> &Value {
        schema()
    }

    fn shared_input_schema(&self) -> Arc<Value> {
        Arc::clone(schema())
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call(&self, input: Value) -> ToolChunkStream {
        let (dir, except) = (self.dir.clone(), self.except.clone());
        let read = async move {
            let answer = tokio::task::spawn_blocking(move || read(&dir, except.as_deref(), &input))
                .await
                .unwrap_or_else(|e| Err(format!("Error reading file: {e}")));
            let chunk = match answer {
                Ok(text) => ToolChunk::text(text),
                Err(text) => ToolChunk::text(text).with_state(ToolResultState::Error),
            };
            Ok(chunk)
        };
        Box::pin(stream::once(read).boxed())
    }
}

fn read(dir: &std::path::Path, except: Option<&std::path::Path>, input: &Value) -> Result<String, String> {
    let file_path = input.get("file_path").and_then(Value::as_str).unwrap_or_default();
    let offset = input.get("offset").and_then(Value::as_u64).unwrap_or(1).max(1);
    let limit = input
        .get("limit")
        .and_then(Value::as_u64)
        .unwrap_or(2000)
        .clamp(1, 2000);
    let Ok(path) = std::fs::canonicalize(file_path) else {
        return Err(format!("Error: File does not exist: {file_path}"));
    };
    let inside = std::fs::canonicalize(dir).is_ok_and(|dir| path.starts_with(dir));
    let excepted = except.is_some_and(|except| {
        // A directory not made yet holds nothing to refuse.
        std::fs::canonicalize(except).is_ok_and(|except| path.starts_with(except))
    });
    if !inside || excepted {
        return Err(format!(
            "Error: {file_path} is not an offloaded file; this tool reads only inside {}",
            dir.display()
        ));
    }
    let file = std::fs::File::open(&path).map_err(|e| format!("Error reading file: {e}"))?;
    let skip = usize::try_from(offset - 1).unwrap_or(usize::MAX);
    let take = usize::try_from(limit).unwrap_or(2000);
    let mut shown = Vec::with_capacity(take.min(64));
    read_lines(
        std::io::BufReader::new(file),
        skip.saturating_add(take),
        |number, line| {
            if number > skip {
                let text = String::from_utf8_lossy(line);
                let line = match text.char_indices().nth(MAX_LINE_CHARS) {
                    Some((cut, _)) => format!("{}[truncated]", &text[..cut]),
                    None => text.into_owned(),
                };
                shown.push(format!("{number:6}\t{line}"));
            }
        },
    )
    .map_err(|e| format!("Error reading file: {e}"))?;
    Ok(shown.join("\n"))
}

/// The most bytes of a line kept: a line is shown cut at [`MAX_LINE_CHARS`] characters, of at
/// most 4 bytes each.
const MAX_LINE_BYTES: u64 = MAX_LINE_CHARS as u64 * 4;

/// Calls `each` with the number (from 1) and the bytes (at most [`MAX_LINE_BYTES`]) of the
/// first `count` lines of `reader`, reading no further. Lines end at `\n`, `\r\n` or `\r`, as
/// the reference reads them; a line longer than the bytes kept is read past, not held.
fn read_lines(
    mut reader: impl std::io::BufRead,
    count: usize,
    mut each: impl FnMut(usize, &[u8]),
) -> std::io::Result<()> {
    use std::io::{BufRead, Read};
    let mut number = 0;
    let mut segment = Vec::new();
    while number < count {
        segment.clear();
        let read = (&mut reader).take(MAX_LINE_BYTES).read_until(b'\n', &mut segment)?;
        if read == 0 {
            break;
        }
        let ended = segment.last() == Some(&b'\n');
        if !ended && read as u64 == MAX_LINE_BYTES {
            // Longer than what is shown: the rest of the line is read past.
            let mut rest = Vec::new();
            loop {
                rest.clear();
                let more = (&mut reader).take(MAX_LINE_BYTES).read_until(b'\n', &mut rest)?;
                if more == 0 || rest.last() == Some(&b'\n') {
                    break;
                }
            }
        }
        if ended {
            segment.pop();
        }
        if segment.last() == Some(&b'\r') {
            segment.pop();
        }
        for line in segment.split(|b| *b == b'\r') {
            number += 1;
            if number > count {
                break;
            }
            each(number, line);
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Read as _;

    use super::{MAX_LINE_BYTES, read_lines};

    fn lines(text: &[u8], count: usize) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        read_lines(text, count, |n, line| {
            out.push((n, String::from_utf8_lossy(line).into_owned()))
        })
        .unwrap();
        out
    }

    #[test]
    fn lines_end_at_lf_crlf_and_cr_as_the_reference_reads_them() {
        let got = lines(b"one\ntwo\r\nthree\rfour\r\r\nfive\n", 100);
        let want: Vec<(usize, String)> = ["one", "two", "three", "four", "", "five"]
            .iter()
            .enumerate()
            .map(|(i, l)| (i + 1, (*l).to_owned()))
            .collect();
        assert_eq!(got, want);
        assert_eq!(lines(b"no line break", 5), [(1, "no line break".to_owned())]);
        assert_eq!(lines(b"", 5), []);
    }

    #[test]
    fn reading_stops_at_the_lines_asked_for() {
        let text = b"a\nb\nc\nd\n";
        assert_eq!(lines(text, 2), [(1, "a".to_owned()), (2, "b".to_owned())]);
        // A reader that fails past what is asked for is not read there.
        let mut failing = std::io::Cursor::new(b"a\nb\n".to_vec()).chain(Broken);
        let mut seen = 0;
        read_lines(std::io::BufReader::new(&mut failing), 2, |_, _| seen += 1).unwrap();
        assert_eq!(seen, 2);
    }

    #[test]
    fn a_long_line_is_read_past_not_held() {
        let mut text = vec![b'x'; usize::try_from(MAX_LINE_BYTES).unwrap() * 3 + 7];
        text.extend_from_slice(b"\nafter\n");
        let got = lines(&text, 10);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].1.len(), usize::try_from(MAX_LINE_BYTES).unwrap());
        assert_eq!(got[1], (2, "after".to_owned()));
    }

    /// A reader that fails.
    struct Broken;

    impl std::io::Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("read past what was asked for"))
        }
    }
}
