//! Tool results over [`ContextConfig::tool_result_limit`] tokens are cut, as the reference's
//! `_split_tool_result_for_compression`: whole blocks while they fit, then the text block at the
//! limit cut in proportion of its tokens, a data block at the limit dropped; the kept part ends
//! with the reference's reminder.

use towerscope_core::{ContentBlock, ContextConfig, MediaBlock, TextBlock, ToolOutput, ToolResultBlock};

use super::count::TokenCounter;

/// The reminder appended to a truncated tool result (the reference's text, without an
/// offloading path).
pub const TRUNCATED_REMINDER: &str =
    "\n<<<TRUNCATED>>>\n<system-reminder>The remaining content has been omitted for limited context.</system-reminder>";

/// Cuts `result` to the limit; returns whether anything was cut.
pub(crate) fn truncate_result(
    result: &mut ToolResultBlock,
    counter: &dyn TokenCounter,
    config: &ContextConfig,
) -> bool {
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
        return false;
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
            let reserved = &t.text[..end];
            if !reserved.is_empty() {
                match kept.last_mut() {
                    Some(MediaBlock::Text(last)) => last.text.push_str(reserved),
                    _ => kept.push(MediaBlock::Text(TextBlock::new(reserved).with_id(&t.id))),
                }
            }
        }
        MediaBlock::Data(_) => cut_any = true,
    }
    if !cut_any {
        return false;
    }
    match kept.last_mut() {
        Some(MediaBlock::Text(last)) => last.text.push_str(TRUNCATED_REMINDER),
        _ => kept.push(MediaBlock::Text(TextBlock::new(TRUNCATED_REMINDER))),
    }
    result.output = match &result.output {
        ToolOutput::Text(_) if kept.len() == 1 => match kept.pop() {
            Some(MediaBlock::Text(t)) => ToolOutput::Text(t.text),
            Some(other) => ToolOutput::Blocks(vec![other]),
            None => ToolOutput::Text(String::new()),
        },
        _ => ToolOutput::Blocks(kept),
    };
    true
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
