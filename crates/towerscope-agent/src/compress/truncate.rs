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
pub(crate) fn split_result(
    result: &ToolResultBlock,
    counter: &dyn TokenCounter,
    config: &ContextConfig,
) -> Option<Split> {
    let limit = config.tool_result_limit;
    let blocks: Vec<MediaBlock> = match &result.output {
        ToolOutput::Text(t) => vec![MediaBlock::Text(TextBlock::new(t.clone()))],
        ToolOutput::Blocks(b) => b.clone(),
    };
    let count = |bs: &[MediaBlock]| -> u64 {
        let wrapped: Vec<ContentBlock> = bs.iter().map(|b| b.clone().into()).collect();
        counter.count_blocks(&mut wrapped.iter())
    };
    if count(&blocks) <= limit {
        return None;
    }
    // The last index whose prefix stays under the limit (the reference scans down from the end).
    let mut boundary = 0;
    for i in (1..blocks.len()).rev() {
        if count(&blocks[..i]) < limit {
            boundary = i;
            break;
        }
    }
    let mut kept: Vec<MediaBlock> = blocks[..boundary].to_vec();
    let mut cut_any = boundary + 1 < blocks.len();
    let mut omitted: Vec<MediaBlock> = Vec::new();
    match &blocks[boundary] {
        MediaBlock::Text(t) => {
            let before = count(&kept);
            let with = count(&blocks[..=boundary]);
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
mod tests {
    use super::*;
    use crate::compress::EstimateCounter;
    use towerscope_core::ToolResultState;

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
}
