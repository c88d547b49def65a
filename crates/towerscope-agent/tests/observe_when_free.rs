//! Messages posted to a busy agent with `observe_when_free`: observed once, in order, as soon as
//! the agent is free (its reply ended, was dropped, or its parked reply was resumed and ended);
//! and finding an installed middleware again with `Agent::middleware`.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::collect;
use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::event::{ConfirmResult, UserConfirmResultEvent};
use towerscope_core::{AgentError, AgentEvent, ContentBlock, Middleware, Msg, ObserveHook, PermissionDecision, Role};
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// Records what `observe` stored, through the observe hooks.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl ObserveHook for Recorder {
    fn post_observe(&self, _agent: &str, msgs: &[Msg]) -> Result<(), AgentError> {
        let mut seen = self.0.lock().unwrap();
        seen.extend(msgs.iter().filter_map(Msg::text_content));
        Ok(())
    }
}

impl Middleware for Recorder {
    fn on_observe(&self) -> Option<Arc<dyn ObserveHook>> {
        Some(Arc::new(self.clone()))
    }
}

fn texts(agent: &Agent) -> Vec<String> {
    agent
        .state()
        .context
        .iter()
        .map(|m| format!("{}: {}", m.name, m.text_content().unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn a_free_agent_observes_at_once() {
    let agent = Agent::builder("bob")
        .model(ScriptedModel::new("m", []))
        .build()
        .unwrap();
    assert!(agent.observe_when_free([Msg::user("alice", "hi bob")]).unwrap());
    assert_eq!(texts(&agent), ["alice: hi bob"]);
    assert_eq!(agent.pending_observations(), 0);
}

/// A message the agent already holds (observed, then given as a reply's input, or given twice)
/// is stored once; one with a held id but other text (an edited message) is stored.
#[tokio::test]
async fn a_message_held_already_is_stored_once_and_an_edited_one_is_stored() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("ok")]);
    let agent = Agent::builder("bob").model(model.clone()).build().unwrap();
    let question = Msg::user("alice", "hi bob");
    agent.observe([question.clone()]).unwrap();
    agent.observe([question.clone(), question.clone()]).unwrap();
    let mut edited = Msg::user("alice", "hi bob, again");
    edited.id = question.id.clone();
    agent.reply(vec![question.clone(), edited]).await.unwrap();
    assert_eq!(texts(&agent), ["alice: hi bob", "alice: hi bob, again", "bob: ok"]);
    let sent: Vec<_> = model.requests()[0]
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.text_content())
        .collect();
    assert_eq!(sent, [Some("hi bob".to_owned()), Some("hi bob, again".to_owned())]);
}

#[tokio::test(start_paused = true)]
async fn a_replying_agent_observes_after_its_reply_in_posting_order_once() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::text("my answer").chunk_delay(Duration::from_millis(10))],
    );
    let recorder = Recorder::default();
    let agent = Agent::builder("bob")
        .model(model)
        .middleware(recorder.clone())
        .build()
        .unwrap();
    let mut stream = agent.reply_stream(Msg::user("user", "question"));
    assert!(stream.next().await.is_some(), "the reply started");

    assert!(!agent.observe_when_free([Msg::user("alice", "first")]).unwrap());
    assert!(!agent.observe_when_free([Msg::user("carol", "second")]).unwrap());
    assert_eq!(agent.pending_observations(), 2);
    assert!(recorder.0.lock().unwrap().is_empty(), "nothing observed mid-reply");

    while stream.next().await.is_some() {}
    assert_eq!(agent.pending_observations(), 0);
    assert_eq!(
        texts(&agent),
        ["user: question", "bob: my answer", "alice: first", "carol: second"]
    );
    assert_eq!(*recorder.0.lock().unwrap(), ["first", "second"], "observed once each");
}

#[tokio::test(start_paused = true)]
async fn a_dropped_reply_frees_the_agent_and_delivers() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::text("a long answer that nobody reads").chunk_delay(Duration::from_secs(1))],
    );
    let agent = Agent::builder("bob").model(model).build().unwrap();
    let mut stream = agent.reply_stream(Msg::user("user", "question"));
    assert!(stream.next().await.is_some());
    assert!(!agent.observe_when_free([Msg::user("alice", "still there?")]).unwrap());
    drop(stream);
    assert_eq!(agent.pending_observations(), 0);
    assert_eq!(texts(&agent).last().map(String::as_str), Some("alice: still there?"));
}

/// Delete a file.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Delete {
    /// The path.
    path: String,
}

