//! Middleware ordering and control, each mirroring the reference's own tests (§2 of the
//! reference semantics): onion order, items reaching the innermost layer first, overriding one
//! field, short-circuiting, calling the inner service twice. Asking for another round is in
//! `reply_control.rs`, reading streams to their end in `stream_post_code.rs`.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use futures_util::{StreamExt, stream};
use towerscope_agent::Agent;
use towerscope_agent::HintConfig;
use towerscope_core::{
    AgentError, ChatResponse, ContentBlock, ErasedLayer, EventStream, Middleware, ModelCallLayer, ModelCallRequest,
    ModelOutput, Msg, Next, ReasoningLayer, ReasoningRequest, ReplyItem, ReplyLayer, ReplyRequest,
    SystemPromptTransformer, TextBlock, ToolChoice, from_fn, prompt_fn,
};
use towerscope_models::{ScriptedModel, ScriptedResponse};

type Log = Arc<Mutex<Vec<String>>>;

fn push(log: &Log, s: impl Into<String>) {
    log.lock().unwrap().push(s.into());
}

fn item_name(item: &Result<ReplyItem, AgentError>) -> String {
    match item {
        Ok(ReplyItem::Event(e)) => e.event_type().as_str().to_owned(),
        Ok(ReplyItem::Final(_)) => "msg".to_owned(),
        Err(_) => "err".to_owned(),
    }
}

/// `inner`, then `entry` logged when it ends (a layer's post-code on a stream).
fn log_at_end<S>(inner: S, log: Log, entry: String) -> impl futures_util::Stream<Item = S::Item>
where
    S: futures_util::Stream,
{
    inner.chain(stream::once(async move { push(&log, entry) }).filter_map(|()| async { None }))
}

/// Logs every item as `{name}_{KIND}`, then `{name}_post` when the stream ends.
fn logged_stream(name: &'static str, log: Log, inner: EventStream) -> EventStream {
    let items_log = Arc::clone(&log);
    let items = inner.inspect(move |item| push(&items_log, format!("{name}_{}", item_name(item))));
    Box::pin(log_at_end(items, log, format!("{name}_post")))
}

fn reply_logger(
    name: &'static str,
    log: Log,
) -> impl Fn(
    ReplyRequest,
    Next<ReplyRequest, EventStream>,
) -> futures_util::future::BoxFuture<'static, Result<EventStream, AgentError>>
+ Clone {
    move |req, next| {
        let log = Arc::clone(&log);
        Box::pin(async move {
            push(&log, format!("{name}_pre"));
            let inner = next.run(req).await?;
            Ok(logged_stream(name, log, inner))
        })
    }
}

fn text_model(text: &str) -> ScriptedModel {
    ScriptedModel::new("m", [ScriptedResponse::text(text).whole()])
}

#[tokio::test]
async fn on_reply_onion_order_matches_the_reference_log() {
    let log: Log = Log::default();
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(text_model("hi"))
        .on_reply(from_fn(reply_logger("mw1", Arc::clone(&log))))
        .on_reply(from_fn(reply_logger("mw2", Arc::clone(&log))))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hello")).await.unwrap();
    // Verbatim the reference's test_on_reply_middleware_pre_post_yield.
    let expected = "mw1_pre, mw2_pre, \
        mw2_REPLY_START, mw1_REPLY_START, mw2_MODEL_CALL_START, mw1_MODEL_CALL_START, \
        mw2_TEXT_BLOCK_START, mw1_TEXT_BLOCK_START, mw2_TEXT_BLOCK_DELTA, mw1_TEXT_BLOCK_DELTA, \
        mw2_TEXT_BLOCK_END, mw1_TEXT_BLOCK_END, mw2_MODEL_CALL_END, mw1_MODEL_CALL_END, \
        mw2_REPLY_END, mw1_REPLY_END, mw2_msg, mw1_msg, mw2_post, mw1_post";
    assert_eq!(log.lock().unwrap().join(", "), expected);
}

#[tokio::test]
async fn on_reasoning_sees_the_candidate_message() {
    let log: Log = Log::default();
    let logger = |name: &'static str, log: Log| {
        from_fn(
            move |req: ReasoningRequest, next: Next<ReasoningRequest, EventStream>| {
                let log = Arc::clone(&log);
                async move {
                    push(&log, format!("{name}_pre"));
                    let inner = next.run(req).await?;
                    Ok(logged_stream(name, log, inner))
                }
            },
        )
    };
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(text_model("hi"))
        .on_reasoning(logger("mw1", Arc::clone(&log)))
        .on_reasoning(logger("mw2", Arc::clone(&log)))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hello")).await.unwrap();
    let log = log.lock().unwrap().join(", ");
    assert!(
        log.starts_with("mw1_pre, mw2_pre, mw2_MODEL_CALL_START, mw1_MODEL_CALL_START"),
        "{log}"
    );
    assert!(
        log.ends_with("mw2_MODEL_CALL_END, mw1_MODEL_CALL_END, mw2_msg, mw1_msg, mw2_post, mw1_post"),
        "{log}"
    );
}

