//! The limit on images kept in the context (the reference's `_limit_context_images`): before a
//! round is counted, the oldest images past
//! [`ContextConfig::max_image_num`](towerscope_core::ContextConfig::max_image_num) are replaced
//! by a reminder, saying where the image is when it has a URL or the offloader stored it, or
//! that it was removed. An image at the top of an assistant message becomes a hint block; one
//! in a user message, a tool result or a hint becomes a text block.

use std::sync::Arc;

use towerscope_core::{
    AgentError, ContentBlock, DataBlock, DataSource, HintBlock, HintContent, MediaBlock, Msg, Role, TextBlock,
    ToolOutput,
};

use super::CompressShared;

/// Where an image sits in a message.
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// A block of the message.
    Top(usize),
    /// A block inside the tool result or hint that is block `.0` of the message.
    Nested(usize, usize),
}

struct Found {
    msg: usize,
    /// The message as it was seen: the replacement applies only if it is still there.
    seen: Arc<Msg>,
    slot: Slot,
    block: DataBlock,
}

fn is_image(block: &DataBlock) -> bool {
    block.source.media_type().starts_with("image/")
}

fn nested_images(blocks: &[MediaBlock]) -> impl Iterator<Item = (usize, &DataBlock)> {
    blocks.iter().enumerate().filter_map(|(j, b)| match b {
        MediaBlock::Data(d) if is_image(d) => Some((j, d)),
        _ => None,
    })
}

/// The images of the context, oldest first: where each is, and the image (borrowed: only the
/// ones removed are copied).
fn find(context: &towerscope_core::Messages) -> Vec<(usize, Slot, &DataBlock)> {
    let mut found = Vec::new();
    for (m, msg) in context.iter().enumerate() {
        for (i, block) in msg.content.iter().enumerate() {
            match block {
                ContentBlock::Data(d) if is_image(d) => found.push((m, Slot::Top(i), d)),
                ContentBlock::ToolResult(r) => {
                    if let ToolOutput::Blocks(blocks) = &r.output {
                        found.extend(nested_images(blocks).map(|(j, d)| (m, Slot::Nested(i, j), d)));
                    }
                }
                ContentBlock::Hint(h) => {
                    if let HintContent::Blocks(blocks) = &h.hint {
                        found.extend(nested_images(blocks).map(|(j, d)| (m, Slot::Nested(i, j), d)));
                    }
                }
                _ => {}
            }
        }
    }
    found
}

/// Replaces the oldest images past `max`. Stores them first when there is an offloader, and
/// applies every replacement at once afterwards, only if the messages are still the ones seen.
pub(crate) async fn limit(shared: &CompressShared, max: usize) -> Result<(), AgentError> {
    let oldest: Vec<Found> = {
        let state = shared.lock();
        let found = find(&state.context);
        let Some(exceed) = found.len().checked_sub(max).filter(|n| *n > 0) else {
            return Ok(());
        };
        tracing::info!(
            images = found.len(),
            max,
            removed = exceed,
            "removing the oldest images from the context"
        );
        found
            .into_iter()
            .take(exceed)
            .filter_map(|(msg, slot, block)| {
                Some(Found {
                    msg,
                    seen: Arc::clone(state.context.get(msg)?),
                    slot,
                    block: block.clone(),
                })
            })
            .collect()
    };
    let mut replacements = Vec::with_capacity(oldest.len());
    for image in oldest {
        let place = match (&image.block.source, &shared.offloader) {
            (DataSource::Url { url, .. }, _) => Some(url.clone()),
            (DataSource::Base64 { .. }, Some(offloader)) => {
                let session_id = crate::session::key_session_id(&shared.user_id, &shared.lock().session_id);
                let scope = super::OffloadScope::new(&shared.user_id, &session_id);
                Some(offloader.offload_data_block(scope, image.block.clone()).await?)
            }
            (DataSource::Base64 { .. }, None) => None,
        };
        let name = image
            .block
            .name
            .as_deref()
            .map(|n| format!("named '{n}' "))
            .unwrap_or_default();
        let text = match place {
            Some(place) => format!(
                "<system-reminder>The image {name}is offloaded into {place}, you can refer to it when needed.</system-reminder>"
            ),
            None => format!("<system-reminder>The image {name}is removed to free up context space.</system-reminder>"),
        };
        replacements.push((image, text));
    }
    let mut state = shared.lock();
    let unchanged = replacements.iter().all(|(image, _)| {
        state
            .context
            .get(image.msg)
            .is_some_and(|m| Arc::ptr_eq(m, &image.seen))
    });
    if !unchanged {
        tracing::warn!("the context changed while images were offloaded; they are limited in the next round");
        return Ok(());
    }
    for (image, text) in replacements {
        let role = image.seen.role;
        let msg = state.context.make_mut(image.msg);
        match image.slot {
            Slot::Top(i) if role != Role::User => msg.content[i] = ContentBlock::Hint(HintBlock::new(text, None)),
            Slot::Top(i) => msg.content[i] = ContentBlock::Text(TextBlock::new(text)),
            Slot::Nested(i, j) => {
                let blocks = match &mut msg.content[i] {
                    ContentBlock::ToolResult(r) => match &mut r.output {
                        ToolOutput::Blocks(blocks) => Some(blocks),
                        ToolOutput::Text(_) => None,
                    },
                    ContentBlock::Hint(h) => match &mut h.hint {
                        HintContent::Blocks(blocks) => Some(blocks),
                        HintContent::Text(_) => None,
                    },
                    _ => None,
                };
                if let Some(slot) = blocks.and_then(|b| b.get_mut(j)) {
                    *slot = MediaBlock::Text(TextBlock::new(text));
                }
            }
        }
    }
    // The counts the default counter starts from are off now.
    state.last_call = None;
    Ok(())
}
