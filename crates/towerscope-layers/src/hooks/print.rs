//! [`PrintChunk`]: what a console prints of a message, one piece at a time, as the
//! `pre_print`/`post_print` hooks see it.

use std::fmt;

/// What kind of content a [`PrintChunk`] shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PrintKind {
    /// Streamed text of the reply.
    Text,
    /// Streamed thinking.
    Thinking,
    /// A tool call, once its arguments are complete.
    ToolCall,
    /// A tool's result, once it ended.
    ToolResult,
    /// A data block (image, audio, file), shown as a placeholder.
    Data,
    /// A hint block.
    Hint,
    /// A notice about the reply: waiting for a confirmation or an external tool, interrupted,
    /// failed, out of iterations.
    Notice,
}

impl PrintKind {
    /// The kind's name: `text`, `thinking`, `tool_call`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Thinking => "thinking",
            Self::ToolCall => "tool_call",
            Self::ToolResult => "tool_result",
            Self::Data => "data",
            Self::Hint => "hint",
            Self::Notice => "notice",
        }
    }
}

impl fmt::Display for PrintKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One piece of a message a console is about to print (the reference's `print(msg, last)`,
/// streamed): a text or thinking delta, a whole tool call or result line, a notice.
///
/// A `pre_print` hook may return a replacement: another text prints instead, and an empty text
/// prints nothing (the chunk is suppressed). The console adds the decoration itself (the
/// speaker's name before the first chunk of a block, colours, line breaks), so hooks see and
/// return plain text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrintChunk {
    /// What the text shows.
    pub kind: PrintKind,
    /// The text to print.
    pub text: String,
    /// Whether this is the last chunk of its block (the block's end carries no new text unless
    /// a hook adds some).
    pub last: bool,
}

impl PrintChunk {
    /// A chunk of `kind` with `text`.
    pub fn new(kind: PrintKind, text: impl Into<String>, last: bool) -> Self {
        Self {
            kind,
            text: text.into(),
            last,
        }
    }

    /// Whether nothing will be printed.
    pub fn is_suppressed(&self) -> bool {
        self.text.is_empty()
    }
}
