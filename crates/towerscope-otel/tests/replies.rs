//! Replies that do not simply run to the end: dropped streams, parked replies resumed by a user
//! confirmation or an external execution result, interruptions, and an agent called by a tool of
//! another agent.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use futures_util::{StreamExt, stream};
use opentelemetry::trace::TraceContextExt;
use opentelemetry::{Context, Value};
use serde_json::json;
use support::*;
use towerscope_agent::toolkit::{FunctionTool, Tool, ToolChunkStream};
use towerscope_agent::{Agent, ReactConfig};
use towerscope_core::{
    AgentError, AgentEvent, ConfirmResult, ExternalExecutionResultEvent, Msg, PermissionDecision, ReplyItem, ToolChunk,
    ToolResultBlock, ToolResultState, UserConfirmResultEvent, UserInterruptEvent,
};
use towerscope_models::{ScriptedModel, ScriptedResponse};
use towerscope_otel::TracingMiddleware;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_stream_dropped_on_another_task_ends_its_spans() {
    let (provider, exporter) = in_memory();
    let model = ScriptedModel::new(
        "m",
        [ScriptedResponse::text("one two three four five six").chunk_delay(Duration::from_millis(5))],
    );
    let agent = Agent::builder("a")
        .model(model.clone())
        .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
        .build()
        .unwrap();

    let mut stream = agent.reply_stream(Msg::user("user", "count"));
    // Read until the model is in the middle of its stream.
    while let Some(item) = stream.next().await {
        if matches!(item.unwrap(), ReplyItem::Event(AgentEvent::TextBlockDelta(_))) {
            break;
        }
    }
    assert!(
        !Context::current().has_active_span(),
        "a span was left current on the consumer's task"
    );
    tokio::spawn(async move {
        drop(stream);
        assert!(!Context::current().has_active_span());
    })
    .await
    .unwrap();
    assert!(!Context::current().has_active_span());

    let spans = spans(&exporter);
    assert_eq!(names(&spans), ["chat m", "invoke_agent a"]);
    for span in &spans {
        assert_eq!(
            str_attr(span, "error.type").as_deref(),
            Some("cancelled"),
            "{}",
            span.name
        );
        assert!(error_description(span).unwrap().contains("dropped"));
        // As every failed span, one `exception` event (backends list errors from them).
        let (kind, message) = exception(span).expect("an exception event");
        assert_eq!(kind, "cancelled", "{}", span.name);
        assert!(message.contains("dropped"), "{message}");
    }
    // The agent is usable again, and its next reply is a new root span, not a child of the
    // dropped one.
    exporter.reset();
    model.push(ScriptedResponse::text("again"));
    agent.reply(Msg::user("user", "again")).await.unwrap();
    let again = support::spans(&exporter);
    let root = one(&again, "invoke_agent a");
    assert!(is_root(root) && is_ok(root));
}

#[tokio::test]
async fn a_stream_dropped_after_its_final_message_ends_its_span_normally() {
    let (provider, exporter) = in_memory();
    let agent = Agent::builder("a")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("hi")]))
        .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
        .build()
        .unwrap();
    let mut stream = agent.reply_stream(Msg::user("user", "hi"));
    while let Some(item) = stream.next().await {
        if matches!(item.unwrap(), ReplyItem::Final(_)) {
            break;
        }
    }
    drop(stream);
    let spans = spans(&exporter);
    let root = one(&spans, "invoke_agent a");
    assert!(is_ok(root));
    assert_eq!(
        attr(root, "gen_ai.response.finish_reasons"),
        Some(string_array(&["completed"]))
    );
}

/// A consumer that stops at `REPLY_END` (a web front-end's "the run finished") ends the reply's
/// span as the reply ended, not as cancelled (every reply read that way was an error with
/// `error.type` `cancelled`), with its model calls' usage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_dropped_after_its_reply_end_ends_its_span_as_the_reply_ended() {
    let (provider, exporter) = in_memory();
    let agent = Agent::builder("a")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("hi").with_usage(3, 4)]))
        .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
        .build()
        .unwrap();
    let mut stream = agent.reply_stream(Msg::user("user", "hi"));
    while let Some(item) = stream.next().await {
        if matches!(item.unwrap(), ReplyItem::Event(AgentEvent::ReplyEnd(_))) {
            break;
        }
    }
    drop(stream);
    let spans = spans(&exporter);
    let root = one(&spans, "invoke_agent a");
    assert!(is_ok(root), "{:?} {:?}", root.status, str_attr(root, "error.type"));
    assert_eq!(
        attr(root, "gen_ai.response.finish_reasons"),
        Some(string_array(&["completed"]))
    );
    // The usage of its model calls, without the final message that carries the reply's.
    assert_eq!(
        (
            int_attr(root, "gen_ai.usage.input_tokens"),
            int_attr(root, "gen_ai.usage.output_tokens")
        ),
        (Some(3), Some(4))
    );
}

