//! [`DrainReady`]: the events of a concurrent batch, one call's ready events at a time.
//!
//! `futures::stream::select_all` takes one item from each stream in turn, so a batch of tools
//! that answer at once renders as `START(b), START(c), DELTA(b), END(b), …`: every call is cut
//! into pieces. `DrainReady` keeps taking items from the stream that produced the last one for
//! as long as it has more ready, and moves on only when that stream waits or ends. Events of
//! tools that really run at the same time still interleave (each carries its call id), but a
//! fast tool's result arrives in one piece.

//!
//! A batch of more than a few streams polls each with a waker of its own, so a poll visits only
//! the streams woken since the last one (and the one being drained): N tools that finish one by
//! one cost about N polls, not N for each of them. A few streams share the task's waker and are
//! each polled at every call, which costs less than the wakers would (no allocation).

use std::collections::BTreeSet;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

use futures_core::Stream;

/// How many streams share the task's waker; past that, each has its own.
const FEW_STREAMS: usize = 16;

/// Merges streams, draining each one's ready items before moving to the next.
pub(crate) struct DrainReady<S> {
    /// The streams, in order; `None` once ended (the others keep their places).
    streams: Vec<Option<S>>,
    /// How many streams have not ended.
    live: usize,
    /// The stream to poll first.
    current: usize,
    /// Past [`FEW_STREAMS`]: each stream's waker, and the streams they woke.
    own: Option<OwnWakers>,
}

struct OwnWakers {
    /// Each stream's waker: it notes the stream as woken and wakes the task.
    wakers: Vec<Waker>,
    woken: Arc<Woken>,
}

/// The streams woken since they were last polled, and the task to wake for them.
#[derive(Default)]
struct Woken {
    state: Mutex<WokenState>,
}

#[derive(Default)]
struct WokenState {
    indices: BTreeSet<usize>,
    task: Option<Waker>,
}

impl Woken {
    fn lock(&self) -> std::sync::MutexGuard<'_, WokenState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The first woken stream from `from` on, or else from the start; taken out.
    fn next(&self, from: usize) -> Option<usize> {
        let mut state = self.lock();
        let index = state
            .indices
            .range(from..)
            .next()
            .or_else(|| state.indices.iter().next())
            .copied()?;
        state.indices.remove(&index);
        Some(index)
    }

    fn mark(&self, index: usize) {
        self.lock().indices.insert(index);
    }
}

/// The waker of one stream.
struct StreamWaker {
    index: usize,
    woken: Arc<Woken>,
}

impl Wake for StreamWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let task = {
            let mut state = self.woken.lock();
            state.indices.insert(self.index);
            state.task.clone()
        };
        if let Some(task) = task {
            task.wake();
        }
    }
}

impl<S: Stream + Unpin> DrainReady<S> {
    pub(crate) fn new(streams: impl IntoIterator<Item = S>) -> Self {
        let streams: Vec<Option<S>> = streams.into_iter().map(Some).collect();
        let own = (streams.len() > FEW_STREAMS).then(|| {
            let woken = Arc::new(Woken::default());
            // Every stream is polled once to start.
            woken.lock().indices.extend(0..streams.len());
            let wakers = (0..streams.len())
                .map(|index| {
                    Waker::from(Arc::new(StreamWaker {
                        index,
                        woken: Arc::clone(&woken),
                    }))
                })
                .collect();
            OwnWakers { wakers, woken }
        });
        Self {
            live: streams.len(),
            streams,
            current: 0,
            own,
        }
    }
}

