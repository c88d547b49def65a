//! [`DrainReady`]: the events of a concurrent batch, one call's ready events at a time.
//!
//! `futures::stream::select_all` takes one item from each stream in turn, so a batch of tools
//! that answer at once renders as `START(b), START(c), DELTA(b), END(b), …`: every call is cut
//! into pieces. `DrainReady` keeps taking items from the stream that produced the last one for
//! as long as it has more ready, and moves on only when that stream waits or ends. Events of
//! tools that really run at the same time still interleave (each carries its call id), but a
//! fast tool's result arrives in one piece.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

/// Merges streams, draining each one's ready items before moving to the next.
pub(crate) struct DrainReady<S> {
    streams: Vec<S>,
    /// The stream to poll first.
    current: usize,
}

impl<S: Stream + Unpin> DrainReady<S> {
    pub(crate) fn new(streams: impl IntoIterator<Item = S>) -> Self {
        Self {
            streams: streams.into_iter().collect(),
            current: 0,
        }
    }
}

impl<S: Stream + Unpin> Stream for DrainReady<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = &mut *self;
        let mut tried = 0;
        while tried < this.streams.len() {
            let index = this.current % this.streams.len();
            match Pin::new(&mut this.streams[index]).poll_next(cx) {
                Poll::Ready(Some(item)) => {
                    this.current = index;
                    return Poll::Ready(Some(item));
                }
                Poll::Ready(None) => {
                    // Keep the order of the others: the next one slides into this index.
                    this.streams.remove(index);
                    this.current = index;
                }
                Poll::Pending => {
                    this.current = index + 1;
                    tried += 1;
                }
            }
        }
        if this.streams.is_empty() {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
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
