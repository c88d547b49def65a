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

/// How many tokens of calls that ended are remembered, so that what their servers still send
/// about them (a dropped call's server works on until it reads the cancellation) is discarded
/// instead of pushing genuine early notifications out of the queue.
const ENDED_CALLS: usize = 256;

/// Where progress notifications go: the calls waiting for them by token, the few that came
/// before their call was registered (the SDK assigns the token as it sends the request), and
/// the tokens of the calls that ended last, whose notifications are discarded.
#[derive(Default)]
struct Routes {
    calls: HashMap<String, Route>,
    early: VecDeque<ProgressNotificationParam>,
    ended: VecDeque<String>,
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

    /// Sends `params` to its call, or keeps it for a call not registered yet; one about a call
    /// that ended is discarded.
    fn route(&self, params: ProgressNotificationParam) {
        let key = token_key(&params.progress_token);
        let mut routes = self.lock();
        if let Some(route) = routes.calls.get_mut(&key) {
            route.send(params);
        } else if !routes.ended.contains(&key) {
            if routes.early.len() == EARLY_NOTIFICATIONS {
                routes.early.pop_front();
            }
            routes.early.push_back(params);
        }
    }

    /// How many calls have a route open.
    #[cfg(test)]
    pub(super) fn open_routes(&self) -> usize {
        self.lock().calls.len()
    }
}

/// A call's progress route, removed when the call ends, however it ends: with its result, or
/// dropped (its reply interrupted, its stream dropped). Its token is then remembered among the
/// [`ENDED_CALLS`] last, and what comes later about it discarded.
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
        let mut routes = self.routes.lock();
        routes.calls.remove(&self.key);
        if routes.ended.len() == ENDED_CALLS {
            routes.ended.pop_front();
        }
        routes.ended.push_back(std::mem::take(&mut self.key));
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

    fn progress(token: i64, progress: f64) -> ProgressNotificationParam {
        ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(token)), progress)
    }

    /// A dropped call's server reports on (it has not read the cancellation yet), while a new
    /// call's first notification arrives before the new call is registered: the orphan's
    /// notifications are discarded, and the new call gets its early one.
    #[test]
    fn an_ended_calls_progress_does_not_push_out_a_new_calls_early_progress() {
        let routes = ProgressRoutes::default();
        let (tx, _rx) = mpsc::channel(PROGRESS_BUFFER);
        drop(routes.open(&ProgressToken(NumberOrString::Number(1)), tx));
        routes.route(progress(2, 0.5));
        for n in 0..EARLY_NOTIFICATIONS * 2 {
            routes.route(progress(1, n as f64));
        }
        assert_eq!(routes.lock().early.len(), 1, "only the new call's notification waits");
        let (tx, mut rx) = mpsc::channel(PROGRESS_BUFFER);
        let _call = routes.open(&ProgressToken(NumberOrString::Number(2)), tx);
        assert_eq!(rx.try_recv().map(|p| p.progress).ok(), Some(0.5));
        assert!(rx.try_recv().is_err(), "nothing of the ended call");
    }

    /// Only the last [`ENDED_CALLS`] ended calls are remembered.
    #[test]
    fn ended_calls_are_remembered_within_a_bound() {
        let routes = ProgressRoutes::default();
        for token in 0..(ENDED_CALLS * 2) as i64 {
            let (tx, _rx) = mpsc::channel(1);
            drop(routes.open(&ProgressToken(NumberOrString::Number(token)), tx));
        }
        let ended = &routes.lock().ended;
        assert_eq!(ended.len(), ENDED_CALLS);
        assert_eq!(
            ended.front().map(String::as_str),
            Some(ENDED_CALLS.to_string().as_str())
        );
    }

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
