//! [`Messages`]: a shared list of shared messages, cheap to snapshot whatever its length.

use std::fmt;
use std::iter::Chain;
use std::ops::Index;
use std::slice;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::msg::Msg;

/// A list of messages that is cheap to clone, whatever its length: the conversation is one
/// shared vector of shared messages, so a snapshot is a reference-count bump, not a copy of the
/// messages nor of the list.
///
/// It holds an optional short *head* (the system prompt and summary a model call starts with)
/// before the *body* (the conversation), so a model request is the agent's conversation with its
/// system message in front, made without copying either. The agent's context
/// (`AgentState::context` in `towerscope-agent`) is a `Messages` too: a model
/// request shares it, and the agent copies it only to change it while a request still holds it.
/// A layer that edits a message does it copy-on-write ([`Messages::make_mut`]): only the
/// edited message (and, if shared, the list of pointers) is copied.
///
/// It serializes as a plain list of messages, the same JSON as `Vec<Msg>`.
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use towerscope_core::{ContentBlock, Messages, Msg};
///
/// let mut history = Messages::from(vec![Msg::user("u", "Hi"), Msg::assistant("a", "Hello")]);
/// let system: Arc<[Arc<Msg>]> = Arc::from([Arc::new(Msg::system("system", "Be brief."))]);
/// let request = Messages::with_head(system, &history); // no copy of the conversation
/// assert_eq!(request.len(), 3);
/// assert_eq!(request[0].text_content().as_deref(), Some("Be brief."));
///
/// // A layer redacts the user's message in its copy; the history keeps the original, and the
/// // other messages stay shared.
/// let mut edited = request.clone();
/// edited.make_mut(1).content = vec![ContentBlock::text("[redacted]")];
/// assert_eq!(edited[1].text_content().as_deref(), Some("[redacted]"));
/// assert_eq!(history[0].text_content().as_deref(), Some("Hi"));
/// assert!(Arc::ptr_eq(&edited[2], &history[1]));
///
/// history.push(Msg::user("u", "Bye"));
/// assert_eq!((history.len(), request.len()), (3, 3), "the snapshot did not change");
/// ```
#[derive(Clone, Default)]
pub struct Messages {
    head: Option<Arc<[Arc<Msg>]>>,
    body: Arc<Vec<Arc<Msg>>>,
}

/// The iterator over a [`Messages`]' shared pointers, in order.
pub type MessagesIter<'a> = Chain<slice::Iter<'a, Arc<Msg>>, slice::Iter<'a, Arc<Msg>>>;

impl Messages {
    /// No messages.
    pub fn new() -> Self {
        Self::default()
    }

    /// `head` followed by the messages of `body` (its head included), sharing both.
    pub fn with_head(head: Arc<[Arc<Msg>]>, body: &Messages) -> Self {
        match &body.head {
            None => Self {
                head: (!head.is_empty()).then_some(head),
                body: Arc::clone(&body.body),
            },
            Some(inner) => {
                let joined: Arc<[Arc<Msg>]> = head.iter().chain(inner.iter()).cloned().collect();
                Self {
                    head: Some(joined),
                    body: Arc::clone(&body.body),
                }
            }
        }
    }

    fn head(&self) -> &[Arc<Msg>] {
        self.head.as_deref().unwrap_or_default()
    }

    /// How many messages.
    pub fn len(&self) -> usize {
        self.head().len() + self.body.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The message at `index`.
    pub fn get(&self, index: usize) -> Option<&Arc<Msg>> {
        let head = self.head();
        match index.checked_sub(head.len()) {
            None => head.get(index),
            Some(i) => self.body.get(i),
        }
    }

    /// The first message.
    pub fn first(&self) -> Option<&Arc<Msg>> {
        self.get(0)
    }

    /// The last message.
    pub fn last(&self) -> Option<&Arc<Msg>> {
        self.body.last().or_else(|| self.head().last())
    }

    /// The messages, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Msg> + '_ {
        self.arcs().map(|m| &**m)
    }

