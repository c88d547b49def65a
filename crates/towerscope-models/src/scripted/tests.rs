#![allow(clippy::unwrap_used)]

use super::*;
use futures_util::StreamExt;
use std::time::Duration;
use towerscope_core::{AgentContext, ContentBlock, Msg};

fn request(model: &ScriptedModel) -> ModelCallRequest {
    ModelCallRequest {
        ctx: AgentContext::new("a", "s", "r").with_iteration(2),
        model: Arc::new(model.clone()),
        messages: vec![Msg::system("system", "be kind"), Msg::user("user", "hi")].into(),
        tools: Arc::from(vec![]),
        tool_choice: Some(ToolChoice::none()),
    }
}

async fn collect(model: &ScriptedModel) -> Result<Vec<ChatResponse>, AgentError> {
    match model.call(request(model)).await? {
        ModelOutput::Complete(r) => Ok(vec![r]),
        ModelOutput::Stream(mut s) => {
            let mut out = Vec::new();
            while let Some(item) = s.next().await {
                out.push(item?);
            }
            Ok(out)
        }
    }
}

#[tokio::test]
async fn streams_deltas_then_the_complete_response() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::thinking("let me see")
            .and_text("Hello world")
            .and_tool_call("c1", "f", r#"{"a":1}"#)
            .with_usage(3, 4)],
    );
    let chunks = collect(&model).await.unwrap();
    // thinking: 3 words, text: 2 words, tool call: 2 halves, final.
    assert_eq!(chunks.len(), 8);
    assert!(chunks[..7].iter().all(|c| !c.is_last));
    let last = chunks.last().unwrap();
    assert!(last.is_last);
    assert_eq!(
        last.usage.as_ref().map(|u| (u.input_tokens, u.output_tokens)),
        Some((3, 4))
    );
    let ContentBlock::ToolCall(head) = &chunks[5].content[0] else {
        panic!("expected a tool call chunk")
    };
    let ContentBlock::ToolCall(tail) = &chunks[6].content[0] else {
        panic!("expected a tool call chunk")
    };
    assert_eq!(format!("{}{}", head.input, tail.input), r#"{"a":1}"#);
    assert_eq!(head.id, "c1");
}

#[tokio::test]
async fn records_what_the_model_saw() {
    let model = ScriptedModel::new("m", [ScriptedResponse::text("ok").whole()]);
    let chunks = collect(&model).await.unwrap();
    assert_eq!(chunks.len(), 1);
    let req = &model.requests()[0];
    assert_eq!(req.system_prompt().as_deref(), Some("be kind"));
    assert_eq!(req.tool_choice, Some(ToolChoice::none()));
    assert_eq!(req.iteration, 2);
    assert_eq!(req.reply_id, "r");
}

#[tokio::test]
async fn exhausted_script_is_a_clear_error() {
    let model = ScriptedModel::new("m", []);
    let err = collect(&model).await.unwrap_err();
    assert!(err.to_string().contains("script exhausted"), "{err}");
}

#[tokio::test]
async fn errors_on_call_and_mid_stream() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::error(AgentError::rate_limited("slow down", None)),
            ScriptedResponse::text("a b c").fail_mid_stream(2, AgentError::Stream("connection reset".into())),
            ScriptedResponse::text("x").without_final_chunk(),
        ],
    );
    assert!(matches!(collect(&model).await, Err(AgentError::RateLimited { .. })));
    assert!(matches!(collect(&model).await, Err(AgentError::Stream(_))));
    let chunks = collect(&model).await.unwrap();
    assert!(chunks.iter().all(|c| !c.is_last));
}

#[tokio::test(start_paused = true)]
async fn delays_use_tokio_time() {
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::text("hi").delay(Duration::from_secs(5)).whole()],
    );
    let start = tokio::time::Instant::now();
    collect(&model).await.unwrap();
    assert!(start.elapsed() >= Duration::from_secs(5));
}

#[tokio::test]
async fn cycling_model_never_runs_out() {
    let model = ScriptedModel::cycle("m", [ScriptedResponse::text("a"), ScriptedResponse::text("b")]);
    for _ in 0..5 {
        collect(&model).await.unwrap();
    }
    assert_eq!(model.calls(), 5);
    assert!(model.requests().is_empty());
}

#[test]
fn split_words_keeps_whitespace() {
    assert_eq!(split_words("a b  c"), vec!["a ", "b  ", "c"]);
    assert_eq!(split_words(""), vec![""]);
    assert_eq!(split_words(" lead"), vec![" ", "lead"]);
}

#[test]
fn a_responder_may_ask_its_model_what_it_was_sent() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let probe = ScriptedModel::new("m", [ScriptedResponse::text("from the script")]);
    let seen = Arc::new(AtomicUsize::new(0));
    let model = probe.clone().respond_with({
        let seen = Arc::clone(&seen);
        move |_req| {
            // A clone of the model shares its script: asking it used to lock the script twice.
            seen.store(probe.calls(), Ordering::SeqCst);
            None
        }
    });
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let answered = tokio::runtime::Builder::new_current_thread()
            .build()
            .map_err(|e| AgentError::Model {
                model: None,
                message: e.to_string(),
                retryable: false,
                source: None,
            })
            .and_then(|runtime| runtime.block_on(collect(&model)));
        let _ = tx.send(answered.map(|chunks| chunks.last().and_then(ChatResponse::text)));
    });
    let answered = rx.recv_timeout(Duration::from_secs(10));
    assert!(
        matches!(&answered, Ok(Ok(Some(text))) if text == "from the script"),
        "the responder's model answered: {answered:?}"
    );
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}
