//! Sessions: an agent's state saved in a store before and after every reply, so that any
//! process can carry a conversation on, or resume a reply parked for a human.
//!
//! A web service builds an agent per request and names the session; the agent loads it before
//! the reply and saves it after:
//!
//! ```text
//! request ──▶ Agent::builder(..).session(store, user, session).build()
//!              on_reply: SessionLayer (outermost)
//!                ├─ before: load the session (agent state + registered modules)
//!                ├─ the reply (every other layer, the ReAct loop)
//!                └─ after:  save it, expecting the revision it loaded
//!                           ──▶ AgentError::Conflict if another process saved first
//! ```
//!
//! - **What is saved**: one [`SessionDocument`]: the [`AgentState`](crate::AgentState) (the
//!   context with every block, the reply in progress with its parked calls, activated tool
//!   groups, permission rules) and the registered
//!   [`StateModule`](towerscope_core::state::StateModule)s (a layer's counters, your own
//!   objects: [`AgentBuilder::session_state`](crate::AgentBuilder::session_state)), as JSON
//!   with a `version` ([`SESSION_FORMAT_VERSION`]).
//! - **Where**: a [`SessionStore`]: [`JsonFileStore`] (embedded, nothing to install), `RedisStore`
//!   (feature `redis`), or your own.
//! - **When it saves**: when the reply's stream ends, whatever the end (completed, parked for
//!   a confirmation or an external tool, interrupted, failed), before the stream itself ends;
//!   a failed save is the stream's last item. A stream dropped before its end (the client went
//!   away) is saved from a task of its own, as it was at that moment, with the part of an answer
//!   that was streamed (the next reply closes its open tool calls, as in one process). A
//!   request that changes nothing (it fails to load, its `on_reply` stack fails before the loop
//!   starts, the agent refuses its input, it interrupts with nothing open) saves nothing, so a
//!   reply of the same session running elsewhere is not made to conflict. A session nested
//!   deeper than a load reads back (127 levels) is refused at its save.
//! - **Lost updates**: a save expects the revision that was loaded ([`Expect`]); when another
//!   process saved the session in between, the save fails with
//!   [`AgentError::Conflict`](towerscope_core::AgentError::Conflict) (retryable), and the next
//!   reply of the agent loads the newer session. An agent kept across replies loads only when
//!   the store holds a revision it has not seen.
//! - **Confirmations run once**: a confirmation (or an external tool's result) first takes the
//!   parked reply (saves it again,
//!   expecting the revision it loaded, marked as being resumed under the modules' key
//!   `towerscope.resuming`) and only then runs the calls it allows; the same confirmation
//!   handled elsewhere meanwhile (a double click, a retry) fails with a conflict before running
//!   anything. The mark goes with the reply's own save; one left by a process that died while
//!   resuming lapses after five minutes (`CLAIM_LEASE`), when a confirmation may take the
//!   reply over. A Redis session's TTL counts from its last save, and a request that changes
//!   nothing does not save.
//! - **Deleted sessions**: a session deleted (or expired) since an agent saved it starts over,
//!   its registered modules back at the state they had before the agent's first load.
//! - **Ids**: the agent's session id becomes the key's
//!   ([`SessionKey::agent_session_id`]): its session id, after its user id and a `/` when it
//!   names a user (`alice/conv-1`), so events carry it, and layers shared by the agents of
//!   several users (a server's, built per request) keep two users' `conv-1` apart.
//!
//! # Example
//!
//! Two handlers, as two processes would run them: the first parks a reply for the user's
//! confirmation, the second (a new agent) resumes it from the store.
//!
//! ```
//! use futures_util::StreamExt;
//! use towerscope_agent::Agent;
//! use towerscope_agent::session::JsonFileStore;
//! use towerscope_agent::toolkit::FunctionTool;
//! use towerscope_core::event::{ConfirmResult, UserConfirmResultEvent};
//! use towerscope_core::{AgentEvent, Msg, PermissionDecision, ReplyInput, ReplyItem};
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//!
//! /// Delete a file.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Delete { path: String }
//!
//! /// One request of a web service: a new agent on the user's session.
//! async fn handle(store: &JsonFileStore, model: &ScriptedModel, input: ReplyInput) -> Vec<ReplyItem> {
//!     let agent = Agent::builder("assistant")
//!         .model(model.clone())
//!         .tool(FunctionTool::new("delete", |a: Delete| async move { format!("deleted {}", a.path) }))
//!         .default_permission(PermissionDecision::Ask { suggested_rules: vec![] })
//!         .session(store.clone(), "alice", "conv-1")
//!         .build()
//!         .expect("a valid agent");
//!     let items: Vec<_> = agent.reply_stream(input).collect().await;
//!     items.into_iter().collect::<Result<_, _>>().expect("the reply and its save")
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! # let dir = std::env::temp_dir().join(format!("towerscope-doc-session-{}", std::process::id()));
//! let store = JsonFileStore::new(&dir);
//! let model = ScriptedModel::new("m", [
//!     ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/a"}"#),
//!     ScriptedResponse::text("Deleted."),
//! ]);
//! let first = handle(&store, &model, Msg::user("user", "Delete /tmp/a").into()).await;
//! let (reply_id, call) = first.iter().find_map(|item| match item {
//!     ReplyItem::Event(AgentEvent::RequireUserConfirm(e)) => Some((e.reply_id.clone(), e.tool_calls[0].clone())),
//!     _ => None,
//! }).expect("the reply parks for a confirmation");
//!
//! // Later, maybe in another process: the user confirms.
//! let confirm = UserConfirmResultEvent::new(reply_id, vec![ConfirmResult::new(true, call)]);
//! let second = handle(&store, &model, confirm.into()).await;
//! let Some(ReplyItem::Final(answer)) = second.last() else { panic!("a final message") };
//! assert_eq!(answer.text_content().as_deref(), Some("Deleted."));
//! # std::fs::remove_dir_all(&dir).ok();
//! # }
//! ```

pub(crate) mod bound;
mod document;
mod file;
mod key;
mod layer;
#[cfg(feature = "redis")]
mod redis;
mod service;
pub(crate) mod setup;
mod store;
mod stream;

pub use document::{SESSION_FORMAT_VERSION, SessionDocument};
pub(crate) use file::replace::replace as replace_file;
pub use file::{JsonFileStore, MAX_FILE_KEY_LEN};
pub use key::{MAX_ID_LEN, SessionKey};
pub(crate) use key::{key_session_id, percent_decode};
pub use layer::SessionLayer;
#[cfg(feature = "redis")]
pub use redis::RedisStore;
pub use service::{ResponseFuture, SessionService};
pub use store::{Expect, SessionStore, StoreFuture, Stored};
pub use stream::SessionStream;
