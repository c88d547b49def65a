//! Progress routing: the server's progress notifications go to the tool call that asked for
//! them, by the call's progress token.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmcp::ClientHandler;
use rmcp::model::{NumberOrString, ProgressNotificationParam, ProgressToken};
use rmcp::service::{MaybeSendFuture, NotificationContext, RoleClient};
use tokio::sync::mpsc;

/// Where a call's progress notifications go.
pub(crate) type ProgressSender = mpsc::Sender<ProgressNotificationParam>;

/// How many progress notifications of one call wait for the reply's reader. A server that sends
/// them faster than the reader takes them loses the ones past this (progress is a running
/// figure: a later one says what an earlier one did), instead of filling memory.
pub(crate) const PROGRESS_BUFFER: usize = 256;

/// The SDK handles each notification in a task of its own, so one the server sent before its
/// result may reach the handler after the result reaches the call. A finished call's route
/// stays open while the scheduler runs those tasks ([`LATE_YIELDS`] turns), and, when its last
/// notification said more was coming, at most this long.
const LATE_PROGRESS: Duration = Duration::from_millis(50);
const LATE_YIELDS: usize = 8;

/// How many notifications of calls not registered yet are kept.
const EARLY_NOTIFICATIONS: usize = 64;

/// Where progress notifications go: the calls waiting for them by token, and the few that came
/// before their call was registered (the SDK assigns the token as it sends the request).
#[derive(Default)]
struct Routes {
    calls: HashMap<String, Route>,
    early: VecDeque<ProgressNotificationParam>,
}

/// A call's progress: where it goes, and the last `(progress, total)` that went there.
struct Route {
    tx: ProgressSender,
    last: Option<(f64, Option<f64>)>,
}

impl Route {
    fn send(&mut self, params: ProgressNotificationParam) {
        self.last = Some((params.progress, params.total));
        // Full: the reader is behind; this notification is dropped (see `PROGRESS_BUFFER`).
        let _ = self.tx.try_send(params);
    }

    /// Whether the last notification said there is more to come (`progress < total`).
    fn expects_more(&self) -> bool {
        matches!(self.last, Some((progress, Some(total))) if progress < total)
    }
}

/// The routes of one connection, shared by its [`Handler`] and its client.
#[derive(Clone, Default)]
pub(super) struct ProgressRoutes(Arc<Mutex<Routes>>);

impl ProgressRoutes {
    fn lock(&self) -> MutexGuard<'_, Routes> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens the route of the call whose request carries `token`: its notifications go to `tx`
    /// from now on, those that came before it first. The route closes when the guard drops.
    pub(super) fn open(&self, token: &ProgressToken, tx: ProgressSender) -> RouteGuard<'_> {
        let key = token_key(token);
        let mut routes = self.lock();
        let mut route = Route { tx, last: None };
        let early = std::mem::take(&mut routes.early);
        for n in early {
            if token_key(&n.progress_token) == key {
                route.send(n);
            } else {
                routes.early.push_back(n);
            }
        }
        routes.calls.insert(key.clone(), route);
        RouteGuard { routes: self, key }
    }

    /// Sends `params` to its call, or keeps it for a call not registered yet.
    fn route(&self, params: ProgressNotificationParam) {
        let key = token_key(&params.progress_token);
        let mut routes = self.lock();
        match routes.calls.get_mut(&key) {
            Some(route) => route.send(params),
            None => {
                if routes.early.len() == EARLY_NOTIFICATIONS {
                    routes.early.pop_front();
                }
                routes.early.push_back(params);
            }
        }
    }

    /// How many calls have a route open.
    #[cfg(test)]
    pub(super) fn open_routes(&self) -> usize {
        self.lock().calls.len()
    }
}

/// A call's progress route, removed when the call ends, however it ends: with its result, or
/// dropped (its reply interrupted, its stream dropped).
pub(super) struct RouteGuard<'a> {
    routes: &'a ProgressRoutes,
    key: String,
}

impl RouteGuard<'_> {
    /// Waits, once the call has its result, for the notifications the SDK has yet to hand over
    /// (see [`LATE_PROGRESS`]).
    pub(super) async fn settle(&self) {
        for _ in 0..LATE_YIELDS {
            tokio::task::yield_now().await;
        }
        let deadline = tokio::time::Instant::now() + LATE_PROGRESS;
        while self.expects_more() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    fn expects_more(&self) -> bool {
        self.routes.lock().calls.get(&self.key).is_some_and(Route::expects_more)
    }
}

impl Drop for RouteGuard<'_> {
    fn drop(&mut self) {
        self.routes.lock().calls.remove(&self.key);
    }
}

/// Routes the server's progress notifications to the call that asked for them.
#[derive(Clone, Default)]
pub(crate) struct Handler {
    progress: ProgressRoutes,
}

impl Handler {
    /// The routes this handler sends notifications along.
    pub(super) fn routes(&self) -> ProgressRoutes {
        self.progress.clone()
    }
}

impl ClientHandler for Handler {
    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.progress.route(params);
        std::future::ready(())
    }
}

fn token_key(token: &ProgressToken) -> String {
    match &token.0 {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server flooding a call with progress while its reader is behind: at most
    /// `PROGRESS_BUFFER` wait, the rest are dropped, and the route still knows the latest.
    #[test]
    fn a_flood_of_progress_waits_in_a_bounded_buffer() {
        let (tx, mut rx) = mpsc::channel(PROGRESS_BUFFER);
        let mut route = Route { tx, last: None };
        let token = ProgressToken(NumberOrString::Number(1));
        for n in 0..PROGRESS_BUFFER * 4 {
            let mut params = ProgressNotificationParam::new(token.clone(), n as f64);
            params.total = Some((PROGRESS_BUFFER * 4) as f64);
            route.send(params);
        }
        let mut waiting = Vec::new();
        while let Ok(params) = rx.try_recv() {
            waiting.push(params.progress);
        }
        let first: Vec<f64> = (0..PROGRESS_BUFFER).map(|n| n as f64).collect();
        assert_eq!(waiting, first, "the first ones wait, in order; the rest were dropped");
        assert_eq!(
            route.last,
            Some(((PROGRESS_BUFFER * 4 - 1) as f64, Some((PROGRESS_BUFFER * 4) as f64)))
        );
        assert!(route.expects_more());
    }
}
