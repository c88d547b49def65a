//! `POST /agui`: read a [`RunAgentInput`], build the thread's agent, answer with the run's events.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use towerscope_agent::Agent;
use towerscope_core::{Id, ReplyInput};

use super::frontend::{FrontendTool, with_frontend_tools};
use super::input::RunAgentInput;
use super::mapping::EventMapper;
use super::request::{Run, against_stored, ended, reply_input};
use super::stream::{Opening, RunStream};
use crate::busy::Busy;
use crate::error::ServeError;
use crate::factory::AgentFactory;
use crate::trace_context::within_request;

#[derive(Clone)]
struct Endpoint {
    factory: Arc<dyn AgentFactory>,
    threads: Busy,
    body_limit: usize,
    keep_alive: Option<Duration>,
}

/// The AG-UI route, `POST /agui`; `body_limit` is the limit the router enforces, for the 413's
/// message; `keep_alive` the idle period after which a comment keeps the stream open; `busy`
/// the sessions with a reply running (shared with the router's A2A endpoint).
pub(crate) fn routes(
    factory: Arc<dyn AgentFactory>,
    body_limit: usize,
    keep_alive: Option<Duration>,
    busy: Busy,
) -> Router {
    let endpoint = Endpoint {
        factory,
        threads: busy,
        body_limit,
        keep_alive,
    };
    Router::new().route("/agui", post(run)).with_state(endpoint)
}

async fn run(State(endpoint): State<Endpoint>, headers: HeaderMap, body: Result<Bytes, BytesRejection>) -> Response {
    match start(&endpoint, &headers, body).await {
        Ok(response) => response,
        Err(err) => err.into_response(),
    }
}

/// Parses the body, as 400 (not JSON) or 422 (JSON of the wrong shape).
pub(crate) fn parse(body: &[u8]) -> Result<RunAgentInput, ServeError> {
    serde_json::from_slice(body).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => ServeError::invalid(format!("the body is not a RunAgentInput: {e}")),
        _ => ServeError::bad_json(e),
    })
}

async fn start(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ServeError> {
    if !crate::content_type::is_json(headers) {
        return Err(ServeError::not_json());
    }
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ServeError::too_large(endpoint.body_limit)
        } else {
            ServeError::new(rejection.status(), "bad_body", rejection.body_text())
        }
    })?;
    let input = parse(&body)?;
    let reply = reply_input(&input)?;
    let claim = endpoint
        .threads
        .claim(&input.thread_id)
        .ok_or_else(|| ServeError::thread_busy(&input.thread_id))?;
    let tools = input
        .tools
        .iter()
        .map(|t| FrontendTool::new(t.name.as_str(), t.description.as_str(), t.parameters.clone()))
        .collect();
    let agent = with_frontend_tools(tools, || endpoint.factory.agent(&input.thread_id))?;
    let reply = match reply {
        ReplyInput::Interrupt(_) => reply,
        // A run sent again adds nothing twice (see `against_stored`).
        _ => {
            within_request(headers, agent.load_session()).await?;
            let context = agent.context();
            let given = from_client(&reply);
            let waiting = agent.waiting_calls();
            let awaited = waiting.iter().flat_map(|w| &w.external).map(|c| c.id.clone()).collect();
            match against_stored(&input, reply, &context, &awaited) {
                Run::Reply(reply) => addressed(reply, &agent),
                Run::Replay { range, from } => {
                    drop(claim);
                    let mut mapper =
                        EventMapper::new(input.thread_id.as_str(), input.run_id.as_str()).results_from_client(given);
                    let mut events = vec![mapper.start()];
                    let first = range.start;
                    // Not the part of an answer an interrupted or failed attempt left.
                    for (i, msg) in context.iter().enumerate().skip(first).take(range.len()) {
                        if ended(msg) {
                            mapper.replay_from(msg, if i == first { from } else { 0 }, &mut events);
                        }
                    }
                    events.push(mapper.finish());
                    return Ok(sse(Body::from(RunStream::frames(&events))));
                }
                Run::Invalid(message) => return Err(ServeError::invalid(message)),
                Run::Stale => {
                    return Err(ServeError::new(
                        StatusCode::CONFLICT,
                        "stale_run",
                        "the run repeats messages the thread has gone on from (a later message was answered since); \
                         send the conversation as it is now",
                    ));
                }
            }
        }
    };
    let given = from_client(&reply);
    let stream = agent.reply_stream(reply);
    let mut opening = Opening::new(agent, stream, claim);
    // Read the first item before answering: a run the agent refuses at once (a thread parked
    // for a confirmation, nothing to resume, a session that cannot be loaded) gets its status.
    // The reply opens its spans as it starts, under the request's `traceparent`.
    let first = within_request(headers, opening.next()).await;
    if let Some(Err(err)) = first {
        // The rest of the reply (its session's save) is read before the thread is free again,
        // so that the next run loads what this one left.
        opening.drain().await;
        return Err(ServeError::from(err));
    }
    let Some((agent, stream, claim)) = opening.into_parts() else {
        return Err(ServeError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the run's reply was lost before it started",
        ));
    };
    let mapper = EventMapper::new(input.thread_id.as_str(), input.run_id.as_str()).results_from_client(given);
    let body = RunStream::new(agent, stream, claim, mapper, first, endpoint.keep_alive);
    Ok(sse(Body::from_stream(body)))
}

