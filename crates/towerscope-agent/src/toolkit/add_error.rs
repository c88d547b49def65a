//! Why [`Toolkit`](super::Toolkit) refused a tool.

use std::fmt;

use super::SchemaError;

/// [`Toolkit::add_to_group`](super::Toolkit::add_to_group) was given a group that was never
/// created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownGroupError {
    pub(super) group: String,
}

impl UnknownGroupError {
    /// The group that does not exist.
    pub fn group(&self) -> &str {
        &self.group
    }
}

impl fmt::Display for UnknownGroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the tool group '{}' does not exist; create it first with Toolkit::create_group",
            self.group
        )
    }
}

impl std::error::Error for UnknownGroupError {}

/// A tool whose input schema the toolkit cannot enforce: a keyword it does not check (such as
/// `unevaluatedProperties`), a `$ref` out of the document, or a pattern it cannot compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSchemaError {
    pub(super) tool: String,
    pub(super) error: SchemaError,
}

impl ToolSchemaError {
    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// What is wrong with its schema.
    pub fn error(&self) -> &SchemaError {
        &self.error
    }
}

impl fmt::Display for ToolSchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the input schema of the tool '{}' cannot be enforced: {}",
            self.tool, self.error
        )
    }
}

impl std::error::Error for ToolSchemaError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Why [`Toolkit::add_to_group`](super::Toolkit::add_to_group) refused a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AddToolError {
    /// The group was never created.
    UnknownGroup(UnknownGroupError),
    /// The tool's input schema cannot be enforced.
    Schema(ToolSchemaError),
}

impl fmt::Display for AddToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownGroup(e) => e.fmt(f),
            Self::Schema(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for AddToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::UnknownGroup(e) => Some(e),
            Self::Schema(e) => Some(e),
        }
    }
}

impl From<UnknownGroupError> for AddToolError {
    fn from(e: UnknownGroupError) -> Self {
        Self::UnknownGroup(e)
    }
}

impl From<ToolSchemaError> for AddToolError {
    fn from(e: ToolSchemaError) -> Self {
        Self::Schema(e)
    }
}