/// An agent whose model fails with "down"; `Agent::reply` returns at that error and drops the
/// reply's stream.
fn agent_with_a_model_down(tracing: TracingMiddleware) -> Agent {
    Agent::builder("a")
        .model(ScriptedModel::new(
            "m",
            [ScriptedResponse::error(AgentError::model("down"))],
        ))
        .middleware(tracing)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_failed_reply_keeps_its_first_error_when_agent_reply_drops_the_stream() {
    let (provider, exporter) = in_memory();
    let agent = agent_with_a_model_down(TracingMiddleware::builder().tracer_provider(&provider).build());
    let err = agent.reply(Msg::user("user", "hi")).await.unwrap_err();
    assert!(matches!(err, AgentError::Model { .. }), "{err}");

    let spans = spans(&exporter);
    let root = one(&spans, "invoke_agent a");
    // `attr` fails if the attribute was set more than once.
    assert_eq!(str_attr(root, "error.type").as_deref(), Some("model_error"));
    assert_eq!(
        error_description(root).as_deref(),
        Some("model error; message not recorded: content capture is off"),
        "the real failure, without its message (content capture is off)"
    );
    let exceptions = root.events.iter().filter(|e| e.name == "exception").count();
    assert_eq!(exceptions, 1);
    assert_eq!(attr(root, "gen_ai.response.finish_reasons"), None);
}

#[tokio::test]
async fn with_content_capture_a_failed_reply_records_the_real_error_message() {
    let (provider, exporter) = in_memory();
    let agent = agent_with_a_model_down(
        TracingMiddleware::builder()
            .tracer_provider(&provider)
            .capture_content(true)
            .build(),
    );
    agent.reply(Msg::user("user", "hi")).await.unwrap_err();
    let spans = spans(&exporter);
    let root = one(&spans, "invoke_agent a");
    assert_eq!(str_attr(root, "error.type").as_deref(), Some("model_error"));
    let description = error_description(root).unwrap();
    assert_eq!(description, "model error: down");
}

fn asking_agent(tracing: TracingMiddleware) -> Agent {
    let mut config = ReactConfig::default();
    config.default_permission = PermissionDecision::Ask {
        suggested_rules: Vec::new(),
    };
    Agent::builder("careful")
        .model(ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("call-1", "add", r#"{"a": 1, "b": 2}"#),
                ScriptedResponse::text("1 + 2 = 3"),
            ],
        ))
        .tool(add_tool())
        .config(config)
        .middleware(tracing)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_reply_parked_for_confirmation_and_resumed() {
    let (provider, exporter) = in_memory();
    let agent = asking_agent(TracingMiddleware::builder().tracer_provider(&provider).build());

    let first = collect(agent.reply_stream(Msg::user("user", "1 + 2?"))).await;
    let asked = first
        .events
        .iter()
        .find_map(|e| match e {
            AgentEvent::RequireUserConfirm(e) => Some(e.clone()),
            _ => None,
        })
        .unwrap();
    let parked = spans(&exporter);
    assert_eq!(names(&parked), ["chat m", "invoke_agent careful"]);
    let first_root = one(&parked, "invoke_agent careful");
    assert_eq!(
        str_attr(first_root, "agentscope.agent.hitl_pending_tools").as_deref(),
        Some(r#"["add"]"#)
    );
    assert_eq!(attr(first_root, "agentscope.agent.incoming_event_type"), None);
    assert_eq!(
        attr(first_root, "gen_ai.response.finish_reasons"),
        None,
        "a parked reply has not finished"
    );
    assert!(is_ok(first_root));
    let reply_id = str_attr(first_root, "agentscope.agent.reply_id").unwrap();
    assert_eq!(asked.reply_id, reply_id);

    exporter.reset();
    let confirm = UserConfirmResultEvent::new(
        &asked.reply_id,
        vec![ConfirmResult::new(true, asked.tool_calls[0].clone())],
    );
    let second = collect(agent.reply_stream(confirm)).await;
    assert_eq!(second.final_msg.unwrap().text_content().as_deref(), Some("1 + 2 = 3"));

    let resumed = spans(&exporter);
    assert_eq!(names(&resumed), ["execute_tool add", "chat m", "invoke_agent careful"]);
    let root = one(&resumed, "invoke_agent careful");
    assert_eq!(str_attr(root, "agentscope.agent.reply_id"), Some(reply_id));
    assert_eq!(
        str_attr(root, "agentscope.agent.incoming_event_type").as_deref(),
        Some("user_confirm_result")
    );
    assert_eq!(attr(root, "agentscope.agent.hitl_pending_tools"), None);
    assert!(resumed[..2].iter().all(|s| is_child_of(s, root)));
    assert_ne!(
        root.span_context.trace_id(),
        first_root.span_context.trace_id(),
        "each call is its own trace; the reply id links them"
    );
}

/// An agent that asks about `add` (call `call-1`) and `second` (`call-2`, `add` or the external
/// `lookup`) in one round, parks, and is resumed with only the call of `confirmed` allowed:
/// the resumed reply and the root span of its trace.
async fn resume_one_of_two(second: &str, confirmed: &str) -> (Collected, opentelemetry_sdk::trace::SpanData) {
    let (provider, exporter) = in_memory();
    let agent = Agent::builder("careful")
        .model(ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("call-1", "add", r#"{"a": 1, "b": 2}"#).and_tool_call(
                    "call-2",
                    second,
                    r#"{"a": 3, "b": 4}"#,
                ),
                ScriptedResponse::text("done"),
            ],
        ))
        .tool(add_tool().requires_confirmation(|_| true))
        .tool(Lookup {
            schema: json!({"type": "object"}),
            ask: true,
        })
        .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
        .build()
        .unwrap();

    let first = collect(agent.reply_stream(Msg::user("user", "1 + 2, and the other"))).await;
    let asked: Vec<_> = first
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::RequireUserConfirm(e) => Some(e.clone()),
            _ => None,
        })
        .collect();
    let calls: Vec<_> = asked.iter().flat_map(|e| e.tool_calls.clone()).collect();
    assert_eq!(calls.len(), 2, "both calls are asked about in the first reply");
    let call = calls.iter().find(|c| c.id == confirmed).cloned().unwrap();

    exporter.reset();
    let confirm = UserConfirmResultEvent::new(&asked[0].reply_id, vec![ConfirmResult::new(true, call)]);
    let second = collect(agent.reply_stream(confirm)).await;
    let resumed = spans(&exporter);
    let root = one(&resumed, "invoke_agent careful").clone();
    (second, root)
}