impl<S: Stream + Unpin> Stream for DrainReady<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = &mut *self;
        if let Some(own) = &this.own {
            let mut state = own.woken.lock();
            if !state.task.as_ref().is_some_and(|task| task.will_wake(cx.waker())) {
                state.task = Some(cx.waker().clone());
            }
        }
        // Each stream is polled at most once per call but the one being drained (one that
        // wakes itself while polled is polled again at the next call, as the task is woken).
        let count = this.streams.len();
        for _ in 0..count {
            if this.live == 0 {
                break;
            }
            let index = match &this.own {
                Some(own) => match own.woken.next(this.current) {
                    Some(index) => index,
                    None => return Poll::Pending,
                },
                None => this.current % count,
            };
            this.current = index + 1;
            let Some(Some(stream)) = this.streams.get_mut(index) else {
                continue;
            };
            let waker = this.own.as_ref().and_then(|own| own.wakers.get(index));
            match Pin::new(stream).poll_next(&mut Context::from_waker(waker.unwrap_or(cx.waker()))) {
                Poll::Ready(Some(item)) => {
                    // Drained first at the next call: it may have more ready.
                    this.current = index;
                    if let Some(own) = &this.own {
                        own.woken.mark(index);
                    }
                    return Poll::Ready(Some(item));
                }
                Poll::Ready(None) => {
                    if let Some(slot) = this.streams.get_mut(index) {
                        *slot = None;
                    }
                    this.live -= 1;
                }
                Poll::Pending => {}
            }
        }
        if this.live == 0 {
            return Poll::Ready(None);
        }
        if this
            .own
            .as_ref()
            .is_some_and(|own| !own.woken.lock().indices.is_empty())
        {
            // Streams woken while the others were polled: come back for them.
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use futures_util::stream::{self, BoxStream};

    #[tokio::test]
    async fn ready_items_of_one_stream_stay_together() {
        let a: BoxStream<'static, &str> = stream::iter(["a1", "a2", "a3"]).boxed();
        let b: BoxStream<'static, &str> = stream::iter(["b1", "b2"]).boxed();
        let merged: Vec<&str> = DrainReady::new([a, b]).collect().await;
        assert_eq!(merged, ["a1", "a2", "a3", "b1", "b2"]);
    }

    /// A stream that counts its polls and answers once its sender has.
    fn gated(
        polls: &Arc<std::sync::atomic::AtomicUsize>,
    ) -> (tokio::sync::oneshot::Sender<usize>, BoxStream<'static, usize>) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let polls = Arc::clone(polls);
        let mut rx = Some(rx);
        let stream = stream::poll_fn(move |cx| {
            polls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(receiver) = rx.as_mut() else {
                return Poll::Ready(None);
            };
            match Pin::new(receiver).poll(cx) {
                Poll::Ready(value) => {
                    rx = None;
                    Poll::Ready(value.ok())
                }
                Poll::Pending => Poll::Pending,
            }
        })
        .boxed();
        (tx, stream)
    }

    #[test]
    fn streams_that_answer_one_by_one_are_each_polled_a_few_times_not_once_per_answer() {
        const N: usize = 1_000;
        let polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (senders, streams): (Vec<_>, Vec<_>) = (0..N).map(|_| gated(&polls)).unzip();
        let mut merged = DrainReady::new(streams);
        let mut cx = Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut merged).poll_next(&mut cx).is_pending());
        // They answer in reverse order, one at a time; each answer comes out alone.
        for (i, sender) in senders.into_iter().enumerate().rev() {
            assert!(sender.send(i).is_ok());
            assert_eq!(Pin::new(&mut merged).poll_next(&mut cx), Poll::Ready(Some(i)));
        }
        assert_eq!(Pin::new(&mut merged).poll_next(&mut cx), Poll::Ready(None));
        // Once to start, once to answer, once to end; polling every waiting stream at each
        // answer would be about N * N / 2.
        let polls = polls.load(std::sync::atomic::Ordering::Relaxed);
        assert!(polls <= 3 * N, "{polls} polls for {N} streams");
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_stream_lets_the_others_through() {
        let slow: BoxStream<'static, &str> = stream::once(async {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            "slow"
        })
        .boxed();
        let fast: BoxStream<'static, &str> = stream::iter(["f1", "f2"]).boxed();
        let merged: Vec<&str> = DrainReady::new([slow, fast]).collect().await;
        assert_eq!(merged, ["f1", "f2", "slow"]);
    }
}
