//! Context compression: a long conversation stays under the model's context size with its tool
//! pairs intact; what the model receives (the summary after the system prompt, the summary
//! request), the fall back to truncation, atomicity under an interrupt, tool-result
//! truncation, the `CompressContext` tool, and no counting without a `ContextConfig`.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::collect;
use towerscope_agent::compress::{
    COMPRESS_TOOL, COMPRESSED_TEXT, EstimateCounter, SUMMARY_TOOL, TRUNCATED_REMINDER, TokenCounter, TokenInput,
};
use towerscope_agent::toolkit::FunctionTool;
use towerscope_agent::{Agent, ContextConfig, HintConfig};
use towerscope_core::context_config::TRUNCATION_NOTICE;
use towerscope_core::{CompressRequest, ContentBlock, HintBlock, ModelCallRequest, Msg, Role, ToolSchema, from_fn};
use towerscope_models::{ScriptedModel, ScriptedResponse};

/// Look a word up.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    /// The word.
    word: String,
}

fn lookup_tool() -> FunctionTool {
    FunctionTool::new("lookup", |a: Lookup| async move {
        format!(
            "The word '{}' means something long enough to fill a context: {}",
            a.word,
            "blah ".repeat(30)
        )
    })
}

const SUMMARY: &str = r#"{"task_overview": "look words up", "current_state": "many words looked up",
    "important_discoveries": "none", "next_steps": "keep going", "context_to_preserve": "be brief"}"#;

fn is_summary_request(req: &ModelCallRequest) -> bool {
    req.tools.len() == 1 && req.tools[0].name == SUMMARY_TOOL
}

/// The estimate of what a request sends, as a model with this context size would see it.
fn estimate(messages: &[Arc<Msg>], tools: &[ToolSchema]) -> u64 {
    EstimateCounter.count(&TokenInput {
        head: &[],
        context: messages,
        tools,
        last_call: None,
    })
}

/// Every tool result in `messages` follows its call in the same message, and every call of a
/// finished message has its result.
fn assert_pairs_intact(messages: &[Arc<Msg>]) {
    for m in messages {
        let mut seen = Vec::new();
        for block in &m.content {
            match block {
                ContentBlock::ToolCall(c) => seen.push(c.id.clone()),
                ContentBlock::ToolResult(r) => {
                    assert!(seen.contains(&r.id), "result {} before or without its call", r.id)
                }
                _ => {}
            }
        }
        let results = m.tool_results().count();
        assert_eq!(
            results,
            seen.len(),
            "a call without its result in a message sent to the model"
        );
    }
}

