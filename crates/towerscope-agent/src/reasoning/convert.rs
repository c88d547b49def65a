//! Converting model output to block events, exactly as the reference's
//! `_convert_chat_response_to_event` does, while keeping what was streamed so far.
//!
//! Besides the events, the converter builds the answer as streamed ([`ChunkConverter::partial`]):
//! the blocks the events describe, under the events' block ids. That is what the context keeps
//! when the answer is cut short (an interrupt, a dropped stream); a complete answer is kept as
//! the model's final chunk has it.
//!
//! Tool-call ids are unique within a reply's message: a model that reuses an id (of an earlier
//! round, or twice in one answer) gets the second call renamed `{id}_2` (`_3`, ...), in the
//! events and in the context alike, so every call keeps exactly one result. In a stream,
//! consecutive chunks with the same id continue one call (that is how arguments stream), unless
//! the call's arguments already form a complete JSON value and the new piece starts another:
//! then it is a second call under the same id, renamed like any other.

use std::borrow::Borrow;
use std::collections::{HashMap, HashSet};
use std::hash::Hash;

use towerscope_core::id::new_id;
use towerscope_core::{
    AgentEvent, ChatResponse, ContentBlock, DataBlock, DataBlockDeltaEvent, DataBlockEndEvent, DataBlockStartEvent,
    DataSource, Id, JsonScan, TextBlock, TextBlockDeltaEvent, TextBlockEndEvent, TextBlockStartEvent, ThinkingBlock,
    ThinkingBlockDeltaEvent, ThinkingBlockEndEvent, ThinkingBlockStartEvent, ToolCallBlock, ToolCallDeltaEvent,
    ToolCallEndEvent, ToolCallStartEvent,
};

/// Tool-call ids already used in the reply's message, and the renaming of duplicates.
///
/// A lookup costs the same however many calls the message has (the ids are hashed past a
/// few), and renaming starts from the last suffix given to the same id: a model answering with
/// thousands of calls, all with one id, is not renamed in time growing with their cube.
#[derive(Debug, Default, Clone)]
pub(crate) struct CallIds {
    /// The ids.
    used: FewSet<Id>,
    /// For each id renamed, the next suffix to try: `{id}_{n}` below it are all taken (ids are
    /// never given back, so the smallest free suffix only grows). Made at the first rename.
    next_suffix: Option<HashMap<Id, u32>>,
}

/// How many items a [`FewSet`] compares one by one before it hashes them.
const FEW_IDS: usize = 16;

/// A set of ids compared one by one while they are few (no allocation for a hash table, no
/// hashing: what a reply's calls and a chunk's calls usually are), hashed past [`FEW_IDS`], so
/// thousands of them are still checked in time linear in their number.
#[derive(Debug, Clone)]
enum FewSet<T> {
    Few(Vec<T>),
    Many(HashSet<T>),
}

impl<T> Default for FewSet<T> {
    fn default() -> Self {
        Self::Few(Vec::new())
    }
}

impl<T: Eq + Hash> FewSet<T> {
    fn contains<Q>(&self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        match self {
            Self::Few(items) => items.iter().any(|i| i.borrow() == item),
            Self::Many(items) => items.contains(item),
        }
    }

    fn insert(&mut self, item: T) {
        match self {
            Self::Few(items) if items.len() < FEW_IDS => items.push(item),
            Self::Few(items) => {
                let mut many: HashSet<T> = items.drain(..).collect();
                many.insert(item);
                *self = Self::Many(many);
            }
            Self::Many(items) => {
                items.insert(item);
            }
        }
    }
}

impl<T: Eq + Hash> FromIterator<T> for FewSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let items: Vec<T> = items.into_iter().collect();
        if items.len() <= FEW_IDS {
            Self::Few(items)
        } else {
            Self::Many(items.into_iter().collect())
        }
    }
}

impl CallIds {
    /// The ids used so far.
    pub(crate) fn new(used: impl IntoIterator<Item = Id>) -> Self {
        Self {
            used: used.into_iter().collect(),
            next_suffix: None,
        }
    }