/// A resume addressed to the reply the agent is parked in: an AG-UI resume names the calls it
/// answers, not their reply, and the event should name it for the layers that read it (the
/// agent itself resumes its parked reply, as the reference does). Without a parked reply it
/// stays as it is, and the agent says it waits for nothing.
///
/// A confirmation that edits no arguments (no `payload.arguments`) runs the stored call's.
fn addressed(reply: ReplyInput, agent: &Agent) -> ReplyInput {
    let Some(parked) = agent.waiting_calls() else {
        return reply;
    };
    match reply {
        ReplyInput::Confirm(ev) => {
            let mut ev = Arc::unwrap_or_clone(ev);
            ev.reply_id = parked.reply_id;
            for result in &mut ev.confirm_results {
                let call = &mut result.tool_call;
                if call.input.is_empty()
                    && let Some(stored) = parked.confirm.iter().find(|c| c.id == call.id)
                {
                    call.input.clone_from(&stored.input);
                }
            }
            ReplyInput::Confirm(Arc::new(ev))
        }
        ReplyInput::External(ev) => {
            let mut ev = Arc::unwrap_or_clone(ev);
            ev.reply_id = parked.reply_id;
            ReplyInput::External(Arc::new(ev))
        }
        other => other,
    }
}

/// The calls whose results `reply` brings from the client (front-end tools'): the run does
/// not send them back.
fn from_client(reply: &ReplyInput) -> Vec<Id> {
    match reply {
        ReplyInput::External(ev) => ev.execution_results.iter().map(|r| r.id.clone()).collect(),
        _ => Vec::new(),
    }
}

/// A server-sent-events response with `body`.
fn sse(body: Body) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use towerscope_agent::toolkit::FunctionTool;
    use towerscope_core::event::{ConfirmResult, UserConfirmResultEvent};
    use towerscope_core::{Msg, ToolCallBlock};
    use towerscope_models::{ScriptedModel, ScriptedResponse};

    use super::*;

    /// Delete a file.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Path {
        /// The path.
        path: String,
    }

    /// A resume built from an AG-UI run (under a made-up reply id) names the parked reply once
    /// addressed; without a parked reply it is left as it is.
    #[tokio::test]
    async fn a_resume_is_addressed_to_the_parked_reply() {
        let call = ScriptedResponse::tool_call("c1", "delete_file", r#"{"path": "/tmp/a"}"#);
        let agent = Agent::builder("assistant")
            .model(ScriptedModel::new("m", [call]))
            .tool(FunctionTool::new("delete_file", |p: Path| async move { p.path }).requires_confirmation(|_| true))
            .build()
            .unwrap();
        let resume = |reply: &str| {
            let answer = ConfirmResult::new(true, ToolCallBlock::new("c1", "delete_file", r#"{"path": "/tmp/a"}"#));
            ReplyInput::Confirm(Arc::new(UserConfirmResultEvent::new(reply, vec![answer])))
        };
        let named = |input: &ReplyInput| input.resumed_reply().cloned();

        assert_eq!(
            named(&addressed(resume("made-up"), &agent)).unwrap(),
            "made-up",
            "nothing parked"
        );
        agent.reply(Msg::user("user", "delete it")).await.unwrap();
        let parked = agent.waiting_calls().unwrap().reply_id;
        assert_eq!(named(&addressed(resume("made-up"), &agent)), Some(parked));
    }
}