    /// The shared pointers, in order.
    pub fn arcs(&self) -> MessagesIter<'_> {
        self.head().iter().chain(self.body.iter())
    }

    /// The message at `index` for editing: copied first if another list still holds it (and the
    /// list of pointers copied first if it is shared).
    ///
    /// # Panics
    ///
    /// When `index` is out of bounds, as slice indexing does.
    pub fn make_mut(&mut self, index: usize) -> &mut Msg {
        let head_len = self.head().len();
        match index.checked_sub(head_len) {
            Some(i) => Arc::make_mut(&mut Arc::make_mut(&mut self.body)[i]),
            None => {
                let head = self.head.get_or_insert_with(|| Arc::from(Vec::new()));
                Arc::make_mut(&mut Arc::make_mut(head)[index])
            }
        }
    }

    /// The last message for editing (copy-on-write, as [`make_mut`](Self::make_mut)).
    pub fn last_mut(&mut self) -> Option<&mut Msg> {
        let len = self.len();
        (len > 0).then(|| self.make_mut(len - 1))
    }

    /// Appends a message (the list of pointers is copied first only if it is shared).
    pub fn push(&mut self, msg: impl Into<Arc<Msg>>) {
        Arc::make_mut(&mut self.body).push(msg.into());
    }

    /// Keeps the messages for which `keep` is true, asking once for each message, in order (as
    /// `Vec::retain`); no message is copied.
    pub fn retain(&mut self, mut keep: impl FnMut(&Msg) -> bool) {
        let verdicts: Vec<bool> = self.iter().map(&mut keep).collect();
        if verdicts.iter().all(|k| *k) {
            return;
        }
        let kept: Vec<Arc<Msg>> = self
            .arcs()
            .zip(verdicts)
            .filter(|(_, k)| *k)
            .map(|(m, _)| Arc::clone(m))
            .collect();
        *self = Self::from(kept);
    }

    /// The pointers as a vector (build a new list from it with `Messages::from`).
    pub fn to_vec(&self) -> Vec<Arc<Msg>> {
        self.arcs().cloned().collect()
    }
}

impl Extend<Arc<Msg>> for Messages {
    fn extend<I: IntoIterator<Item = Arc<Msg>>>(&mut self, iter: I) {
        Arc::make_mut(&mut self.body).extend(iter);
    }
}

impl Extend<Msg> for Messages {
    fn extend<I: IntoIterator<Item = Msg>>(&mut self, iter: I) {
        Arc::make_mut(&mut self.body).extend(iter.into_iter().map(Arc::new));
    }
}

impl Index<usize> for Messages {
    type Output = Arc<Msg>;

    fn index(&self, index: usize) -> &Arc<Msg> {
        match self.get(index) {
            Some(msg) => msg,
            None => panic!("message index {index} out of range for {} messages", self.len()),
        }
    }
}

impl PartialEq for Messages {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.arcs().zip(other.arcs()).all(|(a, b)| a == b)
    }
}

impl fmt::Debug for Messages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl FromIterator<Arc<Msg>> for Messages {
    fn from_iter<I: IntoIterator<Item = Arc<Msg>>>(iter: I) -> Self {
        Self {
            head: None,
            body: Arc::new(iter.into_iter().collect()),
        }
    }
}

impl FromIterator<Msg> for Messages {
    fn from_iter<I: IntoIterator<Item = Msg>>(iter: I) -> Self {
        iter.into_iter().map(Arc::new).collect()
    }
}

impl From<Vec<Msg>> for Messages {
    fn from(msgs: Vec<Msg>) -> Self {
        msgs.into_iter().collect()
    }
}

impl From<Vec<Arc<Msg>>> for Messages {
    fn from(msgs: Vec<Arc<Msg>>) -> Self {
        Self {
            head: None,
            body: Arc::new(msgs),
        }
    }
}

impl From<Msg> for Messages {
    fn from(msg: Msg) -> Self {
        Self::from(vec![Arc::new(msg)])
    }
}

impl<'a> IntoIterator for &'a Messages {
    type Item = &'a Arc<Msg>;
    type IntoIter = MessagesIter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.arcs()
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

    /// `keep` is asked once for each message, in order, as `Vec::retain` does: a predicate
    /// that counts (keep the first two) keeps the first two (it was asked twice about some and
    /// kept none).
    #[test]
    fn retain_asks_once_for_each_message() {
        let mut list: Messages = vec![Msg::user("u", "a"), Msg::user("u", "b"), Msg::user("u", "c")].into();
        let mut asked = 0;
        list.retain(|_| {
            asked += 1;
            asked <= 2
        });
        assert_eq!(asked, 3);
        let texts: Vec<_> = list.iter().filter_map(Msg::text_content).collect();
        assert_eq!(texts, ["a", "b"]);
    }

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
    fn a_head_goes_in_front_without_copying_the_body() {
        let body: Messages = vec![Msg::user("u", "a"), Msg::user("u", "b")].into();
        let head: Arc<[Arc<Msg>]> = Arc::from([Arc::new(Msg::system("s", "sys"))]);
        let mut request = Messages::with_head(head, &body);
        assert_eq!(request.len(), 3);
        assert_eq!(request.last().and_then(|m| m.text_content()).as_deref(), Some("b"));
        assert!(Arc::ptr_eq(&request[1], &body[0]));
        request.make_mut(0).name = Arc::from("edited");
        assert_eq!(&*request[0].name, "edited");
        let twice = Messages::with_head(Arc::from([Arc::new(Msg::system("t", "first"))]), &request);
        assert_eq!(
            twice.iter().map(|m| &*m.name).collect::<Vec<_>>(),
            ["t", "edited", "u", "u"]
        );
        assert_eq!(Messages::new().last(), None);
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
        let with_head = Messages::with_head(Arc::from([Arc::new(plain[1].clone())]), &msgs);
        assert_eq!(
            serde_json::to_value(&with_head).unwrap().as_array().map(Vec::len),
            Some(3)
        );
    }
}