    /// The id a new call with the model's `id` gets: `id` itself, or `{id}_{n}` with the
    /// smallest `n` from 2 that is not taken.
    pub(crate) fn assign(&mut self, id: &Id) -> Id {
        if !self.used.contains(id) {
            self.used.insert(id.clone());
            return id.clone();
        }
        let mut n = self
            .next_suffix
            .as_ref()
            .and_then(|next| next.get(id))
            .copied()
            .unwrap_or(2);
        let assigned = loop {
            let candidate = Id::from(format!("{id}_{n}"));
            n += 1;
            if !self.used.contains(&candidate) {
                break candidate;
            }
        };
        self.next_suffix.get_or_insert_with(HashMap::new).insert(id.clone(), n);
        self.used.insert(assigned.clone());
        assigned
    }

    /// Renames the duplicate calls of a whole answer, in order.
    pub(crate) fn dedupe(&mut self, content: &mut [ContentBlock]) {
        for block in content {
            if let ContentBlock::ToolCall(call) = block {
                call.id = self.assign(&call.id);
            }
        }
    }
}

/// A tool call being streamed.
#[derive(Debug)]
struct OpenCall {
    /// The id the model gave it.
    model_id: Id,
    /// The id it goes by (renamed if the model's was taken).
    id: Id,
    scan: JsonScan,
    /// Where its block is in the converter's `partial`.
    at: usize,
    /// Replaced by a new call with the same model id in this chunk (its end was sent); dropped
    /// at the end of the chunk, so that the indexes of the calls after it stay put meanwhile.
    replaced: bool,
}

/// The latest open call (not replaced) with the model id `id`: a scan from the end while the
/// open calls are few; past [`FEW_IDS`], an index of them made once per chunk (`index`), which
/// the chunk keeps up to date as it opens calls.
fn latest_open(tools: &[OpenCall], index: &mut Option<HashMap<Id, usize>>, id: &Id) -> Option<usize> {
    if index.is_none() && tools.len() > FEW_IDS {
        let mut map = HashMap::with_capacity(tools.len());
        for (i, open) in tools.iter().enumerate().filter(|(_, open)| !open.replaced) {
            map.insert(open.model_id.clone(), i);
        }
        *index = Some(map);
    }
    match index {
        Some(map) => map.get(id).copied(),
        None => tools.iter().rposition(|open| !open.replaced && open.model_id == *id),
    }
}

/// Which blocks are open while a model response streams, and what was streamed.
#[derive(Debug)]
pub(crate) struct ChunkConverter {
    reply_id: Id,
    events: bool,
    /// The open thinking block, its id and where it is in `partial`.
    thinking: Option<(Id, usize)>,
    /// The open text block, its id and where it is in `partial`.
    text: Option<(Id, usize)>,
    /// Open tool calls.
    tools: Vec<OpenCall>,
    /// Open data blocks, their ids and where they are in `partial`.
    data: Vec<(Id, usize)>,
    /// Every block id opened during this model call (for a restart).
    opened: Vec<Id>,
    /// The ids as renamed so far in this answer: a copy of `ids_before` made at the first
    /// streamed tool call (a whole answer, the common case, never needs one).
    ids: Option<CallIds>,
    ids_before: CallIds,
    /// The blocks streamed so far. They are only appended to (or all cleared with the open
    /// blocks), so an open block keeps its place: found there, not searched for, however many
    /// blocks came after it.
    partial: Vec<ContentBlock>,
}

impl ChunkConverter {
    /// A converter for one model call of reply `reply_id`; `ids` are the tool-call ids the
    /// reply's message already holds; `events`: whether to build events at all.
    pub(crate) fn new(reply_id: &Id, ids: CallIds, events: bool) -> Self {
        Self {
            reply_id: reply_id.clone(),
            events,
            thinking: None,
            text: None,
            tools: Vec::new(),
            data: Vec::new(),
            opened: Vec::new(),
            ids: None,
            ids_before: ids,
            partial: Vec::new(),
        }
    }

    /// The ids as they were before this answer, to rename a whole answer the same way; taken
    /// when the answer is settled (the converter renames nothing after that).
    pub(crate) fn take_ids_before(&mut self) -> CallIds {
        std::mem::take(&mut self.ids_before)
    }

    /// What was streamed so far, as blocks.
    pub(crate) fn take_partial(&mut self) -> Vec<ContentBlock> {
        std::mem::take(&mut self.partial)
    }

