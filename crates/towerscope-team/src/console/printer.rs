//! [`Printer`]: what the console writes, line by line: the print hooks around every piece, the
//! speaker's prefix, and one streamed block at a time on the screen.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::sync::Arc;

use towerscope_core::Id;
use towerscope_layers::Hooks;
use towerscope_layers::hooks::{PrintChunk, PrintKind};

use super::style::Tone;

/// A streamed block (reply id, block id).
type Key = (Id, Id);

/// A block that streams while another holds the line: its pieces wait their turn.
struct Held {
    key: Key,
    who: Arc<str>,
    kind: PrintKind,
    chunks: Vec<PrintChunk>,
    ended: bool,
}

/// Writes the console's output. Streamed blocks of several speakers never mix on one line: the
/// block that started first holds the line until it ends, and the others' pieces are printed,
/// in the order they came, right after it.
pub(crate) struct Printer<W> {
    pub(crate) out: W,
    pub(crate) colors: bool,
    pub(crate) silent: bool,
    pub(crate) hooks: HashMap<Arc<str>, Hooks>,
    pub(crate) all_hooks: Option<Hooks>,
    /// The block whose line is open.
    open: Option<Key>,
    held: Vec<Held>,
    /// Replies whose text was printed.
    spoke: HashSet<Id>,
}

impl<W: Write> Printer<W> {
    pub(crate) fn new(out: W) -> Self {
        Self {
            out,
            colors: false,
            silent: false,
            hooks: HashMap::new(),
            all_hooks: None,
            open: None,
            held: Vec::new(),
            spoke: HashSet::new(),
        }
    }

    /// Whether `reply` was shown: some of its text printed, or its final message rendered.
    pub(crate) fn spoke(&self, reply: &Id) -> bool {
        self.spoke.contains(reply)
    }

    /// Records that `reply`'s final message was rendered (it may have had no text to print: a
    /// reply of data only, shown as its data's line).
    pub(crate) fn mark_shown(&mut self, reply: &Id) {
        if !self.spoke.contains(reply) {
            self.spoke.insert(reply.clone());
        }
    }

    /// A piece of a streamed block, after the print hooks.
    pub(crate) fn stream(&mut self, who: &Arc<str>, key: (&Id, &Id), kind: PrintKind, text: &str, last: bool) {
        let Some(chunk) = self.pre_print(who, PrintChunk::new(kind, text, last)) else {
            return;
        };
        let key = (key.0.clone(), key.1.clone());
        let waiting = self.held.iter().any(|h| h.key == key);
        if waiting || self.open.as_ref().is_some_and(|open| *open != key) {
            let held = match self.held.iter().position(|h| h.key == key) {
                Some(i) => &mut self.held[i],
                None => {
                    self.held.push(Held {
                        key,
                        who: Arc::clone(who),
                        kind,
                        chunks: Vec::new(),
                        ended: false,
                    });
                    let last_held = self.held.len() - 1;
                    &mut self.held[last_held]
                }
            };
            held.ended |= last;
            held.chunks.push(chunk);
            if self.open.is_none() {
                self.flush_held(false);
            }
            return;
        }
        self.print_chunk(who, &key, kind, &chunk);
        if self.open.is_none() {
            self.flush_held(false);
        }
    }

    /// A whole line: `mark` (not seen by hooks), then the text, painted.
    pub(crate) fn line(&mut self, who: &Arc<str>, kind: PrintKind, mark: &str, text: &str, tone: Tone) {
        let Some(chunk) = self.pre_print(who, PrintChunk::new(kind, text, true)) else {
            return;
        };
        if chunk.is_suppressed() {
            return;
        }
        self.break_line();
        let painted = tone.paint(&format!("{mark}{}", chunk.text), self.colors);
        self.write(&format!("{painted}\n"));
        self.post_print(who, &chunk);
        self.flush_held(false);
    }

    /// A line of the console's own, dimmed, not seen by hooks.
    pub(crate) fn note(&mut self, text: &str) {
        self.end_line();
        let painted = Tone::Dim.paint(text, self.colors);
        self.write(&format!("{painted}\n"));
    }

    /// Ends the line in progress and prints every held block, so the screen is complete.
    pub(crate) fn end_line(&mut self) {
        self.break_line();
        self.flush_held(true);
        self.break_line();
    }

    fn break_line(&mut self) {
        if self.open.take().is_some() {
            self.write("\n");
        }
    }

    /// Prints held blocks while the line is free; with `all`, every held block, ended or not.
    fn flush_held(&mut self, all: bool) {
        while (all || self.open.is_none()) && !self.held.is_empty() {
            self.break_line();
            // An unfinished block keeps the line open after its pieces, which ends the loop.
            let held = self.held.remove(0);
            for chunk in &held.chunks {
                self.print_chunk(&held.who, &held.key, held.kind, chunk);
            }
        }
    }

    fn print_chunk(&mut self, who: &Arc<str>, key: &Key, kind: PrintKind, chunk: &PrintChunk) {
        let is_open = self.open.as_ref() == Some(key);
        if chunk.text.is_empty() {
            if chunk.last && is_open {
                self.break_line();
            }
            return;
        }
        if !is_open {
            self.break_line();
            let prefix = match kind {
                PrintKind::Thinking => Tone::Dim.paint(&format!("{who} (thinking): "), self.colors),
                _ => format!("{}: ", Tone::Bold.paint(who, self.colors)),
            };
            self.write(&prefix);
            self.open = Some(key.clone());
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
        if chunk.last {
            self.break_line();
        }
        self.post_print(who, chunk);
    }

    fn hooks_of(&self, who: &str) -> Option<&Hooks> {
        self.hooks.get(who).or(self.all_hooks.as_ref())
    }

    /// The chunk to print after the `pre_print` hooks; `None` when nothing is printed (the
    /// console is silent, or a hook suppressed a piece that does not end its block).
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
