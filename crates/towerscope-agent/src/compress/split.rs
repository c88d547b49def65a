//! Splitting the context into the part to summarise and the part to keep, as the reference's
//! `_split_context_for_compression`, in one pass over per-message and per-block counts (the
//! reference recounts the whole kept part at every step).
//!
//! Rules: the newest messages worth at least `reserve` tokens (with the system prompt, the
//! summary and the tools) are kept; the boundary message is split between its blocks; a tool
//! call is never separated from its result, and a call without a result (the one running when
//! the model asked to compress) never goes into the summarised part. The newest user message is
//! never summarised: when the boundary falls on or after it, it is kept whole, before the kept
//! part (the reference summarises it too when the system prompt, summary and tools fill the
//! reserve, and its truncation fallback then drops the question the model was to answer).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use towerscope_core::{ContentBlock, Id, Msg, Role};

use super::count::TokenCounter;

/// The two parts of the context.
#[derive(Debug, Default)]
pub(crate) struct Split {
    pub(crate) compress: Vec<Arc<Msg>>,
    pub(crate) keep: Vec<Arc<Msg>>,
}

/// Splits `context`; `base` is the count of what is always sent (system prompt, summary, tools).
pub(crate) fn split(
    context: &[Arc<Msg>],
    counter: &dyn TokenCounter,
    base: u64,
    reserve: u64,
    unfinished: &HashSet<Id>,
) -> Split {
    // The newest message from which the kept part reaches the reserve.
    let mut kept = base;
    let mut boundary = None;
    for (i, msg) in context.iter().enumerate().rev() {
        kept += counter.count_message(msg);
        if kept >= reserve {
            boundary = Some(i);
            break;
        }
    }
    let Some(mut boundary) = boundary else {
        return Split {
            compress: Vec::new(),
            keep: context.to_vec(),
        };
    };
    // No unfinished call goes into the summary: the boundary moves back to its message.
    if let Some(i) = context[..=boundary]
        .iter()
        .position(|m| m.tool_calls().any(|c| unfinished.contains(&c.id)))
    {
        boundary = i;
    }
    let after: u64 = base
        + context[boundary + 1..]
            .iter()
            .map(|m| counter.count_message(m))
            .sum::<u64>();
    let msg = &context[boundary];
    let blocks = &msg.content;

    // The last block index that goes into the summary (None: the whole message is kept).
    let mut sum = after;
    let mut cut: Option<usize> = None;
    for (i, block) in blocks.iter().enumerate().rev() {
        sum += counter.count_blocks(&mut std::iter::once(block));
        if sum > reserve {
            cut = Some(i);
            break;
        }
    }
    let unfinished_at: Option<usize> = blocks
        .iter()
        .position(|b| matches!(b, ContentBlock::ToolCall(c) if unfinished.contains(&c.id)));
    if let Some(u) = unfinished_at {
        cut = match (cut, u.checked_sub(1)) {
            (Some(c), Some(before)) => Some(c.min(before)),
            (_, before) => before,
        };
    }
    // The newest round's results (the context's last message ends with them: compression runs
    // before the model reads them) stay, with their calls: summarised, the model would call the
    // same tools again, and the next round would summarise those results too.
    let unread_at = (boundary + 1 == context.len())
        .then(|| unread_results(blocks))
        .flatten();
    if let Some(u) = unread_at {
        cut = cut.and_then(|c| u.checked_sub(1).map(|before| c.min(before)));
    }
    let kept_from = match (unfinished_at, unread_at) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    cut = pair_calls(blocks, cut, kept_from);

    let mut out = Split {
        compress: context[..boundary].to_vec(),
        keep: Vec::with_capacity(context.len() - boundary),
    };
    let split_at = cut.map_or(0, |c| c + 1);
    if split_at == 0 {
        out.keep.push(Arc::clone(msg));
    } else if split_at >= blocks.len() {
        out.compress.push(Arc::clone(msg));
    } else {
        let mut head = Msg::clone(msg);
        let tail_blocks = head.content.split_off(split_at);
        let mut tail = Msg::clone(msg);
        tail.content = tail_blocks;
        out.compress.push(Arc::new(head));
        out.keep.push(Arc::new(tail));
    }
    out.keep.extend(context[boundary + 1..].iter().cloned());
    keep_newest_question(context, boundary, &mut out);
    out
}

/// Where the results that end a message start (hints after them aside), if it ends with any.
fn unread_results(blocks: &[ContentBlock]) -> Option<usize> {
    let mut start = None;
    for (i, block) in blocks.iter().enumerate().rev() {
        match block {
            ContentBlock::ToolResult(_) => start = Some(i),
            ContentBlock::Hint(_) => {}
            _ => break,
        }
    }
    start
}