fn model_logger(
    name: &'static str,
    log: Log,
    wrap_stream: bool,
) -> impl Fn(
    ModelCallRequest,
    Next<ModelCallRequest, ModelOutput>,
) -> futures_util::future::BoxFuture<'static, Result<ModelOutput, AgentError>>
+ Clone {
    move |req, next| {
        let log = Arc::clone(&log);
        Box::pin(async move {
            push(&log, format!("{name}_pre"));
            match next.run(req).await? {
                ModelOutput::Stream(s) if wrap_stream => {
                    let chunk_log = Arc::clone(&log);
                    let chunks = s.inspect(move |_| push(&chunk_log, format!("{name}_chunk")));
                    Ok(ModelOutput::Stream(Box::pin(log_at_end(
                        chunks,
                        log,
                        format!("{name}_post"),
                    ))))
                }
                out => {
                    push(&log, format!("{name}_post"));
                    Ok(out)
                }
            }
        })
    }
}

#[tokio::test]
async fn on_model_call_non_streaming_order() {
    let log: Log = Log::default();
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(text_model("hi"))
        .on_model_call(from_fn(model_logger("mw1", Arc::clone(&log), true)))
        .on_model_call(from_fn(model_logger("mw2", Arc::clone(&log), true)))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hello")).await.unwrap();
    assert_eq!(log.lock().unwrap().join(", "), "mw1_pre, mw2_pre, mw2_post, mw1_post");
}

#[tokio::test]
async fn on_model_call_streamed_chunks_reach_the_innermost_first() {
    let log: Log = Log::default();
    // "a b" streams as two delta chunks plus the final is_last chunk: three chunks.
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(ScriptedModel::new("m", [ScriptedResponse::text("a b")]))
        .on_model_call(from_fn(model_logger("mw1", Arc::clone(&log), true)))
        .on_model_call(from_fn(model_logger("mw2", Arc::clone(&log), true)))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hello")).await.unwrap();
    // The reference's test_on_model_call_middleware_streaming. The reasoning step reads the
    // stream to its end, so the post-code of the stream wrappers runs after the last chunk
    // (tests/stream_post_code.rs); the chunks interleave exactly as in the reference.
    let log = log.lock().unwrap().join(", ");
    assert!(
        log.starts_with("mw1_pre, mw2_pre, mw2_chunk, mw1_chunk, mw2_chunk, mw1_chunk, mw2_chunk, mw1_chunk"),
        "{log}"
    );
}

#[tokio::test]
async fn a_layer_overrides_one_field_and_the_rest_passes_through() {
    let primary = ScriptedModel::new("primary", []);
    let other = ScriptedModel::new("other", [ScriptedResponse::text("from other")]);
    let swap = {
        let other: towerscope_core::ModelRef = Arc::new(other.clone());
        from_fn(
            move |mut req: ModelCallRequest, next: Next<ModelCallRequest, ModelOutput>| {
                req.model = Arc::clone(&other);
                next.run(req)
            },
        )
    };
    let no_tools = from_fn(|mut req: ModelCallRequest, next: Next<ModelCallRequest, ModelOutput>| {
        req.tool_choice = Some(ToolChoice::none());
        // Keep only the system prompt and the last message.
        let last = req.messages.len() - 1;
        req.messages = vec![req.messages[0].clone(), req.messages[last].clone()].into();
        next.run(req)
    });
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .system_prompt("sys")
        .model(primary.clone())
        .tool(towerscope_agent::toolkit::FunctionTool::new(
            "noop",
            |_: serde_json::Value| async { "ok" },
        ))
        .on_model_call(swap)
        .on_model_call(no_tools)
        .build()
        .unwrap();
    agent.observe([Msg::user("user", "older message")]).unwrap();
    let msg = agent.reply(Msg::user("user", "hello")).await.unwrap();
    assert_eq!(msg.text_content().as_deref(), Some("from other"));
    assert_eq!(primary.calls(), 0);
    let req = &other.requests()[0];
    assert_eq!(req.model, "other");
    assert_eq!(req.tool_choice, Some(ToolChoice::none()));
    assert_eq!(req.messages.len(), 2);
    assert_eq!(req.system_prompt().as_deref(), Some("sys"));
    assert_eq!(req.messages[1].text_content().as_deref(), Some("hello"));
    assert_eq!(req.tool_names(), ["noop"], "the tools passed through unchanged");
}

