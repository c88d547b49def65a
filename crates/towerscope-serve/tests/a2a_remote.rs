//! A remote A2A agent here: as a `Participant` in a pipeline and a `MsgHub`, interrupted, and
//! as a tool of our agent; against our own server (tests/a2a_python.rs runs the same client
//! against the official SDK's server).
#![allow(clippy::unwrap_used)]

#[path = "a2a_support/mod.rs"]
mod support;

use std::time::Duration;

use futures_util::StreamExt;
use support::serve_echo;
use towerscope_agent::Agent;
use towerscope_core::{AgentEvent, Msg, ReplyFinishedReason, ReplyInput, ReplyItem, ToolResultState};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_serve::a2a::{A2aConfig, RemoteAgent, RemoteAgentTool};
use towerscope_team::Participant;
use towerscope_team::hub::{Broadcaster, MsgHub};
use towerscope_team::pipeline::SequentialPipeline;

/// A client of the agent at `base` that asks it as if its card did not stream: each answer
/// comes whole (`SendMessage`).
async fn asked_whole(base: &str) -> RemoteAgent {
    let mut card = towerscope_serve::a2a::A2aClient::connect(base)
        .await
        .unwrap()
        .card()
        .clone();
    card.capabilities.streaming = false;
    RemoteAgent::new(towerscope_serve::a2a::A2aClient::from_card(card).unwrap())
}

/// How many times the `asker` agents' `delete` tool ran.
static ASKER_RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Deletes a path.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Path {
    path: String,
}

/// An agent that asks before calling `delete`, then answers "Deleted.".
fn asker(_context: &str) -> Result<Agent, towerscope_core::AgentError> {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/a"}"#),
            ScriptedResponse::text("Deleted."),
        ],
    );
    Agent::builder("asker")
        .model(model)
        .tool(towerscope_agent::toolkit::FunctionTool::new(
            "delete",
            |p: Path| async move {
                ASKER_RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                p.path
            },
        ))
        .default_permission(towerscope_core::PermissionDecision::Ask {
            suggested_rules: vec![],
        })
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_agent_streams_its_reply_as_events_and_keeps_one_session() {
    let base = serve_echo(A2aConfig::new("far")).await;
    let far = RemoteAgent::connect(&base).await.unwrap();
    assert_eq!(far.name(), "far");
    let items: Vec<ReplyItem> = far
        .reply_stream(Msg::user("user", "one").into())
        .map(Result::unwrap)
        .collect()
        .await;
    let kinds: Vec<&str> = items
        .iter()
        .map(|i| match i {
            ReplyItem::Event(e) => e.event_type().as_str(),
            ReplyItem::Final(_) => "FINAL",
        })
        .collect();
    assert_eq!(kinds.first(), Some(&"REPLY_START"));
    assert_eq!(&kinds[kinds.len() - 3..], ["TEXT_BLOCK_END", "REPLY_END", "FINAL"]);
    assert!(kinds.contains(&"TEXT_BLOCK_DELTA"));
    let deltas: String = items
        .iter()
        .filter_map(|i| match i {
            ReplyItem::Event(AgentEvent::TextBlockDelta(d)) => Some(d.delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, "heard: one");
    let context = far.context_id().unwrap();
    let second = far.reply(Msg::user("user", "two").into()).await.unwrap();
    assert_eq!(second.text_content().as_deref(), Some("heard: two"));
    assert_eq!(far.context_id(), Some(context));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_agent_takes_its_turn_in_a_pipeline_and_hears_a_hub() {
    let base = serve_echo(A2aConfig::new("far")).await;
    let far = RemoteAgent::connect(&base).await.unwrap();
    let writer = Agent::builder("writer")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("Roses are red.")]))
        .build()
        .unwrap();
    let row = SequentialPipeline::new([
        std::sync::Arc::new(writer) as std::sync::Arc<dyn Participant>,
        std::sync::Arc::new(far.clone()),
    ]);
    let last = row.reply(Msg::user("user", "Write.").into()).await.unwrap();
    assert_eq!(last.name.as_ref(), "far");
    assert_eq!(last.text_content().as_deref(), Some("heard: Roses are red."));

    // In a hub, a local agent's reply reaches the remote agent with its next message, and the
    // remote agent's reply reaches the local agent.
    let local_model = ScriptedModel::new("m", [ScriptedResponse::text("Tabs.")]);
    let local = Agent::builder("alice")
        .model(local_model)
        .middleware(Broadcaster::new())
        .build()
        .unwrap();
    let hub = MsgHub::builder()
        .participant(local.clone())
        .participant(far.clone())
        .enter()
        .unwrap();
    local.reply(Msg::user("host", "Tabs or spaces?")).await.unwrap();
    let heard = far.reply(ReplyInput::from(Vec::new())).await.unwrap();
    assert_eq!(heard.text_content().as_deref(), Some("heard: alice: Tabs."));
    drop(hub);
    let context: Vec<String> = local.state().context.iter().filter_map(|m| m.text_content()).collect();
    assert_eq!(context.last().map(String::as_str), Some("heard: alice: Tabs."));
}

