//! [`CassetteService`]: answers a request from the cassette, or sends it and records the
//! answer.

use std::task::{Context, Poll};

use tower::Service;
use towerscope_core::{AgentError, BoxError};

use super::body::{Recorder, replay};
use super::future::CassetteFuture;
use super::key::RequestKey;
use super::mode::CassetteMode;
use super::store::Cassette;

/// A transport behind a cassette; see the [module docs](super).
///
/// In replay mode `inner` is never called (nor polled for readiness). A request the cassette
/// cannot answer fails with an [`AgentError::Other`] whose source is a
/// [`CassetteError`](super::CassetteError); the providers pass it on as it is, and it is not
/// retryable.
#[derive(Debug, Clone)]
pub struct CassetteService<S> {
    inner: S,
    cassette: Cassette,
}

impl<S> CassetteService<S> {
    /// `inner` behind `cassette`.
    pub fn new(inner: S, cassette: Cassette) -> Self {
        Self { inner, cassette }
    }

    /// The transport.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The transport, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The transport, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// The cassette.
    pub fn cassette(&self) -> &Cassette {
        &self.cassette
    }
}

impl<S> Service<reqwest::Request> for CassetteService<S>
where
    S: Service<reqwest::Request, Response = reqwest::Response> + Clone,
    S::Error: Into<BoxError>,
{
    type Response = reqwest::Response;
    type Error = BoxError;
    type Future = CassetteFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        if self.cassette.mode() == CassetteMode::Replay {
            return Poll::Ready(Ok(()));
        }
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: reqwest::Request) -> Self::Future {
        let (recorded, secrets) = self.cassette.rules().request(&request);
        let key = RequestKey::of(&recorded);
        match self.cassette.lookup(&key) {
            Err(err) => CassetteFuture::ready(Err(Box::new(AgentError::other(err)))),
            Ok(Some(outcome)) => CassetteFuture::ready(replay(outcome)),
            Ok(None) => {
                // The service made ready is the one called; a clone takes its place.
                let clone = self.inner.clone();
                let mut ready = std::mem::replace(&mut self.inner, clone);
                let recorder = Recorder {
                    cassette: self.cassette.clone(),
                    n: self.cassette.begin(),
                    request: recorded,
                    secrets,
                };
                CassetteFuture::forward(ready.call(request), recorder)
            }
        }
    }
}
