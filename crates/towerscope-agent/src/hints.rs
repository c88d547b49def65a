//! Runtime-state hints (the reference's `_inject_runtime_state`): before each reasoning step,
//! after context compression, the agent may append a `<system-reminder>` [`HintBlock`] to its
//! reply's message in the context, and emit a `HINT_BLOCK` event, telling the model:
//!
//! - `current-time` and `timezone`: when no earlier hint of the context records the time (the
//!   first reply, or right after a compression removed it), or more than
//!   [`HintConfig::time_interval`](crate::HintConfig::time_interval) passed since the one recorded;
//! - `tasks`: while tasks of the [task list](crate::tasks) are pending or in progress and the
//!   context holds neither a call of a task tool nor an earlier `tasks` line (they were
//!   compressed away, or the list was seeded): how many of each, and to use `TaskList`;
//! - `context-length`: in the first round of a reply, when the round's input (as the
//!   compressor counted it; no count, no hint) is within `context_buffer_ratio` of the
//!   compression trigger, with the `CompressContext` tool's invitation when it is offered and
//!   no task is in progress;
//! - `tool-error`: when the latest tool results of the reply are the same call (same tool, same
//!   arguments, whatever their key order) failing
//!   [`HintConfig::tool_retries_limit`](crate::HintConfig::tool_retries_limit) times or more in a
//!   row: [`HintConfig::tool_retries_hint`](crate::HintConfig::tool_retries_hint), so the model
//!   stops retrying it as is;
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

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, SystemTime};
use towerscope_core::{
    AgentContext, AgentEvent, ContentBlock, HintBlock, HintBlockEvent, HintContent, Id, MediaBlock, Role,
    ToolResultState,
};

use crate::compress::{COMPRESS_TOOL, RoundTokens};
use crate::hint_config::Hints;
use crate::runtime::Runtime;

/// A line's value: text, or the time (written in the configured timezone).
#[derive(Clone, Copy)]
enum Value<'a> {
    Text(&'a str),
    Time(SystemTime),
}

impl Value<'_> {
    /// The length of the written value: a time is `YYYY-MM-DDTHH:MM:SS` (a year past 9999 only
    /// makes the text grow once).
    fn len(self) -> usize {
        match self {
            Value::Text(text) => text.len(),
            Value::Time(_) => "YYYY-MM-DDTHH:MM:SS".len(),
        }
    }
}

/// Where the template's first `{runtime_state}` starts and ends (both at its end, when it has
/// none): found when the configuration is checked, once per agent (once per process for the
/// default), not at every hint.
pub(crate) fn placeholder_span(template: &str) -> (usize, usize) {
    const PLACEHOLDER: &str = "{runtime_state}";
    template
        .find(PLACEHOLDER)
        .map_or((template.len(), template.len()), |i| (i, i + PLACEHOLDER.len()))
}

