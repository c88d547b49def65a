//! [`ApiKey`]: a provider credential that never shows in `Debug`, errors, logs or spans.

use std::fmt;

use reqwest::header::HeaderValue;
use towerscope_core::AgentError;

/// A provider API key.
///
/// `Debug` and `Display` print `ApiKey(***)`; the header built from it is marked sensitive, so
/// reqwest and tower layers that print headers leave it out too.
///
/// ```
/// use towerscope_models::http::ApiKey;
///
/// let key = ApiKey::new("sk-secret");
/// assert_eq!(format!("{key:?}"), "ApiKey(***)");
/// assert_eq!(key.expose(), "sk-secret");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for code that must send it somewhere else.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A sensitive header value holding `prefix` and the key (`"Bearer "` for OpenAI).
    pub(crate) fn header(&self, prefix: &str) -> Result<HeaderValue, AgentError> {
        let mut value = HeaderValue::try_from(format!("{prefix}{}", self.0))
            .map_err(|_| AgentError::validation("the API key holds characters that cannot go in an HTTP header"))?;
        value.set_sensitive(true);
        Ok(value)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl From<&str> for ApiKey {
    fn from(key: &str) -> Self {
        Self::new(key)
    }
}

impl From<String> for ApiKey {
    fn from(key: String) -> Self {
        Self(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_hidden_everywhere_but_the_header() -> Result<(), AgentError> {
        let key = ApiKey::from("sk-live-123");
        assert!(!format!("{key:?} {key}").contains("sk-live"));
        let header = key.header("Bearer ")?;
        assert!(header.is_sensitive());
        assert_eq!(header.to_str().ok(), Some("Bearer sk-live-123"));
        assert!(ApiKey::new("bad\nkey").header("").is_err());
        Ok(())
    }
}