/// A model that looks a word up, then answers; writes the summary when asked; and reports the
/// reference's estimate of its input as its usage (so the default counter runs on usage).
fn conversational_model(size: u64) -> ScriptedModel {
    let calls = Arc::new(AtomicUsize::new(0));
    ScriptedModel::new("m", []).context_size(size).respond_with(move |req| {
        let tokens = estimate(&req.messages.to_vec(), &req.tools);
        if is_summary_request(req) {
            return Some(ScriptedResponse::tool_call("s", SUMMARY_TOOL, SUMMARY).with_usage(tokens, 60));
        }
        let last = req.messages.last().unwrap();
        let answered = last.role == Role::Assistant
            && last
                .content
                .iter()
                .rev()
                .find(|b| !matches!(b, ContentBlock::Hint(_)))
                .is_some_and(|b| matches!(b, ContentBlock::ToolResult(_)));
        let n = calls.fetch_add(1, Ordering::Relaxed);
        Some(if answered {
            ScriptedResponse::text(format!("Answer {n}: the word is looked up.")).with_usage(tokens, 10)
        } else {
            ScriptedResponse::tool_call(format!("call-{n}"), "lookup", format!(r#"{{"word": "w{n}"}}"#))
                .with_usage(tokens, 10)
        })
    })
}

#[tokio::test]
async fn a_few_hundred_turns_stay_under_the_context_size_with_tool_pairs_intact() {
    let size = 3000;
    let model = conversational_model(size);
    let agent = Agent::builder("a")
        .system_prompt("You look words up.")
        .model(model.clone())
        .tool(lookup_tool())
        .context(ContextConfig::new())
        .build()
        .unwrap();
    for turn in 0..300 {
        let answer = agent
            .reply(Msg::user("user", format!("Turn {turn}: what does w{turn} mean?")))
            .await
            .unwrap();
        assert!(answer.text_content().unwrap().starts_with("Answer"), "turn {turn}");
    }
    let requests = model.requests();
    let summaries = requests.iter().filter(|r| is_summary_request_recorded(r)).count();
    assert!(summaries >= 5, "only {summaries} compressions in 300 turns");
    for (i, r) in requests.iter().enumerate() {
        let tokens = estimate(&r.messages.to_vec(), &r.tools);
        assert!(tokens <= size, "request {i} sends {tokens} tokens to a model of {size}");
        assert_pairs_intact(&r.messages.to_vec());
    }
    // After a compression the summary is the user message right after the system prompt.
    let last = requests.iter().rev().find(|r| !is_summary_request_recorded(r)).unwrap();
    assert_eq!(last.messages.to_vec()[0].role, Role::System);
    let summary = last.messages.to_vec()[1].text_content().unwrap();
    assert!(
        summary.starts_with("<system-info>Here is a summary of your previous work\n# Task Overview\nlook words up")
    );
    let state = agent.state();
    assert_eq!(state.summary, summary);
    common::assert_consistent(&state.context);
}

fn is_summary_request_recorded(r: &towerscope_models::RecordedRequest) -> bool {
    r.tools.len() == 1 && r.tools[0].name == SUMMARY_TOOL
}

/// Twenty user messages, over the trigger of a model of 400 tokens.
fn long_history() -> Vec<Msg> {
    (0..20)
        .map(|i| Msg::user("user", format!("message {i} {}", "x".repeat(60))))
        .collect()
}

/// An agent holding [`long_history`], built with `config`.
async fn long_agent(model: &ScriptedModel, config: ContextConfig) -> Agent {
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::disabled())
        .context(config)
        .build()
        .unwrap();
    agent.observe(long_history()).unwrap();
    agent
}

#[tokio::test]
async fn the_summary_request_holds_the_old_part_the_instructions_and_the_prompt_with_the_time() {
    let model = ScriptedModel::new("m", [ScriptedResponse::tool_call("s", SUMMARY_TOOL, SUMMARY)]).context_size(400);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::builder("a")
        .model(model.clone())
        .on_compress_context(from_fn({
            let seen = Arc::clone(&seen);
            move |req: CompressRequest, next: towerscope_core::CompressNext| {
                seen.lock()
                    .unwrap()
                    .push((req.config.is_some(), req.instructions.is_some()));
                next.run(req)
            }
        }))
        .build()
        .unwrap();
    agent.observe(long_history()).unwrap();
    let instructions = HintBlock::new("Keep the numbers.", None);
    agent
        .compress_context(Some(ContextConfig::new()), Some(instructions))
        .await
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [(true, true)],
        "the chain ran once with the config and the instructions"
    );
    let req = &model.requests()[0];
    assert_eq!(req.tool_choice, Some(towerscope_core::ToolChoice::tool(SUMMARY_TOOL)));
    let msgs = req.messages.to_vec();
    assert_eq!(msgs[0].role, Role::System);
    assert_eq!(msgs[1].text_content().unwrap(), format!("message 0 {}", "x".repeat(60)));
    let n = msgs.len();
    assert!(
        matches!(&msgs[n - 2].content[0], ContentBlock::Hint(h) if h.text().as_deref() == Some("Keep the numbers."))
    );
    let prompt = msgs[n - 1].text_content().unwrap();
    assert!(prompt.starts_with("<system-hint>You have been working on the task described above."));
    assert!(
        prompt.contains("The current time is ") && prompt.contains(" (UTC).\n"),
        "{prompt}"
    );
    let state = agent.state();
    assert!(state.context.len() < 20 && !state.context.is_empty());
    assert_eq!(
        state.context.last().unwrap().text_content().unwrap(),
        format!("message 19 {}", "x".repeat(60))
    );
}

