//! A layer's code after the end of a stream runs: the agent reads the model's and the tool's
//! streams to their end, past the final chunk and the final `ToolResponse`.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use futures_util::{StreamExt, stream};
use towerscope_agent::Agent;
use towerscope_agent::HintConfig;
use towerscope_agent::toolkit::FunctionTool;
use towerscope_core::{
    ActingNext, ActingRequest, AgentError, ChatResponse, ModelCallNext, ModelCallRequest, ModelOutput, Msg, ToolItem,
    ToolStream, from_fn,
};
use towerscope_models::{ScriptedModel, ScriptedResponse};

type Log = Arc<Mutex<Vec<String>>>;

fn push(log: &Log, entry: String) {
    log.lock().unwrap().push(entry);
}

/// `inner`, then `entry` logged when it ends.
fn then_log<S: futures_util::Stream + Send + 'static>(
    inner: S,
    log: Log,
    entry: String,
) -> impl futures_util::Stream<Item = S::Item> + Send + 'static {
    inner.chain(stream::once(async move { push(&log, entry) }).filter_map(|()| async { None }))
}

fn model_logger(
    name: &'static str,
    log: Log,
) -> impl Fn(ModelCallRequest, ModelCallNext) -> futures_util::future::BoxFuture<'static, Result<ModelOutput, AgentError>>
+ Clone {
    move |req, next| {
        let log = Arc::clone(&log);
        Box::pin(async move {
            push(&log, format!("{name}_pre"));
            match next.run(req).await? {
                ModelOutput::Stream(inner) => {
                    let items = Arc::clone(&log);
                    let inner = inner.inspect(move |c: &Result<ChatResponse, AgentError>| {
                        let last = c.as_ref().is_ok_and(|c| c.is_last);
                        push(&items, format!("{name}_{}", if last { "last" } else { "chunk" }));
                    });
                    Ok(ModelOutput::Stream(Box::pin(then_log(
                        inner,
                        log,
                        format!("{name}_post"),
                    ))))
                }
                complete => {
                    push(&log, format!("{name}_post"));
                    Ok(complete)
                }
            }
        })
    }
}

fn acting_logger(
    name: &'static str,
    log: Log,
) -> impl Fn(ActingRequest, ActingNext) -> futures_util::future::BoxFuture<'static, Result<ToolStream, AgentError>> + Clone
{
    move |req, next| {
        let log = Arc::clone(&log);
        Box::pin(async move {
            push(&log, format!("{name}_pre"));
            let inner = next.run(req).await?;
            let items = Arc::clone(&log);
            let inner = inner.inspect(move |item: &Result<ToolItem, AgentError>| {
                let kind = match item {
                    Ok(ToolItem::Chunk(_)) => "chunk",
                    Ok(ToolItem::Response(_)) => "response",
                    Err(_) => "err",
                };
                push(&items, format!("{name}_{kind}"));
            });
            Ok(Box::pin(then_log(inner, log, format!("{name}_post"))) as ToolStream)
        })
    }
}

/// Add two numbers.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[tokio::test]
async fn model_call_layers_see_pre_chunks_and_post_in_onion_order() {
    let log = Log::default();
    let model = ScriptedModel::new("m", [ScriptedResponse::text("one two")]).streaming(true);
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model)
        .on_model_call(from_fn(model_logger("outer", Arc::clone(&log))))
        .on_model_call(from_fn(model_logger("inner", Arc::clone(&log))))
        .build()
        .unwrap();
    agent.reply(Msg::user("user", "hi")).await.unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        [
            "outer_pre",
            "inner_pre",
            "inner_chunk",
            "outer_chunk",
            "inner_chunk",
            "outer_chunk",
            "inner_last",
            "outer_last",
            "inner_post",
            "outer_post"
        ]
    );
}

#[tokio::test]
async fn acting_layers_see_pre_items_and_post_in_onion_order() {
    let log = Log::default();
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
            ScriptedResponse::text("3"),
        ],
    );
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model)
        .tool(FunctionTool::new(
            "add",
            |x: Add| async move { (x.a + x.b).to_string() },
        ))
        .on_acting(from_fn(acting_logger("outer", Arc::clone(&log))))
        .on_acting(from_fn(acting_logger("inner", Arc::clone(&log))))
        .build()
        .unwrap();
    let out = common::collect(agent.reply_stream(Msg::user("user", "1 + 2?"))).await;
    assert_eq!(out.final_text().as_deref(), Some("3"));
    assert_eq!(
        *log.lock().unwrap(),
        [
            "outer_pre",
            "inner_pre",
            "inner_chunk",
            "outer_chunk",
            "inner_response",
            "outer_response",
            "inner_post",
            "outer_post"
        ]
    );
}

