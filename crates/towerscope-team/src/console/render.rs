//! [`Console`]: renders reply streams to a terminal (or any writer).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{IsTerminal, Stdout, Write};
use std::sync::Arc;

use futures_util::StreamExt;
use towerscope_core::{
    AgentError, AgentEvent, EventStream, HintContent, Id, MediaBlock, Msg, ReplyFinishedReason, ReplyItem,
    ToolResultState,
};
use towerscope_layers::Hooks;
use towerscope_layers::hooks::{PrintChunk, PrintKind};

use super::style::{DISABLE_OUTPUT_ENV, Tone, disables_output, use_colors};
use crate::Participant;
use crate::pipeline::{MergedStream, Tagged};

/// Renders reply streams, one agent's or several merged, as they arrive. See the
/// [module docs](super) for the layout.
pub struct Console<W: Write = Stdout> {
    out: W,
    colors: bool,
    silent: bool,
    max_result_lines: usize,
    default_speaker: Arc<str>,
    /// The (reply, block) whose line is open, waiting for more of its text.
    open: Option<(Id, Id)>,
    speakers: HashMap<Id, Arc<str>>,
    calls: HashMap<Id, (String, String)>,
    results: HashMap<Id, (String, String)>,
    spoke: HashSet<Id>,
    hooks: HashMap<Arc<str>, Hooks>,
    all_hooks: Option<Hooks>,
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
            out,
            colors: false,
            silent: false,
            max_result_lines: 20,
            default_speaker: Arc::from("agent"),
            open: None,
            speakers: HashMap::new(),
            calls: HashMap::new(),
            results: HashMap::new(),
            spoke: HashSet::new(),
            hooks: HashMap::new(),
            all_hooks: None,
        }
    }

    /// Whether to colour the output (ANSI escapes).
    #[must_use]
    pub fn colors(mut self, colors: bool) -> Self {
        self.colors = colors;
        self
    }

    /// Whether to print nothing at all.
    #[must_use]
    pub fn silent(mut self, silent: bool) -> Self {
        self.silent = silent;
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
        self.hooks.insert(speaker.into(), hooks);
        self
    }

    /// Runs `hooks`' print hooks around what speakers without hooks of their own print.
    pub fn hooks(&mut self, hooks: Hooks) -> &mut Self {
        self.all_hooks = Some(hooks);
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
        &self.out
    }

    /// The writer, mutably (write what the console does not, between replies).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Consumes the console, returning the writer.
    pub fn into_inner(self) -> W {
        self.out
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
                self.line(&who, PrintKind::Notice, "✗ ", &format!("{who}: {e}"), Tone::Bad);
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
                self.stream(&who, (&e.reply_id, &e.block_id), PrintKind::Text, &e.delta, false)
            }
            AgentEvent::TextBlockEnd(e) => self.stream(&who, (&e.reply_id, &e.block_id), PrintKind::Text, "", true),
            AgentEvent::ThinkingBlockDelta(e) => {
                self.stream(&who, (&e.reply_id, &e.block_id), PrintKind::Thinking, &e.delta, false)
            }
            AgentEvent::ThinkingBlockEnd(e) => {
                self.stream(&who, (&e.reply_id, &e.block_id), PrintKind::Thinking, "", true)
            }
            AgentEvent::DataBlockStart(e) => {
                let text = format!("[data {}]", e.media_type);
                self.line(&who, PrintKind::Data, &format!("{who}: "), &text, Tone::Media);
            }
            AgentEvent::HintBlock(e) => {
                let text = hint_text(&e.hint);
                self.line(&who, PrintKind::Hint, &format!("{who} (hint): "), &text, Tone::Dim);
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
                    self.line(&who, PrintKind::ToolCall, &format!("{who} → "), &text, Tone::Call);
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
                    self.line(&who, PrintKind::Notice, "? ", &text, Tone::Warn);
                }
            }
            AgentEvent::RequireExternalExecution(e) => {
                for call in &e.tool_calls {
                    let text = format!("{who} waits for {} to run outside", call.name);
                    self.line(&who, PrintKind::Notice, "… ", &text, Tone::Dim);
                }
            }
            AgentEvent::ReplyEnd(e) => match (e.finished_reason, &e.error) {
                (_, Some(err)) => {
                    self.line(
                        &who,
                        PrintKind::Notice,
                        "✗ ",
                        &format!("{who}: {}", err.message),
                        Tone::Bad,
                    );
                }
                (ReplyFinishedReason::Interrupted, None) => {
                    self.line(
                        &who,
                        PrintKind::Notice,
                        "⚠ ",
                        &format!("{who}: interrupted"),
                        Tone::Warn,
                    );
                }
                (ReplyFinishedReason::ExceedMaxIters, None) => {
                    let text = format!("{who}: stopped at its limit of reasoning rounds");
                    self.line(&who, PrintKind::Notice, "⚠ ", &text, Tone::Warn);
                }
                _ => self.end_line(),
            },
            _ => {}
        }
    }

    /// Ends the line in progress, if any (before a prompt, say).
    pub fn end_line(&mut self) {
        if self.open.take().is_some() {
            self.write("\n");
        }
    }

    /// Prints a line of the console's own (a banner, a farewell), dimmed.
    pub fn note(&mut self, text: &str) {
        self.end_line();
        let painted = Tone::Dim.paint(text, self.colors);
        self.write(&format!("{painted}\n"));
    }

    fn render_final(&mut self, speaker: Option<&str>, msg: &Msg) {
        self.end_line();
        // A finished reply whose text never streamed (a participant without text events).
        if msg.finished_reason.is_none() || self.spoke.contains(&msg.id) {
            return;
        }
        if let Some(text) = msg.text_content().filter(|t| !t.is_empty()) {
            let who = self.speaker(speaker.or(Some(&msg.name)), Some(&msg.id));
            let block = Id::from("final");
            self.stream(&who, (&msg.id, &block), PrintKind::Text, &text, false);
            self.stream(&who, (&msg.id, &block), PrintKind::Text, "", true);
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
        self.line(who, PrintKind::ToolResult, mark, &text, tone);
    }

    /// Prints a piece of a streamed block: the speaker's prefix first when the block's line is
    /// not the open one, the line ended with the block.
    fn stream(&mut self, who: &Arc<str>, key: (&Id, &Id), kind: PrintKind, text: &str, last: bool) {
        let Some(chunk) = self.pre_print(who, PrintChunk::new(kind, text, last)) else {
            if last && self.is_open(key) {
                self.end_line();
            }
            return;
        };
        if chunk.text.is_empty() {
            if last && self.is_open(key) {
                self.end_line();
            }
            return;
        }
        if !self.is_open(key) {
            self.end_line();
            let prefix = match kind {
                PrintKind::Thinking => Tone::Dim.paint(&format!("{who} (thinking): "), self.colors),
                _ => format!("{}: ", Tone::Bold.paint(who, self.colors)),
            };
            self.write(&prefix);
            self.open = Some((key.0.clone(), key.1.clone()));
        }
        let tone = if kind == PrintKind::Thinking {
            Tone::Dim
        } else {
            Tone::Plain
        };
        self.write(&tone.paint(&chunk.text, self.colors));
        if kind == PrintKind::Text {
            self.spoke.insert(key.0.clone());
        }
        if last {
            self.end_line();
        }
        self.post_print(who, &chunk);
    }

    /// Prints a whole line: `mark` (not seen by hooks) then the text.
    fn line(&mut self, who: &Arc<str>, kind: PrintKind, mark: &str, text: &str, tone: Tone) {
        self.end_line();
        let Some(chunk) = self.pre_print(who, PrintChunk::new(kind, text, true)) else {
            return;
        };
        let painted = tone.paint(&format!("{mark}{}", chunk.text), self.colors);
        self.write(&format!("{painted}\n"));
        self.post_print(who, &chunk);
    }

    fn is_open(&self, key: (&Id, &Id)) -> bool {
        self.open.as_ref().is_some_and(|(r, b)| r == key.0 && b == key.1)
    }

    fn hooks_of(&self, who: &str) -> Option<&Hooks> {
        self.hooks.get(who).or(self.all_hooks.as_ref())
    }

    /// The chunk to print after the `pre_print` hooks; `None` when nothing is printed (the
    /// console is silent, or a hook suppressed it). An empty chunk that ends a block is kept.
    fn pre_print(&self, who: &str, chunk: PrintChunk) -> Option<PrintChunk> {
        if self.silent {
            return None;
        }
        let chunk = match self.hooks_of(who) {
            Some(hooks) => hooks.pre_print(who, chunk),
            None => chunk,
        };
        (!chunk.is_suppressed() || chunk.last).then_some(chunk)
    }

    fn post_print(&self, who: &str, chunk: &PrintChunk) {
        if let Some(hooks) = self.hooks_of(who) {
            hooks.post_print(who, chunk);
        }
    }

    fn write(&mut self, text: &str) {
        if self.silent || text.is_empty() {
            return;
        }
        // A terminal that went away cannot be told so; the reply goes on.
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.flush();
    }
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
            .field("colors", &self.colors)
            .field("silent", &self.silent)
            .field("max_result_lines", &self.max_result_lines)
            .finish_non_exhaustive()
    }
}