/// A resume that answers one of two waiting calls parks again on the other without a request
/// event: its span still names the tool it waits on.
#[tokio::test]
async fn a_resume_that_parks_again_names_the_call_it_still_waits_on() {
    let (second, root) = resume_one_of_two("add", "call-1").await;
    assert!(
        !second
            .events
            .iter()
            .any(|e| matches!(e, AgentEvent::RequireUserConfirm(_))),
        "the agent asked in the first reply, not again"
    );
    assert_eq!(
        str_attr(&root, "agentscope.agent.hitl_pending_tools").as_deref(),
        Some(r#"["add"]"#),
        "the second call still waits"
    );
    assert_eq!(attr(&root, "agentscope.agent.external_execution_pending_tools"), None);
    assert_eq!(attr(&root, "gen_ai.response.finish_reasons"), None, "parked again");
}

/// A resume that confirms an external call (now waiting for its result, asked for in this
/// call) and leaves another waiting for confirmation (asked for in the first call): the span
/// names both.
#[tokio::test]
async fn a_resume_that_parks_again_names_every_call_it_waits_on() {
    let (second, root) = resume_one_of_two("lookup", "call-2").await;
    assert!(
        second
            .events
            .iter()
            .any(|e| matches!(e, AgentEvent::RequireExternalExecution(_))),
        "the confirmed call now waits for its result"
    );
    assert_eq!(
        str_attr(&root, "agentscope.agent.hitl_pending_tools").as_deref(),
        Some(r#"["add"]"#)
    );
    assert_eq!(
        str_attr(&root, "agentscope.agent.external_execution_pending_tools").as_deref(),
        Some(r#"["lookup"]"#)
    );
}

#[tokio::test]
async fn an_interrupted_reply_ends_ok_with_the_interrupted_reason() {
    let (provider, exporter) = in_memory();
    let agent = asking_agent(TracingMiddleware::builder().tracer_provider(&provider).build());
    let first = collect(agent.reply_stream(Msg::user("user", "1 + 2?"))).await;
    let reply_id = first.events[0].reply_id().unwrap().to_owned();
    exporter.reset();

    collect(agent.reply_stream(UserInterruptEvent::new(&reply_id))).await;
    let spans = spans(&exporter);
    let root = one(&spans, "invoke_agent careful");
    assert!(is_ok(root));
    assert_eq!(
        attr(root, "gen_ai.response.finish_reasons"),
        Some(string_array(&["interrupted"]))
    );
    assert_eq!(attr(root, "agentscope.agent.incoming_event_type"), None);
    assert_eq!(str_attr(root, "agentscope.agent.reply_id"), Some(reply_id.to_string()));
}

#[tokio::test(start_paused = true)]
async fn agent_interrupt_ends_the_running_chat_span_ok_as_interrupted() {
    let (provider, exporter) = in_memory();
    let model = ScriptedModel::new("m", [ScriptedResponse::text("late").delay(Duration::from_secs(30))]);
    let agent = Agent::builder("a")
        .model(model)
        .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
        .build()
        .unwrap();
    let running = tokio::spawn({
        let agent = agent.clone();
        async move { collect(agent.reply_stream(Msg::user("user", "hi"))).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(agent.interrupt());
    running.await.unwrap();
    let spans = spans(&exporter);
    let chat = one(&spans, "chat m");
    assert!(
        is_ok(chat),
        "an interrupted call ends OK, as in the reference: {:?}",
        chat.status
    );
    assert_eq!(
        attr(chat, "gen_ai.response.finish_reasons"),
        Some(string_array(&["interrupted"]))
    );
    assert_eq!(attr(chat, "error.type"), None);
    let root = one(&spans, "invoke_agent a");
    assert!(is_ok(root));
    assert_eq!(
        attr(root, "gen_ai.response.finish_reasons"),
        Some(string_array(&["interrupted"]))
    );
}

/// A tool executed by the caller, outside the agent; with `ask`, after the user confirms it.
struct Lookup {
    schema: serde_json::Value,
    ask: bool,
}

impl Tool for Lookup {
    fn name(&self) -> &str {
        "lookup"
    }

    fn description(&self) -> &str {
        "Look a word up in the caller's dictionary."
    }

    fn input_schema(&self) -> &serde_json::Value {
        &self.schema
    }

    fn external(&self) -> bool {
        true
    }

    fn check_permission(&self, _input: &serde_json::Value) -> Option<PermissionDecision> {
        self.ask.then(|| PermissionDecision::Ask {
            suggested_rules: Vec::new(),
        })
    }

    fn call(&self, _input: serde_json::Value) -> ToolChunkStream {
        Box::pin(stream::iter([Ok(ToolChunk::text("never called"))]))
    }
}

#[tokio::test]
async fn an_external_execution_result_gets_a_zero_length_span() {
    let (provider, exporter) = in_memory();
    let agent = Agent::builder("delegator")
        .model(ScriptedModel::new(
            "m",
            [
                ScriptedResponse::tool_call("call-9", "lookup", r#"{"word": "otter"}"#),
                ScriptedResponse::text("An otter is a mammal."),
            ],
        ))
        .tool(Lookup {
            schema: json!({"type": "object", "properties": {"word": {"type": "string"}}}),
            ask: false,
        })
        .middleware(
            TracingMiddleware::builder()
                .tracer_provider(&provider)
                .capture_content(true)
                .build(),
        )
        .build()
        .unwrap();

    let first = collect(agent.reply_stream(Msg::user("user", "otter?"))).await;
    let submitted = first
        .events
        .iter()
        .find_map(|e| match e {
            AgentEvent::RequireExternalExecution(e) => Some(e.clone()),
            _ => None,
        })
        .unwrap();
    let parked = spans(&exporter);
    assert_eq!(
        names(&parked),
        ["chat m", "invoke_agent delegator"],
        "an external tool is not executed here"
    );
    let first_root = one(&parked, "invoke_agent delegator");
    assert_eq!(
        str_attr(first_root, "agentscope.agent.external_execution_pending_tools").as_deref(),
        Some(r#"["lookup"]"#)
    );
    assert_eq!(attr(first_root, "agentscope.agent.hitl_pending_tools"), None);
    exporter.reset();

    // A result the agent refuses (for a call the reply does not wait on) ran nowhere: the
    // failed resume records no execute_tool span, with content capture or without.
    let wrong = ToolResultBlock::new("call-x", "lookup", "R", ToolResultState::Success);
    let refused = ExternalExecutionResultEvent::new(&submitted.reply_id, vec![wrong.clone()]);
    assert!(collect(agent.reply_stream(refused)).await.error.is_some());
    assert!(
        agent
            .reply(ExternalExecutionResultEvent::new(&submitted.reply_id, vec![wrong]))
            .await
            .is_err()
    );
    let refused = spans(&exporter);
    assert_eq!(names(&refused), ["invoke_agent delegator", "invoke_agent delegator"]);
    exporter.reset();

    let result = ToolResultBlock::new("call-9", "lookup", "R", ToolResultState::Success);
    let resume = ExternalExecutionResultEvent::new(&submitted.reply_id, vec![result]);
    collect(agent.reply_stream(resume)).await;

    let spans = spans(&exporter);
    assert_eq!(
        names(&spans),
        ["execute_tool lookup", "chat m", "invoke_agent delegator"]
    );
    let root = one(&spans, "invoke_agent delegator");
    assert_eq!(
        str_attr(root, "agentscope.agent.incoming_event_type").as_deref(),
        Some("external_execution_result")
    );
    assert_eq!(
        str_attr(root, "agentscope.agent.reply_id"),
        Some(submitted.reply_id.to_string())
    );
    let compensation = one(&spans, "execute_tool lookup");
    assert!(is_child_of(compensation, root));
    assert_eq!(compensation.start_time, compensation.end_time, "zero length");
    assert_eq!(compensation.status, opentelemetry::trace::Status::Unset);
    assert_eq!(
        attr(compensation, "agentscope.agent.is_external_execution"),
        Some(Value::Bool(true))
    );
    assert_eq!(str_attr(compensation, "gen_ai.tool.call.id").as_deref(), Some("call-9"));
    assert_eq!(str_attr(compensation, "gen_ai.tool.name").as_deref(), Some("lookup"));
    assert_eq!(
        str_attr(compensation, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(
        str_attr(compensation, "gen_ai.conversation.id"),
        Some(agent.session_id().to_string())
    );
    assert_eq!(
        str_attr(compensation, "gen_ai.tool.call.result").as_deref(),
        Some(r#""R""#)
    );
}

/// Ask the expert.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Ask {
    /// The question.
    question: String,
}

#[tokio::test]
async fn an_agent_called_by_a_tool_nests_under_the_tool_span() {
    let (provider, exporter) = in_memory();
    let tracing = TracingMiddleware::builder().tracer_provider(&provider).build();
    let expert = Agent::builder("expert")
        .model(ScriptedModel::new("expert-model", [ScriptedResponse::text("42")]))
        .middleware(tracing.clone())
        .build()
        .unwrap();
    let expert = Arc::new(expert);
    let ask = FunctionTool::new("ask_expert", move |args: Ask| {
        let expert = Arc::clone(&expert);
        async move {
            match expert.reply(Msg::user("user", args.question)).await {
                Ok(msg) => msg.text_content().unwrap_or_default(),
                Err(e) => e.to_string(),
            }
        }
    });
    let boss = Agent::builder("boss")
        .model(ScriptedModel::new(
            "boss-model",
            [
                ScriptedResponse::tool_call("c1", "ask_expert", r#"{"question": "meaning of life?"}"#),
                ScriptedResponse::text("The expert says 42."),
            ],
        ))
        .tool(ask)
        .middleware(tracing)
        .build()
        .unwrap();
    boss.reply(Msg::user("user", "meaning of life?")).await.unwrap();

    let spans = spans(&exporter);
    let boss_root = one(&spans, "invoke_agent boss");
    let tool = one(&spans, "execute_tool ask_expert");
    let expert_root = one(&spans, "invoke_agent expert");
    let expert_chat = one(&spans, "chat expert-model");
    assert!(is_root(boss_root));
    assert!(is_child_of(tool, boss_root));
    assert!(
        is_child_of(expert_root, tool),
        "the nested agent's span is under the tool's"
    );
    assert!(is_child_of(expert_chat, expert_root));
    assert!(
        named(&spans, "chat boss-model")
            .iter()
            .all(|s| is_child_of(s, boss_root))
    );
}

#[tokio::test]
async fn a_reply_started_under_a_span_is_its_child() {
    use opentelemetry::trace::{Tracer, TracerProvider};
    let (provider, exporter) = in_memory();
    let agent = Agent::builder("a")
        .model(ScriptedModel::new("m", [ScriptedResponse::text("hi")]))
        .middleware(TracingMiddleware::builder().tracer_provider(&provider).build())
        .build()
        .unwrap();
    let outer = provider.tracer("app").start("handle request");
    let cx = Context::current_with_span(outer);
    {
        use opentelemetry::context::FutureExt;
        agent
            .reply(Msg::user("user", "hi"))
            .with_context(cx.clone())
            .await
            .unwrap();
    }
    cx.span().end();
    let spans = spans(&exporter);
    assert!(is_child_of(
        one(&spans, "invoke_agent a"),
        one(&spans, "handle request")
    ));
}
