//! [`Messages`]: a shared, immutable list of shared messages.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::msg::Msg;

/// A list of messages that is cheap to clone: one allocation holds the pointers, and each
/// message is shared behind an `Arc`.
///
/// This is what a model call sees ([`ModelCallRequest::messages`](crate::ModelCallRequest)) and
/// what a reply is asked to answer. Taking a snapshot of a conversation costs one allocation
/// and a reference-count bump per message, never a copy of the messages themselves; a layer that
/// edits a message does it copy-on-write ([`Messages::make_mut`]), so only the edited message is
/// copied, and only when someone else still holds it.
///
/// It serializes as a plain list of messages, the same JSON as `Vec<Msg>`.
///
/// # Example
///
/// ```
/// use towerscope_core::{Messages, Msg};
///
/// let history: Messages = vec![Msg::system("system", "Be brief."), Msg::user("u", "Hi")].into();
/// let snapshot = history.clone(); // a reference-count bump
///
/// // A layer redacts the user's message; the snapshot keeps the original.
/// let mut edited = history.clone();
/// edited.make_mut(1).content = vec![towerscope_core::ContentBlock::text("[redacted]")];
/// assert_eq!(edited[1].text_content().as_deref(), Some("[redacted]"));
/// assert_eq!(snapshot[1].text_content().as_deref(), Some("Hi"));
/// // The system message was not copied: both lists point at the same one.
/// assert!(std::sync::Arc::ptr_eq(&edited[0], &snapshot[0]));
/// ```
#[derive(Clone, PartialEq)]
pub struct Messages(Arc<[Arc<Msg>]>);

impl Messages {
    /// No messages.
    pub fn new() -> Self {
        Self(Arc::from(Vec::new()))
    }

    /// The messages, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &Msg> + DoubleEndedIterator + '_ {
        self.0.iter().map(|m| &**m)
    }

    /// The shared pointers, in order.
    pub fn as_slice(&self) -> &[Arc<Msg>] {
        &self.0
    }

    /// The message at `index` for editing, copied first if another list or the agent still
    /// holds it (and the list of pointers copied first if it is shared).
    ///
    /// # Panics
    ///
    /// When `index` is out of bounds, as slice indexing does.
    pub fn make_mut(&mut self, index: usize) -> &mut Msg {
        Arc::make_mut(&mut self.pointers_mut()[index])
    }

    /// The list of pointers for editing (replacing, reordering, removing messages), copied
    /// first if it is shared. Messages are not copied.
    pub fn pointers_mut(&mut self) -> &mut [Arc<Msg>] {
        Arc::make_mut(&mut self.0)
    }

    /// Keeps the messages for which `keep` is true (one new list, no message copied).
    pub fn retain(&mut self, mut keep: impl FnMut(&Msg) -> bool) {
        if self.iter().all(&mut keep) {
            return;
        }
        self.0 = self.0.iter().filter(|m| keep(m)).cloned().collect();
    }

    /// Appends a message (one new list of pointers, no message copied).
    pub fn push(&mut self, msg: impl Into<Arc<Msg>>) {
        let msg = msg.into();
        self.0 = self.0.iter().cloned().chain(std::iter::once(msg)).collect();
    }

    /// The pointers as a vector.
    pub fn to_vec(&self) -> Vec<Arc<Msg>> {
        self.0.to_vec()
    }
}

impl Default for Messages {
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for Messages {
    type Target = [Arc<Msg>];

    fn deref(&self) -> &[Arc<Msg>] {
        &self.0
    }
}

impl fmt::Debug for Messages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl FromIterator<Arc<Msg>> for Messages {
    fn from_iter<I: IntoIterator<Item = Arc<Msg>>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl FromIterator<Msg> for Messages {
    fn from_iter<I: IntoIterator<Item = Msg>>(iter: I) -> Self {
        Self(iter.into_iter().map(Arc::new).collect())
    }
}

impl From<Vec<Msg>> for Messages {
    fn from(msgs: Vec<Msg>) -> Self {
        msgs.into_iter().collect()
    }
}

impl From<Vec<Arc<Msg>>> for Messages {
    fn from(msgs: Vec<Arc<Msg>>) -> Self {
        Self(Arc::from(msgs))
    }
}

impl From<Msg> for Messages {
    fn from(msg: Msg) -> Self {
        Self(Arc::from([Arc::new(msg)]))
    }
}

impl From<Arc<[Arc<Msg>]>> for Messages {
    fn from(msgs: Arc<[Arc<Msg>]>) -> Self {
        Self(msgs)
    }
}

impl<'a> IntoIterator for &'a Messages {
    type Item = &'a Arc<Msg>;
    type IntoIter = std::slice::Iter<'a, Arc<Msg>>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl Serialize for Messages {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Messages {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Msg>::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn cloning_and_editing_copies_only_what_changes() {
        let a: Messages = vec![Msg::user("u", "one"), Msg::user("u", "two")].into();
        let mut b = a.clone();
        assert!(Arc::ptr_eq(&a[0], &b[0]));
        b.make_mut(1).name = Arc::from("v");
        assert_eq!(&*a[1].name, "u");
        assert_eq!(&*b[1].name, "v");
        assert!(Arc::ptr_eq(&a[0], &b[0]), "the untouched message stays shared");
        b.retain(|m| &*m.name == "v");
        assert_eq!(b.len(), 1);
        b.push(Msg::user("w", "three"));
        assert_eq!(b.iter().map(|m| &*m.name).collect::<Vec<_>>(), ["v", "w"]);
    }

    #[test]
    fn serializes_as_a_list_of_messages() {
        let plain = vec![Msg::user("u", "hi").with_id("m1"), Msg::assistant("a", "yo")];
        let msgs = Messages::from(plain.clone());
        assert_eq!(
            serde_json::to_value(&msgs).unwrap(),
            serde_json::to_value(&plain).unwrap()
        );
        let back: Messages = serde_json::from_value(serde_json::to_value(&plain).unwrap()).unwrap();
        assert_eq!(back, msgs);
    }
}
