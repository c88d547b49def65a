//! [`Names`]: who answers a call, for the errors its decoding reports.

use reqwest::header::HeaderValue;
use towerscope_core::AgentError;

use super::ProviderError;

/// The provider, model and endpoint of a call, and the credentials it sends.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) endpoint: String,
    /// The call's sensitive header values (`Debug` prints `Sensitive`), hidden in what its
    /// errors quote.
    pub(crate) credentials: Vec<HeaderValue>,
}

impl Names {
    /// Names for a body decoded outside a call (a recording).
    pub(crate) fn decoded(provider: &str) -> Self {
        Self {
            provider: provider.to_owned(),
            model: "unknown".to_owned(),
            endpoint: "a decoded stream".to_owned(),
            credentials: Vec::new(),
        }
    }

    /// An error the provider sent in a 200 answer (an `error` event or object), the call's
    /// credentials hidden in it.
    pub(crate) fn provider_error(&self, data: &[u8]) -> AgentError {
        ProviderError::from_body_hiding(&self.provider, None, None, data, |text| {
            hide_credentials(&self.credentials, text);
        })
        .into_agent_error(&self.model, &self.endpoint)
    }

    /// JSON that could not be read. JSON (an object, an array, a string) is not quoted, nor
    /// are the values serde's message quotes: they may hold the conversation (a delta of the
    /// answer, the prompt a server echoes), and errors are logged and shown without the user's
    /// opt-in. Nor is an event stream sent without its content type (it is the answer). A body
    /// that is neither (an HTML page from a proxy) is quoted from its start.
    pub(crate) fn decode_error(&self, what: &str, err: &serde_json::Error, data: &str) -> AgentError {
        let message = without_quoted(&err.to_string());
        let start = data.trim_start();
        let detail = if start.starts_with(['{', '[', '"']) {
            format!(
                "{message} (the {}-byte JSON is not quoted: it may hold the conversation)",
                data.len()
            )
        } else if ["data:", "event:", "id:", "retry:", ":"]
            .iter()
            .any(|field| start.starts_with(field))
        {
            format!(
                "{message} (the {}-byte body, not quoted, is an event stream: the server sent it without \
                 `Content-Type: text/event-stream`)",
                data.len()
            )
        } else {
            // The credentials are hidden before the cut, so one across it is hidden whole.
            let longest = self.credentials.iter().map(HeaderValue::len).max().unwrap_or(0);
            let mut snippet: String = data.chars().take(SNIPPET + longest).collect();
            hide_credentials(&self.credentials, &mut snippet);
            if let Some((end, _)) = snippet.char_indices().nth(SNIPPET) {
                snippet.truncate(end);
            }
            format!("{message}: {snippet}")
        };
        AgentError::decode(format!("{} {what} from {}", self.provider, self.endpoint), detail)
    }
}

/// The most of a body that is not JSON quoted in a decode error, in characters.
const SNIPPET: usize = 200;

/// Replaces in `text` the sensitive values among `headers` (a bearer token without its scheme)
/// with `***`.
pub(crate) fn hide_credentials<'v>(headers: impl IntoIterator<Item = &'v HeaderValue>, text: &mut String) {
    for value in headers.into_iter().filter(|v| v.is_sensitive()) {
        let Ok(value) = value.to_str() else { continue };
        let secret = value.strip_prefix("Bearer ").unwrap_or(value).trim();
        // A short value (a scheme alone) would hide ordinary words.
        if secret.len() >= 8 && text.contains(secret) {
            *text = text.replace(secret, "***");
        }
    }
}

/// `message` with what it quotes (`"…"`, escapes included, and `` `…` ``) left out: serde's
/// messages quote the values they refused (`invalid type: string "…"`, `unknown variant `…``).
fn without_quoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut chars = message.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                out.push_str("\"…\"");
                let mut escaped = false;
                for c in chars.by_ref() {
                    match c {
                        '\\' if !escaped => escaped = true,
                        '"' if !escaped => break,
                        _ => escaped = false,
                    }
                }
            }
            '`' => {
                out.push_str("`…`");
                chars.by_ref().find(|&c| c == '`');
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decode_error_quotes_no_value_of_a_json_body() {
        let names = Names::decoded("openai");
        let chunk = r#"{"choices":[{"delta":{"content":"PATIENT \"SSN\" 123"}}],"usage":{"prompt_tokens":"PATIENT"}}"#;
        let err = serde_json::from_str::<serde_json::Value>(chunk)
            .and_then(|_| serde_json::from_str::<Usage>(r#"{"prompt_tokens": "PATIENT \"x\" SSN"}"#))
            .err()
            .map(|e| names.decode_error("stream chunk", &e, chunk));
        let text = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.contains("invalid type: string \"…\", expected u64 at line 1"),
            "{text}"
        );
        assert!(!text.contains("PATIENT") && !text.contains("SSN"), "{text}");

        let err = serde_json::from_str::<Kind>(r#""SECRET""#)
            .err()
            .map(|e| names.decode_error("event", &e, "{}"));
        let text = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.contains("unknown variant `…`") && !text.contains("SECRET"),
            "{text}"
        );

        // An array or a string is JSON too.
        for body in [r#"[{"error": "PATIENT"}"#, r#""PATIENT"#] {
            let err = serde_json::from_str::<serde_json::Value>(body)
                .err()
                .map(|e| names.decode_error("body", &e, body));
            assert!(err.is_some_and(|e| !e.to_string().contains("PATIENT")));
        }

        // A body that is no JSON (a proxy's page) is quoted from its start.
        let page = "<html>maintenance</html>";
        let err = serde_json::from_str::<serde_json::Value>(page)
            .err()
            .map(|e| names.decode_error("body", &e, page));
        assert!(err.is_some_and(|e| e.to_string().contains(page)));

        // An event stream sent without its content type is the answer: not quoted.
        let stream = "data: {\"choices\":[{\"delta\":{\"content\":\"PATIENT\"}}]}\n\n";
        let err = serde_json::from_str::<serde_json::Value>(stream)
            .err()
            .map(|e| names.decode_error("body", &e, stream))
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(!err.contains("PATIENT") && err.contains("is an event stream"), "{err}");
    }

    #[test]
    fn a_credential_across_the_cut_of_a_quoted_body_is_hidden_whole() {
        let mut key = HeaderValue::from_static("Bearer sk-0123456789abcdef");
        key.set_sensitive(true);
        let names = Names {
            credentials: vec![key],
            ..Names::decoded("openai")
        };
        let page = format!("<html>{} sk-0123456789abcdef</html>", "x".repeat(190));
        let err = serde_json::from_str::<serde_json::Value>(&page)
            .err()
            .map(|e| names.decode_error("body", &e, &page).to_string())
            .unwrap_or_default();
        // The key starts 3 characters before the 200-character cut.
        assert!(
            err.contains(&format!("{} ***", "x".repeat(190))) && !err.contains("sk-"),
            "{err}"
        );
        let provider = names.provider_error(br#"{"error": {"message": "bad key sk-0123456789abcdef"}}"#);
        assert!(provider.to_string().contains("bad key ***"), "{provider}");
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Usage {
        prompt_tokens: u64,
    }

    #[derive(Debug, serde::Deserialize)]
    enum Kind {
        #[allow(dead_code)]
        Text,
    }
}
