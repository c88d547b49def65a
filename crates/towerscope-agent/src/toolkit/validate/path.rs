//! Where in the instance an error is, as a JSON path (`$.items[2]`).

use serde_json::Value;

use super::repr::{Bounded, MAX_SHOWN_BYTES};

/// One step into an instance, owned: where an error is, kept beside its rendered path for the
/// code that compares the instance with another (see [`value_at`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

/// The value at `place` in `value`, if there is one.
pub(crate) fn value_at<'v>(value: &'v Value, place: &[Step]) -> Option<&'v Value> {
    place.iter().try_fold(value, |value, step| match step {
        Step::Key(key) => value.get(key.as_str()),
        Step::Index(i) => value.get(*i),
    })
}

/// One step of a JSON path, kept on the stack and rendered only for an error.
#[derive(Clone, Copy)]
pub(super) enum Seg<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

#[derive(Clone, Copy)]
pub(super) struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    seg: Seg<'a>,
    pub(super) len: usize,
}

impl<'a> Path<'a> {
    pub(super) const ROOT: Path<'static> = Path {
        parent: None,
        seg: Seg::Root,
        len: 0,
    };

    pub(super) fn child(&'a self, seg: Seg<'a>) -> Path<'a> {
        Path {
            parent: Some(self),
            seg,
            len: self.len + 1,
        }
    }

    /// The steps from the root to here.
    pub(super) fn steps(&self) -> Vec<Step> {
        let mut steps = Vec::with_capacity(self.len);
        let mut cur = Some(self);
        while let Some(p) = cur {
            match p.seg {
                Seg::Root => {}
                Seg::Key(k) => steps.push(Step::Key(k.to_owned())),
                Seg::Index(i) => steps.push(Step::Index(i)),
            }
            cur = p.parent;
        }
        steps.reverse();
        steps
    }

    pub(super) fn render(&self) -> String {
        let mut segs = Vec::with_capacity(self.len);
        let mut cur = Some(self);
        while let Some(p) = cur {
            segs.push(p.seg);
            cur = p.parent;
        }
        let mut out = Bounded::new(MAX_SHOWN_BYTES);
        out.push('$');
        for seg in segs.iter().rev() {
            match seg {
                Seg::Root => {}
                Seg::Key(k) => {
                    out.push('.');
                    out.push_str(k);
                }
                Seg::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        out.finish()
    }
}