/// Takes the newest user message out of the summarised part (whole, or the part of it that was
/// to be summarised), and keeps it whole before the kept part.
fn keep_newest_question(context: &[Arc<Msg>], boundary: usize, out: &mut Split) {
    let Some(question) = context.iter().rposition(|m| m.role == Role::User) else {
        return;
    };
    if question > boundary {
        return;
    }
    let msg = &context[question];
    // The summarised part is `context[..boundary]`, then the boundary message whole or its
    // head: the question is taken out by its place, not its id (a message can be in the
    // context twice under one id, and the other copy stays where it is).
    if question < boundary {
        out.compress.remove(question);
    } else if out.compress.len() > boundary {
        // The boundary message, summarised whole or cut: its tail, if any, leads the kept part.
        out.compress.truncate(boundary);
        if out.keep.first().is_some_and(|m| m.id == msg.id && !Arc::ptr_eq(m, msg)) {
            out.keep.remove(0);
        }
    } else {
        // Kept whole already.
        return;
    }
    out.keep.insert(0, Arc::clone(msg));
}

/// Moves the cut so that every result kept has its call kept too: a result whose call would
/// be summarised goes into the summary with it, unless that would summarise an unfinished
/// call; then the calls of those results are kept instead, and from then on the cut only
/// moves back (keeping more), so the loop ends: the cut moves forward only while it has never
/// moved back, and each move is strict.
fn pair_calls(blocks: &[ContentBlock], mut cut: Option<usize>, unfinished_at: Option<usize>) -> Option<usize> {
    let mut backward = false;
    loop {
        let start = cut.map_or(0, |c| c + 1);
        let mut orphans: HashMap<&Id, usize> = HashMap::new();
        for (i, block) in blocks.iter().enumerate().skip(start).rev() {
            match block {
                ContentBlock::ToolResult(r) => {
                    orphans.insert(&r.id, i);
                }
                ContentBlock::ToolCall(c) => {
                    orphans.remove(&c.id);
                }
                _ => {}
            }
        }
        let Some(&last_orphan) = orphans.values().max() else {
            return cut;
        };
        if backward || unfinished_at.is_some_and(|u| last_orphan >= u) {
            backward = true;
            let first_call = blocks
                .iter()
                .position(|b| matches!(b, ContentBlock::ToolCall(c) if orphans.contains_key(&c.id)));
            match first_call {
                Some(i) => cut = i.checked_sub(1),
                None => return cut,
            }
        } else {
            cut = Some(last_orphan);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::EstimateCounter;
    use towerscope_core::{TextBlock, ToolCallBlock, ToolOutput, ToolResultBlock, ToolResultState};

    fn text(n: usize) -> ContentBlock {
        ContentBlock::Text(TextBlock::new("x".repeat(n)))
    }

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolCall(ToolCallBlock::new(id, "t", "{}"))
    }

    fn result(id: &str, n: usize) -> ContentBlock {
        ContentBlock::ToolResult(ToolResultBlock::new(
            id,
            "t",
            ToolOutput::Text("r".repeat(n)),
            ToolResultState::Success,
        ))
    }

    fn pairs_intact(split: &Split) {
        for part in [&split.compress, &split.keep] {
            let calls: HashSet<&Id> = part.iter().flat_map(|m| m.tool_calls().map(|c| &c.id)).collect();
            for r in part.iter().flat_map(|m| m.tool_results()) {
                assert!(calls.contains(&r.id), "result {} without its call", r.id);
            }
        }
    }

    #[test]
    fn keeps_the_newest_messages_worth_the_reserve() {
        let context: Vec<Arc<Msg>> = (0..10).map(|i| Arc::new(Msg::user("u", "x".repeat(40 + i)))).collect();
        // About 12 tokens each: the two newest fit in 25, the third (the boundary) would not.
        let s = split(&context, &EstimateCounter, 0, 25, &HashSet::new());
        assert_eq!(s.keep.len(), 2);
        assert_eq!(s.compress.len(), 8);
        assert!(Arc::ptr_eq(&s.keep[1], &context[9]));
    }

    #[test]
    fn never_separates_a_call_from_its_result() {
        let msg = Msg::assistant_blocks(
            "a",
            vec![text(40), call("c1"), call("c2"), result("c1", 400), result("c2", 40)],
        );
        let context = vec![Arc::new(Msg::user("u", "q")), Arc::new(msg)];
        for reserve in [1, 5, 20, 60, 120, 200] {
            let s = split(&context, &EstimateCounter, 0, reserve, &HashSet::new());
            pairs_intact(&s);
        }
    }

    /// The results that end the context (the round the model has not read) stay with their
    /// calls, however small the reserve; an earlier round of the same message may go.
    #[test]
    fn the_newest_rounds_results_and_their_calls_are_kept() {
        let msg = Msg::assistant_blocks(
            "a",
            vec![
                text(40),
                call("old"),
                result("old", 400),
                text(40),
                call("c1"),
                call("c2"),
                result("c1", 400),
                result("c2", 400),
            ],
        );
        let context = vec![Arc::new(Msg::user("u", "q")), Arc::new(msg)];
        for reserve in [1, 50, 150] {
            let s = split(&context, &EstimateCounter, 0, reserve, &HashSet::new());
            pairs_intact(&s);
            let kept: Vec<&Id> = s.keep.iter().flat_map(|m| m.tool_results().map(|r| &r.id)).collect();
            assert_eq!(kept, ["c1", "c2"], "reserve {reserve}");
            let summarised: Vec<&Id> = s
                .compress
                .iter()
                .flat_map(|m| m.tool_results().map(|r| &r.id))
                .collect();
            assert_eq!(summarised, ["old"], "reserve {reserve}");
        }
    }

    /// A question in the context twice (one message observed twice): the newest copy is kept
    /// whole and first, the older one summarised where it was; none is lost.
    #[test]
    fn a_question_in_the_context_twice_loses_neither_copy() {
        let question = Arc::new(Msg::user("u", "the question"));
        let answer = |n: usize| Arc::new(Msg::assistant_blocks("a", vec![text(n)]));
        let (first, second) = (answer(400), answer(400));
        let context = vec![
            Arc::clone(&question),
            Arc::clone(&first),
            Arc::clone(&question),
            Arc::clone(&second),
        ];
        for reserve in [1, 50, 150] {
            let s = split(&context, &EstimateCounter, 0, reserve, &HashSet::new());
            let copies = s
                .compress
                .iter()
                .chain(&s.keep)
                .filter(|m| Arc::ptr_eq(m, &question))
                .count();
            assert_eq!(copies, 2, "reserve {reserve}");
            assert!(Arc::ptr_eq(&s.keep[0], &question), "reserve {reserve}");
            assert!(
                Arc::ptr_eq(&s.compress[0], &question),
                "the older copy summarised, reserve {reserve}"
            );
        }
    }

    /// Calls and results interleaved around an unfinished call (an imported or hand-built
    /// state): moving the cut back to keep a call must not move it forward again (it looped).
    #[test]
    fn interleaved_calls_around_an_unfinished_one_end() {
        let msg = Msg::assistant_blocks(
            "a",
            vec![call("a"), call("b"), result("a", 40), call("u"), result("b", 40)],
        );
        let context = vec![Arc::new(Msg::user("u", "q")), Arc::new(msg)];
        let unfinished: HashSet<Id> = [Id::from("u")].into_iter().collect();
        for reserve in [0, 1, 5, 20, 60] {
            let s = split(&context, &EstimateCounter, 0, reserve, &unfinished);
            pairs_intact(&s);
            assert!(!s.compress.iter().any(|m| m.tool_calls().any(|c| c.id == "u")));
        }
        let blocks = &context[1].content;
        assert_eq!(pair_calls(blocks, Some(2), Some(3)), None, "everything kept");
    }

    /// The system prompt, summary and tools fill the reserve (or the reserve is 0, the fallback
    /// after a failed summary): the newest user message is kept, whole, not summarised.
    #[test]
    fn the_newest_question_is_never_summarised() {
        let context = vec![
            Arc::new(Msg::user("u", "x".repeat(400))),
            Arc::new(Msg::assistant("a", "y".repeat(400))),
            Arc::new(Msg::user("u", "What is the capital of France?")),
        ];
        for (base, reserve) in [(1_000, 500), (0, 0)] {
            let s = split(&context, &EstimateCounter, base, reserve, &HashSet::new());
            assert_eq!(s.keep.len(), 1, "base {base}, reserve {reserve}");
            assert!(Arc::ptr_eq(&s.keep[0], &context[2]));
            assert_eq!(s.compress.len(), 2);
        }
    }

    /// The question, then a long reply of tool rounds: the reply's oldest rounds may be
    /// summarised, the question stays, whole, before what is kept of the reply.
    #[test]
    fn a_question_before_a_long_reply_stays_before_its_kept_part() {
        let reply = Msg::assistant_blocks(
            "a",
            vec![call("c1"), result("c1", 400), call("c2"), result("c2", 400), text(40)],
        );
        let context = vec![
            Arc::new(Msg::user("u", "x".repeat(400))),
            Arc::new(Msg::user("u", "Look it up.")),
            Arc::new(reply),
        ];
        let s = split(&context, &EstimateCounter, 0, 150, &HashSet::new());
        pairs_intact(&s);
        assert!(Arc::ptr_eq(&s.keep[0], &context[1]), "{:?}", s.keep);
        assert_eq!(s.keep.len(), 2, "the question, then the reply's kept part");
        assert!(s.compress.iter().all(|m| m.id != context[1].id));
        assert!(
            s.compress.iter().any(|m| m.id == context[2].id),
            "the reply's first round is summarised"
        );
    }

    #[test]
    fn never_summarises_an_unfinished_call() {
        let msg = Msg::assistant_blocks("a", vec![text(400), call("c1"), result("c1", 400), call("c2")]);
        let context = vec![Arc::new(Msg::user("u", "q".repeat(400))), Arc::new(msg)];
        let unfinished: HashSet<Id> = [Id::from("c2")].into_iter().collect();
        let s = split(&context, &EstimateCounter, 0, 1, &unfinished);
        pairs_intact(&s);
        assert!(s.keep.iter().any(|m| m.tool_calls().any(|c| c.id == "c2")));
        assert!(!s.compress.iter().any(|m| m.tool_calls().any(|c| c.id == "c2")));
    }
}