#[tokio::test]
async fn a_failed_summary_falls_back_to_truncation_with_the_notice() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::text("I will not summarise."),
            ScriptedResponse::text("ok"),
        ],
    )
    .context_size(400);
    let agent = long_agent(&model, ContextConfig::new()).await;
    agent.reply(Msg::user("user", "go on")).await.unwrap();
    let state = agent.state();
    assert_eq!(state.summary, TRUNCATION_NOTICE);
    assert!(state.context.len() < 20);
    let answer = &model.requests()[1];
    assert_eq!(
        answer.messages.to_vec()[1].text_content().as_deref(),
        Some(TRUNCATION_NOTICE)
    );
}

#[tokio::test]
async fn without_the_fall_back_a_failed_summary_fails_the_reply_and_keeps_the_context() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("no")]).context_size(400);
    let agent = long_agent(&model, ContextConfig::new().fallback_to_truncation(false)).await;
    let before = agent.state().context.len();
    let err = agent.reply(Msg::user("user", "go on")).await.unwrap_err();
    assert!(err.to_string().contains("generate_structured_output"), "{err}");
    let state = agent.state();
    assert!(state.summary.is_empty());
    assert_eq!(
        state.context.len(),
        before + 1,
        "the old context and the new message are kept"
    );
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_during_compression_leaves_the_old_context() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::tool_call("s", SUMMARY_TOOL, SUMMARY).delay(Duration::from_secs(30))],
    )
    .context_size(400);
    let agent = long_agent(&model, ContextConfig::new()).await;
    let before = agent.state().context;
    let running = tokio::spawn({
        let agent = agent.clone();
        async move { collect(agent.reply_stream(Msg::user("user", "go on"))).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(model.calls(), 1, "the summary is being written");
    assert!(agent.interrupt());
    let out = running.await.unwrap();
    assert_eq!(out.kinds().last(), Some(&"REPLY_END"));
    let state = agent.state();
    assert!(state.summary.is_empty(), "no summary was applied");
    for (old, now) in before.arcs().zip(&state.context) {
        assert!(Arc::ptr_eq(old, now), "the old context is untouched");
    }
    assert_eq!(state.context[before.len()].text_content().as_deref(), Some("go on"));
}

#[tokio::test]
async fn tool_results_over_the_limit_are_truncated_with_the_marker() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "lookup", r#"{"word": "big"}"#),
            ScriptedResponse::text("done"),
        ],
    );
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(lookup_tool())
        .context(ContextConfig::new().tool_result_limit(20))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "look it up")).await.unwrap();
    let seen = &model.requests()[1];
    let result = seen.messages.last().unwrap().tool_results().next().cloned().unwrap();
    let text = result.output.text_content().unwrap();
    assert!(text.ends_with(TRUNCATED_REMINDER), "{text}");
    assert!(text.starts_with("The word 'big' means"));
    assert!(text.len() <= 80 + TRUNCATED_REMINDER.len(), "{} bytes kept", text.len());
}