/// Interrupted once its request is out (the stream has started), the reply's remote task is
/// canceled: it would otherwise answer a minute later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupting_a_remote_agent_cancels_its_remote_task() {
    let base = serve_echo(A2aConfig::new("far")).await;
    let far = RemoteAgent::connect(&base).await.unwrap();
    let mut stream = far.reply_stream(Msg::user("user", "answer slowly").into());
    // The first item comes once the request is out and the remote agent answered its headers.
    let first = stream.next().await.unwrap().unwrap();
    assert!(
        matches!(first, ReplyItem::Event(AgentEvent::ReplyStart(_))),
        "{first:?}"
    );
    assert!(far.interrupt(), "a reply is in progress");
    let items = tokio::time::timeout(Duration::from_secs(20), stream.collect::<Vec<_>>())
        .await
        .expect("the remote task was canceled: no minute-long answer");
    let Some(Ok(ReplyItem::Final(last))) = items.last() else {
        panic!("{items:?}")
    };
    assert_eq!(last.finished_reason, Some(ReplyFinishedReason::Interrupted));
    // And the next reply is not held up by the old task.
    let next = far.reply(Msg::user("user", "hello").into()).await.unwrap();
    assert_eq!(next.text_content().as_deref(), Some("heard: hello"));
    assert!(!far.interrupt(), "no reply in progress");
}

/// Interrupted before its request went out, a reply sends nothing, ends interrupted, and the
/// messages it would have carried go with the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupting_a_remote_agent_before_its_request_goes_out_sends_nothing() {
    let base = serve_echo(A2aConfig::new("far")).await;
    let far = RemoteAgent::connect(&base).await.unwrap();
    far.observe(vec![Msg::assistant("bob", "Bob was here.")]).unwrap();
    let stream = far.reply_stream(Msg::user("user", "never sent").into());
    assert!(far.interrupt());
    let items: Vec<_> = stream.collect().await;
    let Some(Ok(ReplyItem::Final(last))) = items.last() else {
        panic!("{items:?}")
    };
    assert_eq!(last.finished_reason, Some(ReplyFinishedReason::Interrupted));
    let next = far.reply(Msg::user("user", "hello").into()).await.unwrap();
    assert_eq!(next.text_content().as_deref(), Some("heard: bob: Bob was here.\nhello"));
}

