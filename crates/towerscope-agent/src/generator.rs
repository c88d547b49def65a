//! A consumer-driven async generator: the reply loop is written as straight-line async code that
//! yields items, and runs only while the consumer polls the stream (no task is spawned, and
//! dropping the stream stops the loop at its next await point).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures_core::Stream;
use pin_project_lite::pin_project;

/// The yielding half handed to the generator's body.
pub(crate) struct Yielder<T> {
    slot: Arc<Mutex<Slot<T>>>,
}

impl<T> Clone for Yielder<T> {
    fn clone(&self) -> Self {
        Self {
            slot: Arc::clone(&self.slot),
        }
    }
}

impl<T> Yielder<T> {
    /// Hands `item` to the consumer; resolves once the consumer asks for the next item.
    ///
    /// An item whose emission was cancelled before the consumer took it (the body dropped a
    /// future that had emitted: an interrupt cancels the reply loop at any await point) is still
    /// handed out, before this one: what was emitted is never lost or reordered.
    pub(crate) fn emit(&self, item: T) -> Emit {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner).put(item);
        Emit { done: false }
    }
}

/// The items emitted and not yet taken: one, except after a cancelled emission.
struct Slot<T> {
    /// The oldest item (kept apart: the common case never touches the queue).
    first: Option<T>,
    /// Items emitted after `first` while it waited; boxed, as it is rarely used and every
    /// reply in flight holds a slot.
    #[allow(clippy::box_collection)] // 8 bytes in every slot instead of 32, for a rare queue
    more: Option<Box<VecDeque<T>>>,
}

impl<T> Slot<T> {
    fn new() -> Self {
        Self {
            first: None,
            more: None,
        }
    }

    fn put(&mut self, item: T) {
        if self.first.is_none() {
            self.first = Some(item);
        } else {
            self.more.get_or_insert_default().push_back(item);
        }
    }

    fn take(&mut self) -> Option<T> {
        // `Option::take` copies the whole item out even when there is none (a reply's item is
        // a few hundred bytes, and the slot is empty at every other look).
        self.first.as_ref()?;
        let item = self.first.take();
        if let Some(more) = &mut self.more {
            self.first = more.pop_front();
        }
        item
    }
}

/// The future of [`Yielder::emit`]: pending once, so the stream can hand the item out.
#[must_use = "emit does nothing unless awaited"]
pub(crate) struct Emit {
    done: bool,
}

impl Emit {
    /// The future for an item that was not sent (nobody reads it): ready at once.
    pub(crate) fn skipped() -> Self {
        Self { done: true }
    }
}

impl Future for Emit {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.done {
            Poll::Ready(())
        } else {
            // The enclosing `Generator::poll_next` sees the filled slot and returns the item;
            // the next poll of the stream polls this future again.
            self.done = true;
            Poll::Pending
        }
    }
}

pin_project! {
    /// A stream driven by an async body that emits items through a [`Yielder`]. The body is
    /// held inline: one allocation fewer than boxing it, and the stream is boxed once where
    /// it becomes an `EventStream`.
    pub(crate) struct Generator<T, F> {
        slot: Arc<Mutex<Slot<T>>>,
        #[pin]
        body: Option<F>,
    }
}

impl<T: Send + 'static, F: Future<Output = ()>> Generator<T, F> {
    /// Makes a generator from `body`.
    pub(crate) fn new(body: impl FnOnce(Yielder<T>) -> F) -> Self {
        let slot = Arc::new(Mutex::new(Slot::new()));
        let yielder = Yielder {
            slot: Arc::clone(&slot),
        };
        Self {
            slot,
            body: Some(body(yielder)),
        }
    }
}

fn take<T>(slot: &Mutex<Slot<T>>) -> Option<T> {
    slot.lock().unwrap_or_else(PoisonError::into_inner).take()
}

impl<T: Send + 'static, F: Future<Output = ()>> Stream for Generator<T, F> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut this = self.project();
        if let Some(item) = take(this.slot) {
            return Poll::Ready(Some(item));
        }
        let Some(body) = this.body.as_mut().as_pin_mut() else {
            return Poll::Ready(None);
        };
        match body.poll(cx) {
            Poll::Ready(()) => {
                this.body.set(None);
                Poll::Ready(take(this.slot))
            }
            Poll::Pending => match take(this.slot) {
                Some(item) => Poll::Ready(Some(item)),
                None => Poll::Pending,
            },
        }
    }
}

impl<T, F> std::fmt::Debug for Generator<T, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator").field("done", &self.body.is_none()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    #[tokio::test]
    async fn yields_in_order_and_ends() {
        let g = Generator::new(|y| async move {
            for i in 0..3 {
                y.emit(i).await;
                tokio::task::yield_now().await;
            }
        });
        assert_eq!(g.collect::<Vec<_>>().await, vec![0, 1, 2]);
    }

    #[tokio::test]
    async fn body_runs_only_when_polled() {
        let ran = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&ran);
        let mut g = Box::pin(Generator::new(|y| async move {
            log.lock().unwrap_or_else(PoisonError::into_inner).push("a");
            y.emit(1).await;
            log.lock().unwrap_or_else(PoisonError::into_inner).push("b");
            y.emit(2).await;
        }));
        assert!(ran.lock().unwrap_or_else(PoisonError::into_inner).is_empty());
        assert_eq!(g.next().await, Some(1));
        assert_eq!(*ran.lock().unwrap_or_else(PoisonError::into_inner), vec!["a"]);
        drop(g);
    }

    /// An interrupt drops the reply loop's future at any await point, including an `emit` whose
    /// item the consumer has not taken yet; what the body emits next comes after that item.
    #[tokio::test]
    async fn an_item_whose_emission_was_cancelled_still_comes_first() {
        let g = Generator::new(|y| async move {
            {
                let cancelled = std::pin::pin!(async {
                    y.emit("streamed").await;
                    y.emit("never").await;
                });
                // Poll the emitting future once, as a select does, then drop it.
                let _ = futures_util::poll!(cancelled);
            }
            y.emit("closing").await;
            y.emit("end").await;
        });
        assert_eq!(g.collect::<Vec<_>>().await, vec!["streamed", "closing", "end"]);
    }
}
