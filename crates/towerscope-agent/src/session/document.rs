//! [`SessionDocument`]: what a session saves, as one versioned JSON document.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use towerscope_core::AgentError;

use crate::state::AgentState;

/// The version of the session document this towerscope writes.
///
/// - `1`: `{"version": 1, "agent": AgentState, "modules": {name: state}}`; a store may add
///   `"revision"` (the file store does, with `"bytes"`, the length of the rest).
/// - `0`: a bare [`AgentState`], as `serde_json::to_string(&agent.state())` wrote it before
///   sessions existed; read as version 1 with no modules.
///
/// A document of a later version fails to load with a message saying so, instead of losing
/// what this version does not know.
pub const SESSION_FORMAT_VERSION: u32 = 1;

/// Everything a session saves: the agent's state and the state of the registered modules
/// ([`StateModules`](towerscope_core::state::StateModules)), keyed by name.
///
/// ```
/// use towerscope_agent::AgentState;
/// use towerscope_agent::session::SessionDocument;
///
/// let doc = SessionDocument::new(AgentState::new());
/// let json = doc.to_json()?;
/// assert!(json.starts_with(r#"{"version":1,"agent":{"#));
/// assert_eq!(SessionDocument::from_json(&json)?, doc);
///
/// // What `serde_json::to_string(&agent.state())` wrote before sessions loads too.
/// let bare = serde_json::to_string(&AgentState::new())?;
/// assert!(SessionDocument::from_json(&bare)?.modules.is_empty());
///
/// let newer = r#"{"version": 9, "agent": {}}"#;
/// assert!(SessionDocument::from_json(newer).unwrap_err().to_string().contains("version 9"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionDocument {
    /// The agent's state.
    pub agent: AgentState,
    /// The registered modules' states, by name.
    pub modules: Map<String, Value>,
}

impl SessionDocument {
    /// A document holding `agent` and no module state.
    pub fn new(agent: AgentState) -> Self {
        Self {
            agent,
            modules: Map::new(),
        }
    }

    /// The document as JSON (version [`SESSION_FORMAT_VERSION`]).
    pub fn to_json(&self) -> Result<String, AgentError> {
        let bytes = write(self, None)?;
        String::from_utf8(bytes).map_err(|e| AgentError::decode("session document", e))
    }

    /// Reads a document of any version up to [`SESSION_FORMAT_VERSION`] (see there).
    pub fn from_json(json: &str) -> Result<Self, AgentError> {
        read(json.as_bytes()).map(|(doc, _)| doc)
    }
}

#[derive(Serialize)]
struct Out<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    revision: Option<u64>,
    version: u32,
    agent: &'a AgentState,
    modules: &'a Map<String, Value>,
}

#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    version: Option<u64>,
}

#[derive(Deserialize)]
struct V1 {
    #[serde(default)]
    revision: Option<u64>,
    agent: AgentState,
    #[serde(default)]
    modules: Map<String, Value>,
}

/// The document's JSON, with `revision` first when given (a store reads it back cheaply).
pub(crate) fn write(doc: &SessionDocument, revision: Option<u64>) -> Result<Vec<u8>, AgentError> {
    let mut out = Vec::new();
    write_to(&mut out, doc, revision)?;
    Ok(out)
}

/// How deep a document's arrays and objects may nest: the most `serde_json` reads back (it
/// refuses a 128th level). A deeper document is refused when written, not saved to fail every
/// later load of its session.
pub(crate) const MAX_DEPTH: usize = 127;

/// [`write`] into `out`.
pub(crate) fn write_to(
    out: impl std::io::Write,
    doc: &SessionDocument,
    revision: Option<u64>,
) -> Result<(), AgentError> {
    let mut out = Bounded {
        out,
        depth: 0,
        string: Str::Outside,
        too_deep: false,
    };
    let written = serde_json::to_writer(
        &mut out,
        &Out {
            revision,
            version: SESSION_FORMAT_VERSION,
            agent: &doc.agent,
            modules: &doc.modules,
        },
    );
    match written {
        Ok(()) => Ok(()),
        Err(_) if out.too_deep => Err(AgentError::validation(format!(
            "the session cannot be saved: its JSON nests deeper than {MAX_DEPTH} levels (a message's metadata, \
             a tool's input or output, or a module's state), which no load could read back"
        ))),
        Err(e) => Err(AgentError::validation(format!(
            "the session cannot be saved as JSON: {e}"
        ))),
    }
}