#[tokio::test]
async fn a_layer_short_circuits_the_model() {
    let model = ScriptedModel::new("m", []);
    let cache = from_fn(
        |_req: ModelCallRequest, _next: Next<ModelCallRequest, ModelOutput>| async {
            Ok(ModelOutput::Complete(ChatResponse::new(vec![ContentBlock::Text(
                TextBlock::new("cached answer"),
            )])))
        },
    );
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model.clone())
        .on_model_call(cache)
        .build()
        .unwrap();
    let msg = agent.reply(Msg::user("user", "hello")).await.unwrap();
    assert_eq!(msg.text_content().as_deref(), Some("cached answer"));
    assert_eq!(model.calls(), 0, "the inner service was never called");
}

#[tokio::test]
async fn a_layer_calls_the_inner_service_twice() {
    let primary = ScriptedModel::new(
        "primary",
        [ScriptedResponse::error(AgentError::model_retryable("overloaded"))],
    );
    let backup = ScriptedModel::new("backup", [ScriptedResponse::text("backup answer")]);
    let fallback = {
        let backup: towerscope_core::ModelRef = Arc::new(backup.clone());
        from_fn(
            move |req: ModelCallRequest, next: Next<ModelCallRequest, ModelOutput>| {
                let backup = Arc::clone(&backup);
                async move {
                    match next.clone().run(req.clone()).await {
                        Ok(out) => Ok(out),
                        Err(_) => next.run(ModelCallRequest { model: backup, ..req }).await,
                    }
                }
            },
        )
    };
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(primary.clone())
        .on_model_call(fallback)
        .build()
        .unwrap();
    let msg = agent.reply(Msg::user("user", "hello")).await.unwrap();
    assert_eq!(msg.text_content().as_deref(), Some("backup answer"));
    assert_eq!((primary.calls(), backup.calls()), (1, 1));
    assert_eq!(
        primary.requests()[0].messages.len(),
        backup.requests()[0].messages.len()
    );
}

/// One object hooking four positions, as in the reference's test_multiple_middleware_types.
struct Everywhere(Log);

impl Middleware for Everywhere {
    fn on_reply(&self) -> Option<ReplyLayer> {
        let log = Arc::clone(&self.0);
        Some(ErasedLayer::new(from_fn(
            move |req: ReplyRequest, next: Next<ReplyRequest, EventStream>| {
                let log = Arc::clone(&log);
                async move {
                    push(&log, "reply_pre");
                    let inner = next.run(req).await?;
                    Ok(Box::pin(log_at_end(inner, log, "reply_post".into())) as EventStream)
                }
            },
        )))
    }

    fn on_reasoning(&self) -> Option<ReasoningLayer> {
        let log = Arc::clone(&self.0);
        Some(ErasedLayer::new(from_fn(
            move |req: ReasoningRequest, next: Next<ReasoningRequest, EventStream>| {
                let log = Arc::clone(&log);
                async move {
                    push(&log, "reasoning_pre");
                    let inner = next.run(req).await?;
                    Ok(Box::pin(log_at_end(inner, log, "reasoning_post".into())) as EventStream)
                }
            },
        )))
    }

    fn on_model_call(&self) -> Option<ModelCallLayer> {
        let log = Arc::clone(&self.0);
        Some(ErasedLayer::new(from_fn(
            move |req: ModelCallRequest, next: Next<ModelCallRequest, ModelOutput>| {
                let log = Arc::clone(&log);
                async move {
                    push(&log, "model_call_pre");
                    let out = next.run(req).await;
                    push(&log, "model_call_post");
                    out
                }
            },
        )))
    }

    fn on_system_prompt(&self) -> Option<Arc<dyn SystemPromptTransformer>> {
        let log = Arc::clone(&self.0);
        Some(Arc::new(prompt_fn(move |_ctx, p| {
            push(&log, "system_prompt");
            async move { Ok(p) }
        })))
    }
}

#[tokio::test]
async fn one_middleware_on_four_positions() {
    let log: Log = Log::default();
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(text_model("hi"))
        .middleware(Everywhere(Arc::clone(&log)))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hello")).await.unwrap();
    // The reference also runs the fold once before reasoning, to count tokens for compression;
    // towerscope does that only for an agent with a ContextConfig (tests/compression.rs), so
    // this agent builds the prompt once per round, inside reasoning.
    assert_eq!(
        log.lock().unwrap().join(", "),
        "reply_pre, reasoning_pre, system_prompt, model_call_pre, model_call_post, reasoning_post, reply_post"
    );
}