#[tokio::test]
async fn the_model_compresses_with_the_compress_context_tool() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", COMPRESS_TOOL, "{}"),
            ScriptedResponse::text("compressed"),
        ],
    )
    .context_size(1000)
    .respond_with(|req| is_summary_request(req).then(|| ScriptedResponse::tool_call("s", SUMMARY_TOOL, SUMMARY)));
    // Over 60% of 1000 (the trigger 0.8 lowered by the buffer 0.2), under 80%.
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::disabled())
        .context(ContextConfig::new().compression_tool(true))
        .build()
        .unwrap();
    let history: Vec<Msg> = (0..9)
        .map(|i| Msg::user("user", format!("message {i} {}", "x".repeat(250))))
        .collect();
    agent.observe(history).unwrap();
    agent.reply(Msg::user("user", "tidy up")).await.unwrap();
    let first = &model.requests()[0];
    assert!(first.tool_names().contains(&COMPRESS_TOOL));
    let state = agent.state();
    assert!(state.summary.contains("look words up"));
    let result = state
        .context
        .iter()
        .flat_map(|m| m.tool_results())
        .find(|r| r.id == "c1")
        .cloned()
        .unwrap();
    assert_eq!(result.output.text_content().as_deref(), Some(COMPRESSED_TEXT));
    common::assert_consistent(&state.context);
}

/// A counter that counts how often it is asked.
struct Counting(Arc<AtomicUsize>);

impl TokenCounter for Counting {
    fn count_blocks(&self, blocks: &mut dyn Iterator<Item = &ContentBlock>) -> u64 {
        EstimateCounter.count_blocks(blocks)
    }
    fn count_tools(&self, tools: &[ToolSchema]) -> u64 {
        EstimateCounter.count_tools(tools)
    }
    fn count(&self, input: &TokenInput<'_>) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed);
        EstimateCounter.count(input)
    }
}

#[tokio::test]
async fn without_a_context_config_nothing_is_counted_and_with_one_a_round_counts_once() {
    let asked = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "lookup", r#"{"word": "a"}"#),
            ScriptedResponse::text("one"),
            ScriptedResponse::tool_call("c2", "lookup", r#"{"word": "b"}"#),
            ScriptedResponse::text("two"),
        ],
    );
    let plain = Agent::builder("a")
        .model(model.clone())
        .tool(lookup_tool())
        .token_counter(Counting(Arc::clone(&asked)))
        .build()
        .unwrap();
    plain.reply(Msg::user("user", "a?")).await.unwrap();
    assert_eq!(asked.load(Ordering::Relaxed), 0, "no ContextConfig: no counting");

    let counting = Agent::builder("a")
        .model(model)
        .tool(lookup_tool())
        .token_counter(Counting(Arc::clone(&asked)))
        .context(ContextConfig::new())
        .build()
        .unwrap();
    counting.reply(Msg::user("user", "b?")).await.unwrap();
    // Two rounds, one count of the whole input each.
    assert_eq!(asked.load(Ordering::Relaxed), 2);
}

#[test]
fn an_invalid_context_config_fails_the_build() {
    let model = ScriptedModel::new("m", []);
    let err = Agent::builder("a")
        .model(model)
        .context(ContextConfig::new().trigger_ratio(0.95))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("trigger_ratio must be in (0, 0.9]"), "{err}");
}

#[tokio::test]
async fn the_prompt_fold_runs_for_the_count_and_for_the_model_as_in_the_reference() {
    let folds = Arc::new(AtomicUsize::new(0));
    let fold = {
        let folds = Arc::clone(&folds);
        towerscope_core::prompt_fn(move |_ctx, prompt| {
            folds.fetch_add(1, Ordering::Relaxed);
            async move { Ok(prompt) }
        })
    };
    let model = ScriptedModel::new("m", [ScriptedResponse::text("1"), ScriptedResponse::text("2")]);
    let plain = Agent::builder("a")
        .model(model.clone())
        .on_system_prompt(fold.clone())
        .build()
        .unwrap();
    plain.reply(Msg::user("user", "one")).await.unwrap();
    assert_eq!(
        folds.load(Ordering::Relaxed),
        1,
        "no ContextConfig: only the model's input"
    );
    let compressing = Agent::builder("a")
        .model(model)
        .on_system_prompt(fold)
        .context(ContextConfig::new())
        .build()
        .unwrap();
    compressing.reply(Msg::user("user", "two")).await.unwrap();
    // The count (compression), then the model's input; the hints reuse the count.
    assert_eq!(folds.load(Ordering::Relaxed), 3);
}

