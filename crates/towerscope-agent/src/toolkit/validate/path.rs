//! Where in the instance an error is, as a JSON path (`$.items[2]`).

use super::repr::{Bounded, MAX_SHOWN_BYTES};

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