#[tokio::test]
async fn a_parked_agent_observes_after_the_resumed_reply_ends() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/a"}"#),
            ScriptedResponse::text("deleted"),
        ],
    );
    let agent = Agent::builder("bob")
        .model(model)
        .tool(FunctionTool::new("delete", |a: Delete| async move {
            format!("deleted {}", a.path)
        }))
        .default_permission(PermissionDecision::Ask {
            suggested_rules: vec![],
        })
        .build()
        .unwrap();
    let parked = collect(agent.reply_stream(Msg::user("user", "clean up"))).await;
    let call = parked
        .events
        .iter()
        .find_map(|e| match e {
            AgentEvent::RequireUserConfirm(e) => Some(e.tool_calls[0].clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        agent.observe([Msg::user("alice", "now?")]).is_err(),
        "observe refuses while parked"
    );
    assert!(!agent.observe_when_free([Msg::user("alice", "later")]).unwrap());
    assert_eq!(agent.pending_observations(), 1, "still parked after the stream ended");

    let reply_id = parked.final_msg.unwrap().id;
    let confirm = UserConfirmResultEvent::new(reply_id, vec![ConfirmResult::new(true, call)]);
    let resumed = collect(agent.reply_stream(confirm)).await;
    assert_eq!(resumed.final_text().as_deref(), Some("deleted"));
    assert_eq!(agent.pending_observations(), 0);
    let last = agent.state().context.last().cloned().unwrap();
    assert_eq!((last.name.as_ref(), last.role), ("alice", Role::User));
}

#[tokio::test]
async fn messages_the_agent_can_never_store_fail_for_their_sender() {
    let agent = Agent::builder("bob")
        .model(ScriptedModel::new("m", []))
        .build()
        .unwrap();
    let thinking = Msg::assistant_blocks("alice", vec![ContentBlock::thinking("secret")]);
    let err = agent.observe_when_free([thinking]).unwrap_err();
    assert!(err.to_string().contains("'thinking' block"), "{err}");
    assert_eq!(agent.pending_observations(), 0);
}

#[test]
fn an_installed_middleware_is_found_by_its_type() {
    let recorder = Recorder::default();
    let agent = Agent::builder("bob")
        .model(ScriptedModel::new("m", []))
        .middleware(recorder.clone())
        .build()
        .unwrap();
    let found = agent.middleware::<Recorder>().unwrap();
    assert!(Arc::ptr_eq(&found.0, &recorder.0), "the same handle");
    assert!(agent.middleware::<OtherMiddleware>().is_none());
}

struct OtherMiddleware;

impl Middleware for OtherMiddleware {}

/// A moderation hook: rejects any post holding "spam"; after storing, fails once as a busy
/// store would.
#[derive(Clone, Default)]
struct Moderator {
    post_failures: Arc<Mutex<u32>>,
}

impl ObserveHook for Moderator {
    fn pre_observe(&self, _agent: &str, msgs: Vec<Msg>) -> Result<Vec<Msg>, AgentError> {
        if msgs
            .iter()
            .any(|m| m.text_content().unwrap_or_default().contains("spam"))
        {
            return Err(AgentError::validation("spam refused"));
        }
        Ok(msgs)
    }

    fn post_observe(&self, _agent: &str, _msgs: &[Msg]) -> Result<(), AgentError> {
        let mut failures = self.post_failures.lock().unwrap();
        if *failures == 0 {
            *failures += 1;
            return Err(AgentError::State("store busy".to_owned()));
        }
        Ok(())
    }
}

impl Middleware for Moderator {
    fn on_observe(&self) -> Option<Arc<dyn ObserveHook>> {
        Some(Arc::new(self.clone()))
    }
}

/// Posts are delivered each apart: one sender's post a hook rejects does not take the others'
/// with it, and a hook failing after a post was stored does not store it again.
#[tokio::test(start_paused = true)]
async fn a_rejected_post_loses_no_other_post_and_a_stored_one_is_stored_once() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::text("my answer").chunk_delay(Duration::from_millis(10))],
    );
    let agent = Agent::builder("bob")
        .model(model)
        .middleware(Moderator::default())
        .build()
        .unwrap();
    let mut stream = agent.reply_stream(Msg::user("user", "question"));
    assert!(stream.next().await.is_some(), "the reply started");
    assert!(
        !agent
            .observe_when_free([Msg::user("alice", "the build is red")])
            .unwrap()
    );
    assert!(!agent.observe_when_free([Msg::user("mallory", "spam spam")]).unwrap());
    assert!(!agent.observe_when_free([Msg::user("carol", "deploy at 5")]).unwrap());
    while stream.next().await.is_some() {}
    // Alice's post was stored, then the hook after it failed; mallory's was rejected.
    assert_eq!(agent.pending_observations(), 0);
    assert!(agent.observe_when_free([Msg::user("dave", "later")]).unwrap());
    assert_eq!(
        texts(&agent),
        [
            "user: question",
            "bob: my answer",
            "alice: the build is red",
            "carol: deploy at 5",
            "dave: later"
        ]
    );
}
