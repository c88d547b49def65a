//! Tool results over [`ContextConfig::tool_result_limit`] tokens are cut, as the reference's
//! `_split_tool_result_for_compression`: whole blocks while they fit, then the text block at the
//! limit cut in proportion of its tokens, a data block at the limit dropped; the kept part ends
//! with the reference's reminder, which names the file the omitted part was offloaded to when
//! the agent has an [`Offloader`](super::Offloader).

use towerscope_core::{ContentBlock, ContextConfig, MediaBlock, TextBlock, ToolOutput, ToolResultBlock};

use super::count::TokenCounter;

/// The reminder appended to a truncated tool result (the reference's text, without an
/// offloading path).
pub const TRUNCATED_REMINDER: &str =
    "\n<<<TRUNCATED>>>\n<system-reminder>The remaining content has been omitted for limited context.</system-reminder>";

/// The reminder of a truncated result, with the offloaded file's note (`""` for none).
pub(crate) fn truncated_reminder(offloaded: &str) -> String {
    format!(
        "\n<<<TRUNCATED>>>\n<system-reminder>The remaining content has been omitted for limited context.{offloaded}</system-reminder>"
    )
}

/// Cuts `result` to the limit, with the plain reminder; returns whether anything was cut.
#[cfg(test)]
pub(crate) fn truncate_result(
    result: &mut ToolResultBlock,
    counter: &dyn TokenCounter,
    config: &ContextConfig,
) -> bool {
    match split_result(result, counter, config) {
        Some(split) => {
            finish(result, split.kept, TRUNCATED_REMINDER);
            true
        }
        None => false,
    }
}

/// What a truncation keeps: the blocks to keep, and the omitted part as a result of its own
/// (same id and name) for an offloader.
pub(crate) struct Split {
    /// The blocks kept.
    pub(crate) kept: Vec<MediaBlock>,
    /// The omitted blocks.
    pub(crate) omitted: ToolResultBlock,
}

/// Splits `result` at the limit; `None` when it fits. [`finish`] then sets the kept part.
///
/// Linear in the result's blocks: each is copied once to be counted (a result of plain text
/// twice: into a block, then into the counter's), and the counter sees each a few times (see
/// [`block_at_limit`]), however many blocks the result has.
pub(crate) fn split_result(
    result: &ToolResultBlock,
    counter: &dyn TokenCounter,
    config: &ContextConfig,
) -> Option<Split> {
    let limit = config.tool_result_limit;
    let text;
    let blocks: &[MediaBlock] = match &result.output {
        ToolOutput::Text(t) => {
            text = [MediaBlock::Text(TextBlock::new(t.clone()))];
            &text
        }
        ToolOutput::Blocks(b) => b,
    };
    // Wrapped once: the counter reads content blocks, and counts prefixes of these.
    let wrapped: Vec<ContentBlock> = blocks.iter().map(|b| b.clone().into()).collect();
    let count = |n: usize| counter.count_blocks(&mut wrapped[..n].iter());
    if blocks.is_empty() || count(blocks.len()) <= limit {
        return None;
    }
    let boundary = block_at_limit(&wrapped, counter, limit);
    let mut kept: Vec<MediaBlock> = blocks[..boundary].to_vec();
    let mut cut_any = boundary + 1 < blocks.len();
    let mut omitted: Vec<MediaBlock> = Vec::new();
    match &blocks[boundary] {
        MediaBlock::Text(t) => {
            let before = count(boundary);
            let with = count(boundary + 1);
            let delta = with.saturating_sub(before);
            let budget = limit.saturating_sub(before);
            let keep_bytes = if delta == 0 {
                if budget > 0 { t.text.len() } else { 0 }
            } else {
                ((budget as f64 / delta as f64) * t.text.len() as f64) as usize
            };
            let mut end = keep_bytes.min(t.text.len());
            while !t.text.is_char_boundary(end) {
                end -= 1;
            }
            cut_any |= end < t.text.len();
            if end < t.text.len() {
                omitted.push(MediaBlock::Text(TextBlock::new(&t.text[end..]).with_id(&t.id)));
            }
            let reserved = &t.text[..end];
            if !reserved.is_empty() {
                match kept.last_mut() {
                    Some(MediaBlock::Text(last)) => last.text.push_str(reserved),
                    _ => kept.push(MediaBlock::Text(TextBlock::new(reserved).with_id(&t.id))),
                }
            }
        }
        MediaBlock::Data(d) => {
            cut_any = true;
            omitted.push(MediaBlock::Data(d.clone()));
        }
    }
    if !cut_any {
        return None;
    }
    omitted.extend(blocks[boundary + 1..].iter().cloned());
    let omitted = ToolResultBlock::new(&result.id, &result.name, ToolOutput::Blocks(omitted), result.state);
    Some(Split { kept, omitted })
}

