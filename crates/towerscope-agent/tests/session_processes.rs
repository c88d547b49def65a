//! Sessions across OS processes: a reply parked by one process completes in another (file
//! store and Redis), two processes saving one session, and a process killed in the middle of a
//! save.
//!
//! The processes are this test binary run again on one of its `#[ignore]`d `child_*` tests,
//! which take their orders from the environment and print `@@`-prefixed lines.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use towerscope_agent::session::{Expect, JsonFileStore, SessionDocument, SessionKey, SessionStore};
use towerscope_agent::toolkit::FunctionTool;
use towerscope_agent::{Agent, AgentState};
use towerscope_core::event::{ConfirmResult, UserConfirmResultEvent};
use towerscope_core::{AgentError, AgentEvent, Msg, PermissionDecision, ReplyInput, ReplyItem};
use towerscope_models::{ScriptedModel, ScriptedResponse};

const CHILD: &str = "a child process of the session_processes tests, run by them";

fn temp_dir(what: &str) -> PathBuf {
    use std::hash::{BuildHasher, RandomState};
    let n = RandomState::new().hash_one(std::time::SystemTime::now());
    std::env::temp_dir().join(format!("towerscope-{what}-{}-{n:016x}", std::process::id()))
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: this test is {CHILD}"))
}

/// This binary, run on the ignored test `name`.
fn child(name: &str, vars: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", name, "--ignored", "--nocapture", "--test-threads=1"]);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd
}

/// Runs `name` to its end; its `@@` lines, without the prefix.
fn run(name: &str, vars: &[(&str, &str)]) -> Vec<String> {
    let out = child(name, vars).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{name} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // libtest may print `test child_x ... ` on the line of the child's first output.
    stdout
        .lines()
        .filter_map(|l| l.split_once("@@"))
        .map(|(_, line)| line.to_owned())
        .collect()
}

/// The store the parent named: `STORE` is `file:{dir}` or `redis:{url}|{prefix}`.
fn store_from_env() -> Arc<dyn SessionStore> {
    let spec = env("STORE");
    if let Some(dir) = spec.strip_prefix("file:") {
        return Arc::new(JsonFileStore::new(dir));
    }
    #[cfg(feature = "redis")]
    if let Some(rest) = spec.strip_prefix("redis:") {
        let (url, prefix) = rest.split_once('|').unwrap();
        return Arc::new(
            towerscope_agent::session::RedisStore::open(url)
                .unwrap()
                .key_prefix(prefix),
        );
    }
    panic!("unknown STORE {spec}")
}

/// Delete a file.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Delete {
    /// The path.
    path: String,
}

fn agent(model: &ScriptedModel, session: Option<Arc<dyn SessionStore>>) -> Agent {
    let builder = Agent::builder("assistant")
        .model(model.clone())
        .tool(FunctionTool::new("delete", |a: Delete| async move {
            format!("deleted {}", a.path)
        }))
        .default_permission(PermissionDecision::Ask {
            suggested_rules: vec![],
        });
    match session {
        Some(store) => builder.session(store, "alice", "conv-7"),
        None => builder,
    }
    .build()
    .unwrap()
}

/// A reply's events and final message as JSON lines.
async fn reply_lines(agent: &Agent, input: ReplyInput) -> Vec<String> {
    let mut lines = Vec::new();
    let mut stream = agent.reply_stream(input);
    while let Some(item) = stream.next().await {
        match item.unwrap() {
            ReplyItem::Event(e) => lines.push(format!("EVENT {}", serde_json::to_string(&e).unwrap())),
            ReplyItem::Final(m) => lines.push(format!("FINAL {}", serde_json::to_string(&m).unwrap())),
        }
    }
    lines
}

fn events(lines: &[String]) -> Vec<AgentEvent> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix("EVENT "))
        .map(|j| serde_json::from_str(j).unwrap())
        .collect()
}

fn final_msg(lines: &[String]) -> Msg {
    let json = lines.iter().find_map(|l| l.strip_prefix("FINAL ")).unwrap();
    serde_json::from_str(json).unwrap()
}

fn kinds(events: &[AgentEvent]) -> Vec<&'static str> {
    events.iter().map(|e| e.event_type().as_str()).collect()
}

