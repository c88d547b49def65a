//! Offloading, as the reference does it: the messages a compression summarises are stored
//! before the context drops them, the summary says where, and the model reads them back with
//! the `Read` tool; images past `max_image_num` are replaced by a reminder, stored first when
//! there is an offloader; a store that fails leaves the context as it was.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use towerscope_agent::compress::{FileOffloader, OffloadScope, Offloader, SUMMARY_TOOL};
use towerscope_agent::{Agent, ContextConfig, HintConfig};
use towerscope_core::{AgentError, ContentBlock, DataBlock, Id, Msg, Role, ToolResultBlock, ToolResultState};
use towerscope_models::{ScriptedModel, ScriptedResponse};

const SUMMARY: &str = r#"{"task_overview": "look words up", "current_state": "done", "important_discoveries": "-",
    "next_steps": "-", "context_to_preserve": "-"}"#;

/// A fresh directory under the system's temporary directory.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("towerscope-offload-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn history() -> Vec<Msg> {
    (0..20)
        .map(|i| Msg::user("user", format!("message {i} {}", "x".repeat(60))))
        .collect()
}

/// A model with a small context that writes the summary when asked for one, and answers "ok"
/// otherwise.
fn summarizing_model() -> ScriptedModel {
    ScriptedModel::new("m", [ScriptedResponse::text("ok")])
        .context_size(400)
        .respond_with(|req| {
            (req.tools.len() == 1 && req.tools[0].name == SUMMARY_TOOL)
                .then(|| ScriptedResponse::tool_call("s", SUMMARY_TOOL, SUMMARY))
        })
}

/// The path in an offload reminder.
fn offloaded_path(text: &str) -> Option<String> {
    let start = text.find("is offloaded to '")? + "is offloaded to '".len();
    let end = text[start..].find('\'')? + start;
    Some(text[start..end].to_owned())
}

#[tokio::test]
async fn compressed_messages_are_offloaded_and_the_model_reads_them_back() {
    let dir = temp_dir("context");
    let offloader = FileOffloader::new(&dir);
    let model = ScriptedModel::new("m", [ScriptedResponse::text("All read.")])
        .context_size(400)
        .respond_with(|req| {
            if req.tools.len() == 1 && req.tools[0].name == SUMMARY_TOOL {
                return Some(ScriptedResponse::tool_call("s", SUMMARY_TOOL, SUMMARY));
            }
            let summary = req.messages.get(1).and_then(|m| m.text_content()).unwrap_or_default();
            let read_yet = req.messages.iter().any(|m| m.tool_results().next().is_some());
            let path = offloaded_path(&summary).filter(|_| !read_yet)?;
            let input = serde_json::json!({"file_path": path, "limit": 2}).to_string();
            Some(ScriptedResponse::tool_call("r1", "Read", input))
        });
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::disabled())
        .context(ContextConfig::new())
        .offloader(offloader.clone())
        .tool(offloader.read_tool())
        .build()
        .unwrap();
    agent.observe(history()).unwrap();
    agent.reply(Msg::user("user", "Where were we?")).await.unwrap();

    let state = agent.state();
    let path = offloader.context_path(OffloadScope::new("", &state.session_id));
    let reminder = format!(
        "<system-reminder>The compressed context is offloaded to '{}', you can refer to it when needed.</system-reminder>",
        path.display()
    );
    assert!(
        state.summary.ends_with(&format!("</system-info>\n{reminder}")),
        "{}",
        state.summary
    );
    assert_eq!(
        state.summary.matches(&reminder).count(),
        1,
        "one reminder, however many compressions"
    );
    // What was summarised is in the file, in order, and no longer in the context.
    let back = offloader
        .read_context(OffloadScope::new("", &state.session_id))
        .await
        .unwrap();
    let offloaded: Vec<String> = back.iter().filter_map(Msg::text_content).collect();
    let expected: Vec<String> = history().iter().filter_map(Msg::text_content).collect();
    // The oldest messages, in order, as many as one summary request may carry (the model's
    // window is 400 tokens: all twenty would not fit).
    assert!(offloaded.len() >= 10, "{} offloaded", offloaded.len());
    assert_eq!(offloaded[..], expected[..offloaded.len()]);
    let held: Vec<String> = state
        .context
        .iter()
        .filter_map(Msg::text_content)
        .filter(|t| t.starts_with("message "))
        .collect();
    assert_eq!(
        held,
        expected[offloaded.len()..],
        "the context holds the rest, and none of them"
    );
    // The model followed the reminder: the Read tool gave it the first lines of the file.
    let read = state.context.iter().flat_map(|m| m.tool_results()).next().unwrap();
    assert_eq!(read.state, ToolResultState::Success);
    let text = read.output.text_content().unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with("     1\t{"), "{}", lines[0]);
    assert!(lines[0].contains("message 0 "));
    assert!(lines[1].starts_with("     2\t{") && lines[1].contains("message 1 "));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two users whose session ids are the same, with one offloader directory: each agent's