/// A reply stream dropped before its end leaves no reply in progress, and its remote task is
/// canceled: left running, it would keep the remote context busy and refuse the next reply.
/// A stream dropped before it was ever read sends nothing and keeps what it would have carried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_reply_stream_cancels_its_remote_task_and_loses_nothing() {
    let base = serve_echo(A2aConfig::new("far")).await;
    let far = RemoteAgent::connect(&base).await.unwrap();
    let mut stream = far.reply_stream(Msg::user("user", "answer slowly").into());
    let _ = stream.next().await;
    drop(stream);
    assert!(!far.interrupt(), "no reply in progress");
    // The slow task was canceled: the context takes the next message (retried while the
    // cancellation lands, which a busy context refuses).
    let mut next = None;
    for _ in 0..100 {
        match far.reply(Msg::user("user", "hello").into()).await {
            Ok(msg) => {
                next = Some(msg);
                break;
            }
            Err(e) => {
                assert!(e.to_string().contains("busy"), "{e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    assert_eq!(
        next.expect("the context was freed").text_content().as_deref(),
        Some("heard: hello")
    );

    far.observe(vec![Msg::assistant("bob", "Bob was here.")]).unwrap();
    drop(far.reply_stream(Msg::user("user", "never read").into()));
    assert!(!far.interrupt());
    let answer = far.reply(Msg::user("user", "and now?").into()).await.unwrap();
    assert_eq!(
        answer.text_content().as_deref(),
        Some("heard: bob: Bob was here.\nand now?")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_agent_is_a_tool_of_our_agent() {
    let base = serve_echo(A2aConfig::new("Far Agent").description("Hears things.")).await;
    let tool = RemoteAgentTool::connect(&base).await.unwrap();
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "ask_far_agent", r#"{"message": "ping"}"#),
            ScriptedResponse::tool_call("c2", "ask_far_agent", r#"{"text": "no message"}"#),
            ScriptedResponse::text("Done."),
        ],
    );
    let agent = Agent::builder("boss").model(model.clone()).tool(tool).build().unwrap();
    let schema_seen = model.clone();
    agent.reply(Msg::user("user", "Ask the far agent.")).await.unwrap();
    let requests = schema_seen.requests();
    let tool_schema = requests[0].tools.iter().find(|t| t.name == "ask_far_agent").unwrap();
    assert!(tool_schema.description.contains("Hears things."));
    let results: Vec<(ToolResultState, String)> = agent
        .state()
        .context
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            towerscope_core::ContentBlock::ToolResult(r) => Some((r.state, serde_json::to_string(&r.output).unwrap())),
            _ => None,
        })
        .collect();
    assert_eq!(results[0].0, ToolResultState::Success);
    assert!(results[0].1.contains("heard: ping"), "{results:?}");
    assert_eq!(
        results[1].0,
        ToolResultState::Error,
        "bad arguments are an error result: {results:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_agent_whose_card_does_not_stream_is_asked_with_send_message() {
    let base = serve_echo(A2aConfig::new("far")).await;
    let far = asked_whole(&base).await;
    let (items, last) = support::reply_items(&far, Msg::user("user", "whole")).await;
    assert_eq!(last.text_content().as_deref(), Some("heard: whole"));
    assert_eq!(last.finished_reason, Some(ReplyFinishedReason::Completed));
    let deltas = items
        .iter()
        .filter(|i| matches!(i, ReplyItem::Event(AgentEvent::TextBlockDelta(_))))
        .count();
    assert_eq!(deltas, 1, "the whole answer as one delta");
}

/// A remote agent streaming more than the client's 16 MiB cap in many small updates (each
/// under the per-event cap): the reply fails with an error naming the cap instead of growing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_answer_past_16_mib_in_small_pieces_fails_the_reply() {
    let base = serve_echo(A2aConfig::new("far")).await;
    let far = RemoteAgent::connect(&base).await.unwrap();
    let items: Vec<_> = far.reply_stream(Msg::user("user", "flood").into()).collect().await;
    let streamed: usize = items
        .iter()
        .filter_map(|i| match i {
            Ok(ReplyItem::Event(AgentEvent::TextBlockDelta(d))) => Some(d.delta.len()),
            _ => None,
        })
        .sum();
    let kinds: Vec<String> = items
        .iter()
        .map(|i| match i {
            Ok(ReplyItem::Event(e)) => e.event_type().as_str().to_owned(),
            Ok(ReplyItem::Final(_)) => "FINAL".to_owned(),
            Err(e) => format!("ERR {}", e.to_string().chars().take(300).collect::<String>()),
        })
        .collect();
    assert!(
        streamed > 15 << 20 && streamed <= 16 << 20,
        "{streamed} bytes streamed before the cap: {kinds:?}"
    );
    let err = items.last().unwrap().as_ref().err().unwrap().to_string();
    assert!(err.contains("the answer is larger than 16777216 bytes"), "{err}");
}

/// A request that fails loses nothing: what the remote agent heard in the meantime goes with
/// its next reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_agent_whose_request_fails_sends_what_it_heard_with_the_next_one() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use axum::response::IntoResponse;

    let fail = Arc::new(AtomicBool::new(false));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = A2aConfig::new("far")
        .routes(Arc::new(support::echo_agent))
        .layer(axum::middleware::from_fn({
            let fail = Arc::clone(&fail);
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                let fail = Arc::clone(&fail);
                async move {
                    if req.method() == axum::http::Method::POST && fail.swap(false, Ordering::SeqCst) {
                        return axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response();
                    }
                    next.run(req).await
                }
            }
        }));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let far = RemoteAgent::connect(&base).await.unwrap();
    far.observe(vec![Msg::assistant("alice", "Tabs.")]).unwrap();
    fail.store(true, Ordering::SeqCst);
    let err = far.reply(Msg::user("user", "one").into()).await.unwrap_err();
    assert!(err.to_string().contains("remote agent `far`"), "{err}");
    far.observe(vec![Msg::assistant("bob", "Spaces.")]).unwrap();
    let answer = far.reply(Msg::user("user", "two").into()).await.unwrap();
    assert_eq!(
        answer.text_content().as_deref(),
        Some("heard: alice: Tabs.\nbob: Spaces.\ntwo")
    );
}

