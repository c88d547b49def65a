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
    let bytes = std::fs::read(&path).map_err(|e| format!("Error reading file: {e}"))?;
    let text = String::from_utf8_lossy(&bytes)
        .replace("\r\n", "\n")
        .replace('\r', "\n");
    let skip = usize::try_from(offset - 1).unwrap_or(usize::MAX);
    let take = usize::try_from(limit).unwrap_or(2000);
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .skip(skip)
        .take(take)
        .map(|(i, line)| {
            let shown = match line.char_indices().nth(MAX_LINE_CHARS) {
                Some((cut, _)) => format!("{}[truncated]", &line[..cut]),
                None => line.to_owned(),
            };
            format!("{:6}\t{shown}", i + 1)
        })
        .collect();
    Ok(lines.join("\n"))
}
