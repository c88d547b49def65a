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
        if !colors || self == Self::Plain || text.is_empty() {
            return text.to_owned();
        }
        format!("{}{text}\x1b[0m", self.code())
    }
}
