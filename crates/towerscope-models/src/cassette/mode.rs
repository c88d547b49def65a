//! [`CassetteMode`]: whether a cassette records, replays, or both, and the environment variable
//! that switches every cassette of a test run.

use std::fmt;
use std::str::FromStr;

use towerscope_core::AgentError;

/// The environment variable that sets the mode of cassettes opened without one:
/// `record`, `replay` or `record-missing` (as `VCR_MODE` does for vcrpy).
pub const MODE_VAR: &str = "TOWERSCOPE_CASSETTE";

/// What a cassette does with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CassetteMode {
    /// Every request goes to the server and is recorded; the file is emptied when the first
    /// interaction is written, so a run that records nothing keeps the old recording.
    Record,
    /// Every request is answered from the file; one the file does not hold is an error, and
    /// nothing is ever sent. The default.
    Replay,
    /// Requests the file holds are answered from it; new ones go to the server and are
    /// appended. One cassette records to a file at a time: two recording at once number their
    /// interactions alike, and the file is then refused when it is read.
    RecordMissing,
}

impl CassetteMode {
    /// The mode named by [`MODE_VAR`], or [`Replay`](Self::Replay) when it is unset or blank;
    /// an unknown name is an error naming the variable.
    pub fn from_env() -> Result<Self, AgentError> {
        match std::env::var(MODE_VAR) {
            Ok(value) if !value.trim().is_empty() => value.parse(),
            _ => Ok(Self::Replay),
        }
    }

    /// The name: `record`, `replay`, `record-missing`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Record => "record",
            Self::Replay => "replay",
            Self::RecordMissing => "record-missing",
        }
    }

    /// Whether requests may reach the server.
    pub fn records(self) -> bool {
        !matches!(self, Self::Replay)
    }
}

impl fmt::Display for CassetteMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CassetteMode {
    type Err = AgentError;

    fn from_str(text: &str) -> Result<Self, AgentError> {
        match text.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "record" | "all" => Ok(Self::Record),
            "replay" | "none" => Ok(Self::Replay),
            "record-missing" | "new-episodes" => Ok(Self::RecordMissing),
            _ => Err(AgentError::validation(format!(
                "unknown cassette mode '{}' in {MODE_VAR}: use record, replay or record-missing",
                text.chars().take(40).collect::<String>()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for mode in [CassetteMode::Record, CassetteMode::Replay, CassetteMode::RecordMissing] {
            assert_eq!(mode.as_str().parse::<CassetteMode>().ok(), Some(mode));
        }
        assert_eq!(
            " Record_Missing ".parse::<CassetteMode>().ok(),
            Some(CassetteMode::RecordMissing)
        );
        let err = "sometimes".parse::<CassetteMode>().err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("TOWERSCOPE_CASSETTE") && e.contains("record-missing")));
    }
}
