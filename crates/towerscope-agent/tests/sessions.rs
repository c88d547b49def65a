//! Sessions in one process: a conversation and a parked reply carried on by new agents through
//! a store, registered state, conflicts, and the save points (parked, interrupted, dropped).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use common::{assert_consistent, collect};
use futures_util::StreamExt;
use towerscope_agent::Agent;
use towerscope_agent::session::{JsonFileStore, SessionKey, SessionStore};
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::event::{ConfirmResult, UserConfirmResultEvent};
use towerscope_core::state::SharedState;
use towerscope_core::{AgentError, AgentEvent, Msg, PermissionDecision, ReplyFinishedReason, ReplyItem};
use towerscope_models::{ScriptedModel, ScriptedResponse};

fn temp_store() -> (JsonFileStore, PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "towerscope-sessions-{}-{:08x}",
        std::process::id(),
        fastrand_u32()
    ));
    (JsonFileStore::new(&dir), dir)
}

fn fastrand_u32() -> u32 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now()) as u32
}

/// The texts of the messages the store holds for session `session` of user `user`.
async fn stored_texts(store: &impl SessionStore, user: &str, session: &str) -> Vec<String> {
    let key = SessionKey::new(user, session).unwrap();
    let stored = store.load(&key).await.unwrap().expect("a saved session");
    stored
        .document
        .agent
        .context
        .iter()
        .filter_map(|m| m.text_content())
        .collect()
}

/// The texts of the messages the model's call `n` received after the system prompt.
fn sent_texts(model: &ScriptedModel, n: usize) -> Vec<String> {
    model.requests()[n]
        .messages
        .iter()
        .skip(1)
        .filter_map(|m| m.text_content())
        .collect()
}

/// Delete a file.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Delete {
    /// The path.
    path: String,
}

