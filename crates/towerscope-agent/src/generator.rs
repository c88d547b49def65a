//! A consumer-driven async generator: the reply loop is written as straight-line async code that
//! yields items, and runs only while the consumer polls the stream (no task is spawned, and
//! dropping the stream stops the loop at its next await point).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures_core::Stream;
use pin_project_lite::pin_project;

/// The yielding half handed to the generator's body.
pub(crate) struct Yielder<T> {
    slot: Arc<Mutex<Option<T>>>,
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
    pub(crate) fn emit(&self, item: T) -> Emit {
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        debug_assert!(slot.is_none(), "a generator emitted twice without awaiting");
        *slot = Some(item);
        Emit { done: false }
    }
}

/// The future of [`Yielder::emit`]: pending once, so the stream can hand the item out.
#[must_use = "emit does nothing unless awaited"]
pub(crate) struct Emit {
    done: bool,
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
        slot: Arc<Mutex<Option<T>>>,
        #[pin]
        body: Option<F>,
    }
}

impl<T: Send + 'static, F: Future<Output = ()>> Generator<T, F> {
    /// Makes a generator from `body`.
    pub(crate) fn new(body: impl FnOnce(Yielder<T>) -> F) -> Self {
        let slot = Arc::new(Mutex::new(None));
        let yielder = Yielder {
            slot: Arc::clone(&slot),
        };
        Self {
            slot,
            body: Some(body(yielder)),
        }
    }
}

fn take<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
    // `Option::take` copies the whole item out even when there is none (a reply's item is a
    // few hundred bytes, and the slot is empty at every other look).
    if slot.is_none() {
        return None;
    }
    slot.take()
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
}
