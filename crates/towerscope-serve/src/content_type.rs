//! Which request bodies are taken as JSON.
//!
//! A browser sends a cross-site `POST` without asking the server first (no CORS preflight)
//! only with a "simple" content type: `text/plain`, a form. Such a body can still be JSON (a
//! form field named like a JSON document), so an endpoint that parsed any body would run an
//! agent for any page a visitor of the server opens, with no token set. Taking only
//! `application/json` (or a `+json` type) makes every cross-site request ask first, and the
//! server, sending no CORS headers, never says yes.

use axum::http::HeaderMap;
use axum::http::header::CONTENT_TYPE;

/// Whether the request says its body is JSON: `application/json` or `application/*+json`,
/// any parameters (`; charset=utf-8`) and any case.
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    match essence.split_once('/') {
        Some(("application", subtype)) => subtype == "json" || subtype.ends_with("+json"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn json_types_are_json_and_the_types_a_browser_sends_unasked_are_not() {
        let with = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(CONTENT_TYPE, HeaderValue::from_static(value));
            is_json(&headers)
        };
        for json in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/vnd.a2a+json",
        ] {
            assert!(with(json), "{json}");
        }
        for not in [
            "text/plain",
            "text/plain; charset=utf-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonx",
            "text/json",
        ] {
            assert!(!with(not), "{not}");
        }
        assert!(!is_json(&HeaderMap::new()), "no content type");
    }
}