/// An agent that takes the request and never answers fails the reply once it has been silent
/// for the client's read timeout, instead of holding it for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_agent_that_never_answers_fails_the_reply_after_the_read_timeout() {
    use towerscope_serve::a2a::A2aClient;

    assert_eq!(towerscope_serve::a2a::CLIENT_READ_TIMEOUT, Duration::from_secs(600));
    let base = serve_echo(A2aConfig::new("far")).await;
    let mut card = A2aClient::connect(&base).await.unwrap().card().clone();
    // The card's endpoint is a listener that accepts and then says nothing.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/a2a", silent.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    for interface in &mut card.supported_interfaces {
        interface.url.clone_from(&url);
    }
    let client = A2aClient::from_card(card)
        .unwrap()
        .with_timeouts(Duration::from_secs(1), Some(Duration::from_millis(300)))
        .unwrap();
    let far = RemoteAgent::new(client);
    // Without the timeout this waits for ever (and the test runner ends it as hung).
    let err = far.reply(Msg::user("user", "hello?").into()).await.unwrap_err();
    assert!(err.to_string().contains("could not reach the A2A agent"), "{err}");
}

/// Interrupted before its remote task is known (here an agent whose card does not stream, so
/// the answer comes whole, a minute later): the reply ends at once as interrupted, and an
/// interrupt with no reply in progress says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupting_a_remote_agent_before_its_task_is_known_ends_the_reply() {
    let base = serve_echo(A2aConfig::new("far")).await;
    let far = asked_whole(&base).await;
    assert!(!far.interrupt(), "no reply in progress");
    let stream = far.reply_stream(Msg::user("user", "answer slowly").into());
    let reply = tokio::spawn(async move { stream.collect::<Vec<_>>().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(far.interrupt(), "a reply is in progress");
    // Without the interrupt, the answer takes a minute (and the test runner ends the test).
    let items = reply.await.unwrap();
    let Some(Ok(ReplyItem::Final(last))) = items.last() else {
        panic!("{items:?}")
    };
    assert_eq!(last.finished_reason, Some(ReplyFinishedReason::Interrupted));
    assert!(!far.interrupt(), "the reply has ended");
}

/// A remote task the remote agent no longer knows (it restarted) is not sent again and again:
/// the refusal drops it, and the next reply starts a new task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_task_the_remote_agent_refuses_is_dropped_not_sent_again() {
    use std::sync::Arc;

    // The server's routes can be swapped for fresh ones: a restart that forgets every task.
    let routes = || A2aConfig::new("asker").routes(Arc::new(asker));
    let current = Arc::new(std::sync::Mutex::new(routes()));
    let app = axum::Router::new().fallback_service(tower::service_fn({
        let current = Arc::clone(&current);
        move |req: axum::extract::Request| {
            let router = current.lock().unwrap().clone();
            async move { tower::ServiceExt::oneshot(router, req).await }
        }
    }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    // Asked whole (`SendMessage`), where a refusal is the request's error; a streamed request
    // gets it as the stream's first item.
    let far = asked_whole(&format!("http://{address}")).await;
    let asked = far.reply(Msg::user("user", "Delete /tmp/a").into()).await.unwrap();
    assert_eq!(asked.finished_reason, Some(ReplyFinishedReason::Completed), "{asked:?}");

    // The remote agent restarts and forgets its tasks: the answer to the open task is refused.
    *current.lock().unwrap() = routes();
    let err = far.reply(Msg::user("user", "yes").into()).await.unwrap_err();
    assert!(err.to_string().contains("refused"), "{err}");
    // The next reply starts a new task instead of sending the forgotten one again.
    let again = far.reply(Msg::user("user", "Delete /tmp/a").into()).await.unwrap();
    assert_eq!(again.finished_reason, Some(ReplyFinishedReason::Completed), "{again:?}");
}

/// What a remote agent hears between its turns is kept to the latest 256 messages (they go in
/// one request, which servers cap).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_agent_keeps_the_latest_messages_it_heard() {
    let base = serve_echo(A2aConfig::new("far")).await;
    let far = RemoteAgent::connect(&base).await.unwrap();
    far.observe((0..300).map(|i| Msg::assistant("bob", format!("m{i}"))).collect())
        .unwrap();
    let answer = far.reply(Msg::user("user", "and?").into()).await.unwrap();
    let text = answer.text_content().unwrap();
    let heard: Vec<&str> = text.trim_start_matches("heard: ").lines().collect();
    assert_eq!(heard.len(), 257, "256 heard, and the question");
    assert_eq!(heard[0], "bob: m44");
    assert_eq!(heard[256], "and?");

    // And to 512 KiB of text: a message larger than that alone is not kept, so it cannot make
    // every later request too large for the server.
    far.observe(vec![Msg::assistant("bob", "older")]).unwrap();
    far.observe(vec![Msg::assistant("bob", "x".repeat(600 << 10))]).unwrap();
    far.observe(vec![Msg::assistant("bob", "small")]).unwrap();
    let answer = far.reply(Msg::user("user", "still?").into()).await.unwrap();
    assert_eq!(
        answer.text_content().as_deref(),
        Some("heard: bob: older\nbob: small\nstill?")
    );
    // The large one last: the older ones stay.
    far.observe(vec![Msg::assistant("bob", "first")]).unwrap();
    far.observe(vec![Msg::assistant("bob", "y".repeat(600 << 10))]).unwrap();
    let answer = far.reply(Msg::user("user", "and?").into()).await.unwrap();
    assert_eq!(answer.text_content().as_deref(), Some("heard: bob: first\nand?"));
}

/// A reply dropped right after it started, whose remote task asked a question: the question
/// stays open, and the next reply answers it (it is not canceled).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_reply_whose_remote_task_asks_keeps_the_question_open() {
    use std::sync::Arc;

    let runs = ASKER_RUNS.load(std::sync::atomic::Ordering::SeqCst);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = A2aConfig::new("asker").routes(Arc::new(asker));
    tokio::spawn(async move { axum::serve(listener, app).await });
    // Asked whole: the one update is the task, waiting for the answer.
    let far = asked_whole(&base).await;
    let mut stream = far.reply_stream(Msg::user("user", "Delete /tmp/a").into());
    let first = stream.next().await.unwrap().unwrap();
    assert!(
        matches!(first, ReplyItem::Event(AgentEvent::ReplyStart(_))),
        "{first:?}"
    );
    drop(stream);
    // The dropped stream's task is read from a task of its own: give it a moment.
    let mut answer = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if let Ok(a) = far.reply(Msg::user("user", "yes").into()).await {
            answer = Some(a);
            break;
        }
    }
    assert_eq!(
        answer.expect("the question was answered").text_content().as_deref(),
        Some("Deleted.")
    );
    assert_eq!(
        ASKER_RUNS.load(std::sync::atomic::Ordering::SeqCst) - runs,
        1,
        "the \"yes\" confirmed the call"
    );
}