/// compression stores into its user's directory, and a user's `Read` tool cannot open the
/// other's file (they shared `sessions/s1/context.jsonl`, and read each other's messages).
#[tokio::test]
async fn users_with_the_same_session_id_do_not_share_offloaded_messages() {
    let dir = temp_dir("users");
    let offloader = FileOffloader::new(&dir);
    let store = towerscope_agent::session::JsonFileStore::new(dir.join("store"));
    let session = Id::from("s1");
    let mut paths = Vec::new();
    for user in ["alice", "bob"] {
        let model = summarizing_model();
        let agent = Agent::builder("a")
            .model(model)
            .hints(HintConfig::disabled())
            .context(ContextConfig::new())
            .offloader(offloader.clone())
            .session(store.clone(), user, "s1")
            .build()
            .unwrap();
        agent
            .observe(vec![Msg::user("user", format!("{user}'s secret {}", "x".repeat(400)))])
            .unwrap();
        agent.observe(history()).unwrap();
        agent.reply(Msg::user("user", "Where were we?")).await.unwrap();
        assert_eq!(
            agent.state().session_id,
            Id::from(format!("{user}/s1")),
            "the user's own session"
        );
        let path = offloader.context_path(OffloadScope::new(user, &session));
        assert!(agent.state().summary.contains(&path.display().to_string()));
        paths.push(path);
    }
    assert!(paths[0].starts_with(dir.join("users").join("alice")), "{paths:?}");
    assert_ne!(paths[0], paths[1]);
    for (user, other) in [("alice", "bob"), ("bob", "alice")] {
        let back = offloader.read_context(OffloadScope::new(user, &session)).await.unwrap();
        let texts: Vec<String> = back.iter().filter_map(Msg::text_content).collect();
        assert!(texts[0].starts_with(&format!("{user}'s secret")), "{texts:?}");
        assert!(!texts.iter().any(|t| t.starts_with(&format!("{other}'s"))), "{texts:?}");
    }

    // Bob's model asks to read Alice's file: his Read tool is confined to his own; nor can an
    // agent without a user id read it (its files are the directory's own, without `users/`).
    for reader in ["bob", ""] {
        let input = serde_json::json!({"file_path": paths[0].display().to_string()}).to_string();
        let model = ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("r1", "Read", input),
                ScriptedResponse::text("ok"),
            ],
        );
        let agent = Agent::builder("a")
            .model(model)
            .hints(HintConfig::disabled())
            .tool(offloader.read_tool_for(reader))
            .build()
            .unwrap();
        agent.reply(Msg::user("user", "read")).await.unwrap();
        let result = agent.state().context[1].tool_results().next().unwrap().clone();
        assert_eq!(result.state, ToolResultState::Error, "{reader}");
        assert!(!result.output.text_content().unwrap().contains("alice's secret"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_read_tool_reads_only_inside_its_directory() {
    let dir = temp_dir("read");
    std::fs::create_dir_all(&dir).unwrap();
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("r1", "Read", r#"{"file_path": "/etc/hostname"}"#),
            ScriptedResponse::text("ok"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model)
        .hints(HintConfig::disabled())
        .tool(FileOffloader::new(&dir).read_tool())
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "read")).await.unwrap();
    let state = agent.state();
    let result = state.context[1].tool_results().next().unwrap().clone();
    assert_eq!(result.state, ToolResultState::Error);
    let text = result.output.text_content().unwrap();
    assert!(
        text.contains("is not an offloaded file") || text.starts_with("Error: File does not exist"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A user message holding one image.
fn image_msg(name: &str, data: &str) -> Msg {
    let block = DataBlock::new(towerscope_core::DataSource::Base64 {
        data: data.to_owned(),
        media_type: "image/png".to_owned(),
    })
    .with_name(name);
    Msg::new("user", Role::User, vec![ContentBlock::Data(block)]).unwrap()
}

fn texts(msgs: &[Arc<Msg>]) -> Vec<String> {
    msgs.iter().filter_map(|m| m.text_content()).collect()
}

#[tokio::test]
async fn images_past_the_limit_are_replaced_oldest_first_and_offloaded_when_possible() {
    // "aGVsbG8=" is "hello".
    let images = || (1..=4).map(|i| image_msg(&format!("img{i}.png"), "aGVsbG8="));
    let config = || ContextConfig::new().max_image_num(2);

    // Without an offloader: removed, with a reminder the model sees.
    let model = ScriptedModel::new("m", [ScriptedResponse::text("ok")]);
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::disabled())
        .context(config())
        .build()
        .unwrap();
    agent.observe(images()).unwrap();
    agent.reply(Msg::user("user", "look")).await.unwrap();
    let seen = model.requests()[0].messages.to_vec();
    assert_eq!(
        texts(&seen[1..3]),
        [
            "<system-reminder>The image named 'img1.png' is removed to free up context space.</system-reminder>",
            "<system-reminder>The image named 'img2.png' is removed to free up context space.</system-reminder>",
        ]
    );
    assert!(
        seen[3..5].iter().all(|m| matches!(m.content[0], ContentBlock::Data(_))),
        "the newest two stay"
    );

    // With an offloader: stored first, and the reminder says where.
    let dir = temp_dir("images");
    let model = ScriptedModel::new("m", [ScriptedResponse::text("ok")]);
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::disabled())
        .context(config())
        .offloader(FileOffloader::new(&dir))
        .build()
        .unwrap();
    agent.observe(images()).unwrap();
    agent.reply(Msg::user("user", "look")).await.unwrap();
    let seen = model.requests()[0].messages.to_vec();
    let first = texts(&seen[1..2]).pop().unwrap();
    let prefix = "<system-reminder>The image named 'img1.png' is offloaded into ";
    assert!(first.starts_with(prefix), "{first}");
    let path = first[prefix.len()..].split(", you can refer").next().unwrap();
    assert_eq!(std::fs::read(path).unwrap(), b"hello");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Offloaded messages keep no image bytes in `context.jsonl`: each inline image, the message's
/// own, a tool result's or a hint's, is written to a file of its own and the line names it by
/// its `file://` URL (the reference names it by its path); `read_context` gives the messages
/// back as they were. An image whose base64 does not decode stays inline; an image file left
/// cut short (by a crash) is written again.
#[tokio::test]
async fn offloaded_images_go_to_files_of_their_own() {
    let dir = temp_dir("context-images");
    let offloader = FileOffloader::new(&dir);
    let session = Id::from("s1");
    let jpeg = |data: &str, name: &str| {
        DataBlock::new(towerscope_core::DataSource::Base64 {
            data: data.to_owned(),
            media_type: "image/jpeg".to_owned(),
        })
        .with_name(name)
    };
    let screenshot = ToolResultBlock::new(
        "c1",
        "screenshot",
        towerscope_core::ToolOutput::Blocks(vec![towerscope_core::MediaBlock::Data(jpeg(
            "d29ybGQ=", // "world"
            "shot.jpg",
        ))]),
        ToolResultState::Success,
    );
    let hint = towerscope_core::HintBlock::new(
        towerscope_core::HintContent::Blocks(vec![
            towerscope_core::MediaBlock::Data(jpeg("aGludA==", "hint.jpg")), // "hint"
        ]),
        None,
    );
    let cat = image_msg("cat.png", "aGVsbG8="); // "hello"
    // The cat's file as a crash before its rename could have left it: cut short.
    let cat_id = match &cat.content[0] {
        ContentBlock::Data(d) => d.id.to_string(),
        other => panic!("{other:?}"),
    };
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let cut = dir.join("data").join(format!("{cat_id}-a430d84680aabd0b.png"));
    std::fs::write(&cut, b"hel").unwrap();
    let msgs = vec![
        Arc::new(cat),
        Arc::new(Msg::assistant_blocks(
            "a",
            vec![
                ContentBlock::tool_call("c1", "screenshot", "{}"),
                ContentBlock::ToolResult(screenshot),
                ContentBlock::Hint(hint),
            ],
        )),
        Arc::new(image_msg("broken.png", "not base64!")),
        // A URL a message brought itself, naming a file of the offloader's (another user's, say):
        // read back as it was, not inline.
        Arc::new(
            Msg::new(
                "user",
                Role::User,
                vec![ContentBlock::Data(DataBlock::url(
                    format!("file://{}", dir.join("sessions/s1/context.jsonl").display()),
                    "image/png",
                ))],
            )
            .unwrap(),
        ),
    ];
    let scope = OffloadScope::new("", &session);
    let path = offloader.offload_context(scope, msgs.clone()).await.unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    for bytes in ["aGVsbG8=", "d29ybGQ=", "aGludA=="] {
        assert!(!text.contains(bytes), "{bytes} is in {text}");
    }
    assert_eq!(text.matches("\"url\":\"file:///").count(), 4, "{text}");
    assert!(
        text.contains("not base64!"),
        "an image that does not decode stays: {text}"
    );
    assert_eq!(std::fs::read(&cut).unwrap(), b"hello", "the cut file was written again");
    let files = std::fs::read_dir(dir.join("data")).unwrap().count();
    assert_eq!(files, 3, "no temporary file is left");

    let back = offloader.read_context(scope).await.unwrap();
    let given: Vec<Msg> = msgs.iter().map(|m| Msg::clone(m)).collect();
    assert_eq!(back, given, "read back as they were given");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file offloader that answers 5 s after it stored the messages (a slow disk's sync).
struct SlowToAnswer(FileOffloader);

impl Offloader for SlowToAnswer {
    fn offload_context(
        &self,
        scope: OffloadScope<'_>,
        msgs: Vec<Arc<Msg>>,
    ) -> BoxFuture<'static, Result<String, AgentError>> {
        let stored = self.0.offload_context(scope, msgs);
        Box::pin(async move {
            let path = stored.await?;
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            Ok(path)
        })
    }

    fn offload_data_block(
        &self,
        scope: OffloadScope<'_>,
        block: DataBlock,
    ) -> BoxFuture<'static, Result<String, AgentError>> {
        self.0.offload_data_block(scope, block)
    }

    fn offload_tool_result(
        &self,
        scope: OffloadScope<'_>,
        result: ToolResultBlock,
    ) -> BoxFuture<'static, Result<String, AgentError>> {
        self.0.offload_tool_result(scope, result)
    }
}

/// A compression interrupted after it stored its messages leaves the context as it was; the
/// next one stores only what was not stored yet, so each message is in the file once.
#[tokio::test(start_paused = true)]
async fn a_compression_dropped_after_its_offload_does_not_store_its_messages_twice() {
    let dir = temp_dir("dropped");
    let offloader = FileOffloader::new(&dir);
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("s", SUMMARY_TOOL, SUMMARY),
            ScriptedResponse::tool_call("s", SUMMARY_TOOL, SUMMARY),
        ],
    )
    .context_size(400);
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::disabled())
        .context(ContextConfig::new())
        .offloader(SlowToAnswer(offloader.clone()))
        .build()
        .unwrap();
    agent.observe(history()).unwrap();
    let before = agent.state().context;
    let scope_of = |agent: &Agent| agent.state().session_id;
    let session = scope_of(&agent);
    let compressing = tokio::spawn({
        let agent = agent.clone();
        async move { agent.compress_context(Some(ContextConfig::new()), None).await }
    });
    while offloader
        .read_context(OffloadScope::new("", &session))
        .await
        .unwrap()
        .is_empty()
    {
        tokio::task::yield_now().await;
    }
    assert!(agent.interrupt(), "the compression waits on its offloader");
    assert!(matches!(compressing.await.unwrap(), Err(AgentError::Interrupted)));
    assert_eq!(agent.state().context, before, "nothing was applied");
    let first = offloader
        .read_context(OffloadScope::new("", &session))
        .await
        .unwrap()
        .len();
    assert!(first > 0);

    agent.compress_context(Some(ContextConfig::new()), None).await.unwrap();
    assert!(agent.state().context.len() < before.len(), "applied this time");
    let stored = offloader.read_context(OffloadScope::new("", &session)).await.unwrap();
    let stored: Vec<String> = stored.iter().filter_map(Msg::text_content).collect();
    let mut once = stored.clone();
    once.dedup();
    assert_eq!(stored, once, "each message once");
    assert_eq!(
        stored.len(),
        first,
        "the same messages were compressed again, and none stored twice"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An offloader whose storage is down.
struct Broken;

impl Offloader for Broken {
    fn offload_context(&self, _: OffloadScope<'_>, _: Vec<Arc<Msg>>) -> BoxFuture<'static, Result<String, AgentError>> {
        Box::pin(async { Err(AgentError::State("the store is down".to_owned())) })
    }

    fn offload_data_block(&self, _: OffloadScope<'_>, _: DataBlock) -> BoxFuture<'static, Result<String, AgentError>> {
        Box::pin(async { Err(AgentError::State("the store is down".to_owned())) })
    }

    fn offload_tool_result(
        &self,
        _: OffloadScope<'_>,
        _: ToolResultBlock,
    ) -> BoxFuture<'static, Result<String, AgentError>> {
        Box::pin(async { Err(AgentError::State("the store is down".to_owned())) })
    }
}

#[tokio::test]
async fn a_store_that_fails_leaves_the_context_as_it_was() {
    let model = summarizing_model();
    let agent = Agent::builder("a")
        .model(model)
        .hints(HintConfig::disabled())
        .context(ContextConfig::new())
        .offloader(Broken)
        .build()
        .unwrap();
    agent.observe(history()).unwrap();
    let err = agent.compress_context(None, None).await.unwrap_err();
    assert!(err.to_string().contains("the store is down"), "{err}");
    let state = agent.state();
    assert_eq!(state.context.len(), 20, "nothing dropped that was not stored");
    assert!(state.summary.is_empty());
}

#[tokio::test]
async fn an_image_of_an_assistant_message_becomes_a_hint_and_a_nested_one_a_text() {
    let image = || {
        DataBlock::new(towerscope_core::DataSource::Url {
            url: "workspace://data/cat.png".to_owned(),
            media_type: "image/png".to_owned(),
        })
    };
    let mut state = towerscope_agent::AgentState::new();
    state.context.push(Msg::user("user", "draw"));
    state
        .context
        .push(Msg::assistant_blocks("a", vec![ContentBlock::Data(image())]));
    let result = towerscope_core::ToolResultBlock::new(
        "c1",
        "render",
        towerscope_core::ToolOutput::Blocks(vec![towerscope_core::MediaBlock::Data(image())]),
        ToolResultState::Success,
    );
    state.context.push(Msg::assistant_blocks(
        "a",
        vec![
            ContentBlock::ToolCall(towerscope_core::ToolCallBlock::new("c1", "render", "{}")),
            ContentBlock::ToolResult(result),
        ],
    ));
    let model = ScriptedModel::new("m", [ScriptedResponse::text("ok")]);
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::disabled())
        .context(ContextConfig::new().max_image_num(0))
        .state(state)
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "again")).await.unwrap();
    let seen = model.requests()[0].messages.to_vec();
    let reminder = "<system-reminder>The image is offloaded into workspace://data/cat.png, you can refer to it \
                    when needed.</system-reminder>";
    assert!(matches!(&seen[2].content[0], ContentBlock::Hint(h) if h.text().as_deref() == Some(reminder)));
    let nested = seen[3].tool_results().next().unwrap();
    assert_eq!(nested.output.text_content().as_deref(), Some(reminder));
}