/// Where a writer of JSON is as to strings.
#[derive(Clone, Copy, PartialEq)]
enum Str {
    Outside,
    Inside,
    /// Just after a backslash inside a string.
    Escape,
}

/// Passes JSON through, failing once it nests past [`MAX_DEPTH`] (one look at each byte).
struct Bounded<W> {
    out: W,
    depth: usize,
    string: Str,
    too_deep: bool,
}

impl<W: std::io::Write> std::io::Write for Bounded<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        for &byte in bytes {
            self.string = match (self.string, byte) {
                (Str::Outside, b'"') | (Str::Escape, _) => Str::Inside,
                (Str::Inside, b'"') => Str::Outside,
                (Str::Inside, b'\\') => Str::Escape,
                (Str::Outside, b'[' | b'{') => {
                    self.depth += 1;
                    if self.depth > MAX_DEPTH {
                        self.too_deep = true;
                        return Err(std::io::Error::other("too deep"));
                    }
                    Str::Outside
                }
                (Str::Outside, b']' | b'}') => {
                    self.depth = self.depth.saturating_sub(1);
                    Str::Outside
                }
                (state, _) => state,
            };
        }
        self.out.write_all(bytes)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// A document of any known version, and the revision written in it, if any.
pub(crate) fn read(json: &[u8]) -> Result<(SessionDocument, Option<u64>), AgentError> {
    let peek: Peek = serde_json::from_slice(json).map_err(|e| AgentError::decode("session document", e))?;
    match peek.version {
        None | Some(0) => {
            let agent: AgentState =
                serde_json::from_slice(json).map_err(|e| AgentError::decode("session document (version 0)", e))?;
            Ok((SessionDocument::new(agent), None))
        }
        Some(1) => {
            let v1: V1 = serde_json::from_slice(json).map_err(|e| AgentError::decode("session document", e))?;
            Ok((
                SessionDocument {
                    agent: v1.agent,
                    modules: v1.modules,
                },
                v1.revision,
            ))
        }
        Some(v) => Err(AgentError::decode(
            "session document",
            format!(
                "it is version {v}, written by a newer towerscope; this one reads versions up to \
                 {SESSION_FORMAT_VERSION}: upgrade towerscope to load it"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_revision_comes_first_and_reads_back() {
        let doc = SessionDocument::new(AgentState::new());
        let bytes = write(&doc, Some(42)).unwrap();
        assert!(bytes.starts_with(br#"{"revision":42,"version":1,"#));
        assert_eq!(read(&bytes).unwrap(), (doc, Some(42)));
    }

    #[test]
    fn a_document_nested_deeper_than_a_load_reads_is_refused_and_one_level_less_reads_back() {
        let nested = |depth: usize| -> Value {
            serde_json::from_str(&format!("{}1{}", "[".repeat(depth), "]".repeat(depth))).unwrap()
        };
        // The reader's limit, which MAX_DEPTH is.
        let depth = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(serde_json::from_str::<Value>(&depth(MAX_DEPTH)).is_ok());
        assert!(serde_json::from_str::<Value>(&depth(MAX_DEPTH + 1)).is_err());
        // The document's own levels: the document, `modules`, then the module's value.
        let doc = |depth: usize| SessionDocument {
            agent: AgentState::new(),
            modules: Map::from_iter([("m".to_owned(), nested(depth))]),
        };
        let fits = doc(MAX_DEPTH - 2);
        assert_eq!(read(&write(&fits, None).unwrap()).unwrap().0, fits);
        let err = write(&doc(MAX_DEPTH - 1), None).unwrap_err();
        assert!(err.to_string().contains("nests deeper than 127 levels"), "{err}");
        // Brackets inside strings, after escaped quotes and backslashes, are text.
        let mut text = doc(0);
        text.modules
            .insert("t".into(), Value::String(format!("\\\"{}", "[".repeat(500))));
        assert_eq!(read(&write(&text, None).unwrap()).unwrap().0, text);
    }

    #[test]
    fn broken_json_names_the_document() {
        let err = read(br#"{"version": 1, "agent": {"session_id": 3}}"#).unwrap_err();
        assert!(
            err.to_string().starts_with("could not decode session document"),
            "{err}"
        );
        assert!(read(b"{\"version\":1,").is_err());
    }
}