#[tokio::test(start_paused = true)]
async fn a_reply_cannot_start_while_the_context_is_being_compressed() {
    // The summary takes a while (a model call); a reply started meanwhile would rewrite the
    // context the compression is about to replace.
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("s", SUMMARY_TOOL, SUMMARY).delay(Duration::from_secs(5)),
            ScriptedResponse::text("after"),
        ],
    )
    .context_size(400);
    let agent = long_agent(&model, ContextConfig::new()).await;
    let compressing = tokio::spawn({
        let agent = agent.clone();
        async move { agent.compress_context(Some(ContextConfig::new()), None).await }
    });
    // Until the summary's model call is open.
    while model.calls() == 0 {
        tokio::task::yield_now().await;
    }
    let refused = agent.reply(Msg::user("user", "now?")).await;
    assert!(
        matches!(&refused, Err(towerscope_core::AgentError::State(text)) if text.contains("compressing")),
        "{refused:?}"
    );
    assert!(agent.observe([Msg::user("user", "by the way")]).is_err());
    compressing.await.unwrap().unwrap();
    let compressed = agent.state().context;
    assert!(compressed.len() < 20 && !compressed.iter().any(|m| m.text_content().as_deref() == Some("now?")));
    assert_eq!(
        agent
            .reply(Msg::user("user", "now?"))
            .await
            .unwrap()
            .text_content()
            .as_deref(),
        Some("after")
    );
}

#[tokio::test(start_paused = true)]
async fn interrupting_a_compression_leaves_the_context_as_it_was() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::tool_call("s", SUMMARY_TOOL, SUMMARY).delay(Duration::from_secs(5))],
    )
    .context_size(400);
    let agent = long_agent(&model, ContextConfig::new()).await;
    let before = agent.state().context;
    let compressing = tokio::spawn({
        let agent = agent.clone();
        async move { agent.compress_context(Some(ContextConfig::new()), None).await }
    });
    while model.calls() == 0 {
        tokio::task::yield_now().await;
    }
    assert!(agent.interrupt(), "the compression is running");
    let interrupted = compressing.await.unwrap();
    assert!(
        matches!(interrupted, Err(towerscope_core::AgentError::Interrupted)),
        "{interrupted:?}"
    );
    assert_eq!(agent.state().context, before);
}

/// An agent with a session compresses its context between two replies: the compressed context
/// is saved, so the next reply (which loads the session) goes on from the summary rather than
/// loading the long conversation back.
#[tokio::test]
async fn a_compression_between_replies_of_an_agent_with_a_session_is_kept() {
    let dir = std::env::temp_dir().join(format!("towerscope-compress-session-{}", std::process::id()));
    let store = towerscope_agent::session::JsonFileStore::new(&dir);
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::text("First."),
            ScriptedResponse::tool_call("s", SUMMARY_TOOL, SUMMARY),
            ScriptedResponse::text("Second."),
        ],
    )
    .context_size(400);
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::disabled())
        .session(store, "", "s1")
        .build()
        .unwrap();
    agent.observe(long_history()).unwrap();
    agent.reply(Msg::user("user", "go on")).await.unwrap();
    agent.compress_context(Some(ContextConfig::new()), None).await.unwrap();
    let compressed = agent.state();
    assert!(!compressed.summary.is_empty() && compressed.context.len() < 20);

    agent.reply(Msg::user("user", "and now?")).await.unwrap();
    let state = agent.state();
    assert_eq!(state.summary, compressed.summary, "the summary is kept");
    assert!(state.context.len() < 20, "the old conversation was not loaded back");
    let sent = &model.requests()[2];
    assert!(
        sent.messages.len() < 20,
        "the model saw the compressed context: {}",
        sent.messages.len()
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A state holding the last call's token count (kept beside the state for the counter, not
/// saved) equals itself read back from its JSON.
#[tokio::test]
async fn a_state_read_back_from_its_json_is_equal() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("a").with_usage(10, 5)]);
    let agent = Agent::builder("a")
        .model(model)
        .context(ContextConfig::new())
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hi")).await.unwrap();
    let state = agent.state();
    let back: towerscope_agent::AgentState = serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
    assert_eq!(back, state);
}

