//! [`TerminalInput`]: a person typing at the terminal (standard input).

use std::io::{BufRead, Write};
use std::sync::{Arc, OnceLock};

use serde_json::Value;
use tokio::sync::{Mutex, mpsc};
use towerscope_core::AgentError;

use super::{InputFuture, InputRequest, UserInput, UserReply};

/// How many lines the reading thread reads ahead of the readers.
const READ_AHEAD: usize = 64;

/// The lines of standard input, read by one thread for the whole process (standard input is
/// one stream: every terminal input shares it, and a read given up leaves the next line to the
/// next read). A line that is not UTF-8 is read with its bad bytes replaced (U+FFFD), not taken
/// for the end of input, and one longer than [`MAX_LINE_BYTES`] is cut there; the thread reads
/// at most [`READ_AHEAD`] lines ahead.
fn lines() -> Result<&'static Mutex<mpsc::Receiver<String>>, AgentError> {
    static LINES: OnceLock<Option<Mutex<mpsc::Receiver<String>>>> = OnceLock::new();
    LINES
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel(READ_AHEAD);
            let reader = std::thread::Builder::new()
                .name("towerscope-stdin".to_owned())
                .spawn(move || {
                    let stdin = std::io::stdin();
                    loop {
                        match next_line(&mut stdin.lock(), MAX_LINE_BYTES) {
                            Ok(None) => break, // end of input: dropping `tx` tells the readers
                            Ok(Some(bytes)) => {
                                let line = String::from_utf8_lossy(&bytes);
                                let line = line.trim_end_matches(['\n', '\r']).to_owned();
                                if tx.blocking_send(line).is_err() {
                                    break;
                                }
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                            Err(_) => break,
                        }
                    }
                });
            reader.ok().map(|_| Mutex::new(rx))
        })
        .as_ref()
        .ok_or_else(|| AgentError::State("could not start the thread that reads standard input".to_owned()))
}

/// The longest line read: the rest of a longer one is skipped (piped input without line
/// breaks, such as a binary file, would otherwise be read into memory whole).
const MAX_LINE_BYTES: usize = 1 << 20;

/// The next line of `input` with its line break, cut to `max` bytes (the rest of the line is
/// skipped); `None` at the end of input.
fn next_line(input: &mut impl BufRead, max: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    let cap = u64::try_from(max).unwrap_or(u64::MAX);
    if std::io::Read::take(&mut *input, cap).read_until(b'\n', &mut bytes)? == 0 {
        return Ok(None);
    }
    if bytes.len() >= max && bytes.last() != Some(&b'\n') {
        input.skip_until(b'\n')?;
    }
    Ok(Some(bytes))
}

/// Reads one line from standard input after printing `prompt` (without a newline); `None` at
/// the end of input. Dropping the future gives up the read; the line goes to the next one.
pub async fn read_line(prompt: &str) -> Result<Option<String>, AgentError> {
    let lines = lines()?;
    let mut stdout = std::io::stdout();
    // A prompt that cannot be shown does not stop the person from answering.
    let _ = write!(stdout, "{prompt}");
    let _ = stdout.flush();
    Ok(lines.lock().await.recv().await)
}

/// A person typing at the terminal: each read prints the prompt and reads one line. When
/// structured data is asked for, the line must be a JSON object (asked again until it is).
///
/// The terminal input is shared by the whole process: two `TerminalInput`s read the same
/// lines, one each.
#[derive(Debug, Clone, Default)]
pub struct TerminalInput {
    _private: Arc<()>,
}

impl TerminalInput {
    /// The terminal.
    pub fn new() -> Self {
        Self::default()
    }
}

impl UserInput for TerminalInput {
    fn read(&self, request: InputRequest) -> InputFuture {
        Box::pin(async move {
            let Some(schema) = request.structured.clone() else {
                return Ok(read_line(&request.prompt).await?.map(UserReply::text));
            };
            let prompt = format!("{} (a JSON object for {}) ", request.prompt.trim_end(), schema.name);
            loop {
                let Some(line) = read_line(&prompt).await? else {
                    return Ok(None);
                };
                match serde_json::from_str::<Value>(&line) {
                    Ok(Value::Object(data)) => return Ok(Some(UserReply::text(line).with_structured(data))),
                    Ok(_) | Err(_) => println!("That is not a JSON object; try again."),
                }
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::next_line;

    /// A line past the bound is cut there and its rest skipped, without reading it into memory;
    /// the next line comes whole.
    #[test]
    fn a_line_past_the_bound_is_cut_and_the_next_comes_whole() {
        let mut input = std::io::Cursor::new(b"short\n0123456789abcdef\nnext\nlast".to_vec());
        let mut lines = Vec::new();
        while let Some(line) = next_line(&mut input, 8).unwrap() {
            lines.push(String::from_utf8(line).unwrap());
        }
        assert_eq!(lines, ["short\n", "01234567", "next\n", "last"]);
    }
}