fn confirmation(events: &[AgentEvent]) -> UserConfirmResultEvent {
    let (reply_id, call) = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::RequireUserConfirm(e) => Some((e.reply_id.clone(), e.tool_calls[0].clone())),
            _ => None,
        })
        .unwrap();
    UserConfirmResultEvent::new(reply_id, vec![ConfirmResult::new(true, call)])
}

#[tokio::test]
#[ignore = "a child process of the session_processes tests, run by them"]
async fn child_park() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/a"}"#)],
    );
    let agent = agent(&model, Some(store_from_env()));
    for line in reply_lines(&agent, Msg::user("user", "clean up").into()).await {
        println!("@@{line}");
    }
}

#[tokio::test]
#[ignore = "a child process of the session_processes tests, run by them"]
async fn child_confirm() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("done")]);
    let agent = agent(&model, Some(store_from_env()));
    let confirm: UserConfirmResultEvent = serde_json::from_str(&env("CONFIRM")).unwrap();
    for line in reply_lines(&agent, confirm.into()).await {
        println!("@@{line}");
    }
    let seen: Vec<String> = model.requests()[0]
        .messages
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect();
    println!("@@SEEN {}", serde_json::to_string(&seen).unwrap());
}

/// Parks in one process, confirms in another, and compares with one agent in one process.
async fn park_here_resume_there(store: &str) {
    let script = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "delete", r#"{"path": "/tmp/a"}"#),
            ScriptedResponse::text("done"),
        ],
    );
    let single = agent(&script, None);
    let one_a = events(&reply_lines(&single, Msg::user("user", "clean up").into()).await);
    let one_b_lines = reply_lines(&single, confirmation(&one_a).into()).await;

    let a = run("child_park", &[("STORE", store)]);
    let parked = events(&a);
    assert_eq!(kinds(&parked), kinds(&one_a));
    let confirm = serde_json::to_string(&confirmation(&parked)).unwrap();
    let b = run("child_confirm", &[("STORE", store), ("CONFIRM", &confirm)]);
    let resumed = events(&b);
    assert_eq!(
        kinds(&resumed),
        kinds(&events(&one_b_lines)),
        "the events of one process"
    );
    let (done, expected) = (final_msg(&b), final_msg(&one_b_lines));
    assert_eq!(done.text_content(), expected.text_content());
    assert_eq!(done.finished_reason, expected.finished_reason);
    assert_eq!(done.id, final_msg(&a).id, "the resume continues the parked reply");
    let AgentEvent::ToolResultTextDelta(delta) = &resumed[1] else {
        panic!("{:?}", kinds(&resumed))
    };
    assert_eq!(delta.delta, "deleted /tmp/a", "the tool ran in the second process");
    // The second process's model saw the whole conversation.
    let seen = b.iter().find_map(|l| l.strip_prefix("SEEN ")).unwrap();
    let seen: Vec<String> = serde_json::from_str(seen).unwrap();
    let seen: Vec<Msg> = seen.iter().map(|j| serde_json::from_str(j).unwrap()).collect();
    assert_eq!(seen[1].text_content().as_deref(), Some("clean up"));
    assert_eq!(
        seen[2].tool_results().next().unwrap().output.text_content().as_deref(),
        Some("deleted /tmp/a")
    );
}