/// A system prompt that fills the reserve, and a summary that fails: the truncation drops the
/// old messages, but the question the model is to answer reaches it (it was dropped with them,
/// and stored nowhere without an offloader).
#[tokio::test]
async fn a_truncation_keeps_the_question_the_model_answers() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::text("I will not summarise."),
            ScriptedResponse::text("Paris."),
        ],
    )
    .context_size(400);
    let agent = Agent::builder("a")
        .system_prompt(format!("You answer questions. {}", "Be brief. ".repeat(20)))
        .model(model.clone())
        .hints(HintConfig::disabled())
        .context(ContextConfig::new())
        .build()
        .unwrap();
    agent.observe(long_history()).unwrap();
    agent
        .reply(Msg::user("user", "What is the capital of France?"))
        .await
        .unwrap();
    assert_eq!(agent.state().summary, TRUNCATION_NOTICE);
    let answer = &model.requests()[1];
    let texts: Vec<String> = answer.messages.iter().filter_map(|m| m.text_content()).collect();
    assert!(
        texts.iter().any(|t| t == "What is the capital of France?"),
        "the question was dropped: {texts:?}"
    );
}

/// A summary that alone reaches the trigger: compressing cannot bring the context under it, so
/// it is not done (before, every turn paid a summary call and lost its question to it).
#[tokio::test]
async fn a_head_over_the_trigger_is_not_compressed_again_every_turn() {
    let long_summary = "s".repeat(1_400);
    let model = ScriptedModel::new("m", [])
        .context_size(400)
        .respond_with(|_| Some(ScriptedResponse::text("ok")));
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::disabled())
        .context(ContextConfig::new())
        .build()
        .unwrap();
    let mut state = agent.state();
    state.summary = long_summary;
    agent.load_state(state).unwrap();
    for turn in 0..5 {
        agent.reply(Msg::user("user", format!("turn {turn}"))).await.unwrap();
    }
    let requests = model.requests();
    assert_eq!(requests.len(), 5, "one model call a turn, no summary calls");
    assert!(!requests.iter().any(is_summary_request_recorded));
    // Each turn's question reached the model.
    let last: Vec<String> = requests[4].messages.iter().filter_map(|m| m.text_content()).collect();
    assert!(last.iter().any(|t| t == "turn 4"), "{last:?}");
}

