//! What a function tool may return: [`IntoToolResult`].

use std::fmt;
use std::io;

use serde::Serialize;
use serde_json::Value;
use towerscope_core::{ToolChunk, ToolResponse};

use super::ToolError;

/// A value a tool function may return, turned into one chunk of the tool's result.
///
/// As in the reference, a string is the result text as is and any other value becomes its JSON
/// text, laid out as Python's `json.dumps` lays it out (`{"a": 1, "b": [1, 2]}`). An `Err` becomes
/// an error result whose text is the error's message.
///
/// | Returned | Result |
/// |---|---|
/// | `String`, `&'static str` | the text |
/// | [`serde_json::Value`] | a string's text, or the JSON text of anything else |
/// | [`Json<T>`] | the JSON text of any `T: Serialize` |
/// | [`ToolChunk`], [`ToolResponse`] | the blocks, state and metadata as they are |
/// | `Result<T, E>` (`T: IntoToolResult`, `E: Display`) | `T`'s result, or an error result |
///
/// ```
/// use serde_json::json;
/// use towerscope_agent::toolkit::{IntoToolResult, Json};
///
/// let chunk = json!({"sky": "clear", "temp": 21}).into_tool_result()?;
/// assert_eq!(chunk.content[0].as_text().map(|t| t.text.as_str()), Some(r#"{"sky": "clear", "temp": 21}"#));
///
/// let failed: Result<String, std::io::Error> = Err(std::io::Error::other("disk full"));
/// assert_eq!(failed.into_tool_result().unwrap_err().message(), "disk full");
///
/// let chunk = Json(vec![1, 2]).into_tool_result()?;
/// assert_eq!(chunk.content[0].as_text().map(|t| t.text.as_str()), Some("[1, 2]"));
/// # Ok::<(), towerscope_agent::toolkit::ToolError>(())
/// ```
pub trait IntoToolResult {
    /// The chunk this value stands for, or the error for the model.
    fn into_tool_result(self) -> Result<ToolChunk, ToolError>;
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> Result<ToolChunk, ToolError> {
        Ok(ToolChunk::text(self))
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> Result<ToolChunk, ToolError> {
        Ok(ToolChunk::text(self))
    }
}

impl IntoToolResult for Value {
    fn into_tool_result(self) -> Result<ToolChunk, ToolError> {
        match self {
            Value::String(text) => Ok(ToolChunk::text(text)),
            other => Json(other).into_tool_result(),
        }
    }
}

impl IntoToolResult for ToolChunk {
    fn into_tool_result(self) -> Result<ToolChunk, ToolError> {
        Ok(self)
    }
}

impl IntoToolResult for ToolResponse {
    fn into_tool_result(self) -> Result<ToolChunk, ToolError> {
        let ToolResponse {
            content,
            state,
            metadata,
            id,
        } = self;
        Ok(ToolChunk {
            content,
            state,
            is_last: true,
            metadata,
            id,
        })
    }
}

impl<T: IntoToolResult, E: fmt::Display> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> Result<ToolChunk, ToolError> {
        match self {
            Ok(value) => value.into_tool_result(),
            Err(err) => Err(ToolError::new(err.to_string())),
        }
    }
}

/// Returns any serializable value as its JSON text (see [`IntoToolResult`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> Result<ToolChunk, ToolError> {
        python_json(&self.0)
            .map(ToolChunk::text)
            .map_err(|err| ToolError::new(format!("the tool's result could not be written as JSON: {err}")))
    }
}

/// JSON text with the separators of Python's `json.dumps`: `", "` and `": "`.
pub(crate) fn python_json<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut buf = Vec::with_capacity(64);
    value.serialize(&mut serde_json::Serializer::with_formatter(&mut buf, PythonFormatter))?;
    Ok(match String::from_utf8(buf) {
        Ok(text) => text,
        Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
    })
}

struct PythonFormatter;

impl serde_json::ser::Formatter for PythonFormatter {
    fn begin_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { writer.write_all(b", ") }
    }

    fn begin_object_key<W: ?Sized + io::Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { writer.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;
    use towerscope_core::ToolResultState;

    use super::*;

    fn text(chunk: &ToolChunk) -> &str {
        chunk.content[0].as_text().map(|t| t.text.as_str()).unwrap()
    }

    #[test]
    fn strings_stay_and_values_become_python_json() {
        assert_eq!(text(&"plain".into_tool_result().unwrap()), "plain");
        assert_eq!(text(&String::from("owned").into_tool_result().unwrap()), "owned");
        assert_eq!(text(&json!("in a value").into_tool_result().unwrap()), "in a value");
        assert_eq!(
            text(
                &json!({"a": [1, 2.5, null], "b": {"c": true}})
                    .into_tool_result()
                    .unwrap()
            ),
            r#"{"a": [1, 2.5, null], "b": {"c": true}}"#
        );
        assert_eq!(text(&json!(42).into_tool_result().unwrap()), "42");
        assert_eq!(text(&Json("é").into_tool_result().unwrap()), "\"é\"");
    }

    #[test]
    fn responses_and_results() {
        let response = ToolResponse::error("bad").with_id("r1");
        let chunk = response.into_tool_result().unwrap();
        assert_eq!((chunk.state, text(&chunk)), (ToolResultState::Error, "bad"));
        assert_eq!(chunk.id, "r1");
        let ok: Result<&'static str, String> = Ok("fine");
        assert_eq!(text(&ok.into_tool_result().unwrap()), "fine");
        let err: Result<Value, String> = Err("nope".into());
        assert_eq!(err.into_tool_result().unwrap_err(), ToolError::new("nope"));
    }
}