    fn push(&self, out: &mut Vec<AgentEvent>, make: impl FnOnce() -> AgentEvent) {
        if self.events {
            out.push(make());
        }
    }

    /// Converts one non-last chunk (or a whole, non-streamed response) to events.
    pub(crate) fn convert(&mut self, chunk: &ChatResponse, out: &mut Vec<AgentEvent>) {
        let has_data = chunk.content.iter().any(|b| matches!(b, ContentBlock::Data(_)));

        // Thinking first, then text.
        let has_thinking = chunk.content.iter().any(|b| matches!(b, ContentBlock::Thinking(_)));
        if has_thinking {
            let thinking: String = chunk
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Thinking(t) => Some(t.thinking.as_str()),
                    _ => None,
                })
                .collect();
            let (id, at) = match &self.thinking {
                Some((id, at)) => (id.clone(), *at),
                None => {
                    let id = new_id();
                    self.opened.push(id.clone());
                    let at = self.partial.len();
                    self.thinking = Some((id.clone(), at));
                    self.partial.push(ThinkingBlock::new("").with_id(&id).into());
                    let reply_id = &self.reply_id;
                    self.push(out, || ThinkingBlockStartEvent::new(reply_id, &id).into());
                    (id, at)
                }
            };
            if let Some(ContentBlock::Thinking(block)) = self.partial.get_mut(at) {
                block.thinking.push_str(&thinking);
            }
            let reply_id = &self.reply_id;
            self.push(out, || ThinkingBlockDeltaEvent::new(reply_id, id, thinking).into());
        } else if !has_data && let Some((id, _)) = self.thinking.take() {
            let reply_id = &self.reply_id;
            self.push(out, || ThinkingBlockEndEvent::new(reply_id, id).into());
        }

        let has_text = chunk.content.iter().any(|b| matches!(b, ContentBlock::Text(_)));
        if has_text {
            let text: String = chunk
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect();
            let (id, at) = match &self.text {
                Some((id, at)) => (id.clone(), *at),
                None => {
                    let id = new_id();
                    self.opened.push(id.clone());
                    let at = self.partial.len();
                    self.text = Some((id.clone(), at));
                    self.partial.push(TextBlock::new("").with_id(&id).into());
                    let reply_id = &self.reply_id;
                    self.push(out, || TextBlockStartEvent::new(reply_id, &id).into());
                    (id, at)
                }
            };
            if let Some(ContentBlock::Text(block)) = self.partial.get_mut(at) {
                block.text.push_str(&text);
            }
            let reply_id = &self.reply_id;
            self.push(out, || TextBlockDeltaEvent::new(reply_id, id, text).into());
        } else if !has_data && let Some((id, _)) = self.text.take() {
            let reply_id = &self.reply_id;
            self.push(out, || TextBlockEndEvent::new(reply_id, id).into());
        }

        // Tool calls: start if new, then the delta; open calls missing from this chunk end now.
        // The model ids of the chunk's calls.
        let mut seen: FewSet<&Id> = FewSet::default();
        let mut index = None;
        for block in &chunk.content {
            if let ContentBlock::ToolCall(call) = block {
                // A second block with the same id in one chunk is a second call, and so is a
                // piece that starts new arguments after the open call's arguments are complete.
                let repeated = seen.contains(&call.id);
                let open = latest_open(&self.tools, &mut index, &call.id);
                let continues = open.filter(|&i| !repeated && !self.tools[i].scan.starts_another(&call.input));
                let index_of_call = match (continues, open) {
                    (Some(i), _) => i,
                    (None, replaced) => {
                        if let Some(i) = replaced {
                            self.tools[i].replaced = true;
                            let (reply_id, ended) = (&self.reply_id, &self.tools[i].id);
                            if self.events {
                                out.push(ToolCallEndEvent::new(reply_id, ended).into());
                            }
                        }
                        let before = &self.ids_before;
                        let id = self.ids.get_or_insert_with(|| before.clone()).assign(&call.id);
                        self.opened.push(id.clone());
                        let at = self.partial.len();
                        self.partial.push(ToolCallBlock::new(&id, &call.name, "").into());
                        let reply_id = &self.reply_id;
                        self.push(out, || ToolCallStartEvent::new(reply_id, &id, &call.name).into());
                        self.tools.push(OpenCall {
                            model_id: call.id.clone(),
                            id,
                            scan: JsonScan::default(),
                            at,
                            replaced: false,
                        });
                        let at = self.tools.len() - 1;
                        if let Some(map) = &mut index {
                            map.insert(call.id.clone(), at);
                        }
                        at
                    }
                };
                let open = &mut self.tools[index_of_call];
                open.scan.feed(&call.input);
                let (id, at) = (open.id.clone(), open.at);
                if let Some(ContentBlock::ToolCall(block)) = self.partial.get_mut(at) {
                    block.input.push_str(&call.input);
                }
                let reply_id = &self.reply_id;
                self.push(out, || ToolCallDeltaEvent::new(reply_id, id, &call.input).into());
                seen.insert(&call.id);
            }
        }
        let (events, reply_id) = (self.events, &self.reply_id);
        self.tools.retain(|open| {
            if open.replaced {
                return false;
            }
            let keep = seen.contains(&open.model_id);
            if !keep && events {
                out.push(ToolCallEndEvent::new(reply_id, &open.id).into());
            }
            keep
        });

        // Base64 data blocks; URL sources are not streamed.
        for block in &chunk.content {
            if let ContentBlock::Data(d) = block
                && let DataSource::Base64 { data, media_type } = &d.source
            {
                let open = self.data.iter().find(|(id, _)| *id == d.id).map(|&(_, at)| at);
                let at = match open {
                    Some(at) => at,
                    None => {
                        let at = self.partial.len();
                        self.data.push((d.id.clone(), at));
                        self.opened.push(d.id.clone());
                        let mut stored = DataBlock::base64("", media_type.as_str()).with_id(&d.id);
                        stored.name.clone_from(&d.name);
                        self.partial.push(stored.into());
                        let reply_id = &self.reply_id;
                        self.push(out, || {
                            let mut start = DataBlockStartEvent::new(reply_id, &d.id, media_type.as_str());
                            start.name.clone_from(&d.name);
                            start.into()
                        });
                        at
                    }
                };
                if let Some(ContentBlock::Data(stored)) = self.partial.get_mut(at) {
                    stored.append_base64(data);
                }
                let reply_id = &self.reply_id;
                self.push(out, || {
                    DataBlockDeltaEvent::new(
                        reply_id,
                        &d.id,
                        DataSource::Base64 {
                            data: data.clone(),
                            media_type: media_type.clone(),
                        },
                    )
                    .into()
                });
            }
        }
    }

    /// A restart of the model call: forget every block of this call and return their ids, which
    /// the consumer must discard.
    pub(crate) fn restart(&mut self) -> Vec<Id> {
        self.thinking = None;
        self.text = None;
        self.tools.clear();
        self.data.clear();
        self.partial.clear();
        self.ids = None;
        std::mem::take(&mut self.opened)
    }

    /// Closes whatever is still open: text, thinking, tool calls (first seen first), data.
    pub(crate) fn close(&mut self, out: &mut Vec<AgentEvent>) {
        let reply_id = &self.reply_id;
        let events = self.events;
        if let Some((id, _)) = self.text.take()
            && events
        {
            out.push(TextBlockEndEvent::new(reply_id, id).into());
        }
        if let Some((id, _)) = self.thinking.take()
            && events
        {
            out.push(ThinkingBlockEndEvent::new(reply_id, id).into());
        }
        for open in self.tools.drain(..) {
            if events {
                out.push(ToolCallEndEvent::new(reply_id, open.id).into());
            }
        }
        for (id, _) in self.data.drain(..) {
            if events {
                out.push(DataBlockEndEvent::new(reply_id, id).into());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The renaming as it was first written: a scan of every id used, for every suffix tried.
    fn assign_by_scans(used: &mut Vec<Id>, id: &Id) -> Id {
        let mut assigned = id.clone();
        let mut n = 2u32;
        while used.contains(&assigned) {
            assigned = Id::from(format!("{id}_{n}"));
            n += 1;
        }
        used.push(assigned.clone());
        assigned
    }

    #[test]
    fn ids_are_renamed_as_by_scans_whatever_was_taken_before() {
        // Ids drawn from a few, some already suffixed as a rename would be: a fixed sequence
        // of pseudo-random picks, long enough to pass from the list to the hashed set.
        let pool = ["a", "b", "a_2", "a_3", "b_2", "c", "a_5", "b_2_2"];
        let mut state = 0x2545_f491_u32;
        let mut pick = || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            Id::from(pool[state as usize % pool.len()])
        };
        for before in [0usize, 3, 20] {
            let taken: Vec<Id> = (0..before).map(|_| pick()).collect();
            let mut ids = CallIds::new(taken.iter().cloned());
            let mut used = taken;
            for _ in 0..200 {
                let id = pick();
                assert_eq!(
                    ids.assign(&id),
                    assign_by_scans(&mut used, &id),
                    "{before} taken before"
                );
            }
        }
    }

    #[test]
    fn thousands_of_calls_with_one_id_are_numbered_in_order() {
        let mut ids = CallIds::default();
        let x = Id::from("x");
        assert_eq!(ids.assign(&x), "x");
        for n in 2..=5_000 {
            assert_eq!(ids.assign(&x).to_string(), format!("x_{n}"));
        }
        // A model's own id that a rename would have used is renamed in turn.
        assert_eq!(ids.assign(&Id::from("x_7")), "x_7_2");
    }
    use towerscope_core::{TextBlock, ThinkingBlock, ToolCallBlock};

    fn kinds(events: &[AgentEvent]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e {
                AgentEvent::ThinkingBlockDelta(d) => format!("THINKING Δ{}", d.delta),
                AgentEvent::TextBlockDelta(d) => format!("TEXT Δ{}", d.delta),
                AgentEvent::ToolCallStart(s) => format!("TOOL_CALL_START {}", s.tool_call_id),
                AgentEvent::ToolCallDelta(d) => format!("TOOL Δ{}", d.delta),
                AgentEvent::ToolCallEnd(s) => format!("TOOL_CALL_END {}", s.tool_call_id),
                other => other.event_type().as_str().to_owned(),
            })
            .collect()
    }

    fn chunk(block: ContentBlock) -> ChatResponse {
        ChatResponse::chunk(vec![block])
    }

    /// The reference's probe (§3.4): thinking a, b; text c, d; tool t1 in two pieces; tool t2.
    #[test]
    fn streamed_chunks_become_the_reference_event_sequence() {
        let think = |t: &str| chunk(ContentBlock::Thinking(ThinkingBlock::new(t).with_id("th")));
        let text = |t: &str| chunk(ContentBlock::Text(TextBlock::new(t).with_id("tx")));
        let tool = |id: &str, input: &str| chunk(ContentBlock::ToolCall(ToolCallBlock::new(id, "f", input)));
        let mut conv = ChunkConverter::new(&Id::from("r"), CallIds::default(), true);
        let mut out = Vec::new();
        for c in [
            think("a"),
            think("b"),
            text("c"),
            text("d"),
            tool("t1", r#"{"a""#),
            tool("t1", ":1}"),
            tool("t2", "{}"),
        ] {
            conv.convert(&c, &mut out);
        }
        conv.close(&mut out);
        assert_eq!(
            kinds(&out),
            [
                "THINKING_BLOCK_START",
                "THINKING Δa",
                "THINKING Δb",
                "THINKING_BLOCK_END",
                "TEXT_BLOCK_START",
                "TEXT Δc",
                "TEXT Δd",
                "TEXT_BLOCK_END",
                "TOOL_CALL_START t1",
                r#"TOOL Δ{"a""#,
                "TOOL Δ:1}",
                "TOOL_CALL_START t2",
                "TOOL Δ{}",
                "TOOL_CALL_END t1",
                "TOOL_CALL_END t2",
            ]
        );
    }

    /// A whole response holding two tool calls: START c1, Δc1, START c2, Δc2, END c1, END c2.
    #[test]
    fn a_whole_response_with_two_calls() {
        let response = ChatResponse::new(vec![
            ContentBlock::ToolCall(ToolCallBlock::new("c1", "f", "{}")),
            ContentBlock::ToolCall(ToolCallBlock::new("c2", "f", "{}")),
        ]);
        let mut conv = ChunkConverter::new(&Id::from("r"), CallIds::default(), true);
        let mut out = Vec::new();
        conv.convert(&response, &mut out);
        conv.close(&mut out);
        assert_eq!(
            kinds(&out),
            [
                "TOOL_CALL_START c1",
                "TOOL Δ{}",
                "TOOL_CALL_START c2",
                "TOOL Δ{}",
                "TOOL_CALL_END c1",
                "TOOL_CALL_END c2"
            ]
        );
    }

    /// A whole answer of thousands of distinct calls (what the serve paths read, and a retried
    /// or journaled answer): each opens once, in order, and ends once, in order. The calls of a
    /// chunk are hashed past a few, so this is linear in their number.
    #[test]
    fn a_chunk_of_thousands_of_distinct_calls_opens_and_ends_each_once_in_order() {
        let calls = 5_000;
        let response = ChatResponse::new(
            (0..calls)
                .map(|i| ContentBlock::ToolCall(ToolCallBlock::new(format!("c{i}"), "f", "{}")))
                .collect(),
        );
        let mut conv = ChunkConverter::new(&Id::from("r"), CallIds::default(), true);
        let mut out = Vec::new();
        conv.convert(&response, &mut out);
        conv.close(&mut out);
        let mut expected: Vec<String> = (0..calls)
            .flat_map(|i| [format!("TOOL_CALL_START c{i}"), "TOOL Δ{}".to_owned()])
            .collect();
        expected.extend((0..calls).map(|i| format!("TOOL_CALL_END c{i}")));
        assert_eq!(kinds(&out), expected);
        let partial = conv.take_partial();
        assert_eq!(partial.len(), calls);
        assert_eq!(
            partial.last().map(|b| b.id().to_string()),
            Some(format!("c{}", calls - 1))
        );
    }

    /// Text opened before thousands of calls, and the calls, all continued in the next chunk:
    /// each piece lands in its own block (found at its place in the answer, not searched for
    /// from the end past the blocks after it).
    #[test]
    fn blocks_continued_after_thousands_of_others_get_their_pieces() {
        let calls = 3_000;
        let chunk_of = |text: &str, input: &str| {
            let mut blocks = vec![ContentBlock::Text(TextBlock::new(text))];
            blocks.extend((0..calls).map(|i| ContentBlock::ToolCall(ToolCallBlock::new(format!("c{i}"), "f", input))));
            ChatResponse::chunk(blocks)
        };
        let mut conv = ChunkConverter::new(&Id::from("r"), CallIds::default(), false);
        let mut out = Vec::new();
        conv.convert(&chunk_of("Adding ", "{\"a\": "), &mut out);
        conv.convert(&chunk_of("them.", "1}"), &mut out);
        conv.close(&mut out);
        let partial = conv.take_partial();
        assert_eq!(partial.len(), calls + 1);
        assert!(matches!(&partial[0], ContentBlock::Text(t) if t.text == "Adding them."));
        for (i, block) in partial[1..].iter().enumerate() {
            let ContentBlock::ToolCall(call) = block else {
                panic!("{block:?}")
            };
            assert_eq!(
                (call.id.to_string(), call.input.as_str()),
                (format!("c{i}"), "{\"a\": 1}")
            );
        }
    }

    /// A data block with the id of an open tool call: the call's later pieces still go to the
    /// call (a search by id from the end found the data block, and dropped them).
    #[test]
    fn a_data_block_sharing_a_calls_id_takes_none_of_its_pieces() {
        let call = |input: &str| ContentBlock::ToolCall(ToolCallBlock::new("x", "f", input));
        let data = ContentBlock::Data(DataBlock::base64("aGk=", "text/plain").with_id("x"));
        let mut conv = ChunkConverter::new(&Id::from("r"), CallIds::default(), false);
        let mut out = Vec::new();
        conv.convert(&ChatResponse::chunk(vec![call("{\"a\":")]), &mut out);
        conv.convert(&ChatResponse::chunk(vec![call(" 1"), data]), &mut out);
        conv.convert(&ChatResponse::chunk(vec![call("}")]), &mut out);
        conv.close(&mut out);
        let partial = conv.take_partial();
        assert!(
            matches!(&partial[0], ContentBlock::ToolCall(c) if c.input == "{\"a\": 1}"),
            "{partial:?}"
        );
        assert!(matches!(&partial[1], ContentBlock::Data(_)), "{partial:?}");
    }

    /// Past a few open calls they are found through an index: a call continued, a call whose id
    /// comes twice in one chunk (a second call, renamed), a call not in the chunk (ended) and a
    /// new call are told apart as they are among few.
    #[test]
    fn many_open_calls_are_continued_replaced_and_ended_as_few_are() {
        let mut conv = ChunkConverter::new(&Id::from("r"), CallIds::default(), true);
        let mut out = Vec::new();
        // 40 calls opened, their arguments unfinished; a20 comes twice (a second call).
        let mut first: Vec<ContentBlock> = (0..40)
            .map(|i| ContentBlock::ToolCall(ToolCallBlock::new(format!("a{i}"), "f", "{")))
            .collect();
        first.push(ContentBlock::ToolCall(ToolCallBlock::new("a20", "f", "{")));
        conv.convert(&ChatResponse::chunk(first), &mut out);
        let mut expected: Vec<String> = (0..40)
            .flat_map(|i| [format!("TOOL_CALL_START a{i}"), "TOOL Δ{".to_owned()])
            .collect();
        expected.extend(["TOOL_CALL_END a20", "TOOL_CALL_START a20_2", "TOOL Δ{"].map(str::to_owned));
        assert_eq!(kinds(&out), expected);

        // The next chunk: a5 goes on, then comes twice (a second call); a20 goes on (the
        // second a20, now a20_2); a39 goes on; b is new. The other open calls end.
        out.clear();
        let second = [("a5", "}"), ("a5", "{}"), ("a20", "}"), ("a39", "}"), ("b", "{}")]
            .map(|(id, input)| ContentBlock::ToolCall(ToolCallBlock::new(id, "f", input)));
        conv.convert(&ChatResponse::chunk(second.to_vec()), &mut out);
        let mut expected: Vec<String> = [
            "TOOL Δ}",
            "TOOL_CALL_END a5",
            "TOOL_CALL_START a5_2",
            "TOOL Δ{}",
            "TOOL Δ}",
            "TOOL Δ}",
            "TOOL_CALL_START b",
            "TOOL Δ{}",
        ]
        .map(str::to_owned)
        .to_vec();
        expected.extend(
            (0..39)
                .filter(|i| *i != 5 && *i != 20)
                .map(|i| format!("TOOL_CALL_END a{i}")),
        );
        assert_eq!(kinds(&out), expected);

        out.clear();
        conv.close(&mut out);
        assert_eq!(
            kinds(&out),
            [
                "TOOL_CALL_END a39",
                "TOOL_CALL_END a20_2",
                "TOOL_CALL_END a5_2",
                "TOOL_CALL_END b"
            ]
        );
        let inputs: Vec<(String, String)> = conv
            .take_partial()
            .into_iter()
            .filter_map(|b| match b {
                ContentBlock::ToolCall(c)
                    if ["a5", "a5_2", "a20", "a20_2", "a39", "b"].contains(&c.id.to_string().as_str()) =>
                {
                    Some((c.id.to_string(), c.input))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            inputs,
            [
                ("a5", "{}"),
                ("a20", "{"),
                ("a39", "{}"),
                ("a20_2", "{}"),
                ("a5_2", "{}"),
                ("b", "{}")
            ]
            .map(|(id, input)| (id.to_owned(), input.to_owned()))
        );
    }

    #[test]
    fn a_restart_returns_every_block_of_the_call() {
        let mut conv = ChunkConverter::new(&Id::from("r"), CallIds::default(), true);
        let mut out = Vec::new();
        conv.convert(&chunk(ContentBlock::Text(TextBlock::new("partial"))), &mut out);
        conv.convert(
            &chunk(ContentBlock::ToolCall(ToolCallBlock::new("c1", "f", "{"))),
            &mut out,
        );
        let AgentEvent::TextBlockStart(start) = &out[0] else {
            panic!("expected a text start")
        };
        assert_eq!(conv.restart(), [start.block_id.clone(), Id::from("c1")]);
        let mut after = Vec::new();
        conv.close(&mut after);
        assert!(after.is_empty(), "nothing stays open after a restart");
    }
}
