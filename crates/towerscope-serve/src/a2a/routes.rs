//! The axum handlers: the agent card, and the JSON-RPC endpoint answering in JSON or, for
//! `SendStreamingMessage`, in Server-Sent Events.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::body::{Body, to_bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use super::config::A2aConfig;
use super::error::RpcError;
use super::legacy;
use super::methods::{self, Started};
use super::rpc;
use super::run;
use super::tasks::{self, Tasks};
use super::wire::{CancelTaskRequest, GetTaskRequest, SendMessageRequest, SendMessageResponse, StreamResponse};

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct Shared {
    pub(crate) config: Arc<A2aConfig>,
    pub(crate) tasks: Arc<Tasks>,
}

/// `GET /.well-known/agent-card.json`.
pub(crate) async fn card(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| plausible_host(h));
    Json(shared.config.card(host)).into_response()
}

/// A host (and port) as a URL may carry it: nothing that could end the authority.
fn plausible_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 255
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'))
}

/// `POST /a2a`: one JSON-RPC request.
pub(crate) async fn rpc(State(shared): State<Shared>, headers: HeaderMap, body: Body) -> Response {
    // Checked before the body is read (see `content_type`).
    if !crate::content_type::is_json(&headers) {
        let error = RpcError::invalid_request("the body must be sent with content-type application/json");
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Json(rpc::error(&Value::Null, &error)),
        )
            .into_response();
    }
    let body = match to_bytes(body, shared.tasks.limits.max_body_bytes).await {
        Ok(body) => body,
        Err(_) => {
            let error = RpcError::invalid_request(format!(
                "the request body is larger than {} bytes",
                shared.tasks.limits.max_body_bytes
            ));
            return (StatusCode::PAYLOAD_TOO_LARGE, Json(rpc::error(&Value::Null, &error))).into_response();
        }
    };
    let request = match rpc::parse_request(&body) {
        Ok(request) => request,
        Err((id, error)) => return Json(rpc::error(&id, &error)).into_response(),
    };
    // A 0.3 method name: served by its 1.0 method, answered in 0.3's shapes. Any 0.3 name
    // (`tasks/pushNotificationConfig/set` too, which the official SDK's 0.3 transport sends
    // with `A2A-Version: 0.3`) is answered as such, not refused for its version.
    let legacy = legacy::method(&request.method);
    if legacy.is_none()
        && !request.method.contains('/')
        && let Err(error) = check_version(&headers)
    {
        return Json(rpc::error(&request.id, &error)).into_response();
    }
    let id = request.id;
    let tasks = &shared.tasks;
    let (method, params) = match legacy {
        Some(method) => (method, legacy::params(request.params)),
        None => (request.method.as_str(), request.params),
    };
    let answer = match method {
        "SendMessage" => send(tasks, params).await,
        "SendStreamingMessage" => {
            let started = rpc::params::<SendMessageRequest>(params).and_then(|r| {
                let keep = tasks::history_keep(r.configuration.as_ref().and_then(|c| c.history_length))?;
                Ok((methods::start(tasks, r)?, keep))
            });
            match started {
                Ok((started, keep)) => return stream_response(Arc::clone(tasks), id, started, keep, legacy.is_some()),
                Err(e) => Err(e),
            }
        }
        "GetTask" => rpc::params::<GetTaskRequest>(params)
            .and_then(|r| tasks.snapshot(&r.id, r.history_length))
            .map(|t| to_value(&t)),
        "CancelTask" => match rpc::params::<CancelTaskRequest>(params) {
            Ok(r) => methods::cancel(tasks, &r.id).await.map(|t| to_value(&t)),
            Err(e) => Err(e),
        },
        "SubscribeToTask" => match rpc::params::<GetTaskRequest>(params).and_then(|r| methods::follow(tasks, &r.id)) {
            Ok(started) => return stream_response(Arc::clone(tasks), id, started, None, legacy.is_some()),
            Err(e) => Err(e),
        },
        "ListTasks" | "GetExtendedAgentCard" => Err(RpcError::new(
            RpcError::UNSUPPORTED_OPERATION,
            format!("`{}` is not served by this agent", request.method),
        )),
        // 1.0's `CreateTaskPushNotificationConfig` ..., 0.3's `tasks/pushNotificationConfig/set` ...
        m if m.to_ascii_lowercase().contains("pushnotificationconfig") => Err(RpcError::new(
            RpcError::PUSH_NOTIFICATION_NOT_SUPPORTED,
            "push notifications are not served by this agent",
        )),
        m => Err(RpcError::method_not_found(m)),
    };
    match answer {
        Ok(result) if legacy.is_some() => Json(rpc::result(&id, legacy::result(result))).into_response(),
        Ok(result) => Json(rpc::result(&id, result)).into_response(),
        Err(error) => Json(rpc::error(&id, &error)).into_response(),
    }
}