/// Injects this round's hint, if any, and returns its `HINT_BLOCK` event when `events` are
/// read (called once per round, by the reply loop, which sends the event). A round with nothing
/// to tell reads the context back to the newest time it recorded and allocates nothing.
pub(crate) fn inject(runtime: &Runtime, ctx: &AgentContext, events: bool) -> Option<AgentEvent> {
    let hints = runtime.hints.as_ref()?;
    let cfg = &hints.config;
    let now = cfg.clock.now();
    let (inject_time, open, tasks, tool_error) = {
        let state = runtime.lock_state();
        let inject_time =
            newest_time(&state.context, hints).is_none_or(|then| elapsed_too_long(then, now, cfg.time_interval));
        let open = crate::tasks::open_counts(&state.tasks);
        let unaware = (open != (0, 0) && !aware_of_tasks(&state.context, hints)).then_some(open);
        let tool_error = repeated_tool_error(&state.context, &runtime.name, cfg);
        (inject_time, open, unaware, tool_error)
    };
    let context_length = if ctx.iteration() == 0 {
        // The invitation to compress only between tasks (none in progress).
        context_length(runtime, ctx, open.0 > 0)
    } else {
        None
    };
    if !inject_time && tasks.is_none() && context_length.is_none() && tool_error.is_none() {
        return None;
    }
    // The lines' values, made first so that the text is allocated once at its length: the
    // hint stays in the context for the rest of the conversation, with no spare room.
    let tasks_text = tasks.map(|(in_progress, pending)| {
        format!(
            "You have {in_progress} in-progress tasks and {pending} pending tasks. Use `TaskList` to view them if you \
             don't know."
        )
    });
    let tool_error_text = tool_error.map(|(tool, count)| {
        cfg.tool_retries_hint
            .replace("{tool_name}", &tool)
            .replace("{count}", &count.to_string())
    });
    let time = inject_time.then_some(("current-time", Value::Time(now)));
    let timezone = inject_time.then_some(("timezone", Value::Text(&cfg.timezone.name)));
    let tasks = tasks_text.as_deref().map(|t| ("tasks", Value::Text(t)));
    let context_length = context_length.as_deref().map(|l| ("context-length", Value::Text(l)));
    let tool_error = tool_error_text.as_deref().map(|h| ("tool-error", Value::Text(h)));
    let extra = cfg.extra_fields.iter().map(|(k, v)| (k.as_str(), Value::Text(v)));
    let lines = || {
        [time, timezone, tasks, context_length, tool_error]
            .into_iter()
            .flatten()
            .chain(extra.clone())
    };
    // The template around the `<key>value</key>` lines, written piece by piece (a `write!` per
    // line went through the formatting machinery for its tags too). The span was found in this
    // very template, so both slices are in bounds.
    let before = cfg.template.get(..hints.split.0).unwrap_or_default();
    let after = cfg.template.get(hints.split.1..).unwrap_or_default();
    let length = before.len()
        + after.len()
        + lines()
            .enumerate()
            .map(|(i, (key, value))| usize::from(i > 0) + 2 * key.len() + "<></>".len() + value.len())
            .sum::<usize>();
    let mut text = String::with_capacity(length);
    text.push_str(before);
    for (i, (key, value)) in lines().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        text.push('<');
        text.push_str(key);
        text.push('>');
        match value {
            Value::Text(value) => text.push_str(value),
            Value::Time(time) => {
                let _ = write!(text, "{}", cfg.timezone.display(time));
            }
        }
        text.push_str("</");
        text.push_str(key);
        text.push('>');
    }
    text.push_str(after);
    let block = HintBlock::new(text, Some(cfg.source.to_string()));
    if inject_time {
        *recorded(hints) = Some((block.id.clone(), now));
    }
    let event = (cfg.emit_event && events).then(|| {
        HintBlockEvent::new(
            ctx.reply_id(),
            block.id.clone(),
            block.hint.clone(),
            block.source.clone(),
        )
        .into()
    });
    runtime
        .lock_state()
        .append_to_reply(&runtime.name, ctx.reply_id(), [ContentBlock::Hint(block)]);
    event
}

/// The time the newest hint of this source that records one says (`None`: no such hint, or
/// one whose time does not parse).
fn newest_time(context: &towerscope_core::Messages, hints: &Hints) -> Option<SystemTime> {
    let cfg = &hints.config;
    let mut recorded = recorded(hints);
    let ours = context
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.content.iter().rev())
        .filter_map(|b| match b {
            ContentBlock::Hint(h) if h.source.as_deref() == Some(cfg.source.as_ref()) => Some(h),
            _ => None,
        });
    for hint in ours {
        if let Some((_, time)) = recorded.as_ref().filter(|(id, _)| *id == hint.id) {
            return Some(*time);
        }
        let Some(time) = hint_text(&hint.hint).and_then(current_time) else {
            continue; // a hint without the time (the context length only)
        };
        let parsed = cfg.timezone.parse(time);
        if let Some(t) = parsed {
            *recorded = Some((hint.id.clone(), t));
        }
        return parsed;
    }
    None
}

fn recorded(hints: &Hints) -> std::sync::MutexGuard<'_, Option<(towerscope_core::Id, SystemTime)>> {
    hints.recorded.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
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

/// The recorded time of a hint: what stands between `<current-time>` and `</current-time>`.
fn current_time(text: &str) -> Option<&str> {
    const OPEN: &str = "<current-time>";
    let start = text.find(OPEN)? + OPEN.len();
    let end = text[start..].find("</current-time>")? + start;
    Some(&text[start..end])
}