/// A remote agent whose endpoint answers every request with `events` (each a `StreamResponse`
/// as JSON) as one event stream: a server that behaves as ours does not.
async fn scripted_remote(events: Vec<serde_json::Value>) -> RemoteAgent {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/a2a", listener.local_addr().unwrap());
    let body: String = events
        .iter()
        .map(|e| {
            format!(
                "data: {}\n\n",
                serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": e})
            )
        })
        .collect();
    let app = axum::Router::new().route(
        "/a2a",
        axum::routing::post(move || {
            let body = body.clone();
            async move { ([(axum::http::header::CONTENT_TYPE, "text/event-stream")], body) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    // Our server's card, pointed at the fake endpoint.
    let real = serve_echo(A2aConfig::new("fake")).await;
    let mut card = towerscope_serve::a2a::A2aClient::connect(&real)
        .await
        .unwrap()
        .card()
        .clone();
    for interface in &mut card.supported_interfaces {
        interface.url = url.clone();
    }
    card.url = Some(url);
    RemoteAgent::new(towerscope_serve::a2a::A2aClient::from_card(card).unwrap())
}

fn artifact(id: &str, append: bool, parts: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"artifactUpdate": {
        "taskId": "t1", "contextId": "c1", "append": append,
        "artifact": {"artifactId": id, "name": "answer", "parts": parts},
    }})
}

fn status(state: &str) -> serde_json::Value {
    serde_json::json!({"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": state}}})
}