/// `A2A-Version`: absent (a hand-written request) or 1.x.
fn check_version(headers: &HeaderMap) -> Result<(), RpcError> {
    let Some(version) = headers.get("a2a-version") else {
        return Ok(());
    };
    let version = version.to_str().unwrap_or("");
    if version == "1" || version.starts_with("1.") {
        return Ok(());
    }
    let shown: String = version.chars().take(16).collect();
    Err(RpcError::new(
        RpcError::VERSION_NOT_SUPPORTED,
        format!("A2A-Version `{shown}` is not served; this agent speaks 1.0"),
    ))
}

/// `SendMessage`: the task once it stops, or at once with `returnImmediately`.
async fn send(tasks: &Arc<Tasks>, params: Value) -> Result<Value, RpcError> {
    let request: SendMessageRequest = rpc::params(params)?;
    let immediately = request.configuration.as_ref().is_some_and(|c| c.return_immediately);
    let history = request.configuration.as_ref().and_then(|c| c.history_length);
    // Refused before the task starts.
    tasks::history_keep(history)?;
    let Started { id, mut updates, .. } = methods::start(tasks, request)?;
    if !immediately {
        methods::wait_stopped(tasks, &id, &mut updates).await;
    }
    let task = tasks.snapshot(&id, history)?;
    Ok(to_value(&SendMessageResponse::Task(task)))
}

fn to_value(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or_else(|e| {
        tracing::error!(error = %e, "an A2A result could not be encoded");
        Value::Null
    })
}