/// The block at the limit: the last index `i` in `1..blocks.len()` whose prefix `blocks[..i]`
/// counts under `limit`, or 0 (the reference scans down from the end for it). `blocks` as a
/// whole is over the limit.
///
/// One pass adds up the blocks' counts one by one, up to the first prefix that reaches the
/// limit; the counter then confirms that prefix, and the one before it, as a whole. A counter
/// need not add up over blocks (the estimate rounds the whole text): when it does not confirm,
/// the prefixes are searched by halves. Either way the counter sees each block a few times
/// (a logarithmic number after a failed check), never once per prefix.
fn block_at_limit(blocks: &[ContentBlock], counter: &dyn TokenCounter, limit: u64) -> usize {
    let n = blocks.len();
    // Whether the prefix of `i` blocks reaches the limit (the whole one is over it).
    let reaches = |i: usize| i >= n || counter.count_blocks(&mut blocks[..i].iter()) >= limit;
    // The first prefix that reaches it, by the blocks' counts added up.
    let mut sum = 0u64;
    let mut first = n;
    for (i, block) in blocks.iter().enumerate() {
        sum = sum.saturating_add(counter.count_blocks(&mut std::iter::once(block)));
        if sum >= limit {
            first = i + 1;
            break;
        }
    }
    if !(reaches(first) && (first == 1 || !reaches(first - 1))) {
        // Prefix counts grow with the prefix: the first that reaches the limit is in 1..=n.
        let (mut low, mut high) = (1, n);
        while low < high {
            let mid = low + (high - low) / 2;
            if reaches(mid) {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        first = low;
    }
    first - 1
}

/// Sets the kept part of a split result, ending with `reminder`.
pub(crate) fn finish(result: &mut ToolResultBlock, kept: Vec<MediaBlock>, reminder: &str) {
    let mut kept = kept;
    match kept.last_mut() {
        Some(MediaBlock::Text(last)) => last.text.push_str(reminder),
        _ => kept.push(MediaBlock::Text(TextBlock::new(reminder))),
    }
    result.output = match &result.output {
        ToolOutput::Text(_) if kept.len() == 1 => match kept.pop() {
            Some(MediaBlock::Text(t)) => ToolOutput::Text(t.text),
            Some(other) => ToolOutput::Blocks(vec![other]),
            None => ToolOutput::Text(String::new()),
        },
        _ => ToolOutput::Blocks(kept),
    };
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;
    use crate::compress::EstimateCounter;
    use towerscope_core::{DataBlock, ToolResultState, ToolSchema};

    #[test]
    fn a_long_text_result_is_cut_to_the_limit_with_the_marker() {
        let config = ContextConfig::new().tool_result_limit(100);
        let text = "é".repeat(1000); // 2000 bytes, about 500 tokens
        let mut result = ToolResultBlock::new(
            "c1",
            "t",
            ToolOutput::Blocks(vec![MediaBlock::text(text)]),
            ToolResultState::Success,
        );
        assert!(truncate_result(&mut result, &EstimateCounter, &config));
        let out = result.output.text_content().unwrap_or_default();
        assert!(out.ends_with(TRUNCATED_REMINDER));
        let kept = out.trim_end_matches(TRUNCATED_REMINDER);
        assert!(kept.len() <= 400 && kept.len() >= 390, "{}", kept.len());

        let mut short = ToolResultBlock::new("c2", "t", ToolOutput::Text("ok".into()), ToolResultState::Success);
        assert!(!truncate_result(&mut short, &EstimateCounter, &config));
    }

    /// Blocks of texts `a`, `b`, `c` (50, 30 and 100 tokens), an image, then `d`.
    fn mixed_result() -> ToolResultBlock {
        let blocks = vec![
            MediaBlock::Text(TextBlock::new("a".repeat(200)).with_id("ta")),
            MediaBlock::Text(TextBlock::new("b".repeat(120)).with_id("tb")),
            MediaBlock::Text(TextBlock::new("c".repeat(400)).with_id("tc")),
            MediaBlock::Data(DataBlock::base64("AAAA", "image/png").with_id("img")),
            MediaBlock::Text(TextBlock::new("d".repeat(40)).with_id("td")),
        ];
        ToolResultBlock::new("c1", "t", ToolOutput::Blocks(blocks), ToolResultState::Success)
    }

    #[test]
    fn whole_blocks_are_kept_then_the_text_at_the_limit_is_cut_in_proportion() {
        let config = ContextConfig::new().tool_result_limit(100);
        let result = mixed_result();
        let split = split_result(&result, &EstimateCounter, &config).unwrap();
        // 50 + 30 tokens fit; `c` (100 tokens) gets the 20 left: a fifth of its 400 bytes,
        // joined to the text before it.
        let kept: Vec<(String, String)> = split
            .kept
            .iter()
            .map(|b| (b.id().to_string(), b.as_text().unwrap().text.clone()))
            .collect();
        assert_eq!(
            kept,
            [
                ("ta".to_owned(), "a".repeat(200)),
                ("tb".to_owned(), format!("{}{}", "b".repeat(120), "c".repeat(80)))
            ]
        );
        let ToolOutput::Blocks(omitted) = &split.omitted.output else {
            panic!("the omitted part is blocks")
        };
        let ids: Vec<String> = omitted.iter().map(|b| b.id().to_string()).collect();
        assert_eq!(ids, ["tc", "img", "td"]);
        assert_eq!(omitted[0].as_text().unwrap().text, "c".repeat(320));

        // A data block at the limit is dropped, with everything after it.
        let config = ContextConfig::new().tool_result_limit(500);
        let split = split_result(&result, &EstimateCounter, &config).unwrap();
        let kept: Vec<String> = split.kept.iter().map(|b| b.id().to_string()).collect();
        assert_eq!(kept, ["ta", "tb", "tc"]);
        let ToolOutput::Blocks(omitted) = &split.omitted.output else {
            panic!("the omitted part is blocks")
        };
        let ids: Vec<String> = omitted.iter().map(|b| b.id().to_string()).collect();
        assert_eq!(ids, ["img", "td"]);
    }

    /// The reference's search: every prefix, from the longest down, until one is under the limit.
    fn scanned_from_the_end(blocks: &[ContentBlock], counter: &dyn TokenCounter, limit: u64) -> usize {
        (1..blocks.len())
            .rev()
            .find(|&i| counter.count_blocks(&mut blocks[..i].iter()) < limit)
            .unwrap_or(0)
    }

    #[test]
    fn the_block_at_the_limit_is_the_one_the_reference_finds_when_counts_do_not_add_up() {
        // The estimate rounds the whole text: forty 1-byte blocks count 0 each but 10 together,
        // so adding up the blocks' counts misses the limit, and the search by halves finds it.
        let mut seed = 7u64;
        let mut next = move |below: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % below
        };
        for case in 0..200 {
            let blocks: Vec<ContentBlock> = (0..1 + next(60))
                .map(|_| match next(20) {
                    0 => ContentBlock::data_base64("AAAA", "image/png"),
                    k if k < 12 => ContentBlock::text("x".repeat(1 + next(3) as usize)),
                    _ => ContentBlock::text("y".repeat(next(80) as usize)),
                })
                .collect();
            let whole = EstimateCounter.count_blocks(&mut blocks.iter());
            let limit = next(whole + 1);
            if whole <= limit {
                continue;
            }
            assert_eq!(
                block_at_limit(&blocks, &EstimateCounter, limit),
                scanned_from_the_end(&blocks, &EstimateCounter, limit),
                "case {case}: limit {limit} of {whole}"
            );
        }
    }

    /// Counts one token per block and how many blocks it was shown.
    #[derive(Default)]
    struct VisitCounter {
        visited: AtomicU64,
    }

    impl TokenCounter for VisitCounter {
        fn count_blocks(&self, blocks: &mut dyn Iterator<Item = &ContentBlock>) -> u64 {
            let n = blocks.count() as u64;
            self.visited.fetch_add(n, Ordering::Relaxed);
            n
        }

        fn count_tools(&self, _: &[ToolSchema]) -> u64 {
            0
        }
    }

    #[test]
    fn a_result_of_thousands_of_blocks_is_cut_in_one_pass() {
        let n = 4_000;
        let blocks = (0..n)
            .map(|_| MediaBlock::Data(DataBlock::base64("AAAA", "image/png")))
            .collect();
        let mut result = ToolResultBlock::new("c1", "t", ToolOutput::Blocks(blocks), ToolResultState::Success);
        let counter = VisitCounter::default();
        let config = ContextConfig::new().tool_result_limit(100);
        assert!(truncate_result(&mut result, &counter, &config));
        let visited = counter.visited.load(Ordering::Relaxed);
        assert!(visited <= 10 * n, "{visited} blocks counted for {n}");
        // 99 images fit under the limit; the 100th is dropped with the rest.
        let ToolOutput::Blocks(kept) = &result.output else {
            panic!("the cut result is blocks")
        };
        assert_eq!(kept.len(), 100);
        assert!(kept[..99].iter().all(|b| matches!(b, MediaBlock::Data(_))));
        assert_eq!(kept[99].as_text().map(|t| t.text.as_str()), Some(TRUNCATED_REMINDER));
    }
}