#[tokio::test]
async fn a_reply_parked_by_one_process_completes_in_another_through_the_file_store() {
    let dir = temp_dir("park-file");
    park_here_resume_there(&format!("file:{}", dir.display())).await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn a_reply_parked_by_one_process_completes_in_another_through_redis() {
    let Some(url) = common::redis_url("a_reply_parked_by_one_process_completes_in_another_through_redis") else {
        return;
    };
    let prefix = format!("test:{}:{:x}:", std::process::id(), rand_u64());
    park_here_resume_there(&format!("redis:{url}|{prefix}")).await;
}

#[cfg(feature = "redis")]
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

const SAVES_PER_PROCESS: usize = 40;

#[tokio::test]
#[ignore = "a child process of the session_processes tests, run by them"]
async fn child_hammer() {
    let store = JsonFileStore::new(env("DIR"));
    let key = SessionKey::new("u", "shared").unwrap();
    let me = env("NAME");
    let mut conflicts = 0;
    for i in 0..SAVES_PER_PROCESS {
        loop {
            let (mut doc, expect) = match store.load(&key).await.unwrap() {
                Some(s) => (s.document, Expect::Revision(s.revision)),
                None => (SessionDocument::new(AgentState::new()), Expect::Absent),
            };
            doc.agent.context.push(Arc::new(Msg::user("user", format!("{me}-{i}"))));
            match store.save(&key, &doc, expect).await {
                Ok(_) => break,
                Err(AgentError::Conflict { .. }) => conflicts += 1,
                Err(e) => panic!("{e}"),
            }
        }
    }
    println!("@@CONFLICTS {conflicts}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_hammering_one_session_never_tear_the_file_or_lose_a_save() {
    let dir = temp_dir("hammer");
    let dir_text = dir.display().to_string();
    let mut children: Vec<_> = ["p", "q"]
        .iter()
        .map(|name| {
            child("child_hammer", &[("DIR", &dir_text), ("NAME", name)])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let store = JsonFileStore::new(&dir);
    let key = SessionKey::new("u", "shared").unwrap();
    let mut loads = 0;
    while children.iter_mut().any(|c| c.try_wait().unwrap().is_none()) {
        // Every load while the two write parses: never a torn file.
        if store.load(&key).await.unwrap().is_some() {
            loads += 1;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    }
    let stored = store.load(&key).await.unwrap().unwrap();
    assert_eq!(stored.revision, 2 * SAVES_PER_PROCESS as u64, "one revision per save");
    let texts: Vec<String> = stored
        .document
        .agent
        .context
        .iter()
        .filter_map(|m| m.text_content())
        .collect();
    assert_eq!(texts.len(), 2 * SAVES_PER_PROCESS, "no save was lost");
    for name in ["p", "q"] {
        let mine: Vec<_> = texts
            .iter()
            .filter(|t| t.starts_with(&format!("{name}-")))
            .cloned()
            .collect();
        let expected: Vec<_> = (0..SAVES_PER_PROCESS).map(|i| format!("{name}-{i}")).collect();
        assert_eq!(mine, expected, "each process's saves, in its order");
    }
    eprintln!("{loads} loads while two processes saved");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
#[ignore = "a child process of the session_processes tests, run by them"]
async fn child_save_forever() {
    let store = JsonFileStore::new(env("DIR"));
    let key = SessionKey::new("u", "big").unwrap();
    let mut doc = SessionDocument::new(AgentState::new());
    for i in 0..2000 {
        doc.agent
            .context
            .push(Arc::new(Msg::user("user", format!("{i}: {}", "x".repeat(200)))));
    }
    for n in 0u64.. {
        doc.agent.summary = n.to_string();
        store.save(&key, &doc, Expect::Any).await.unwrap();
        println!("@@SAVED {n}");
    }
}

#[tokio::test]
async fn a_process_killed_in_the_middle_of_a_save_leaves_a_loadable_session() {
    let dir = temp_dir("killed");
    let dir_text = dir.display().to_string();
    let store = JsonFileStore::new(&dir);
    let key = SessionKey::new("u", "big").unwrap();
    let mut last_revision = 0;
    for round in 0..6u64 {
        let mut saver = child("child_save_forever", &[("DIR", &dir_text)])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(saver.stdout.take().unwrap()).lines();
        // Wait for a first save of this process, then kill it at some point of a later one.
        while !lines.next().unwrap().unwrap().contains("@@SAVED") {}
        std::thread::sleep(Duration::from_millis(3 * round + 1));
        saver.kill().unwrap();
        saver.wait().unwrap();
        let stored = store.load(&key).await.unwrap().expect("a session is there");
        assert_eq!(
            stored.document.agent.context.len(),
            2000,
            "round {round}: a whole document"
        );
        assert!(stored.revision > last_revision, "round {round}: saves went on");
        last_revision = stored.revision;
    }
    // The lock died with the process: saving goes on.
    let doc = store.load(&key).await.unwrap().unwrap().document;
    store.save(&key, &doc, Expect::Revision(last_revision)).await.unwrap();
    let mut left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["u_big.json", "u_big.json.lock"],
        "the temporary file a killed save left is replaced by the next save's, and renamed"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