/// `SendStreamingMessage`: the task (its history cut to the latest `keep` messages, as every
/// whole task the stream sends), then its updates until it stops.
fn stream_response(tasks: Arc<Tasks>, id: Value, started: Started, keep: Option<usize>, legacy: bool) -> Response {
    let Started {
        id: task_id,
        mut task,
        updates,
        pace,
    } = started;
    tasks::cut_history(&mut task, keep);
    let keep_alive = tasks.keep_alive;
    struct St {
        tasks: Arc<Tasks>,
        rpc_id: Value,
        task_id: String,
        first: Option<StreamResponse>,
        updates: tokio::sync::broadcast::Receiver<StreamResponse>,
        /// Held while the client reads: the reply goes no further ahead than the stream follows.
        pace: Option<run::PaceGuard>,
        done: bool,
        legacy: bool,
        keep: Option<usize>,
    }
    let state = St {
        tasks,
        rpc_id: id,
        task_id,
        first: Some(StreamResponse::Task(task)),
        updates,
        pace,
        done: false,
        legacy,
        keep,
    };
    let events = stream::unfold(state, |mut st| async move {
        if st.done {
            return None;
        }
        let item = match st.first.take() {
            Some(first) => first,
            None => match st.updates.recv().await {
                Ok(update) => {
                    if let Some(pace) = &st.pace {
                        pace.taken();
                    }
                    update
                }
                // Fell behind: the whole task instead of what was missed, then what follows it.
                Err(RecvError::Lagged(_)) => {
                    let (updates, mut task) = st.tasks.resubscribe(&st.task_id).ok()?;
                    st.updates = updates;
                    tasks::cut_history(&mut task, st.keep);
                    StreamResponse::Task(task)
                }
                Err(RecvError::Closed) => return None,
            },
        };
        st.done = match &item {
            StreamResponse::StatusUpdate(u) => u.status.state.is_stopped(),
            StreamResponse::Task(t) => t.status.state.is_stopped(),
            _ => false,
        };
        let data = if st.legacy {
            rpc::result(
                &st.rpc_id,
                legacy::result(serde_json::to_value(&item).unwrap_or_default()),
            )
        } else {
            rpc::result(&st.rpc_id, &item)
        };
        let data = data.to_string();
        Some((Ok::<_, Infallible>(Event::default().data(data)), st))
    });
    let sse = Sse::new(events);
    match keep_alive {
        // The comment AG-UI's streams send; no period (or a zero one) sends none.
        Some(period) if !period.is_zero() => sse
            .keep_alive(KeepAlive::new().interval(period).text("keep-alive"))
            .into_response(),
        _ => sse.into_response(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::a2a::tasks::Limits;
    use crate::a2a::wire::{Message, Role, TaskState};
    use towerscope_agent::Agent;
    use towerscope_models::{ScriptedModel, ScriptedResponse};

    /// The SSE events' `result`s of a finished stream.
    async fn results(response: Response) -> Vec<Value> {
        let body = to_bytes(response.into_body(), usize::MAX).await.unwrap();
        String::from_utf8(body.to_vec())
            .unwrap()
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str::<Value>(d).unwrap()["result"].clone())
            .collect()
    }

    #[tokio::test]
    async fn a_subscriber_that_falls_behind_gets_the_whole_task_then_only_what_follows() {
        let agent = || {
            Agent::builder("a")
                .model(ScriptedModel::new("m", [ScriptedResponse::text("x")]))
                .build()
        };
        let tasks = Arc::new(Tasks::new(Arc::new(move |_: &str| agent()), Limits::default()));
        let (id, task, updates) = tasks
            .insert("ctx", agent().unwrap(), Message::new_text(Role::User, "hi"))
            .unwrap()
            .into_new()
            .unwrap();
        // 400 pieces before the subscriber reads any: more than the channel keeps.
        for i in 0..400 {
            run::publish_artifact(&tasks, &id, "a1", &format!("{i},"), true, false);
        }
        let response = stream_response(
            Arc::clone(&tasks),
            Value::from(1),
            Started {
                id: id.clone(),
                task,
                updates,
                pace: None,
            },
            None,
            false,
        );
        let reader = tokio::spawn(results(response));
        tokio::task::yield_now().await;
        for i in 400..410 {
            run::publish_artifact(&tasks, &id, "a1", &format!("{i},"), true, false);
        }
        run::set_status(&tasks, &id, TaskState::Completed, None);
        let results = reader.await.unwrap();

        let resync = results.iter().rposition(|r| r.get("task").is_some()).unwrap();
        assert!(resync > 0, "the whole task was sent again after the first");
        // The pieces so far are one text part in it (stored so), not a part per piece.
        assert_eq!(
            results[resync]["task"]["artifacts"][0]["parts"]
                .as_array()
                .map(Vec::len),
            Some(1)
        );
        let mut text: String = results[resync]["task"]["artifacts"][0]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["text"].as_str().unwrap())
            .collect();
        for r in &results[resync + 1..] {
            if let Some(u) = r.get("artifactUpdate") {
                text.push_str(u["artifact"]["parts"][0]["text"].as_str().unwrap());
            }
        }
        let expected: String = (0..410).map(|i| format!("{i},")).collect();
        assert_eq!(text, expected, "nothing missed, nothing repeated");
        assert_eq!(
            results.last().unwrap()["statusUpdate"]["status"]["state"],
            "TASK_STATE_COMPLETED"
        );
    }

    /// Tasks whose agents answer `words` words, streamed one by one as fast as they come.
    fn tasks_answering(words: usize) -> Arc<Tasks> {
        let answer: String = (0..words).map(|i| format!("w{i} ")).collect();
        let agent = move || {
            Agent::builder("a")
                .model(ScriptedModel::new(
                    "m",
                    [ScriptedResponse::text(answer.clone()).streamed()],
                ))
                .build()
        };
        Arc::new(Tasks::new(Arc::new(move |_: &str| agent()), Limits::default()))
    }

    /// The parameters of a message asking for something.
    fn go() -> Value {
        serde_json::json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "go"}]}})
    }

    /// A model faster than the client: the reply publishes no further ahead than the stream
    /// follows, so a client that starts reading late still gets every piece as an update,
    /// never the whole task again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_streamed_reply_goes_at_its_clients_pace() {
        let words = 2_000;
        let tasks = tasks_answering(words);
        let request: SendMessageRequest = serde_json::from_value(go()).unwrap();
        let started = methods::start(&tasks, request).unwrap();
        let response = stream_response(Arc::clone(&tasks), Value::from(1), started, None, false);
        // The client reads nothing for a while: unpaced, the reply would publish every piece
        // (far more than the update channel keeps) before it starts.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let results = results(response).await;
        let snapshots = results.iter().filter(|r| r.get("task").is_some()).count();
        assert_eq!(snapshots, 1, "only the first event is the whole task");
        let streamed: String = results
            .iter()
            .filter_map(|r| r.get("artifactUpdate"))
            // The pieces; the last update is the whole answer again.
            .filter(|u| u["lastChunk"] != true)
            .map(|u| u["artifact"]["parts"][0]["text"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(streamed.split_whitespace().count(), words);
        assert_eq!(
            results.last().unwrap()["statusUpdate"]["status"]["state"],
            "TASK_STATE_COMPLETED"
        );
    }

    /// A message that is not streamed lets its reply run free: nobody reads its pieces, so
    /// nothing may hold the reply back.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reply_not_streamed_runs_free() {
        let tasks = tasks_answering(2_000);
        let params = go();
        // Paced with nobody taking the pieces, the reply would stop at 128 for 30 s.
        let task = tokio::time::timeout(std::time::Duration::from_secs(10), send(&tasks, params))
            .await
            .expect("the reply was not held back")
            .unwrap();
        assert_eq!(task["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    }
}