fn elapsed_too_long(then: SystemTime, now: SystemTime, interval: Duration) -> bool {
    // A recorded time in the future (the clock went back) injects again, as the reference.
    now.duration_since(then).map_or(true, |elapsed| elapsed > interval)
}

/// Whether the context shows that the model knows its tasks: a call of a task tool, or an
/// earlier hint with a `tasks` line.
fn aware_of_tasks(context: &towerscope_core::Messages, hints: &Hints) -> bool {
    let cfg = &hints.config;
    context
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.content.iter())
        .any(|b| match b {
            ContentBlock::ToolCall(call) => cfg.task_tool_names.iter().any(|n| *n == call.name),
            ContentBlock::Hint(h) if h.source.as_deref() == Some(cfg.source.as_ref()) => {
                hint_text(&h.hint).is_some_and(|t| t.contains("<tasks>"))
            }
            _ => false,
        })
}

/// The tool and the count when the latest results of the agent's tail message are the same
/// call failing at least `tool_retries_limit` times in a row (the reference's
/// `_get_repeated_tool_error`).
fn repeated_tool_error(
    context: &towerscope_core::Messages,
    agent: &str,
    cfg: &crate::HintConfig,
) -> Option<(String, usize)> {
    let msg = context
        .last()
        .filter(|m| m.role == Role::Assistant && m.name.as_ref() == agent)?;
    let mut results = msg.content.iter().rev().filter_map(|b| match b {
        ContentBlock::ToolResult(r) => Some(r),
        _ => None,
    });
    let last = results.next().filter(|r| r.state == ToolResultState::Error)?;
    let limit = usize::try_from(cfg.tool_retries_limit).unwrap_or(usize::MAX);
    // The latest failures of the same tool, newest first.
    let streak: Vec<&Id> = std::iter::once(last)
        .chain(results.take_while(|r| r.state == ToolResultState::Error && r.name == last.name))
        .map(|r| &r.id)
        .collect();
    if streak.len() < limit {
        return None;
    }
    // The same tool is not enough: the arguments repeat too, compared as parsed JSON (so key
    // order does not matter), or as trimmed text when they do not parse. The calls are found
    // by id in one pass over the message, and a text equal to the first's is not parsed.
    let mut inputs: HashMap<&Id, Option<&str>> = streak.iter().map(|id| (*id, None)).collect();
    for call in msg.tool_calls() {
        if let Some(input) = inputs.get_mut(&call.id) {
            input.get_or_insert(call.input.as_str());
        }
    }
    let raw = |id: &Id| inputs.get(id).copied().flatten().unwrap_or_default();
    let parsed = |raw: &str| serde_json::from_str::<serde_json::Value>(raw).map_err(|_| raw.trim().to_owned());
    let first_raw = raw(streak[0]);
    let first = parsed(first_raw);
    let count = streak
        .iter()
        .take_while(|id| {
            let raw = raw(id);
            raw == first_raw || parsed(raw) == first
        })
        .count();
    (count >= limit).then(|| (last.name.clone(), count))
}

/// The context-length line, when the round's count is within the buffer of the trigger.
fn context_length(runtime: &Runtime, ctx: &AgentContext, in_progress: bool) -> Option<String> {
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
    if config.compression_tool && !in_progress {
        text.push_str(&format!(
            " No task is in progress, so judge by yourself whether the context should be compressed now by calling `{COMPRESS_TOOL}`."
        ));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::placeholder_span;

    /// The template's text before and after its first placeholder.
    fn split(template: &str) -> (&str, &str) {
        let (start, end) = placeholder_span(template);
        (&template[..start], &template[end..])
    }

    #[test]
    fn the_template_splits_at_its_first_placeholder() {
        assert_eq!(split("<s>{runtime_state}</s>"), ("<s>", "</s>"));
        assert_eq!(split("{a} {runtime} {runtime_state}!"), ("{a} {runtime} ", "!"));
        assert_eq!(split("{runtime_state}{runtime_state}"), ("", "{runtime_state}"));
        assert_eq!(split("no placeholder {"), ("no placeholder {", ""));
        assert_eq!(split("é{runtime_state}ü"), ("é", "ü"));
        assert_eq!(placeholder_span("é{runtime_state}ü"), (2, 17));
        assert_eq!(placeholder_span("no placeholder"), (14, 14));
    }
}
