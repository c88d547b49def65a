//! A consumer-driven async generator: the reply loop is written as straight-line async code that
//! yields items, and runs only while the consumer polls the stream (no task is spawned, and
//! dropping the stream stops the loop at its next await point).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures_core::Stream;

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

/// A stream driven by an async body that emits items through a [`Yielder`].
pub(crate) struct Generator<T> {
    slot: Arc<Mutex<Option<T>>>,
    body: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl<T: Send + 'static> Generator<T> {
    /// Makes a generator from `body`.
    pub(crate) fn new<F, Fut>(body: F) -> Self
    where
        F: FnOnce(Yielder<T>) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let slot = Arc::new(Mutex::new(None));
        let yielder = Yielder {
            slot: Arc::clone(&slot),
        };
        Self {
            slot,
            body: Some(Box::pin(body(yielder))),
        }
    }

    fn take(&self) -> Option<T> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

impl<T: Send + 'static> Stream for Generator<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if let Some(item) = self.take() {
            return Poll::Ready(Some(item));
        }
        let Some(body) = self.body.as_mut() else {
            return Poll::Ready(None);
        };
        match body.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.body = None;
                Poll::Ready(self.take())
            }
            Poll::Pending => match self.take() {
                Some(item) => Poll::Ready(Some(item)),
                None => Poll::Pending,
            },
        }
    }
}

impl<T> std::fmt::Debug for Generator<T> {
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
        let mut g = Generator::new(|y| async move {
            log.lock().unwrap_or_else(PoisonError::into_inner).push("a");
            y.emit(1).await;
            log.lock().unwrap_or_else(PoisonError::into_inner).push("b");
            y.emit(2).await;
        });
        assert!(ran.lock().unwrap_or_else(PoisonError::into_inner).is_empty());
        assert_eq!(g.next().await, Some(1));
        assert_eq!(*ran.lock().unwrap_or_else(PoisonError::into_inner), vec!["a"]);
        drop(g);
    }
}
