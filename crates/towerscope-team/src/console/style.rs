//! Colours and the switches read from the environment.

/// The environment variable that silences the console's output (the reference's
/// `AGENTSCOPE_DISABLE_CONSOLE_OUTPUT`): `true` or `1` (any case) silences it.
pub const DISABLE_OUTPUT_ENV: &str = "TOWERSCOPE_DISABLE_CONSOLE_OUTPUT";

/// Whether to colour output written to a terminal (`is_terminal`) given the value of the
/// `NO_COLOR` variable: only on a terminal, and never when `NO_COLOR` is set to anything but
/// the empty string (see no-color.org).
///
/// ```
/// use towerscope_team::console::use_colors;
///
/// assert!(use_colors(true, None));
/// assert!(!use_colors(false, None), "not a terminal");
/// assert!(!use_colors(true, Some("1")), "NO_COLOR wins");
/// assert!(use_colors(true, Some("")), "an empty NO_COLOR is unset");
/// ```
pub fn use_colors(is_terminal: bool, no_color: Option<&str>) -> bool {
    is_terminal && no_color.is_none_or(str::is_empty)
}

/// Whether `value` of [`DISABLE_OUTPUT_ENV`] asks for silence.
pub(crate) fn disables_output(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// How a piece of output is painted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tone {
    Plain,
    Bold,
    Dim,
    Call,
    Good,
    Bad,
    Warn,
    Media,
}

impl Tone {
    fn code(self) -> &'static str {
        match self {
            Self::Plain => "",
            Self::Bold => "\x1b[1m",
            Self::Dim => "\x1b[2m",
            Self::Call => "\x1b[36m",
            Self::Good => "\x1b[32m",
            Self::Bad => "\x1b[31m",
            Self::Warn => "\x1b[33m",
            Self::Media => "\x1b[35m",
        }
    }

    /// `text` painted, or as it is without colours.
    pub(crate) fn paint(self, text: &str, colors: bool) -> String {
        let text = printable(text);
        if !colors || self == Self::Plain || text.is_empty() {
            return text.into_owned();
        }
        format!("{}{text}\x1b[0m", self.code())
    }
}

/// `text` as the terminal should show it, not act on it: what a model or a tool wrote may hold
/// escape sequences (colours, a title, the clipboard, the alternate screen) and other control
/// characters. Those are shown in caret notation (`ESC` as `^[`, `BEL` as `^G`), the C1
/// controls as U+FFFD, and carriage returns dropped (a line is not overwritten); newlines and
/// tabs stay. The bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069), which
/// make a terminal show text in another order than it is written, are shown as `<U+202E>`.
/// Text without any is borrowed as it is.
pub(crate) fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let reorders = |c: char| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    let acts = |c: char| (c.is_control() && c != '\n' && c != '\t') || reorders(c);
    if !text.chars().any(acts) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\r' => {}
            c if !acts(c) => out.push(c),
            '\u{7f}' => out.push_str("^?"),
            c if reorders(c) => {
                use std::fmt::Write;
                let _ = write!(out, "<U+{:04X}>", u32::from(c));
            }
            c if u32::from(c) < 0x20 => {
                out.push('^');
                out.push(char::from(b'@' + u8::try_from(u32::from(c)).unwrap_or(0)));
            }
            _ => out.push('\u{fffd}'),
        }
    }
    std::borrow::Cow::Owned(out)
}