/// A question that alone reaches the trigger (a document pasted into it): what came before it
/// is summarised once, and the rounds after it are not, so the model reads each tool result
/// and answers; before, every round compressed and summarised the round's results away.
#[tokio::test]
async fn a_question_over_the_trigger_summarises_only_what_came_before_it_once() {
    let size = 1_000;
    let model = ScriptedModel::new("m", []).context_size(size).respond_with(|req| {
        let tokens = estimate(&req.messages.to_vec(), &req.tools);
        if is_summary_request(req) {
            return Some(ScriptedResponse::tool_call("s", SUMMARY_TOOL, SUMMARY).with_usage(tokens, 20));
        }
        let results = req.messages.iter().flat_map(|m| m.tool_results()).count();
        Some(if results >= 2 {
            ScriptedResponse::text(format!("answered after reading {results} results")).with_usage(tokens, 5)
        } else {
            let word = format!("w{results}");
            ScriptedResponse::tool_call(&word, "lookup", format!(r#"{{"word": "{word}"}}"#)).with_usage(tokens, 5)
        })
    });
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::disabled())
        .tool(FunctionTool::new("lookup", |a: Lookup| async move {
            format!("{} means x", a.word)
        }))
        .context(ContextConfig::new())
        .build()
        .unwrap();
    agent.observe([Msg::user("user", "an earlier remark")]).unwrap();
    // About 850 tokens, 85% of the context: the provider takes it.
    let question = format!("{}\nWhat do w0 and w1 mean?", "word ".repeat(680));
    let answer = agent.reply(Msg::user("user", question)).await.unwrap();
    assert_eq!(
        answer.text_content().as_deref(),
        Some("answered after reading 2 results")
    );
    let requests = model.requests();
    let summaries = requests.iter().filter(|r| is_summary_request_recorded(r)).count();
    assert_eq!(summaries, 1, "the earlier remark, summarised once");
    let summary_request = requests.iter().find(|r| is_summary_request_recorded(r)).unwrap();
    let summarised: Vec<String> = summary_request
        .messages
        .iter()
        .filter_map(|m| m.text_content())
        .collect();
    assert!(summarised.iter().any(|t| t == "an earlier remark"), "{summarised:?}");
    assert!(!summarised.iter().any(|t| t.ends_with("What do w0 and w1 mean?")));
    let last = requests.last().unwrap();
    assert_eq!(last.messages.iter().flat_map(|m| m.tool_results()).count(), 2);
    assert_pairs_intact(&last.messages.to_vec());
}

/// A round whose tool results push the context past the model's window: what is summarised
/// is capped, so the summary request fits and the history goes into a summary; before, the
/// summary request was past the window too, refused, and the fall back dropped the whole
/// history for the truncation notice.
#[tokio::test]
async fn a_round_past_the_window_is_summarised_in_a_request_that_fits() {
    let size = 2_000;
    let model = ScriptedModel::new("m", []).context_size(size).respond_with(move |req| {
        let tokens = estimate(&req.messages.to_vec(), &req.tools);
        if tokens > size {
            return Some(ScriptedResponse::error(towerscope_core::AgentError::Model {
                model: None,
                message: format!("context_length_exceeded: {tokens} > {size}"),
                retryable: false,
                source: None,
            }));
        }
        if is_summary_request(req) {
            return Some(ScriptedResponse::tool_call("s", SUMMARY_TOOL, SUMMARY).with_usage(tokens, 20));
        }
        let read = req.messages.last().is_some_and(|m| m.tool_results().next().is_some());
        Some(if read {
            ScriptedResponse::text("read them").with_usage(tokens, 5)
        } else {
            ScriptedResponse::tool_call("c1", "fetch", r#"{"word": "a"}"#)
                .and_tool_call("c2", "fetch", r#"{"word": "b"}"#)
                .with_usage(tokens, 5)
        })
    });
    let agent = Agent::builder("a")
        .model(model.clone())
        .hints(HintConfig::disabled())
        .tool(FunctionTool::new("fetch", |a: Lookup| async move {
            format!("{} {}", a.word, "page ".repeat(500))
        }))
        .context(ContextConfig::new())
        .build()
        .unwrap();
    // Twelve earlier messages, about 1,200 tokens: under the trigger (1,600).
    let history: Vec<Msg> = (0..12)
        .map(|i| Msg::user("user", format!("fact {i}: {}", "y".repeat(390))))
        .collect();
    agent.observe(history).unwrap();
    let answer = agent.reply(Msg::user("user", "fetch a and b")).await.unwrap();
    assert_eq!(answer.text_content().as_deref(), Some("read them"));
    let state = agent.state();
    assert!(!state.summary.contains(TRUNCATION_NOTICE), "{}", state.summary);
    assert!(
        state.summary.contains("look words up"),
        "a summary was written: {}",
        state.summary
    );
    let requests = model.requests();
    for summary_request in requests.iter().filter(|r| is_summary_request_recorded(r)) {
        let tokens = estimate(&summary_request.messages.to_vec(), &summary_request.tools);
        assert!(tokens <= size, "a summary request of {tokens} tokens");
    }
}
