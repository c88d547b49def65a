//! [`shared_copy`]: what other participants get of a message.

use towerscope_core::{ContentBlock, Msg, Role};

/// The copy of `msg` other participants observe or receive as input: its text and data blocks,
/// as a user message under the speaker's name (same id, same creation time, same metadata).
///
/// - Thinking is the speaker's own reasoning: stripped, as the reference's hub does.
/// - Tool calls and their results stay in the speaker's context (the reference broadcasts the
///   final reply only, which holds none); hints are instructions to the speaker's model.
/// - The role becomes `user`: for the receiving agent the speaker is someone else talking,
///   never its own earlier turn (providers keep the name, so speakers stay apart).
///
/// `None` when nothing is left to share (a reply of thinking only).
///
/// # Example
///
/// ```
/// use towerscope_core::{ContentBlock, Msg, Role};
/// use towerscope_team::shared_copy;
///
/// let reply = Msg::assistant_blocks("alice", vec![ContentBlock::thinking("they will agree"), ContentBlock::text("Tabs.")]);
/// let shared = shared_copy(&reply).unwrap();
/// assert_eq!((shared.name.as_ref(), shared.role), ("alice", Role::User));
/// assert_eq!(shared.text_content().as_deref(), Some("Tabs."));
/// assert_eq!(shared.id, reply.id);
/// assert!(shared_copy(&Msg::assistant_blocks("alice", vec![ContentBlock::thinking("...")])).is_none());
/// ```
pub fn shared_copy(msg: &Msg) -> Option<Msg> {
    let content: Vec<ContentBlock> = msg
        .content
        .iter()
        .filter(|b| matches!(b, ContentBlock::Text(_) | ContentBlock::Data(_)))
        .cloned()
        .collect();
    if content.is_empty() {
        return None;
    }
    let mut copy = Msg::new(msg.name.clone(), Role::User, content).ok()?;
    copy.id = msg.id.clone();
    copy.created_at = msg.created_at;
    copy.finished_at = Some(msg.finished_at.unwrap_or(msg.created_at));
    copy.metadata = msg.metadata.clone();
    Some(copy)
}