/// Any arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Anything {}

#[tokio::test]
async fn the_cut_part_of_a_long_tool_result_is_offloaded_and_the_reminder_names_the_file() {
    let dir = temp_dir("tool-result");
    let long: String = (0..400).map(|i| format!("line {i}\n")).collect();
    let tool_text = long.clone();
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "dump", "{}"),
            ScriptedResponse::text("ok"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model)
        .hints(HintConfig::disabled())
        .context(ContextConfig::new().tool_result_limit(100))
        .offloader(FileOffloader::new(&dir))
        .tool(towerscope_agent::toolkit::FunctionTool::new(
            "dump",
            move |_: Anything| {
                let text = tool_text.clone();
                async move { text }
            },
        ))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "dump")).await.unwrap();
    let state = agent.state();
    let result = state.context[1].tool_results().next().unwrap().clone();
    let text = result.output.text_content().unwrap();
    let marker = "\n<<<TRUNCATED>>>\n<system-reminder>The remaining content has been omitted for limited context. You \
                  can refer to the file in '";
    let (kept, rest) = text.split_once(marker).unwrap();
    let path = rest.split_once('\'').unwrap().0;
    assert!(
        rest.ends_with("' for the truncated content if needed.</system-reminder>"),
        "{rest}"
    );
    assert!(path.ends_with("tool_result-c1.txt"), "{path}");
    let omitted = std::fs::read_to_string(path).unwrap();
    assert_eq!(
        format!("{kept}{omitted}"),
        long,
        "nothing lost: the kept part and the file make the whole"
    );

    // The same result again (a durable reply replayed) gets the same file; another result of
    // the same id gets a file of its own.
    let offloader = FileOffloader::new(&dir);
    let session = state.session_id.clone();
    let scope = OffloadScope::new("", &session);
    let again = |text: &str| {
        offloader.offload_tool_result(
            scope,
            ToolResultBlock::new("c1", "dump", text.to_owned(), ToolResultState::Success),
        )
    };
    assert_eq!(again(&omitted).await.unwrap(), path, "the same name");
    let other = again("something else").await.unwrap();
    assert!(other.ends_with("tool_result-c1(1).txt"), "{other}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A last line cut short (a process killed, or a disk full, while it appended) is skipped with a
/// warning: the messages before it are read, and an append after it starts on a line of its
/// own. Before, the torn line failed the whole file, and the next append was glued onto it.
#[tokio::test]
async fn a_torn_last_line_loses_only_itself() {
    let dir = temp_dir("torn");
    let offloader = FileOffloader::new(&dir);
    let session = towerscope_core::Id::from("s1");
    let scope = OffloadScope::new("", &session);
    offloader
        .offload_context(scope, vec![Arc::new(Msg::user("user", "first"))])
        .await
        .unwrap();
    let path = offloader.context_path(scope);
    let mut torn = std::fs::read(&path).unwrap();
    torn.extend_from_slice(br#"{"id":"m2","name":"user","role":"user","content":[{"type":"te"#);
    std::fs::write(&path, &torn).unwrap();
    let back = offloader.read_context(scope).await.unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].text_content().as_deref(), Some("first"));
    offloader
        .offload_context(scope, vec![Arc::new(Msg::user("user", "third"))])
        .await
        .unwrap();
    let back = offloader.read_context(scope).await.unwrap();
    let texts: Vec<_> = back.iter().filter_map(Msg::text_content).collect();
    assert_eq!(texts, ["first", "third"], "the torn line was cut off before the append");
    std::fs::remove_dir_all(&dir).unwrap();
}
