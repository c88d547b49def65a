//! Runtime-state hints (the reference's `_inject_runtime_state`): before each reasoning step,
//! after context compression, the agent may append a `<system-reminder>` [`HintBlock`] to its
//! reply's message in the context, and emit a `HINT_BLOCK` event, telling the model:
//!
//! - `current-time` and `timezone`: when no earlier hint of the context records the time (the
//!   first reply, or right after a compression removed it), or more than
//!   [`HintConfig::time_interval`] passed since the one recorded;
//! - `context-length`: in the first round of a reply, when the round's input (as the
//!   compressor counted it; no count, no hint) is within `context_buffer_ratio` of the
//!   compression trigger, with the `CompressContext` tool's invitation when it is offered;
//! - [`HintConfig::extra_fields`](crate::HintConfig::extra_fields): added to any hint, never a reason for one.
//!
//! On by default, as in the reference; [`HintConfig::disabled`](crate::HintConfig::disabled) turns them off, and then the
//! step does no work at all. The stream order of a first reply is `REPLY_START, HINT_BLOCK,
//! MODEL_CALL_START, …`. The hint is part of the context: the model sees it in every later
//! round, which is how it perceives time passing (the reference's reasoning).
//!
//! # Example
//!
//! ```
//! use std::time::{Duration, UNIX_EPOCH};
//! use towerscope_agent::{Agent, HintConfig, clock::Clock};
//! use towerscope_core::{AgentEvent, HintContent, Msg, ReplyItem};
//! use towerscope_models::{ScriptedModel, ScriptedResponse};
//! use futures_util::StreamExt;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), towerscope_core::AgentError> {
//! let clock = Clock::fixed(UNIX_EPOCH + Duration::from_secs(1_795_248_355));
//! let model = ScriptedModel::new("m", [ScriptedResponse::text("Hi!")]);
//! let agent = Agent::builder("a").model(model).hints(HintConfig::new().clock(clock)).build()?;
//! let mut stream = agent.reply_stream(Msg::user("user", "hello"));
//! let mut hint = None;
//! while let Some(item) = stream.next().await {
//!     if let ReplyItem::Event(AgentEvent::HintBlock(e)) = item? {
//!         if let HintContent::Text(text) = e.hint {
//!             hint = Some(text);
//!         }
//!     }
//! }
//! assert_eq!(hint.as_deref(), Some(
//!     "<system-reminder>Treat the following as the ground truth at this point of the conversation. Anything \
//!      stated earlier is outdated, and a later reminder, if any, supersedes this one:\n\
//!      <current-time>2026-11-21T08:05:55</current-time>\n<timezone>UTC</timezone>\n</system-reminder>"));
//! # Ok(()) }
//! ```

use std::time::{Duration, SystemTime};

use towerscope_core::{AgentContext, ContentBlock, HintBlock, HintBlockEvent, HintContent, MediaBlock, Msg, Role};

use crate::compress::{COMPRESS_TOOL, RoundTokens};
use crate::emit::Emitter;
use crate::hint_config::HintConfig;
use crate::runtime::Runtime;

/// Injects this round's hint, if any (called once per round, by the reply loop).
pub(crate) async fn inject(runtime: &Runtime, ctx: &AgentContext, emit: &Emitter) {
    let Some(cfg) = &runtime.hints else {
        return;
    };
    let now = cfg.clock.now();
    let mut fields: Vec<(&str, String)> = Vec::new();
    let inject_time = {
        let state = runtime.lock_state();
        match last_time_hint(&state.context, &cfg.source) {
            None => true,
            Some(text) => recorded_time(text, cfg).is_none_or(|then| elapsed_too_long(then, now, cfg.time_interval)),
        }
    };
    if inject_time {
        fields.push(("current-time", cfg.timezone.format(now)));
        fields.push(("timezone", cfg.timezone.name.clone()));
    }
    if ctx.iteration() == 0 {
        if let Some(text) = context_length(runtime, ctx) {
            fields.push(("context-length", text));
        }
    }
    if fields.is_empty() {
        return;
    }
    let mut lines: Vec<String> = fields.into_iter().map(|(k, v)| format!("<{k}>{v}</{k}>")).collect();
    lines.extend(cfg.extra_fields.iter().map(|(k, v)| format!("<{k}>{v}</{k}>")));
    let text = cfg.template.replace("{runtime_state}", &lines.join("\n"));
    let block = HintBlock::new(text, Some(cfg.source.clone()));
    let event = cfg.emit_event.then(|| (block.id.clone(), block.hint.clone()));
    runtime
        .lock_state()
        .append_to_reply(&runtime.name, ctx.reply_id(), [ContentBlock::Hint(block)]);
    if let Some((block_id, hint)) = event {
        let source = Some(cfg.source.clone());
        emit.event(|| HintBlockEvent::new(ctx.reply_id(), block_id, hint, source).into())
            .await;
    }
}

/// The text of the newest hint of this source that records a time.
fn last_time_hint<'a>(context: &'a [std::sync::Arc<Msg>], source: &str) -> Option<&'a str> {
    context
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.content.iter().rev())
        .find_map(|b| match b {
            ContentBlock::Hint(h) if h.source.as_deref() == Some(source) => {
                hint_text(&h.hint).filter(|t| t.contains("<current-time>"))
            }
            _ => None,
        })
}

fn hint_text(hint: &HintContent) -> Option<&str> {
    match hint {
        HintContent::Text(t) => Some(t),
        HintContent::Blocks(blocks) => blocks.iter().find_map(|b| match b {
            MediaBlock::Text(t) => Some(t.text.as_str()),
            MediaBlock::Data(_) => None,
        }),
    }
}

fn between<'a>(text: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find(&format!("</{tag}>"))? + start;
    Some(&text[start..end])
}

/// The time a hint recorded, read in the timezone it names (the configured one when it names
/// another: without a timezone database only the configured offset is known).
fn recorded_time(text: &str, cfg: &HintConfig) -> Option<SystemTime> {
    cfg.timezone.parse(between(text, "current-time")?)
}

fn elapsed_too_long(then: SystemTime, now: SystemTime, interval: Duration) -> bool {
    // A recorded time in the future (the clock went back) injects again, as the reference.
    now.duration_since(then).map_or(true, |elapsed| elapsed > interval)
}

/// The context-length line, when the round's count is within the buffer of the trigger.
fn context_length(runtime: &Runtime, ctx: &AgentContext) -> Option<String> {
    let config = runtime.context.as_ref()?;
    let counted = ctx.get::<RoundTokens>().filter(|t| t.iteration == ctx.iteration())?;
    let size = config.context_size.unwrap_or_else(|| runtime.model.context_size());
    if counted.tokens <= config.buffer_tokens(size) {
        return None;
    }
    let mut text = format!(
        "Your current context contains {} tokens. When reaching {} tokens, your context will be compressed.",
        counted.tokens,
        config.trigger_tokens(size)
    );
    if config.compression_tool {
        text.push_str(&format!(
            " No task is in progress, so judge by yourself whether the context should be compressed now by calling `{COMPRESS_TOOL}`."
        ));
    }
    Some(text)
}