/// The session `user`/`session` once a dropped reply stream saved it (the save runs in a task
/// of its own).
async fn saved_after_drop(store: &JsonFileStore, user: &str, session: &str) -> towerscope_agent::session::Stored {
    let key = SessionKey::new(user, session).unwrap();
    for _ in 0..200 {
        if let Some(saved) = store.load(&key).await.unwrap() {
            return saved;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the dropped reply was never saved")
}

fn asking(model: &ScriptedModel) -> towerscope_agent::AgentBuilder {
    asking_with(
        model,
        FunctionTool::new("delete", |a: Delete| async move { format!("deleted {}", a.path) }),
    )
}

/// An agent asking before every call of `delete`, the tool given.
fn asking_with(model: &ScriptedModel, delete: FunctionTool) -> towerscope_agent::AgentBuilder {
    Agent::builder("a")
        .model(model.clone())
        .tool(delete)
        .default_permission(PermissionDecision::Ask {
            suggested_rules: vec![],
        })
}

/// The model of the confirmation tests: deletes `/tmp/a`, then says so, at every reply.
fn deleting() -> ScriptedModel {
    ScriptedModel::cycle(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/a"}"#),
            ScriptedResponse::text("Deleted."),
        ],
    )
}

/// A `delete` tool that counts its runs; gated, each run says it started and waits for the go.
#[derive(Clone, Default)]
struct CountedDelete {
    runs: Arc<std::sync::atomic::AtomicUsize>,
    gate: Option<(Arc<tokio::sync::Notify>, Arc<tokio::sync::Notify>)>,
}

impl CountedDelete {
    /// A gated tool, with its started signal and its go.
    fn gated() -> (Self, Arc<tokio::sync::Notify>, Arc<tokio::sync::Notify>) {
        let (started, go) = (Arc::default(), Arc::default());
        let tool = Self {
            gate: Some((Arc::clone(&started), Arc::clone(&go))),
            ..Self::default()
        };
        (tool, started, go)
    }

    fn tool(&self) -> FunctionTool {
        let this = self.clone();
        FunctionTool::new("delete", move |a: Delete| {
            this.runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let gate = this.gate.clone();
            async move {
                if let Some((started, go)) = gate {
                    started.notify_one();
                    go.notified().await;
                }
                format!("deleted {}", a.path)
            }
        })
    }

    fn runs(&self) -> usize {
        self.runs.load(std::sync::atomic::Ordering::SeqCst)
    }
}

fn parked(out: &common::Collected) -> UserConfirmResultEvent {
    let (reply_id, call) = out
        .events
        .iter()
        .find_map(|e| match e {
            AgentEvent::RequireUserConfirm(e) => Some((e.reply_id.clone(), e.tool_calls[0].clone())),
            _ => None,
        })
        .unwrap();
    UserConfirmResultEvent::new(reply_id, vec![ConfirmResult::new(true, call)])
}

#[tokio::test]
async fn a_conversation_continues_in_a_new_agent_on_the_same_session() {
    let (store, dir) = temp_store();
    let model = ScriptedModel::new("m", [ScriptedResponse::text("Noted."), ScriptedResponse::text("Blue.")]);
    let first = Agent::builder("a")
        .model(model.clone())
        .session(store.clone(), "alice", "conv-1")
        .build()
        .unwrap();
    let out = collect(first.reply_stream(Msg::user("user", "My favourite colour is blue."))).await;
    let AgentEvent::ReplyStart(start) = &out.events[0] else {
        panic!()
    };
    assert_eq!(start.session_id, "alice/conv-1", "events carry the user's session's id");
    drop(first);

    let second = Agent::builder("a")
        .model(model.clone())
        .session(store.clone(), "alice", "conv-1")
        .build()
        .unwrap();
    second
        .reply(Msg::user("user", "Which colour do I like?"))
        .await
        .unwrap();
    let seen = sent_texts(&model, 1);
    assert_eq!(
        seen,
        ["My favourite colour is blue.", "Noted.", "Which colour do I like?"]
    );
    let stored = store
        .load(&SessionKey::new("alice", "conv-1").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.revision, 2);
    assert_eq!(stored.document.agent.context.len(), 4);
    // Another user's session of the same id is another conversation.
    assert!(
        store
            .load(&SessionKey::new("bob", "conv-1").unwrap())
            .await
            .unwrap()
            .is_none()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_parked_reply_resumes_in_a_new_agent_with_the_events_of_one_agent() {
    // One agent, no session: the reference behaviour.
    let script = || {
        ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/a"}"#),
                ScriptedResponse::text("done"),
            ],
        )
    };
    let single = asking(&script()).build().unwrap();
    let one_a = collect(single.reply_stream(Msg::user("user", "clean up"))).await;
    let one_b = collect(single.reply_stream(parked(&one_a))).await;

    // Two agents over one session, as two processes would.
    let (store, dir) = temp_store();
    let model = script();
    let a = asking(&model).session(store.clone(), "alice", "s").build().unwrap();
    let two_a = collect(a.reply_stream(Msg::user("user", "clean up"))).await;
    drop(a);
    let b = asking(&model).session(store.clone(), "alice", "s").build().unwrap();
    let two_b = collect(b.reply_stream(parked(&two_a))).await;

    assert!(
        two_a.error.is_none() && two_b.error.is_none(),
        "{:?} {:?}",
        two_a.error,
        two_b.error
    );
    assert_eq!(two_a.kinds(), one_a.kinds());
    assert_eq!(two_b.kinds(), one_b.kinds());
    assert_eq!(two_b.final_text(), one_b.final_text());
    let done = two_b.final_msg.unwrap();
    assert_eq!(
        done.id,
        two_a.final_msg.unwrap().id,
        "the resume continues the same reply"
    );
    assert_eq!(done.finished_reason, Some(ReplyFinishedReason::Completed));
    assert_consistent(&b.state().context);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Preferences {
    language: String,
}

#[tokio::test]
async fn registered_state_travels_with_the_session_and_strict_loading_names_what_is_missing() {
    let (store, dir) = temp_store();
    let model = ScriptedModel::new("m", (0..4).map(|_| ScriptedResponse::text("ok")));
    let prefs = SharedState::new(Preferences { language: "fr".into() });
    let agent = Agent::builder("a")
        .model(model.clone())
        .session(store.clone(), "alice", "s")
        .session_state("prefs", prefs.clone())
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hi")).await.unwrap();

    let restored = SharedState::new(Preferences::default());
    let again = Agent::builder("a")
        .model(model.clone())
        .session(store.clone(), "alice", "s")
        .session_state("prefs", restored.clone())
        .build()
        .unwrap();
    again.reply(Msg::user("user", "hi")).await.unwrap();
    assert_eq!(restored.get().language, "fr");

    // A module the saved session does not know: strict loading fails the reply, naming it.
    let strict = Agent::builder("a")
        .model(model.clone())
        .session(store.clone(), "alice", "s")
        .session_state("prefs", SharedState::new(Preferences::default()))
        .session_state("plan", SharedState::new(Vec::<String>::new()))
        .build()
        .unwrap();
    let err = strict.reply(Msg::user("user", "hi")).await.unwrap_err();
    assert!(
        matches!(&err, AgentError::MissingState { key } if key == "modules.plan"),
        "{err:?}"
    );
    let lenient = Agent::builder("a")
        .model(model.clone())
        .session(store.clone(), "alice", "s")
        .session_state("plan", SharedState::new(vec!["step".to_owned()]))
        .session_strict(false)
        .build()
        .unwrap();
    lenient.reply(Msg::user("user", "hi")).await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn state_that_cannot_be_saved_fails_the_build_not_the_first_save() {
    let (store, _) = temp_store();
    let bad = SharedState::new(std::collections::HashMap::from([((1u8, 2u8), 3u8)]));
    let err = Agent::builder("a")
        .model(ScriptedModel::new("m", []))
        .session(store.clone(), "alice", "s")
        .session_state("pairs", bad)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("state `pairs` cannot be registered"), "{err}");
    let err = Agent::builder("a")
        .model(ScriptedModel::new("m", []))
        .session(store, "alice", "")
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("session id must not be empty"), "{err}");
}

/// Wait for the test's signal.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Wait {}

#[tokio::test]
async fn the_loser_of_a_concurrent_save_gets_a_conflict_and_then_loads_the_winner() {
    let (store, dir) = temp_store();
    let go = Arc::new(tokio::sync::Notify::new());
    let started = Arc::new(tokio::sync::Notify::new());
    let (g, s) = (Arc::clone(&go), Arc::clone(&started));
    let slow = Agent::builder("a")
        .model(ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "wait", "{}"),
                ScriptedResponse::text("slow done"),
                ScriptedResponse::text("after"),
            ],
        ))
        .tool(FunctionTool::new("wait", move |_: Wait| {
            let (g, s) = (Arc::clone(&g), Arc::clone(&s));
            async move {
                s.notify_one();
                g.notified().await;
                "waited"
            }
        }))
        .session(store.clone(), "u", "s")
        .build()
        .unwrap();
    let running = tokio::spawn({
        let slow = slow.clone();
        async move { slow.reply(Msg::user("user", "slow")).await }
    });
    started.notified().await;
    // Meanwhile another process answers on the same session and saves first.
    let fast = Agent::builder("a")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("fast done")]))
        .session(store.clone(), "u", "s")
        .build()
        .unwrap();
    fast.reply(Msg::user("user", "fast")).await.unwrap();
    go.notify_one();
    let err = running.await.unwrap().unwrap_err();
    assert!(matches!(err, AgentError::Conflict { .. }), "{err:?}");
    assert!(err.is_retryable());
    let texts = stored_texts(&store, "u", "s").await;
    assert_eq!(texts, ["fast", "fast done"], "the winner's conversation is kept whole");
    // The loser's next reply starts from the winner's session.
    slow.reply(Msg::user("user", "again")).await.unwrap();
    let texts: Vec<_> = slow.state().context.iter().filter_map(|m| m.text_content()).collect();
    assert_eq!(texts, ["fast", "fast done", "again", "after"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn an_interrupted_reply_is_saved_with_its_closed_calls() {
    let (store, dir) = temp_store();
    let started = Arc::new(tokio::sync::Notify::new());
    let s = Arc::clone(&started);
    let agent = Agent::builder("a")
        .model(ScriptedModel::new(
            "m",
            [ScriptedResponse::tool_call("c1", "wait", "{}")],
        ))
        .tool(FunctionTool::new("wait", move |_: Wait| {
            let s = Arc::clone(&s);
            async move {
                s.notify_one();
                tokio::time::sleep(Duration::from_secs(3600)).await;
                "never"
            }
        }))
        .session(store.clone(), "u", "s")
        .build()
        .unwrap();
    let stream = agent.reply_stream(Msg::user("user", "go"));
    let reading = tokio::spawn(collect(stream));
    started.notified().await;
    assert!(agent.interrupt());
    let out = reading.await.unwrap();
    assert_eq!(out.kinds().last(), Some(&"REPLY_END"));
    assert!(out.error.is_none(), "{:?}", out.error);
    let stored = store.load(&SessionKey::new("u", "s").unwrap()).await.unwrap().unwrap();
    assert_consistent(&stored.document.agent.context);
    let closed = stored
        .document
        .agent
        .context
        .last()
        .unwrap()
        .tool_results()
        .next()
        .cloned()
        .unwrap();
    assert_eq!(closed.state, towerscope_core::ToolResultState::Interrupted);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_dropped_stream_is_saved_and_the_next_agent_closes_its_open_calls() {
    let (store, dir) = temp_store();
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/a"}"#),
            ScriptedResponse::text("next"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(FunctionTool::new("delete", |a: Delete| async move { a.path }))
        .session(store.clone(), "u", "s")
        .build()
        .unwrap();
    let mut stream = agent.reply_stream(Msg::user("user", "go"));
    while let Some(item) = stream.next().await {
        if let Ok(ReplyItem::Event(AgentEvent::ModelCallEnd(_))) = item {
            break;
        }
    }
    drop(stream);
    drop(agent);
    let saved = saved_after_drop(&store, "u", "s").await;
    assert_eq!(saved.document.agent.context.last().unwrap().tool_calls().count(), 1);
    let next = Agent::builder("a")
        .model(model.clone())
        .session(store.clone(), "u", "s")
        .build()
        .unwrap();
    let msg = next.reply(Msg::user("user", "still there?")).await.unwrap();
    assert_eq!(msg.text_content().as_deref(), Some("next"));
    assert_consistent(&next.state().context);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A stream dropped in the middle of an answer: the stored session holds the part that was
/// streamed, as the agent in this process does, so a process resuming the session sees the
/// same conversation.
#[tokio::test(start_paused = true)]
async fn a_stream_dropped_mid_answer_is_saved_with_the_streamed_part() {
    let (store, dir) = temp_store();
    // One chunk, then an hour before the next: the answer is in progress when the stream goes.
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::text("first words and the rest").chunk_delay(Duration::from_secs(3600))],
    )
    .streaming(true);
    let agent = Agent::builder("a")
        .model(model)
        .session(store.clone(), "u", "s")
        .build()
        .unwrap();
    let mut stream = agent.reply_stream(Msg::user("user", "go"));
    while let Some(item) = stream.next().await {
        if let Ok(ReplyItem::Event(AgentEvent::TextBlockDelta(_))) = item {
            break;
        }
    }
    drop(stream);
    let held = agent.state().context;
    assert_eq!(
        held.last().and_then(|m| m.text_content()).as_deref(),
        Some("first "),
        "the agent keeps the streamed part"
    );
    let saved = saved_after_drop(&store, "u", "s").await;
    assert_eq!(
        saved.document.agent.context, held,
        "the store holds what the agent holds"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A session deleted and made again starts its revisions over. An agent that saved the old
/// one at the same revision does not take the new one for its own: it loads it, and its next
/// save keeps what the other agent said instead of writing over it.
#[tokio::test]
async fn a_session_made_again_is_loaded_not_overwritten_by_an_agent_that_saved_the_old_one() {
    let (store, dir) = temp_store();
    let key = SessionKey::new("alice", "conv-9").unwrap();
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::text("Old."),
            ScriptedResponse::text("New."),
            ScriptedResponse::text("Both."),
        ],
    );
    let agent = |model: &ScriptedModel| {
        Agent::builder("a")
            .model(model.clone())
            .session(store.clone(), "alice", "conv-9")
            .build()
            .unwrap()
    };
    let old = agent(&model);
    old.reply(Msg::user("user", "Old conversation.")).await.unwrap();
    assert_eq!(store.load(&key).await.unwrap().unwrap().revision, 1);
    assert!(store.delete(&key).await.unwrap());
    let new = agent(&model);
    new.reply(Msg::user("user", "New conversation.")).await.unwrap();
    assert_eq!(
        store.load(&key).await.unwrap().unwrap().revision,
        1,
        "made again: revision 1"
    );

    old.reply(Msg::user("user", "Still there?")).await.unwrap();
    let seen = sent_texts(&model, 2);
    assert_eq!(
        seen,
        ["New conversation.", "New.", "Still there?"],
        "the new session, loaded"
    );
    let stored = store.load(&key).await.unwrap().unwrap();
    assert_eq!(stored.revision, 2);
    let texts: Vec<_> = stored
        .document
        .agent
        .context
        .iter()
        .filter_map(|m| m.text_content())
        .collect();
    assert_eq!(texts, ["New conversation.", "New.", "Still there?", "Both."]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Messages an agent observes between replies are not saved until its next reply, and that
/// reply keeps them: the session it loads is the one it saved, which its state goes on from.
#[tokio::test]
async fn messages_observed_between_replies_are_kept_and_saved_with_the_next_one() {
    let (store, dir) = temp_store();
    let key = SessionKey::new("alice", "conv-10").unwrap();
    let model = ScriptedModel::new("m", [ScriptedResponse::text("One."), ScriptedResponse::text("Two.")]);
    let agent = Agent::builder("a")
        .model(model.clone())
        .session(store.clone(), "alice", "conv-10")
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "First.")).await.unwrap();
    agent.observe([Msg::assistant("bob", "Bob says hi.")]).unwrap();
    agent.reply(Msg::user("user", "Second.")).await.unwrap();
    let seen = sent_texts(&model, 1);
    assert_eq!(seen, ["First.", "One.", "Bob says hi.", "Second."]);
    let stored = store.load(&key).await.unwrap().unwrap();
    let texts: Vec<_> = stored
        .document
        .agent
        .context
        .iter()
        .filter_map(|m| m.text_content())
        .collect();
    assert_eq!(texts, ["First.", "One.", "Bob says hi.", "Second.", "Two."]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A store that counts the loads it serves.
struct CountingStore {
    inner: JsonFileStore,
    loads: std::sync::atomic::AtomicUsize,
}

impl SessionStore for CountingStore {
    fn load<'a>(
        &'a self,
        key: &'a SessionKey,
    ) -> towerscope_agent::session::StoreFuture<'a, Option<towerscope_agent::session::Stored>> {
        self.loads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.load(key)
    }

    fn save<'a>(
        &'a self,
        key: &'a SessionKey,
        document: &'a towerscope_agent::session::SessionDocument,
        expect: towerscope_agent::session::Expect,
    ) -> towerscope_agent::session::StoreFuture<'a, u64> {
        self.inner.save(key, document, expect)
    }

    fn delete<'a>(&'a self, key: &'a SessionKey) -> towerscope_agent::session::StoreFuture<'a, bool> {
        self.inner.delete(key)
    }

    fn list<'a>(&'a self, user_id: &'a str) -> towerscope_agent::session::StoreFuture<'a, Vec<String>> {
        self.inner.list(user_id)
    }
}

/// `load_session` shows the stored conversation before a reply; the reply that follows still
/// checks the store, so what another process saved in between is loaded, not overwritten.
/// Without a session it does nothing; during a reply it is refused.
#[tokio::test]
async fn a_session_loaded_ahead_shows_the_conversation_and_the_reply_still_sees_later_saves() {
    let (inner, dir) = temp_store();
    let store = Arc::new(CountingStore {
        inner: inner.clone(),
        loads: std::sync::atomic::AtomicUsize::new(0),
    });
    let loads = || store.loads.load(std::sync::atomic::Ordering::SeqCst);
    let model = ScriptedModel::cycle("m", [ScriptedResponse::text("answer")]);
    let agent = || {
        Agent::builder("a")
            .model(model.clone())
            .session(Arc::clone(&store), "u", "s")
            .build()
            .unwrap()
    };
    agent().reply(Msg::user("user", "first")).await.unwrap();
    assert_eq!(loads(), 1);

    let next = agent();
    next.load_session().await.unwrap();
    assert_eq!(loads(), 2);
    let texts: Vec<_> = next.state().context.iter().filter_map(|m| m.text_content()).collect();
    assert_eq!(texts, ["first", "answer"], "the conversation is there before the reply");

    // Another process saves after the load ahead: the reply loads its save and goes on from it.
    agent().reply(Msg::user("user", "meanwhile")).await.unwrap();
    next.reply(Msg::user("user", "second")).await.unwrap();
    let texts = stored_texts(&inner, "u", "s").await;
    assert_eq!(texts, ["first", "answer", "meanwhile", "answer", "second", "answer"]);

    // While a reply runs, loading is refused; without a session it does nothing.
    let gate = Arc::new(tokio::sync::Notify::new());
    let g = Arc::clone(&gate);
    let busy = Agent::builder("a")
        .model(ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("c1", "wait", "{}"),
                ScriptedResponse::text("done"),
            ],
        ))
        .tool(FunctionTool::new("wait", move |_: Wait| {
            let g = Arc::clone(&g);
            async move {
                g.notified().await;
                "waited"
            }
        }))
        .session(Arc::clone(&store), "u", "busy")
        .build()
        .unwrap();
    let mut stream = busy.reply_stream(Msg::user("user", "go"));
    while let Some(item) = stream.next().await {
        if matches!(item.unwrap(), ReplyItem::Event(AgentEvent::ToolCallEnd(_))) {
            break;
        }
    }
    let refused = busy.load_session().await.unwrap_err();
    assert!(matches!(refused, AgentError::State(_)), "{refused:?}");
    gate.notify_one();
    while stream.next().await.is_some() {}
    let plain = Agent::builder("a").model(model.clone()).build().unwrap();
    plain.load_session().await.unwrap();
    assert!(plain.state().context.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// While a reply of a session runs in one process, requests that change nothing reach another
/// (a stop button with nothing parked, an input the agent refuses): they save nothing, so the
/// running reply's save is not a conflict.
#[tokio::test]
async fn a_request_that_changes_nothing_saves_nothing_and_a_reply_running_elsewhere_is_kept() {
    let (store, dir) = temp_store();
    let key = SessionKey::new("u", "s").unwrap();
    let agent = |model: ScriptedModel| Agent::builder("a").model(model).session(store.clone(), "u", "s");
    agent(ScriptedModel::new("m", [ScriptedResponse::text("hello")]))
        .build()
        .unwrap()
        .reply(Msg::user("user", "hi"))
        .await
        .unwrap();
    let go = Arc::new(tokio::sync::Notify::new());
    let started = Arc::new(tokio::sync::Notify::new());
    let (g, s) = (Arc::clone(&go), Arc::clone(&started));
    let slow = agent(ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "wait", "{}"),
            ScriptedResponse::text("slow done"),
        ],
    ))
    .tool(FunctionTool::new("wait", move |_: Wait| {
        let (g, s) = (Arc::clone(&g), Arc::clone(&s));
        async move {
            s.notify_one();
            g.notified().await;
            "waited"
        }
    }))
    .build()
    .unwrap();
    let running = tokio::spawn(async move { slow.reply(Msg::user("user", "do the slow thing")).await });
    started.notified().await;

    let other = || {
        agent(ScriptedModel::new("m", [ScriptedResponse::text("unused")]))
            .build()
            .unwrap()
    };
    let stop = towerscope_core::ReplyInput::Interrupt(towerscope_core::event::UserInterruptEvent::new("r").into());
    let stopped = collect(other().reply_stream(stop)).await;
    assert!(stopped.error.is_none(), "{:?}", stopped.error);
    let refused = collect(other().reply_stream(Msg::system("x", "not a user's input"))).await;
    assert!(refused.error.is_some(), "a system message is refused as input");
    assert_eq!(store.load(&key).await.unwrap().unwrap().revision, 1, "neither saved");

    go.notify_one();
    running.await.unwrap().expect("the running reply is saved");
    assert_eq!(
        stored_texts(&store, "u", "s").await,
        ["hi", "hello", "do the slow thing", "slow done"]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A session deleted (or expired) since an agent saved it starts over, and so does what the
/// agent's registered modules held for it: the old conversation's state is not written into the
/// new one.
#[tokio::test]
async fn a_deleted_session_starts_over_with_its_registered_state() {
    let (store, dir) = temp_store();
    let key = SessionKey::new("u", "s").unwrap();
    let notes = SharedState::new(Vec::<String>::new());
    let agent = Agent::builder("a")
        .model(ScriptedModel::cycle("m", [ScriptedResponse::text("ok")]))
        .session(store.clone(), "u", "s")
        .session_state("notes", notes.clone())
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "my card is 4111")).await.unwrap();
    notes.set(vec!["card 4111".to_owned()]);
    agent.reply(Msg::user("user", "remember it")).await.unwrap();
    assert_eq!(
        store.load(&key).await.unwrap().unwrap().document.modules["notes"],
        serde_json::json!(["card 4111"])
    );

    assert!(store.delete(&key).await.unwrap());
    agent.reply(Msg::user("user", "hello again")).await.unwrap();
    let stored = store.load(&key).await.unwrap().unwrap();
    assert_eq!(stored_texts(&store, "u", "s").await, ["hello again", "ok"]);
    assert_eq!(stored.document.modules["notes"], serde_json::json!([]));
    assert!(notes.get().is_empty(), "the module holds its first state again");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A turn whose state nests deeper than a session document can be read back (a client's
/// message metadata) is refused when saved: the session stays as it was, and loads.
#[tokio::test]
async fn a_turn_too_deep_to_load_back_is_refused_at_its_save_and_the_session_still_loads() {
    let (store, dir) = temp_store();
    let model = ScriptedModel::cycle("m", [ScriptedResponse::text("ok")]);
    let agent = || {
        Agent::builder("a")
            .model(model.clone())
            .session(store.clone(), "u", "s")
            .build()
            .unwrap()
    };
    agent().reply(Msg::user("user", "first")).await.unwrap();
    let deep = format!("{}1{}", r#"{"a":"#.repeat(125), "}".repeat(125));
    let wire = format!(
        r#"{{"name":"user","role":"user","content":[{{"type":"text","text":"deep"}}],"metadata":{{"x":{deep}}}}}"#
    );
    let msg = Msg::from_json(&wire).expect("the message itself parses");
    let err = agent().reply(msg).await.unwrap_err();
    assert!(err.to_string().contains("nests deeper than 127 levels"), "{err}");
    agent()
        .reply(Msg::user("user", "again"))
        .await
        .expect("the session still loads");
    assert_eq!(stored_texts(&store, "u", "s").await, ["first", "ok", "again", "ok"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An interrupt of a reply that ended, sent again (an HTTP retry, a second tab) after a later
/// reply of the session parked, changes nothing: the later reply stays parked, and its
/// confirmation runs its call.
#[tokio::test]
async fn an_interrupt_sent_again_after_its_reply_ended_leaves_a_later_parked_reply_alone() {
    use towerscope_core::ReplyInput;
    use towerscope_core::event::UserInterruptEvent;

    let (store, dir) = temp_store();
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/a"}"#),
            ScriptedResponse::tool_call("c2", "delete", r#"{"path": "/tmp/b"}"#),
            ScriptedResponse::text("Deleted b."),
        ],
    );
    let agent = || asking(&model).session(store.clone(), "u", "s").build().unwrap();
    let first = parked(&collect(agent().reply_stream(Msg::user("user", "delete a"))).await);
    let stop = || ReplyInput::Interrupt(UserInterruptEvent::new(first.reply_id.clone()).into());
    let stopped = collect(agent().reply_stream(stop())).await;
    assert_eq!(stopped.kinds().last(), Some(&"REPLY_END"));

    let second = parked(&collect(agent().reply_stream(Msg::user("user", "delete b"))).await);
    assert_ne!(second.reply_id, first.reply_id);
    let again = collect(agent().reply_stream(stop())).await;
    assert!(again.events.is_empty() && again.error.is_none(), "{:?}", again.kinds());

    let resumed = collect(agent().reply_stream(ReplyInput::Confirm(second.into()))).await;
    assert_eq!(resumed.final_msg.unwrap().text_content().as_deref(), Some("Deleted b."));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One confirmation handled twice at once (a double click, a retried request reaching another
/// process): one takes the parked reply and runs the call, the other fails with a conflict
/// before running anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmation_handled_twice_at_once_runs_its_call_once() {
    use towerscope_core::ReplyInput;

    let (store, dir) = temp_store();
    let (model, delete) = (deleting(), CountedDelete::default());
    let agent = || {
        asking_with(&model, delete.tool())
            .session(store.clone(), "u", "s")
            .build()
            .unwrap()
    };
    let confirm = parked(&collect(agent().reply_stream(Msg::user("user", "delete a"))).await);
    let (a, b) = (agent(), agent());
    // Both hold the parked reply before either confirms.
    a.load_session().await.unwrap();
    b.load_session().await.unwrap();
    let (ra, rb) = tokio::join!(
        collect(a.reply_stream(ReplyInput::Confirm(confirm.clone().into()))),
        collect(b.reply_stream(ReplyInput::Confirm(confirm.into())))
    );
    assert_eq!(delete.runs(), 1, "the confirmed call ran once");
    let (won, lost) = if ra.error.is_none() { (ra, rb) } else { (rb, ra) };
    assert_eq!(won.final_msg.unwrap().text_content().as_deref(), Some("Deleted."));
    assert!(
        matches!(lost.error, Some(AgentError::Conflict { .. })),
        "{:?}",
        lost.error
    );
    assert!(lost.events.is_empty(), "the loser ran nothing: {:?}", lost.kinds());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A confirmation sent again while the first one's calls run (a client that timed out and
/// retried, reaching another process): the parked reply is marked as being resumed, so the
/// retry fails with a conflict and runs nothing, and the first reply is saved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmation_retried_while_the_first_runs_runs_nothing_and_the_first_is_kept() {
    use towerscope_core::ReplyInput;

    let (store, dir) = temp_store();
    let model = deleting();
    let (delete, started, go) = CountedDelete::gated();
    let agent = || {
        asking_with(&model, delete.tool())
            .session(store.clone(), "u", "s")
            .build()
            .unwrap()
    };
    let confirm = parked(&collect(agent().reply_stream(Msg::user("user", "delete a"))).await);
    let first = agent();
    let running = {
        let confirm = confirm.clone();
        tokio::spawn(async move { collect(first.reply_stream(ReplyInput::Confirm(confirm.into()))).await })
    };
    started.notified().await;
    // Meanwhile another process gets a message it refuses (the reply is parked): it saves
    // nothing, so the claim stays.
    let refused = collect(agent().reply_stream(Msg::user("user", "hello?"))).await;
    assert!(
        matches!(refused.error, Some(AgentError::State(_))),
        "{:?}",
        refused.error
    );
    // The retry, as is and as the AG-UI endpoint sends it (the session loaded ahead).
    for load_ahead in [false, true] {
        let retrying = agent();
        if load_ahead {
            retrying.load_session().await.unwrap();
        }
        let retry = collect(retrying.reply_stream(ReplyInput::Confirm(confirm.clone().into())));
        // A retry that runs the call waits in it, for the signal the first one waits for.
        let Ok(retried) = tokio::time::timeout(Duration::from_secs(10), retry).await else {
            panic!("the retry ran the confirmed call again (loaded ahead: {load_ahead})");
        };
        assert!(
            matches!(retried.error, Some(AgentError::Conflict { .. })),
            "{:?}",
            retried.error
        );
        assert!(
            retried.events.is_empty(),
            "the retry ran nothing: {:?}",
            retried.kinds()
        );
    }
    go.notify_one();
    let first = running.await.unwrap();
    assert!(first.error.is_none(), "{:?}", first.error);
    assert_eq!(delete.runs(), 1, "the confirmed call ran once");
    assert_eq!(stored_texts(&store, "u", "s").await, ["delete a", "Deleted."]);
    let key = SessionKey::new("u", "s").unwrap();
    let modules = store.load(&key).await.unwrap().unwrap().document.modules;
    assert!(modules.is_empty(), "the claim went with the reply's save: {modules:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
/// A store whose save of a claim lands, then never answers (a request cancelled, a client gone,
/// while the claim's write was under way: the file store's write runs on the blocking pool
/// whether or not its future is still polled).
#[derive(Clone)]
struct LandsThenHangs {
    inner: JsonFileStore,
    hang: Arc<std::sync::atomic::AtomicBool>,
}

impl SessionStore for LandsThenHangs {
    fn load<'a>(
        &'a self,
        key: &'a SessionKey,
    ) -> towerscope_agent::session::StoreFuture<'a, Option<towerscope_agent::session::Stored>> {
        self.inner.load(key)
    }
    fn save<'a>(
        &'a self,
        key: &'a SessionKey,
        document: &'a towerscope_agent::session::SessionDocument,
        expect: towerscope_agent::session::Expect,
    ) -> towerscope_agent::session::StoreFuture<'a, u64> {
        let hang =
            self.hang.load(std::sync::atomic::Ordering::SeqCst) && document.modules.contains_key("towerscope.resuming");
        Box::pin(async move {
            let revision = self.inner.save(key, document, expect).await?;
            if hang {
                std::future::pending::<()>().await;
            }
            Ok(revision)
        })
    }
    fn delete<'a>(&'a self, key: &'a SessionKey) -> towerscope_agent::session::StoreFuture<'a, bool> {
        self.inner.delete(key)
    }
    fn list<'a>(&'a self, user_id: &'a str) -> towerscope_agent::session::StoreFuture<'a, Vec<String>> {
        self.inner.list(user_id)
    }
}

/// A confirmation dropped while its claim was being written (a client gone; the file store's
/// write lands anyway) takes the claim out again: the same confirmation sent again on the agent
/// kept resumes the reply, where the claim held every retry off for its lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmation_dropped_as_its_claim_is_written_leaves_no_claim() {
    use towerscope_core::ReplyInput;

    let (files, dir) = temp_store();
    let hang = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let store = LandsThenHangs {
        inner: files.clone(),
        hang: Arc::clone(&hang),
    };
    let model = deleting();
    let agent = || asking(&model).session(store.clone(), "u", "s").build().unwrap();
    let confirm = parked(&collect(agent().reply_stream(Msg::user("user", "delete a"))).await);
    let kept = agent();
    hang.store(true, std::sync::atomic::Ordering::SeqCst);
    let first = collect(kept.reply_stream(ReplyInput::Confirm(confirm.clone().into())));
    assert!(
        tokio::time::timeout(Duration::from_millis(500), first).await.is_err(),
        "the claim's save hangs"
    );
    hang.store(false, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let key = SessionKey::new("u", "s").unwrap();
    let modules = files.load(&key).await.unwrap().unwrap().document.modules;
    assert!(
        !modules.contains_key("towerscope.resuming"),
        "the claim was taken out: {modules:?}"
    );
    // The confirmation sent again on the agent kept resumes the reply; a new agent's, after it,
    // finds nothing parked (not a claim).
    let again = collect(kept.reply_stream(ReplyInput::Confirm(confirm.clone().into()))).await;
    assert!(again.error.is_none(), "the same agent's retry: {:?}", again.error);
    assert_eq!(again.final_msg.unwrap().text_content().as_deref(), Some("Deleted."));
    let fresh = collect(agent().reply_stream(ReplyInput::Confirm(confirm.into()))).await;
    assert!(matches!(fresh.error, Some(AgentError::State(_))), "{:?}", fresh.error);
    std::fs::remove_dir_all(&dir).ok();
}

/// An external tool's result delivered twice at once (a client's retry) resumes the parked
/// reply once: the calls after it run once, and the other delivery fails with a conflict
/// before running anything (only confirmations took the reply first; both deliveries ran the
/// next call, and one lost its save only afterwards).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_external_result_delivered_twice_at_once_runs_the_next_calls_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use towerscope_core::event::ExternalExecutionResultEvent;
    use towerscope_core::{ContentBlock, ReplyInput, ToolResultBlock, ToolResultState};

    /// Delete a file.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Remove {
        /// The path.
        path: String,
    }
    let (store, dir) = temp_store();
    let model = ScriptedModel::new("m", []).respond_with(|req| {
        Some(match req.messages.last().and_then(|m| m.content.last().cloned()) {
            Some(ContentBlock::ToolResult(r)) if r.name == "search" => {
                ScriptedResponse::tool_call("c2", "remove", r#"{"path": "/tmp/a"}"#)
            }
            Some(ContentBlock::ToolResult(_)) => ScriptedResponse::text("Removed."),
            _ => ScriptedResponse::tool_call("c1", "search", r#"{"q": "x"}"#),
        })
    });
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = || {
        let runs = Arc::clone(&runs);
        Agent::builder("a")
            .model(model.clone())
            .tool(common::RemoteSearch)
            .tool(FunctionTool::new("remove", move |a: Remove| {
                runs.fetch_add(1, Ordering::SeqCst);
                async move { a.path }
            }))
            .session(store.clone(), "u", "s")
            .build()
            .unwrap()
    };
    let first = agent().reply(Msg::user("user", "find it and remove it")).await.unwrap();
    let event = Arc::new(ExternalExecutionResultEvent::new(
        first.id.clone(),
        vec![ToolResultBlock::new("c1", "search", "/tmp/a", ToolResultState::Success)],
    ));
    let (a, b) = (agent(), agent());
    a.load_session().await.unwrap();
    b.load_session().await.unwrap();
    let deliver = |x: &Agent| {
        x.reply_stream(ReplyInput::External(Arc::clone(&event)))
            .collect::<Vec<Result<ReplyItem, AgentError>>>()
    };
    let (ra, rb) = tokio::join!(deliver(&a), deliver(&b));
    let errors: Vec<&AgentError> = ra.iter().chain(&rb).filter_map(|i| i.as_ref().err()).collect();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "errors: {errors:?}");
    assert!(
        errors.len() == 1 && matches!(errors[0], AgentError::Conflict { .. }),
        "{errors:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A registered value whose JSON does not load back (a NaN float is written `null`) fails the
/// save that would write it, and the stored session stays loadable (it was saved, then every
/// later load of the session failed).
#[tokio::test]
async fn a_module_value_that_cannot_load_back_fails_its_save_not_every_later_load() {
    let (store, dir) = temp_store();
    let model = ScriptedModel::new("m", [ScriptedResponse::text("ok"), ScriptedResponse::text("ok")]);
    let mean = SharedState::new(0.0f64);
    let agent = Agent::builder("a")
        .model(model.clone())
        .session(store.clone(), "alice", "s")
        .session_state("mean_latency", mean.clone())
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "first")).await.unwrap();
    mean.set(f64::NAN);
    let refused = agent.reply(Msg::user("user", "second")).await;
    assert!(
        matches!(&refused, Err(e) if e.to_string().contains("does not load back")),
        "{refused:?}"
    );
    let next = Agent::builder("a")
        .model(model.clone())
        .session(store.clone(), "alice", "s")
        .session_state("mean_latency", SharedState::new(1.0f64))
        .build()
        .unwrap();
    next.load_session().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A state loaded into an agent with a session (starting over) is what its next reply sees
/// and saves (the reply loaded the stored conversation back over it); the session's id stays.
#[tokio::test]
async fn a_state_loaded_between_replies_is_kept_by_the_next_reply_and_saved() {
    let (store, dir) = temp_store();
    let model = three_oks();
    let agent = replacing_agent(&store, &model);
    agent.reply(Msg::user("user", "my secret is 42")).await.unwrap();
    agent.load_state(towerscope_agent::AgentState::new()).unwrap();
    assert_eq!(agent.state().session_id, "alice/s", "the session's id stays");
    agent.reply(Msg::user("user", "hello again")).await.unwrap();
    assert_eq!(sent_texts(&model, 1), ["hello again"], "the old conversation is gone");
    assert_eq!(
        stored_texts(&store, "alice", "s").await,
        ["hello again", "ok"],
        "the new conversation was saved"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn replacing_agent(store: &JsonFileStore, model: &ScriptedModel) -> Agent {
    Agent::builder("a")
        .model(model.clone())
        .session(store.clone(), "alice", "s")
        .build()
        .unwrap()
}

fn state_saying(text: &str) -> towerscope_agent::AgentState {
    let mut state = towerscope_agent::AgentState::new();
    state.context.push(Arc::new(Msg::user("user", text)));
    state
}

fn three_oks() -> ScriptedModel {
    ScriptedModel::new(
        "m",
        [
            ScriptedResponse::text("ok"),
            ScriptedResponse::text("ok"),
            ScriptedResponse::text("ok"),
        ],
    )
}

/// A loaded state is kept where the store no longer holds the conversation it replaced as
/// such: the session was deleted (it was reset to a new state), the agent never loaded (the
/// stored conversation came back), or `load_session` ran before the reply (it forgot the
/// replacement without saving it).
#[tokio::test]
async fn a_loaded_state_is_kept_after_a_delete_in_a_fresh_agent_and_across_load_session() {
    let (store, dir) = temp_store();
    let key = SessionKey::new("alice", "s").unwrap();

    let model = three_oks();
    let agent = replacing_agent(&store, &model);
    agent.reply(Msg::user("user", "first")).await.unwrap();
    store.delete(&key).await.unwrap();
    agent.load_state(state_saying("restored backup")).unwrap();
    agent.reply(Msg::user("user", "next")).await.unwrap();
    assert!(
        sent_texts(&model, 1).iter().any(|t| t == "restored backup"),
        "after a delete"
    );
    store.delete(&key).await.unwrap();

    let model = three_oks();
    replacing_agent(&store, &model)
        .reply(Msg::user("user", "my secret is 42"))
        .await
        .unwrap();
    let fresh = replacing_agent(&store, &model);
    fresh.load_state(towerscope_agent::AgentState::new()).unwrap();
    fresh.reply(Msg::user("user", "hello again")).await.unwrap();
    assert!(
        !sent_texts(&model, 1).iter().any(|t| t.contains("secret")),
        "a fresh agent"
    );
    assert_eq!(stored_texts(&store, "alice", "s").await, ["hello again", "ok"]);
    store.delete(&key).await.unwrap();

    let model = three_oks();
    let agent = replacing_agent(&store, &model);
    agent.reply(Msg::user("user", "my secret is 42")).await.unwrap();
    agent.load_state(towerscope_agent::AgentState::new()).unwrap();
    agent.load_session().await.unwrap();
    assert!(agent.state().context.is_empty(), "kept by load_session");
    agent.reply(Msg::user("user", "hello again")).await.unwrap();
    assert!(
        !sent_texts(&model, 1).iter().any(|t| t.contains("secret")),
        "across load_session"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A session deleted and made again by another process up to the same revision is another
/// conversation: loaded over a replacement made before, not overwritten by it.
#[tokio::test]
async fn a_loaded_state_does_not_overwrite_a_session_made_again_at_the_same_revision() {
    let (store, dir) = temp_store();
    let model = three_oks();
    let a = replacing_agent(&store, &model);
    a.reply(Msg::user("user", "a's first")).await.unwrap();
    a.load_state(state_saying("a's replacement")).unwrap();
    store.delete(&SessionKey::new("alice", "s").unwrap()).await.unwrap();
    replacing_agent(&store, &model)
        .reply(Msg::user("user", "b's conversation"))
        .await
        .unwrap();
    a.reply(Msg::user("user", "a's next")).await.unwrap();
    let stored = stored_texts(&store, "alice", "s").await;
    let _ = std::fs::remove_dir_all(&dir);
    assert!(stored.iter().any(|t| t == "b's conversation"), "{stored:?}");
}
