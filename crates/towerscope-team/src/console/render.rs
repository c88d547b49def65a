//! [`Console`]: renders reply streams to a terminal (or any writer).

use std::collections::HashMap;
use std::fmt;
use std::io::{IsTerminal, Stdout, Write};
use std::sync::Arc;

use futures_util::StreamExt;
use towerscope_core::{
    AgentError, AgentEvent, EventStream, HintContent, Id, MediaBlock, Msg, ReplyFinishedReason, ReplyItem,
    ToolResultState,
};
use towerscope_layers::Hooks;
use towerscope_layers::hooks::PrintKind;

use super::printer::Printer;
use super::style::{DISABLE_OUTPUT_ENV, Tone, disables_output, use_colors};
use crate::Participant;
use crate::pipeline::{MergedStream, Tagged};

/// Renders reply streams, one agent's or several merged, as they arrive. See the
/// [module docs](super) for the layout.
pub struct Console<W: Write = Stdout> {
    printer: Printer<W>,
    max_result_lines: usize,
    default_speaker: Arc<str>,
    /// Who speaks in each reply (from its `REPLY_START`).
    speakers: HashMap<Id, Arc<str>>,
    /// Tool calls and results being streamed: the tool's name and what came so far.
    calls: HashMap<Id, (String, String)>,
    results: HashMap<Id, (String, String)>,
    /// Whether hints from the system (runtime-state reminders, structured-output and
    /// iteration-limit reminders: meant for the model) are shown.
    system_hints: bool,
}

impl Console<Stdout> {
    /// Standard output: coloured on a terminal unless `NO_COLOR` is set, silent when
    /// [`TOWERSCOPE_DISABLE_CONSOLE_OUTPUT`](super::DISABLE_OUTPUT_ENV) is `true`.
    pub fn stdout() -> Self {
        let out = std::io::stdout();
        let colors = use_colors(out.is_terminal(), std::env::var("NO_COLOR").ok().as_deref());
        let silent = disables_output(std::env::var(DISABLE_OUTPUT_ENV).ok().as_deref());
        Console::new(out).colors(colors).silent(silent)
    }
}

impl<W: Write> Console<W> {
    /// Renders to `out`, without colours.
    pub fn new(out: W) -> Self {
        Self {
            printer: Printer::new(out),
            max_result_lines: 20,
            default_speaker: Arc::from("agent"),
            speakers: HashMap::new(),
            calls: HashMap::new(),
            results: HashMap::new(),
            system_hints: false,
        }
    }

    /// Whether to show the hints the agent gives its model itself (the `<system-reminder>`s
    /// with the time, the context length, the iteration limit; their source's label is
    /// `System`). Default `false`: they are for the model, not the person; other hints (a
    /// team's messages) are always shown.
    #[must_use]
    pub fn system_hints(mut self, show: bool) -> Self {
        self.system_hints = show;
        self
    }

    /// Whether to colour the output (ANSI escapes).
    #[must_use]
    pub fn colors(mut self, colors: bool) -> Self {
        self.printer.colors = colors;
        self
    }

    /// Whether to print nothing at all.
    #[must_use]
    pub fn silent(mut self, silent: bool) -> Self {
        self.printer.silent = silent;
        self
    }

    /// Tool results longer than this are cut, with a note (default 20 lines).
    #[must_use]
    pub fn max_result_lines(mut self, lines: usize) -> Self {
        self.max_result_lines = lines.max(1);
        self
    }

    /// The name shown for a reply whose speaker is unknown (a resumed reply never started
    /// here), default `agent`.
    #[must_use]
    pub fn default_speaker(mut self, name: impl Into<Arc<str>>) -> Self {
        self.default_speaker = name.into();
        self
    }

    pub(crate) fn set_default_speaker(&mut self, name: &str) {
        self.default_speaker = Arc::from(name);
    }

    /// Runs `hooks`' print hooks around everything `speaker` prints.
    pub fn hooks_for(&mut self, speaker: impl Into<Arc<str>>, hooks: Hooks) -> &mut Self {
        self.printer.hooks.insert(speaker.into(), hooks);
        self
    }

