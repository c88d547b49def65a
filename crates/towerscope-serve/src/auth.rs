//! The optional bearer-token check: every route but the chat page and `/.well-known/` needs
//! `Authorization: Bearer <token>`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ServeError;

/// Routes anyone may read: the chat page (it asks for the token) and the agent card.
fn public(path: &str) -> bool {
    path == "/" || path.starts_with("/.well-known/")
}

/// Compares in time that depends on the lengths only.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub(crate) async fn check(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    if public(request.uri().path()) || request.method() == axum::http::Method::OPTIONS {
        return next.run(request).await;
    }
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        // The scheme's name in any case (RFC 9110, section 11.1).
        .and_then(|v| {
            v.split_once(' ')
                .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        })
        .map(|(_, token)| token);
    match given {
        Some(given) if same(given.trim().as_bytes(), token.as_bytes()) => next.run(request).await,
        _ => ServeError::unauthorized().into_response(),
    }
}
