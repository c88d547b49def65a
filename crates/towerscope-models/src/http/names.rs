//! [`Names`]: who answers a call, for the errors its decoding reports.

use towerscope_core::AgentError;

use super::ProviderError;

/// The provider, model and endpoint of a call.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) endpoint: String,
}

impl Names {
    /// Names for a body decoded outside a call (a recording).
    pub(crate) fn decoded(provider: &str) -> Self {
        Self {
            provider: provider.to_owned(),
            model: "unknown".to_owned(),
            endpoint: "a decoded stream".to_owned(),
        }
    }

    /// An error the provider sent in a 200 answer (an `error` event or object).
    pub(crate) fn provider_error(&self, data: &[u8]) -> AgentError {
        ProviderError::from_body(&self.provider, None, None, data).into_agent_error(&self.model, &self.endpoint)
    }

    /// JSON that could not be read, quoting its start.
    pub(crate) fn decode_error(&self, what: &str, err: &serde_json::Error, data: &str) -> AgentError {
        let snippet: String = data.chars().take(200).collect();
        AgentError::decode(
            format!("{} {what} from {}", self.provider, self.endpoint),
            format!("{err}: {snippet}"),
        )
    }
}