    /// Runs `hooks`' print hooks around what speakers without hooks of their own print.
    pub fn hooks(&mut self, hooks: Hooks) -> &mut Self {
        self.printer.all_hooks = Some(hooks);
        self
    }

    /// Runs the print hooks of `participant` (its [`Participant::print_hooks`]) around what it
    /// prints.
    pub fn watch(&mut self, participant: &dyn Participant) -> &mut Self {
        if let Some(hooks) = participant.print_hooks() {
            self.hooks_for(participant.name(), hooks.clone());
        }
        self
    }

    /// The writer.
    pub fn get_ref(&self) -> &W {
        &self.printer.out
    }

    /// The writer, mutably (write what the console does not, between replies).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.printer.out
    }

    /// Consumes the console, returning the writer.
    pub fn into_inner(self) -> W {
        self.printer.out
    }

    /// Renders a whole reply stream and returns its final message (the stream's error is
    /// rendered, then returned).
    pub async fn show(&mut self, mut stream: EventStream) -> Result<Msg, AgentError> {
        let mut last = None;
        while let Some(item) = stream.next().await {
            self.render(None, &item);
            match item {
                Ok(ReplyItem::Final(msg)) => last = Some(msg),
                Ok(ReplyItem::Event(_)) => {}
                Err(e) => return Err(e),
            }
        }
        self.end_line();
        last.ok_or_else(|| AgentError::State("the reply stream ended without a final message".to_owned()))
    }

    /// Renders a merged stream to its end; returns the final messages, in the order they
    /// came. A speaker's error is rendered and the others go on.
    pub async fn show_merged(&mut self, mut stream: MergedStream) -> Vec<Msg> {
        let mut finals = Vec::new();
        while let Some(tagged) = stream.next().await {
            self.render_tagged(&tagged);
            if let Ok(ReplyItem::Final(msg)) = tagged.item {
                finals.push(msg);
            }
        }
        self.end_line();
        finals
    }

    /// Renders one tagged item of a merged stream.
    pub fn render_tagged(&mut self, tagged: &Tagged) {
        self.render(Some(&tagged.agent), &tagged.item);
    }

    /// Renders one item of a reply stream; `speaker` names who says it (`None`: the name of
    /// the reply's `REPLY_START`).
    pub fn render(&mut self, speaker: Option<&str>, item: &Result<ReplyItem, AgentError>) {
        match item {
            Ok(ReplyItem::Event(event)) => self.render_event(speaker, event),
            Ok(ReplyItem::Final(msg)) => self.render_final(speaker, msg),
            Err(e) => {
                let who = self.speaker(speaker, None);
                self.printer
                    .line(&who, PrintKind::Notice, "✗ ", &format!("{who}: {e}"), Tone::Bad);
            }
        }
    }

    /// Renders one event.
    pub fn render_event(&mut self, speaker: Option<&str>, event: &AgentEvent) {
        if let AgentEvent::ReplyStart(e) = event {
            let name = speaker.map_or_else(|| Arc::clone(&e.name), Arc::from);
            self.speakers.insert(e.reply_id.clone(), name);
            return;
        }
        let who = self.speaker(speaker, event.reply_id());
        match event {
            AgentEvent::TextBlockDelta(e) => {
                self.printer
                    .stream(&who, (&e.reply_id, &e.block_id), PrintKind::Text, &e.delta, false)
            }
            AgentEvent::TextBlockEnd(e) => {
                self.printer
                    .stream(&who, (&e.reply_id, &e.block_id), PrintKind::Text, "", true)
            }
            AgentEvent::ThinkingBlockDelta(e) => {
                self.printer
                    .stream(&who, (&e.reply_id, &e.block_id), PrintKind::Thinking, &e.delta, false)
            }
            AgentEvent::ThinkingBlockEnd(e) => {
                self.printer
                    .stream(&who, (&e.reply_id, &e.block_id), PrintKind::Thinking, "", true)
            }
            AgentEvent::DataBlockStart(e) => {
                let text = format!("[data {}]", e.media_type);
                self.printer
                    .line(&who, PrintKind::Data, &format!("{who}: "), &text, Tone::Media);
            }
            AgentEvent::HintBlock(e) if !self.system_hints && is_system_hint(e.source.as_deref()) => {}
            AgentEvent::HintBlock(e) => {
                let text = hint_text(&e.hint);
                self.printer
                    .line(&who, PrintKind::Hint, &format!("{who} (hint): "), &text, Tone::Dim);
            }
            AgentEvent::ToolCallStart(e) => {
                self.calls
                    .insert(e.tool_call_id.clone(), (e.tool_call_name.clone(), String::new()));
            }
            AgentEvent::ToolCallDelta(e) => {
                if let Some((_, args)) = self.calls.get_mut(&e.tool_call_id) {
                    args.push_str(&e.delta);
                }
            }
            AgentEvent::ToolCallEnd(e) => {
                if let Some((name, args)) = self.calls.remove(&e.tool_call_id) {
                    let text = format!("{name} {}", compact_json(&args));
                    self.printer
                        .line(&who, PrintKind::ToolCall, &format!("{who} → "), &text, Tone::Call);
                }
            }
            AgentEvent::ToolResultStart(e) => {
                self.results
                    .insert(e.tool_call_id.clone(), (e.tool_call_name.clone(), String::new()));
            }
            AgentEvent::ToolResultTextDelta(e) => self.result_text(&e.tool_call_id, &e.delta),
            AgentEvent::ToolResultDataDelta(e) => {
                self.result_text(&e.tool_call_id, &format!("[data {}]", e.media_type))
            }
            AgentEvent::ToolResultEnd(e) => {
                let (name, output) = self.results.remove(&e.tool_call_id).unwrap_or_default();
                self.tool_result(&who, &name, &output, e.state);
            }
            AgentEvent::RequireUserConfirm(e) => {
                for call in &e.tool_calls {
                    let text = format!("{who} wants to run {} {}", call.name, compact_json(&call.input));
                    self.printer.line(&who, PrintKind::Notice, "? ", &text, Tone::Warn);
                }
            }
            AgentEvent::RequireExternalExecution(e) => {
                for call in &e.tool_calls {
                    let text = format!("{who} waits for {} to run outside", call.name);
                    self.printer.line(&who, PrintKind::Notice, "… ", &text, Tone::Dim);
                }
            }
            AgentEvent::ReplyEnd(e) => match (e.finished_reason, &e.error) {
                (_, Some(err)) => {
                    self.printer.line(
                        &who,
                        PrintKind::Notice,
                        "✗ ",
                        &format!("{who}: {}", err.message),
                        Tone::Bad,
                    );
                }
                (ReplyFinishedReason::Interrupted, None) => {
                    self.printer.line(
                        &who,
                        PrintKind::Notice,
                        "⚠ ",
                        &format!("{who}: interrupted"),
                        Tone::Warn,
                    );
                }
                (ReplyFinishedReason::ExceedMaxIters, None) => {
                    let text = format!("{who}: stopped at its limit of reasoning rounds");
                    self.printer.line(&who, PrintKind::Notice, "⚠ ", &text, Tone::Warn);
                }
                // Completed: its blocks ended their lines already.
                _ => {}
            },
            _ => {}
        }
    }

    /// Ends the line in progress and prints what waited for it (before a prompt, say).
    pub fn end_line(&mut self) {
        self.printer.end_line();
    }

    /// Prints a line of the console's own (a banner, a farewell), dimmed.
    pub fn note(&mut self, text: &str) {
        self.printer.note(text);
    }

    fn render_final(&mut self, speaker: Option<&str>, msg: &Msg) {
        // A finished reply whose text never streamed (a participant without text events); a
        // fan-out's message that combines replies which all streamed is not shown again.
        if msg.finished_reason.is_none() || self.printer.spoke(&msg.id) {
            return;
        }
        let error_only = msg.finished_reason == Some(ReplyFinishedReason::Error)
            && msg
                .error
                .as_ref()
                .is_some_and(|e| msg.text_content().is_some_and(|t| t == e.message));
        // A fan-out's member that said no text (data only) is shown by now, so the message
        // combining it is not shown again.
        self.printer.mark_shown(&msg.id);
        // A reply that ended with an error holds the error's text, which its `REPLY_END` line
        // showed already: it is not the speaker's words.
        if error_only {
            return;
        }
        let combined = msg
            .metadata
            .get(crate::pipeline::COMBINED_REPLIES)
            .and_then(serde_json::Value::as_array);
        if let Some(ids) = combined
            && !ids.is_empty()
            && ids
                .iter()
                .all(|id| id.as_str().is_some_and(|id| self.printer.spoke(&Id::from(id))))
        {
            return;
        }
        if let Some(text) = msg.text_content().filter(|t| !t.is_empty()) {
            let who = self.speaker(speaker.or(Some(&msg.name)), Some(&msg.id));
            let block = Id::from("final");
            self.printer
                .stream(&who, (&msg.id, &block), PrintKind::Text, &text, false);
            self.printer.stream(&who, (&msg.id, &block), PrintKind::Text, "", true);
        }
    }

    fn speaker(&self, given: Option<&str>, reply: Option<&Id>) -> Arc<str> {
        if let Some(name) = given {
            return Arc::from(name);
        }
        reply
            .and_then(|r| self.speakers.get(r))
            .map_or_else(|| Arc::clone(&self.default_speaker), Arc::clone)
    }

    fn result_text(&mut self, call: &Id, text: &str) {
        if let Some((_, output)) = self.results.get_mut(call) {
            output.push_str(text);
        }
    }

    fn tool_result(&mut self, who: &Arc<str>, name: &str, output: &str, state: ToolResultState) {
        let (mark, verb, tone) = match state {
            ToolResultState::Success => ("  ✓ ", "", Tone::Good),
            ToolResultState::Error => ("  ✗ ", " failed", Tone::Bad),
            ToolResultState::Denied => ("  ⊘ ", " denied", Tone::Warn),
            ToolResultState::Interrupted => ("  ⚠ ", " interrupted", Tone::Warn),
            ToolResultState::Running => ("  … ", " running", Tone::Dim),
        };
        let output = output
            .replace("<system-reminder>", "")
            .replace("</system-reminder>", "");
        let mut lines: Vec<&str> = output.trim().lines().collect();
        let cut = lines.len().saturating_sub(self.max_result_lines);
        lines.truncate(self.max_result_lines);
        let mut text = format!("{name}{verb}");
        if !lines.is_empty() {
            text.push_str(": ");
            text.push_str(&lines.join("\n      "));
        }
        if cut > 0 {
            text.push_str(&format!("\n      … {cut} more lines"));
        }
        self.printer.line(who, PrintKind::ToolResult, mark, &text, tone);
    }
}

/// Whether a hint's source says it comes from the system (`{"label": "System", ...}`).
fn is_system_hint(source: Option<&str>) -> bool {
    source
        .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok())
        .is_some_and(|v| v.get("label").and_then(serde_json::Value::as_str) == Some("System"))
}

fn hint_text(hint: &HintContent) -> String {
    match hint {
        HintContent::Text(text) => text.clone(),
        HintContent::Blocks(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| match b {
                    MediaBlock::Text(t) => Some(t.text.as_str()),
                    MediaBlock::Data(_) => None,
                })
                .collect();
            texts.join("\n")
        }
    }
}

/// Tool arguments on one line: compact JSON when they parse, as they are otherwise.
fn compact_json(raw: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(value) => value.to_string(),
        Err(_) => raw.trim().to_owned(),
    }
}

impl<W: Write> fmt::Debug for Console<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Console")
            .field("colors", &self.printer.colors)
            .field("silent", &self.printer.silent)
            .field("max_result_lines", &self.max_result_lines)
            .finish_non_exhaustive()
    }
}
