#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use serde_json::json;
use towerscope_core::{
    ContentBlock, DataBlock, HintBlock, Msg, PermissionBehavior, PermissionRule, ThinkingBlock, ToolCallBlock,
    ToolCallState, ToolResultBlock, ToolResultState,
};

use super::*;

use crate::state::AgentState;

fn temp_dir() -> PathBuf {
    std::env::temp_dir().join(format!(
        "towerscope-files-{}-{:08x}",
        std::process::id(),
        fastrand::u32(..)
    ))
}

/// A state whose context holds every kind of block, a parked call, rules and groups.
fn rich_state() -> AgentState {
    let mut state = AgentState::new();
    let mut call = ToolCallBlock::new("c1", "delete", r#"{"path": "/tmp/a"}"#);
    call.state = ToolCallState::Asking;
    let done = ToolCallBlock::new("c0", "search", r#"{"q": "é ✓"}"#);
    let result = ToolResultBlock::new("c0", "search", "found", ToolResultState::Success);
    state.context = vec![
        Arc::new(Msg::user("user", "hello \"quoted\" \n newline")),
        Arc::new(
            Msg::new(
                "user",
                towerscope_core::Role::User,
                vec![
                    ContentBlock::text("look"),
                    ContentBlock::Data(DataBlock::base64("aGVsbG8=", "image/png")),
                    ContentBlock::Data(DataBlock::url("https://example.invalid/a.png", "image/png")),
                ],
            )
            .unwrap(),
        ),
        Arc::new(Msg::assistant_blocks(
            "a",
            vec![
                ContentBlock::Thinking(ThinkingBlock::new("let me think")),
                ContentBlock::Hint(HintBlock::new("be brief", Some("test".to_owned()))),
                ContentBlock::ToolCall(done),
                ContentBlock::ToolResult(result),
                ContentBlock::ToolCall(call),
            ],
        )),
    ]
    .into();
    state.reply_context.reply_id = "r1".into();
    state.reply_context.cur_iter = 2;
    state.reply_context.structured_schema = Some(json!({"type": "object"}));
    state.activated_groups = vec!["files".to_owned()];
    state.permission_rules = vec![PermissionRule::new("delete", PermissionBehavior::Allow, "userSettings")];
    state.summary = "earlier: greetings".to_owned();
    state
}

#[tokio::test]
async fn a_context_with_every_block_kind_round_trips() {
    let dir = temp_dir();
    let store = JsonFileStore::new(&dir);
    let key = SessionKey::new("alice", "conv-1").unwrap();
    let mut doc = SessionDocument::new(rich_state());
    doc.modules.insert("prefs".to_owned(), json!({"language": "fr"}));
    assert_eq!(store.save(&key, &doc, Expect::Absent).await.unwrap(), 1);
    let stored = store.load(&key).await.unwrap().unwrap();
    assert_eq!(stored.revision, 1);
    assert_eq!(stored.document, doc);
    // The file is the reference's name, and readable JSON with its version.
    let text = fs::read_to_string(dir.join("alice_conv-1.json")).unwrap();
    assert!(
        text.starts_with(r#"{"revision":1,"bytes":"#) && text.contains(r#","version":1,"agent":"#),
        "{text}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_save_from_a_stale_revision_is_a_conflict_and_changes_nothing() {
    let dir = temp_dir();
    let store = JsonFileStore::new(&dir);
    let key = SessionKey::new("", "s").unwrap();
    let one = SessionDocument::new(AgentState::new());
    let two = SessionDocument::new(rich_state());
    assert_eq!(store.save(&key, &one, Expect::Absent).await.unwrap(), 1);
    assert_eq!(store.save(&key, &one, Expect::Revision(1)).await.unwrap(), 2);
    let err = store.save(&key, &two, Expect::Revision(1)).await.unwrap_err();
    assert!(matches!(&err, AgentError::Conflict { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "session s was changed by someone else (expected revision 1, found revision 2); load it again and retry"
    );
    let err = store.save(&key, &two, Expect::Absent).await.unwrap_err();
    assert!(err.is_retryable());
    assert_eq!(store.load(&key).await.unwrap().unwrap().document, one);
    assert_eq!(store.save(&key, &two, Expect::Any).await.unwrap(), 3);
    assert!(dir.join("s.json").exists(), "no user id: `{{session_id}}.json`");
    fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn hostile_ids_stay_inside_the_directory_and_list_back() {
    let root = temp_dir();
    let dir = root.join("sessions");
    let store = JsonFileStore::new(&dir);
    let doc = SessionDocument::new(AgentState::new());
    let keys = [
        SessionKey::new("../..", "../escape").unwrap(),
        SessionKey::new("../..", "/etc/passwd").unwrap(),
        SessionKey::new("a_b", "c").unwrap(),
        SessionKey::new("a", "b_c").unwrap(),
        SessionKey::new("", ".hidden").unwrap(),
    ];
    for key in &keys {
        store.save(key, &doc, Expect::Absent).await.unwrap();
        assert_eq!(store.path_of(key).parent(), Some(dir.as_path()));
    }
    let outside: Vec<_> = fs::read_dir(&root).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(
        outside,
        ["sessions"],
        "nothing was written outside the store's directory"
    );
    assert_eq!(store.list("../..").await.unwrap(), ["../escape", "/etc/passwd"]);
    assert_eq!(store.list("a").await.unwrap(), ["b_c"]);
    assert_eq!(store.list("a_b").await.unwrap(), ["c"]);
    assert_eq!(store.list("").await.unwrap(), [".hidden"]);
    assert!(store.delete(&keys[2]).await.unwrap());
    assert!(!store.delete(&keys[2]).await.unwrap());
    assert!(store.list("a_b").await.unwrap().is_empty());
    fs::remove_dir_all(&root).unwrap();
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// A client deleting made-up ids cannot grow the directory: a delete of a session that was
/// never saved creates nothing, not even a lock file; a saved session still deletes.
#[tokio::test]
async fn deletes_of_sessions_that_never_existed_leave_no_files() {
    let dir = temp_dir();
    let store = JsonFileStore::new(&dir);
    let saved = SessionKey::new("alice", "real").unwrap();
    store
        .save(&saved, &SessionDocument::new(AgentState::new()), Expect::Absent)
        .await
        .unwrap();
    let before = names_in(&dir);
    assert_eq!(before, ["alice_real.json", "alice_real.json.lock"]);
    for n in 0..1000 {
        let key = SessionKey::new("alice", format!("made-up-{n}")).unwrap();
        assert!(!store.delete(&key).await.unwrap());
    }
    let created: Vec<String> = names_in(&dir).into_iter().filter(|n| !before.contains(n)).collect();
    assert!(
        created.is_empty(),
        "{} files created: {:?}…",
        created.len(),
        &created[..created.len().min(3)]
    );
    assert_eq!(names_in(&dir), before);
    assert!(store.delete(&saved).await.unwrap());
    assert!(store.load(&saved).await.unwrap().is_none());
    assert!(!store.delete(&saved).await.unwrap());
    fs::remove_dir_all(&dir).unwrap();
}

/// The longest keys the store takes make names the file system takes (the temporary file's
/// too); one byte more is refused at the load, the first thing a reply does, as a lasting
/// error, and nothing is written.
#[tokio::test]
async fn the_longest_keys_save_and_load_and_longer_ones_are_refused_at_the_load() {
    let dir = temp_dir();
    let store = JsonFileStore::new(&dir);
    let doc = SessionDocument::new(rich_state());
    // 128 plain bytes each: 128 + 1 + 88 = 217 encoded, at the limit.
    let plain = SessionKey::new("u".repeat(128), "s".repeat(88)).unwrap();
    // Escaped bytes take three: 72 bytes of Japanese (24 characters) are 216, plus "x_".
    let escaped = SessionKey::new("", "x日本語の会話の記録です日本語の会話の記録です記録").unwrap();
    for key in [&plain, &escaped] {
        assert!(key.file_stem().len() <= MAX_FILE_KEY_LEN, "{}", key.file_stem().len());
        assert_eq!(store.save(key, &doc, Expect::Absent).await.unwrap(), 1);
        assert_eq!(store.save(key, &doc, Expect::Revision(1)).await.unwrap(), 2);
        assert_eq!(store.load(key).await.unwrap().unwrap().document, doc);
    }
    for (user, session) in [
        ("u".repeat(128), "s".repeat(89)),
        ("u".repeat(128), "s".repeat(128)),
        (
            String::new(),
            "x日本語の会話の記録です日本語の会話の記録です記録。".to_owned(),
        ),
    ] {
        let key = SessionKey::new(user, session).unwrap();
        let err = store.load(&key).await.unwrap_err();
        assert!(!err.is_retryable(), "{err}");
        assert!(err.to_string().contains("more than the 217"), "{err}");
        assert!(store.save(&key, &doc, Expect::Absent).await.is_err());
        assert!(!store.path_of(&key).exists());
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_state_saved_before_sessions_existed_loads_and_saves_on() {
    let dir = temp_dir();
    fs::create_dir_all(&dir).unwrap();
    let state = rich_state();
    // What `serde_json::to_string(&agent.state())` wrote: version 0, no revision.
    fs::write(dir.join("bob_old.json"), serde_json::to_vec(&state).unwrap()).unwrap();
    let store = JsonFileStore::new(&dir);
    let key = SessionKey::new("bob", "old").unwrap();
    let stored = store.load(&key).await.unwrap().unwrap();
    assert_eq!((stored.revision, &stored.document.agent), (0, &state));
    assert_eq!(
        store.save(&key, &stored.document, Expect::Revision(0)).await.unwrap(),
        1
    );
    assert_eq!(store.load(&key).await.unwrap().unwrap().revision, 1);
    fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_missing_store_is_empty_and_a_broken_file_is_a_clear_error() {
    let dir = temp_dir();
    let store = JsonFileStore::new(&dir);
    let key = SessionKey::new("u", "s").unwrap();
    assert!(store.load(&key).await.unwrap().is_none());
    assert!(store.list("u").await.unwrap().is_empty());
    assert!(!store.delete(&key).await.unwrap());
    fs::create_dir_all(&dir).unwrap();
    fs::write(store.path_of(&key), b"{\"version\":1,\"agent\":").unwrap();
    let err = store.load(&key).await.unwrap_err();
    assert!(err.to_string().contains("could not decode session document"), "{err}");
    // Saving over it, even unconditionally, is refused for good (not as a passing failure),
    // and the broken file stays for someone to look at.
    let doc = SessionDocument::new(AgentState::new());
    for expect in [Expect::Any, Expect::Revision(0)] {
        let err = store.save(&key, &doc, expect).await.unwrap_err();
        assert!(!err.is_retryable(), "{err}");
        assert!(err.to_string().contains("is not a session document"), "{err}");
    }
    assert_eq!(fs::read(store.path_of(&key)).unwrap(), b"{\"version\":1,\"agent\":");
    // A revision at its end cannot grow.
    let full = SessionKey::new("u", "full").unwrap();
    fs::write(
        store.path_of(&full),
        with_revision(br#"{"version":1,"agent":{}}"#, u64::MAX),
    )
    .unwrap();
    let err = store.save(&full, &doc, Expect::Any).await.unwrap_err();
    assert!(err.to_string().contains("cannot grow"), "{err}");
    fs::remove_dir_all(&dir).unwrap();
}

/// A session file cut short after its head (by hand, by a copy), even by its last byte only,
/// is refused by a save as a broken file is, and stays as it was (the head was trusted, and
/// the save overwrote it).
#[tokio::test]
async fn a_session_file_cut_short_after_its_head_is_not_overwritten() {
    let dir = temp_dir();
    let store = JsonFileStore::new(&dir);
    let key = SessionKey::new("alice", "conv-1").unwrap();
    let mut state = AgentState::new();
    state.context.push(std::sync::Arc::new(towerscope_core::Msg::user(
        "user",
        "precious ".repeat(20),
    )));
    store
        .save(&key, &SessionDocument::new(state), Expect::Absent)
        .await
        .unwrap();
    let path = store.path_of(&key);
    let full = fs::read(&path).unwrap();
    for torn in [full[..full.len() / 2].to_vec(), full[..full.len() - 1].to_vec()] {
        fs::write(&path, &torn).unwrap();
        assert!(store.load(&key).await.is_err());
        let doc = SessionDocument::new(AgentState::new());
        for expect in [Expect::Any, Expect::Revision(1)] {
            let err = store.save(&key, &doc, expect).await.unwrap_err();
            assert!(err.to_string().contains("is not a session document"), "{err}");
        }
        assert_eq!(fs::read(&path).unwrap(), torn);
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_revision_is_read_from_the_head_of_the_file() {
    let head = |revision, body_bytes, head_len| Head {
        revision,
        body_bytes,
        head_len,
    };
    assert_eq!(parse_head(br#"{"revision":17,"version":1"#), Some(head(17, None, 15)));
    assert_eq!(
        parse_head(br#"{"revision":17,"bytes":13,"version":1"#),
        Some(head(17, Some(13), 26))
    );
    assert_eq!(parse_head(br#"{"revision":17"#), None);
    assert_eq!(parse_head(br#"{"version":1,"revision":17,"#), None);
    let file = with_revision(br#"{"version":1}"#, 3);
    assert_eq!(file, br#"{"revision":3,"bytes":13,"version":1}"#);
    let parsed = parse_head(&file).unwrap();
    assert_eq!(
        parsed.head_len as u64 + parsed.body_bytes.unwrap() - 1,
        file.len() as u64
    );
}