#[tokio::test]
async fn an_error_after_the_final_chunk_rejects_the_answer() {
    // A guardrail that reads the whole answer and rejects it after the last chunk.
    let model = ScriptedModel::new("m", [ScriptedResponse::text("forbidden words")]).streaming(true);
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model)
        .on_model_call(from_fn(|req: ModelCallRequest, next: ModelCallNext| async move {
            match next.run(req).await? {
                ModelOutput::Stream(inner) => {
                    let verdict = stream::once(async { Err(AgentError::validation("the answer broke a rule")) });
                    Ok(ModelOutput::Stream(Box::pin(inner.chain(verdict))))
                }
                complete => Ok(complete),
            }
        }))
        .build()
        .unwrap();
    let out = common::collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    assert!(
        out.error
            .as_ref()
            .is_some_and(|e| e.to_string().contains("broke a rule")),
        "{:?}",
        out.error
    );
    let state = agent.state();
    assert_eq!(state.context.len(), 1, "the rejected answer is not stored");
}

#[tokio::test]
async fn a_chunk_after_the_final_one_is_ignored() {
    // A layer that (wrongly) yields one more chunk after the final one: the agent reads it, so
    // the layer's post-code runs, but the answer is the one the final chunk completed.
    let model = ScriptedModel::new("m", [ScriptedResponse::text("one two")]).streaming(true);
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model)
        .on_model_call(from_fn(|req: ModelCallRequest, next: ModelCallNext| async move {
            match next.run(req).await? {
                ModelOutput::Stream(inner) => {
                    let extra = stream::once(async {
                        Ok(ChatResponse::chunk(vec![towerscope_core::ContentBlock::text(" three")]))
                    });
                    Ok(ModelOutput::Stream(Box::pin(inner.chain(extra))))
                }
                complete => Ok(complete),
            }
        }))
        .build()
        .unwrap();
    let out = common::collect(agent.reply_stream(Msg::user("user", "hi"))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.final_text().as_deref(), Some("one two"));
    assert_eq!(out.kinds().iter().filter(|k| **k == "TEXT_BLOCK_END").count(), 1);
    assert_eq!(out.kinds().last(), Some(&"REPLY_END"));
    let state = agent.state();
    assert_eq!(state.context.len(), 2);
    assert_eq!(state.context[1].text_content().as_deref(), Some("one two"));
}

#[tokio::test]
async fn an_item_after_the_tool_response_is_ignored() {
    let model = ScriptedModel::new(
        "m",
        [
            ScriptedResponse::tool_call("c1", "add", r#"{"a": 1, "b": 2}"#),
            ScriptedResponse::text("3"),
        ],
    );
    let agent = Agent::builder("a")
        .hints(HintConfig::disabled())
        .model(model.clone())
        .tool(FunctionTool::new(
            "add",
            |x: Add| async move { (x.a + x.b).to_string() },
        ))
        .on_acting(from_fn(|req: ActingRequest, next: ActingNext| async move {
            let inner = next.run(req).await?;
            let extra = stream::once(async { Ok(ToolItem::Chunk(towerscope_core::ToolChunk::text("late"))) });
            Ok(Box::pin(inner.chain(extra)) as ToolStream)
        }))
        .build()
        .unwrap();
    let out = common::collect(agent.reply_stream(Msg::user("user", "1 + 2?"))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.final_text().as_deref(), Some("3"));
    let kinds = out.kinds();
    assert_eq!(kinds.iter().filter(|k| **k == "TOOL_RESULT_TEXT_DELTA").count(), 1);
    assert_eq!(kinds.iter().filter(|k| **k == "TOOL_RESULT_END").count(), 1);
    // The model saw the tool's own result, not the late chunk.
    let requests = model.requests();
    let result = common::results(requests[1].messages.last().unwrap())[0];
    let output = serde_json::to_value(&result.output).unwrap();
    let texts: Vec<&str> = output
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert_eq!(texts, ["3"]);
}