/// The files of two artifacts are both kept (a new artifact does not replace another's files),
/// and a file no provider takes arrives as a line saying so, not as a block that would fail
/// every later model call of the conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_files_of_every_artifact_reach_the_reply_and_one_no_model_takes_is_named() {
    use towerscope_core::{ContentBlock, DataSource};

    let far = scripted_remote(vec![
        status("TASK_STATE_WORKING"),
        artifact(
            "a1",
            false,
            serde_json::json!([{"text": "one"}, {"raw": "AAEC", "mediaType": "image/png"}]),
        ),
        artifact(
            "a2",
            false,
            serde_json::json!([
                {"raw": "AwQF", "mediaType": "image/png", "filename": "b.png"},
                {"raw": "UEsDBA==", "mediaType": "application/zip", "filename": "x.zip"},
                {"url": "https://example.com/logo.svg", "mediaType": "image/svg+xml", "filename": "logo.svg"},
            ]),
        ),
        status("TASK_STATE_COMPLETED"),
    ])
    .await;
    let reply = far.reply(Msg::user("user", "Send files.").into()).await.unwrap();
    let files: Vec<DataSource> = reply
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Data(d) => Some(d.source.clone()),
            _ => None,
        })
        .collect();
    let text: Vec<&str> = reply
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        files,
        [
            DataSource::inline(&[0, 1, 2], "image/png"),
            DataSource::inline(&[3, 4, 5], "image/png")
        ]
    );
    assert!(
        text.iter()
            .any(|t| t.contains("'x.zip' (application/zip), which no model provider takes")),
        "{text:?}"
    );
    // An image by URL of a type providers refuse is named too (it was taken as any image).
    assert!(
        text.iter()
            .any(|t| t.contains("'logo.svg' (image/svg+xml), which no model provider takes")),
        "{text:?}"
    );
}

/// Files count towards the 16 MiB an answer may hold: 12 MiB of image, then text in 1 MiB
/// pieces, fails the reply once the sum passes the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_answer_past_16_mib_of_files_and_text_fails_the_reply() {
    let piece = "x".repeat(1 << 20);
    let mut events = vec![
        status("TASK_STATE_WORKING"),
        artifact(
            "a1",
            false,
            serde_json::json!([{"raw": "A".repeat(12 << 20), "mediaType": "image/png"}]),
        ),
    ];
    events.extend((0..6).map(|_| artifact("a1", true, serde_json::json!([{ "text": piece }]))));
    events.push(status("TASK_STATE_COMPLETED"));
    let far = scripted_remote(events).await;
    let err = far.reply(Msg::user("user", "Send a lot.").into()).await.unwrap_err();
    assert!(err.to_string().contains("larger than"), "{err}");
}

/// An answer in several artifacts is their texts one after the other, as `Task::answer_text`
/// reads it; an artifact sent whole again replaces its own part only. Before, each new
/// artifact's text replaced the answer so far.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_in_several_artifacts_keeps_each_ones_text() {
    let far = scripted_remote(vec![
        status("TASK_STATE_WORKING"),
        artifact("a1", false, serde_json::json!([{"text": "one, "}])),
        artifact("a2", false, serde_json::json!([{"text": "tw"}])),
        artifact("a2", true, serde_json::json!([{"text": "o"}])),
        artifact("a2", false, serde_json::json!([{"text": "two!"}])),
        status("TASK_STATE_COMPLETED"),
    ])
    .await;
    let (items, last) = support::reply_items(&far, Msg::user("user", "Count.")).await;
    assert_eq!(last.text_content().as_deref(), Some("one, two!"));
    let deltas: String = items
        .iter()
        .filter_map(|i| match i {
            ReplyItem::Event(AgentEvent::TextBlockDelta(d)) => Some(d.delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas, "one, two!",
        "what streamed, the last piece as the whole artifact's rest"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_agent_behind_a_bearer_token_is_reached_with_it_and_its_card_says_so() {
    use towerscope_serve::RouterBuilder;
    use towerscope_serve::a2a::{A2aClient, ClientError};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = RouterBuilder::new(support::echo_agent)
        .bearer_token("s3cret")
        .a2a(A2aConfig::new("guarded"))
        .build();
    tokio::spawn(async move { axum::serve(listener, app).await });

    // The card is public and says what the endpoint wants, in both protocol versions' shapes.
    let client = A2aClient::connect(&base).await.unwrap();
    assert!(client.card().wants_bearer_token());
    let card = reqwest::get(format!("{base}/.well-known/agent-card.json"))
        .await
        .unwrap();
    let card: serde_json::Value = serde_json::from_str(&card.text().await.unwrap()).unwrap();
    assert_eq!(
        card["securitySchemes"]["bearer"],
        serde_json::json!({"httpAuthSecurityScheme": {"scheme": "Bearer"}, "type": "http", "scheme": "Bearer"})
    );
    assert_eq!(
        card["securityRequirements"],
        serde_json::json!([{"schemes": {"bearer": {"list": []}}}])
    );
    assert_eq!(card["security"], serde_json::json!([{"bearer": []}]));

    // Without the token: 401, and the error says what to do.
    let refused = client.send_text("hello", None, None).await.unwrap_err();
    assert_eq!(refused, ClientError::Http(401));
    assert!(refused.to_string().contains("with_bearer_token"), "{refused}");
    // A wrong one is refused too; the right one is sent with every request, streamed or not.
    let wrong = client.clone().with_bearer_token("guess").unwrap();
    assert_eq!(
        wrong.send_text("hello", None, None).await.unwrap_err(),
        ClientError::Http(401)
    );
    let client = client.with_bearer_token("s3cret").unwrap();
    assert!(!format!("{client:?}").contains("s3cret"), "{client:?}");
    client.send_text("hello", None, None).await.unwrap();
    let far = RemoteAgent::new(client);
    let answer = far.reply(Msg::user("user", "one").into()).await.unwrap();
    assert_eq!(answer.text_content().as_deref(), Some("heard: one"));

    // A token a header cannot carry is refused before anything is sent.
    let bad = A2aClient::connect(&base).await.unwrap().with_bearer_token("a\nb");
    assert_eq!(bad.unwrap_err(), ClientError::InvalidToken);
    // Without a token on the router, the card asks for none.
    assert!(
        !A2aClient::connect(&serve_echo(A2aConfig::new("open")).await)
            .await
            .unwrap()
            .card()
            .wants_bearer_token()
    );
}
